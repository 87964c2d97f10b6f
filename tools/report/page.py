"""The report's two HTML pages: index.html (the figures, each with its
caption, and the verdicts) and compare.html (each proposal's published table
beside sprig's measured rows). Plain HTML and CSS: no script, no inline SVG,
no data: URIs, nothing fetched from the network."""
import html

from . import proposals
from .verdicts import WHERE_NAMES, one, one_vcpu, ratio, select

STYLE = """body{font-family:sans-serif;max-width:60em;margin:1em auto;padding:0 1em;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.8em;border-bottom:1px solid #ccc}
figure{margin:1.2em 0}img{max-width:100%;border:1px solid #ddd}
figcaption{font-size:.9em;color:#444}table{border-collapse:collapse;margin:.6em 0}
td,th{border:1px solid #ccc;padding:.2em .5em;text-align:right;font-size:.9em}
td:nth-child(2){text-align:left}
th{background:#f2f2f2}td:first-child,th:first-child{text-align:left}
.met{color:#075}.notmet{color:#b00;font-weight:bold}.nodata{color:#850}
.note{background:#fffbe6;border:1px solid #e6d98c;padding:.5em}
ul.verdicts li{font-family:monospace;font-size:.85em}"""


def esc(x):
    return html.escape(str(x))


def head(title):
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<title>%s</title><style>%s</style></head><body>\n" % (esc(title), STYLE))


def verdict_class(v):
    return {"met": "met", "not met": "notmet"}.get(v["verdict"], "nodata")


def verdict_list(vs):
    if not vs:
        return "<p>No verdicts: this run has no data for these targets.</p>\n"
    return "<ul class=\"verdicts\">\n%s</ul>\n" % "".join(
        "<li class=\"%s\">%s</li>\n" % (verdict_class(v), esc(v["line"])) for v in vs)


def run_summary(data, data_href):
    m = data["machine"]
    steps = "".join("<tr><td>%s</td><td>%s</td><td>%s</td><td>%d</td><td>%.0f</td></tr>\n" % (
        esc(s["where"]), esc(s["name"]), "ok" if s["ok"] else
        "<span class=\"notmet\">FAILED</span>", s["records"], s["seconds"])
        for s in data["steps"])
    return ("<p>sprig <b>%s</b>, run on %s; machine <b>%s</b>: %s, %s cores, %s GiB, "
            "Linux %s; %s. Whole run: %s s. Data: <a href=\"%s\">%s</a> (every @bench line "
            "of the run).</p>\n<table><tr><th>where</th><th>step</th><th>result</th>"
            "<th>@bench lines</th><th>seconds</th></tr>\n%s</table>\n" % (
                esc(data["sprig_version"]), esc(data["date"]), esc(m.get("hostname")),
                esc(m.get("cpu")), esc(m.get("cores")), esc(m.get("mem_gib")),
                esc(m.get("kernel")), esc(m.get("qemu")), esc(data.get("wall_s", "?")),
                esc(data_href), esc(data_href), steps))


SECTIONS = [
    ("leaf", "Leaf-empty hint", ("zap_cdf_", "zap_visits", "zap_guest")),
    ("split", "Split on fault and dirty logging", ("split_",)),
    ("rmap", "Counted rmap descriptors", ("rmap_fork", "rmaps_hist", "rmap_ops")),
    ("prefetch", "Forward prefetch", ("prefetch_",)),
]


