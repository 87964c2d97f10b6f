"""The kvm-unit-tests results `make kut` last wrote (tools/kut.py: build/kut/
results.txt for SVM, results-BACKEND.txt for another backend), for the
report: make report runs no kvm-unit-tests itself, it shows the recorded
tables as they are, with when each was written."""
import datetime
import glob
import html
import os


def recorded(root):
    """Each recorded table: its backend, the time it was written, its lines."""
    out = []
    for path in sorted(glob.glob(os.path.join(root, "build", "kut", "results*.txt"))):
        stem = os.path.basename(path)[:-len(".txt")]
        backend = stem[len("results-"):] if stem.startswith("results-") else "svm"
        when = datetime.datetime.fromtimestamp(os.path.getmtime(path), datetime.timezone.utc)
        with open(path) as f:
            lines = f.read().splitlines()
        out.append({"backend": backend, "written": when.isoformat(timespec="seconds"),
                    "file": os.path.relpath(path, root), "lines": lines})
    return out


def section(tables):
    """The report's kvm-unit-tests section (docs/kut.md)."""
    out = ["<h2 id=\"kut\">kvm-unit-tests (make kut)</h2>\n"]
    if not tables:
        out.append("<p>No results recorded: run <code>make kut</code> first.</p>\n")
    for t in tables:
        out.append("<p>sprig on %s, %s, written %s: the last line is the summary.</p>\n"
                   % (html.escape(t["backend"].upper()), html.escape(t["file"]),
                      html.escape(t["written"])))
        out.append("<pre>%s</pre>\n" % html.escape("\n".join(t["lines"])))
    return "".join(out)