def index(data, figures, verdicts, data_href):
    out = [head("sprig MMU report"), "<h1>sprig MMU report</h1>\n",
           "<p>Every figure and verdict on this page comes from the run described here "
           "(<code>make report</code>); the targets come from docs/targets.md. "
           "<a href=\"compare.html\">Comparison with the KVM proposals</a>.</p>\n",
           run_summary(data, data_href)]
    failed = sum(1 for v in verdicts if v["verdict"] != "met")
    out.append("<p>Verdicts: %d met, %d not met or without data, of %d.</p>\n" %
               (len(verdicts) - failed, failed, len(verdicts)))
    for key, title, prefixes in SECTIONS:
        out.append("<h2 id=\"%s\">%s</h2>\n" % (key, esc(title)))
        for f in figures:
            if f["file"].startswith(prefixes):
                out.append("<figure><img src=\"%s\" alt=\"%s\"><figcaption><b>%s.</b> %s"
                           "</figcaption></figure>\n" % (esc(f["file"]), esc(f["title"]),
                                                         esc(f["title"]), esc(f["caption"])))
        out.append(verdict_list([v for v in verdicts if v["proposal"] == key]))
    out.append("<h2 id=\"lock\">Fault-side mmu_lock wait</h2>\n<p class=\"note\">Not plotted: "
               "sprig is not SMP yet (one vCPU, one host CPU runs guests), so no fault "
               "ever waits for mmu_lock behind a zap. The proposal's p99.9 fault-wait "
               "figures (78 to 61 us for same16, 62 to 38 us for same4) have no sprig "
               "counterpart until it is.</p>\n")
    out.append("</body></html>\n")
    return "".join(out)


def table(header, rows):
    return "<table><tr>%s</tr>\n%s</table>\n" % (
        "".join("<th>%s</th>" % esc(h) for h in header),
        "".join("<tr>%s</tr>\n" % "".join("<td>%s</td>" % esc(c) for c in r) for r in rows))


def fmt(x, f="%.3g"):
    return "-" if x is None else f % x


def compare_leaf(recs):
    p = proposals.LEAF_HINT
    rows = []
    for pattern, (before, after) in p["rows"].items():
        host = [r for r in select(recs, "zap", where="host", pattern=pattern)]
        refaults = sorted({r["refault"] for r in host})
        rf = refaults[0] if refaults else None
        off = one(host, "zap", leaf_hint="off", refault=rf)
        on = one(host, "zap", leaf_hint="on", refault=rf)
        sr = ratio(off["zap_median_ns"], on["zap_median_ns"]) if off and on else None
        rows.append((pattern, "%g" % before, "%g" % after, "%.2fx" % (before / after),
                     "refault %s%%" % rf if rf is not None else "-",
                     fmt(off and off["zap_median_ns"] / 1000), fmt(on and on["zap_median_ns"] / 1000),
                     fmt(sr, "%.2fx"), fmt(sr and sr / (before / after), "%.2f")))
    return table(["pattern", "KVM before, ms", "KVM after, ms", "KVM ratio", "sprig row (host)",
                  "sprig off, us", "sprig on, us", "sprig ratio", "sprig ratio / KVM ratio"],
                 rows)


def compare_split(recs):
    recs = one_vcpu(recs)
    p = proposals.SPLIT
    rows = []
    for where in ("host", "qemu", "bochs"):
        for name, (before, after, eager) in p["rows"].items():
            if name == "exec":
                off = one(recs, "exec", where=where, split_on_fault="off")
                on = one(recs, "exec", where=where, split_on_fault="on")
                eps = None
            else:
                w = int(name.split()[1].rstrip("%"))
                off = one(recs, "dirty", where=where, writes=w, eager_page_split="off",
                          split_on_fault="off")
                on = one(recs, "dirty", where=where, writes=w, eager_page_split="off",
                         split_on_fault="on")
                eps = one(recs, "dirty", where=where, writes=w, eager_page_split="on")
            if not off or not on:
                continue
            sr = ratio(off["time_ns"], on["time_ns"])
            rows.append((name, where, "%.3f" % before, "%.3f" % after, fmt(eager, "%.3f"),
                         "%.1fx" % (before / after), "%.1f" % (off["time_ns"] / 1e6),
                         "%.1f" % (on["time_ns"] / 1e6), fmt(eps and eps["time_ns"] / 1e6, "%.1f"),
                         "%.1fx" % sr, "%d / %d" % (off["faults"], on["faults"])))
    return table(["row", "where", "KVM zap, s", "KVM split, s", "KVM eager, s", "KVM ratio",
                  "sprig zap, ms", "sprig split, ms", "sprig eager, ms", "sprig ratio",
                  "sprig faults zap / split"], rows)


def compare_rmap(recs):
    p = proposals.RMAP
    rows_host = select(recs, "rmap_fork", where="host")
    clones = max([r["clones"] for r in rows_host] or [0])
    t = {(r["rmap_desc"], r.get("rmap_backref")): r["time_ns"] for r in rows_host
         if r["clones"] == clones}
    rows = []
    base = t.get(("ext3", "off"))
    for (desc, br), kvm in ((("ext3", "off"), p["rows"]["ext3"]),
                            (("ext14", "off"), p["rows"]["ext14"]),
                            (("counted", "off"), p["rows"]["counted"]),
                            (("counted", "on"), None)):
        mine = t.get((desc, br))
        rows.append(("%s, back-reference %s" % (desc, br), fmt(kvm, "%.2f"),
                     fmt(kvm and p["rows"]["ext3"] / kvm, "%.2fx"),
                     fmt(mine and mine / 1e6, "%.2f"),
                     fmt(mine and base and base / mine, "%.2fx")))
    return ("<p>sprig: host, %d clones (tests/bench/rmap_fork_bench.c).</p>\n" % clones +
            table(["layout", "KVM fork time", "KVM speedup vs ext3", "sprig ms",
                   "sprig speedup vs ext3"], rows))


def compare_prefetch(recs):
    p = proposals.PREFETCH
    rows = []
    for where in ("host", "qemu"):
        for chunk in ("2M", "512K", "4K"):
            off = one(recs, "prefetch", where=where, chunk=chunk, order="forward",
                      prefetch="off", adaptive="on")
            fwd = one(recs, "prefetch", where=where, chunk=chunk, order="forward",
                      prefetch="forward", adaptive="on")
            if not off or not fwd:
                continue
            kvm = p["rows"][chunk]
            if "metal_ms" in kvm:
                k = "metal %.1f -> %.1f ms (%+.0f%%), nested %.1f -> %.1f ms (%+.0f%%)" % (
                    kvm["metal_ms"] + (100 * (kvm["metal_ms"][1] / kvm["metal_ms"][0] - 1),) +
                    kvm["nested_ms"] + (100 * (kvm["nested_ms"][1] / kvm["nested_ms"][0] - 1),))
            elif "metal_pct" in kvm:
                k = "metal %+.1f%%, nested %+.0f%%" % (kvm["metal_pct"], kvm["nested_pct"])
            else:
                k = "%+.0f to %+.0f%% (no batching)" % kvm["regression_pct"]
            rows.append((chunk, where, k, "%.1f -> %.1f ms (%+.0f%%)" % (
                off["time_ns"] / 1e6, fwd["time_ns"] / 1e6,
                100 * (fwd["time_ns"] / off["time_ns"] - 1)),
                "%d -> %d (%.0fx)" % (off["faults"], fwd["faults"],
                                      ratio(off["faults"], fwd["faults"]))))
    return table(["chunk", "where", "KVM (forward prefetch)", "sprig time off -> forward",
                  "sprig faults off -> forward"], rows)


def compare(data, verdicts):
    recs = data["records"]
    out = [head("sprig and the KVM proposals"), "<h1>sprig and the KVM proposals</h1>\n",
           "<p>Each proposal's published figures beside sprig's measured rows from the run "
           "of %s (sprig %s, machine %s), with the ratios; the verdict lines are computed "
           "from this run's data against docs/targets.md. <a href=\"index.html\">Back to the "
           "report</a>.</p>\n" % (esc(data["date"]), esc(data["sprig_version"]),
                                   esc(data["machine"].get("hostname")))]
    for key, p, fn in (("leaf", proposals.LEAF_HINT, compare_leaf),
                       ("split", proposals.SPLIT, compare_split),
                       ("rmap", proposals.RMAP, compare_rmap),
                       ("prefetch", proposals.PREFETCH, compare_prefetch)):
        out.append("<h2>%s</h2>\n<p>Published: %s.</p>\n" % (esc(p["title"]), esc(p["source"])))
        out.append(fn(recs))
        out.append(verdict_list([v for v in verdicts if v["proposal"] == key]))
    out.append("<p>Where: %s.</p>\n</body></html>\n" % esc("; ".join(
        "%s = %s" % kv for kv in WHERE_NAMES.items())))
    return "".join(out)
