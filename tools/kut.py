#!/usr/bin/env python3
"""make kut: kvm-unit-tests' x86 suite, bare under QEMU TCG (the reference)
and under sprig, each test with its own verdict (docs/kut.md).

  tools/kut.py run [--tests A,B] [--no-bare]   build, run, print and save the table
  tools/kut.py build                           build only; prints the build directory

The source is KUT_SRC (a tarball or a source tree), else the newest
kvm-unit-tests-*.tar.gz in the shared folder beside the checkout. A tarball's
build is kept in build/kut/src-SHA (keyed by the tarball's contents); a tree
is copied to build/kut/tree and rebuilt incrementally.

Verdicts follow scripts/runtime.bash: QEMU's exit status (code << 1) | 1 with
code 0 is PASS, 77 (code 38, report_summary's "all skipped") is SKIP, anything
else FAIL; a test that outlives its timeout is TIMEOUT (a FAIL to runtime.bash,
shown apart so that a bare timeout is not held against sprig). Under sprig the
guest's isa-debug-exit code is the status `vm run` prints ("exited: status
CODE"); a VM that sprig stops is FAIL with sprig's reason.
"""
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
OUT = os.path.join(ROOT, "build", "kut")

SKIP_CODE = 77 >> 1  # report_summary: every test skipped

# What sprig answers to unittests.cfg's `check =` lines, which on a KVM host
# read the kvm module's parameters: sprig has no vPMU, no VMware backdoor and
# no smaller-MAXPHYADDR emulation, and ignores no MSRs.
SPRIG_CHECKS = {
    "/sys/module/kvm/parameters/enable_pmu": "N",
    "/sys/module/kvm/parameters/enable_vmware_backdoor": "N",
    "/sys/module/kvm/parameters/ignore_msrs": "N",
    "/sys/module/kvm_intel/parameters/allow_smaller_maxphyaddr": "N",
    "/proc/sys/kernel/nmi_watchdog": "0",
}

# sprig's VMs: at most this much memory (vm create's mem=).
SPRIG_MEM_MAX = 3 << 30
QEMU_SMP = 2
QEMU_MEM = os.environ.get("KUT_QEMU_MEM", "4G")


def make_env():
    """The environment for a nested make: not make kut's jobserver."""
    return {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}


def find_source():
    src = os.environ.get("KUT_SRC")
    if src:
        return os.path.abspath(src)
    dirs = [os.path.join(ROOT, "..", "shared")]
    # A worktree's shared folder is the main checkout's neighbour.
    p = subprocess.run(["git", "rev-parse", "--path-format=absolute", "--git-common-dir"],
                       cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    if p.returncode == 0 and p.stdout.strip():
        dirs.append(os.path.join(os.path.dirname(os.path.dirname(p.stdout.strip())), "shared"))
    for d in dirs:
        found = sorted(glob.glob(os.path.join(d, "kvm-unit-tests-*.tar.gz")))
        if found:
            return os.path.abspath(found[-1])
    raise SystemExit("kut: no kvm-unit-tests source: set KUT_SRC to a tarball or a checkout "
                     "(looked for kvm-unit-tests-*.tar.gz in %s)" % ", ".join(dirs))


def run_make(tree, log):
    with open(log, "a") as f:
        for argv in (["./configure", "--arch=x86_64"], ["make", "-j2"]):
            if argv[0] == "./configure" and os.path.exists(os.path.join(tree, "config.mak")):
                continue
            if subprocess.run(argv, cwd=tree, stdout=f, stderr=subprocess.STDOUT,
                              env=make_env()).returncode:
                raise SystemExit("kut: %s failed in %s (log: %s)" % (" ".join(argv), tree, log))


def build(src):
    """Build kvm-unit-tests from src; return the tree holding x86/*.flat."""
    os.makedirs(OUT, exist_ok=True)
    log = os.path.join(OUT, "build.log")
    if os.path.isdir(src):
        tree = os.path.join(OUT, "tree")
        shutil.copytree(src, tree, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".git"))
        run_make(tree, log)
        return tree
    with open(src, "rb") as f:
        key = hashlib.sha256(f.read()).hexdigest()[:16]
    base = os.path.join(OUT, "src-" + key)
    stamp = os.path.join(base, ".built")
    if not os.path.exists(stamp):
        shutil.rmtree(base, ignore_errors=True)
        with tarfile.open(src) as t:
            t.extractall(base)
        (top,) = os.listdir(base)
        run_make(os.path.join(base, top), log)
        open(stamp, "w").write(src + "\n")
    (top,) = [d for d in os.listdir(base) if not d.startswith(".")]
    return os.path.join(base, top)


def shell_words(text):
    """Words of a unittests.cfg value as runtime.bash's eval makes them
    (quotes removed, backticks run)."""
    if not text:
        return []
    p = subprocess.run(["bash", "-c", 'for w in %s; do printf "%%s\\0" "$w"; done' % text],
                       stdout=subprocess.PIPE, text=True)
    return [w for w in p.stdout.split("\0") if w]


def parse_cfg(path):
    tests, cur = [], None
    for line in open(path):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = re.match(r"^\[(.+)\]$", line)
        if m:
            cur = {"name": m.group(1)}
            tests.append(cur)
        elif cur is not None and "=" in line:
            k, v = line.split("=", 1)
            cur[k.strip()] = v.strip()
    return tests


class Test:
    def __init__(self, d, tree):
        self.name = d["name"]
        self.flat = os.path.join(tree, "x86", d["file"])
        self.smp = int(d.get("smp", "1"))
        self.args = shell_words(d.get("test_args", ""))
        self.qemu_params = shell_words(d.get("qemu_params", d.get("extra_params", "")))
        self.arch = d.get("arch", "")
        self.groups = d.get("groups", "").split()
        self.accel = d.get("accel", "")
        self.check = d.get("check", "").split()
        self.timeout = int(re.sub(r"s$", "", d.get("timeout", "90")))

    def seconds(self, scale):
        """The run's timeout: at least a second (timeout 0 would mean none)."""
        return max(1, int(round(self.timeout * scale)))

    def mem_bytes(self):
        """QEMU's -m (MiB unless suffixed), 128 MiB by default, as sprig's default."""
        p = self.qemu_params
        for i, w in enumerate(p[:-1]):
            if w == "-m":
                m = re.match(r"^(\d+)([MmGg]?)$", p[i + 1])
                if m:
                    return int(m.group(1)) << (30 if m.group(2) in "Gg" and m.group(2) else 20)
        return 128 << 20

    def skip_reason(self, checks):
        """runtime.bash's reasons not to run a test, for a machine whose
        check files read as checks(path) (None: no such file)."""
        if self.arch and self.arch != "x86_64":
            return "%s only" % self.arch
        if "nodefault" in self.groups:
            return "test marked as manual run only"
        for c in self.check:
            path, _, value = c.partition("=")
            if checks(path) != value:
                return "%s not equal to %s" % (path, value)
        if not os.path.exists(self.flat):
            return "Test file '%s' not found" % self.flat
        return None


def host_check(path):
    try:
        return open(path).read().strip()
    except OSError:
        return None


class Result:
    def __init__(self, verdict, summary="", seconds=0.0, detail="", failures=()):
        self.verdict, self.summary, self.seconds, self.detail = verdict, summary, seconds, detail
        self.failures = list(failures)  # the test's own FAIL lines

    def as_dict(self):
        return {"verdict": self.verdict, "summary": self.summary,
                "seconds": round(self.seconds, 1), "detail": self.detail,
                "failures": self.failures}


def failures_of(out):
    return re.findall(r"^FAIL: (.*?)\s*$", out, re.M)


def failing_note(bare, sprig):
    """A test that fails bare and under sprig: are sprig's failures the
    emulator's own (the same checks fail bare), or does sprig fail more?"""
    if not bare.summary and not bare.failures:
        return ("bare did not run it (%s); " % bare.detail + sprig.detail).rstrip("; ")
    extra = [f for f in sprig.failures if f not in bare.failures]
    if sprig.failures and not extra:
        return "fails bare too (QEMU TCG): the same %d of bare's %d checks" % (
            len(sprig.failures), len(bare.failures))
    if extra:
        return "%d checks fail under sprig that pass bare: %s" % (len(extra), extra[0])
    return sprig.detail


def summary_of(out):
    m = re.findall(r"^SUMMARY: (.*?)\s*$", out, re.M)
    return m[-1] if m else ""


def counts_of(summary):
    """(pass, fail, skip) of a SUMMARY line: 'N tests, N unexpected failures, ..., N skipped'."""
    def n(pat):
        m = re.search(r"(\d+) " + pat, summary)
        return int(m.group(1)) if m else 0
    tests, fails, skips = n("tests"), n("unexpected failures"), n("skipped")
    return max(tests - fails - skips, 0), fails, skips


def verdict_of_code(code):
    return "PASS" if code == 0 else "SKIP" if code == SKIP_CODE else "FAIL"


def run_bare(t, scale):
    """The test under QEMU TCG as x86/run starts it."""
    reason = t.skip_reason(host_check)
    if not reason and t.accel and t.accel != "tcg":
        reason = "%s only, but ACCEL=tcg" % t.accel
    if reason:
        return Result("SKIP", detail=reason)
    timeout = t.seconds(scale)
    cmd = ["timeout", "-k", "5", str(timeout), "qemu-system-x86_64", "--no-reboot", "-nodefaults",
           "-device", "pc-testdev", "-device", "isa-debug-exit,iobase=0xf4,iosize=0x4",
           "-display", "none", "-serial", "stdio", "-device", "pci-testdev",
           "-machine", "accel=tcg", "-kernel", t.flat, "-smp", str(t.smp)] + t.qemu_params
    if t.args:
        cmd += ["-append", " ".join(t.args)]
    start = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       errors="replace", stdin=subprocess.DEVNULL)
    secs = time.time() - start
    out, err = p.stdout, p.stderr.strip()
    s = p.returncode
    summary = summary_of(out)
    if s == 124 or s == 137:
        return Result("TIMEOUT", summary, secs, "timeout; duration=%ds" % timeout,
                      failures_of(out))
    if not out.strip() and err:
        # QEMU could not start it (premature_failure): runtime.bash skips.
        return Result("SKIP", "", secs, err.splitlines()[-1])
    if s == 1 and err and any("warning" not in l.lower() for l in err.splitlines()):
        return Result("FAIL", summary, secs, err.splitlines()[-1], failures_of(out))
    if s == 0:
        return Result("FAIL", summary, secs, "exited without isa-debug-exit", failures_of(out))
    code = s >> 1 if s & 1 else -1
    return Result(verdict_of_code(code), summary, secs, "" if code >= 0 else "status %d" % s,
                  failures_of(out))


def sprig_iso(tests):
    """A sprig ISO carrying each test's .flat as a GRUB module named after
    the file (QEMU's -kernel and sprig's mb1 loader both boot it: a
    multiboot ELF)."""
    from machine import make_iso
    d = os.path.join(OUT, "modules")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    mods = []
    # Only what sprig runs: a test skipped (another arch, no .flat built) is not carried.
    for f in sorted({t.flat for t in tests if not t.skip_reason(SPRIG_CHECKS.get)}):
        dst = os.path.join(d, module_name(f) + ".elf")
        shutil.copy(f, dst)
        mods.append(dst)
    return make_iso("kut", "", mods)


def module_name(flat):
    return os.path.basename(flat)[:-len(".flat")]


class SprigSession:
    """One sprig boot under QEMU running tests one after another: vm create,
    vm run with the test's timeout, vm destroy. A boot that dies or stops
    answering is replaced by a fresh one."""

    def __init__(self, iso, backend="svm"):
        self.iso = iso
        self.backend = backend
        self.m = None
        self.n = 0

    def boot(self):
        """sprig under QEMU (AMD SVM) or Bochs (Intel VMX, one CPU)."""
        from machine import BochsConsole, Machine, PROMPT
        self.close()
        if self.backend == "vmx":
            self.m = BochsConsole(self.iso)
            self.m.expect(PROMPT, timeout=600)
        else:
            self.m = Machine(self.iso, smp=QEMU_SMP, mem=QEMU_MEM)
            self.m.expect(PROMPT, timeout=120)

    def close(self):
        if self.m:
            self.m.close()
            self.m = None

    def run(self, t, scale):
        from machine import PROMPT, Timeout, guest_lines
        reason = t.skip_reason(SPRIG_CHECKS.get)
        if reason:
            return Result("SKIP", detail=reason)
        if not self.m:
            self.boot()
        self.n += 1
        vm = "kut%d" % self.n
        timeout = t.seconds(scale)
        mem = min(t.mem_bytes(), SPRIG_MEM_MAX)
        create = "vm create %s %s mem=%dM vcpus=%d" % (vm, module_name(t.flat), mem >> 20, t.smp)
        if t.args:
            create += " -- " + " ".join(t.args)
        start = time.time()
        try:
            out = self.m.command(create, timeout=60)
            if "created" not in out:
                return Result("FAIL", "", time.time() - start, out.strip().splitlines()[-1])
            try:
                out = self.m.command("vm run %s timeout=%d" % (vm, timeout), timeout=timeout + 60)
            except Timeout:
                if self.backend != "vmx":
                    raise
                # Bochs's clock counts instructions: a guest that makes each
                # one slow (a TLB flush per MOV to CR0) keeps its guest time
                # from running out for hours of wall time. Ctrl-C tells such a
                # guest from a sprig that stopped answering.
                self.m.send("\x03")
                out = self.m.expect(PROMPT, timeout=60)
            secs = time.time() - start
            stats = self.m.command("stats %s" % vm, timeout=60)
            self.m.command("vm destroy %s" % vm, timeout=60)
        except Timeout as e:
            self.close()
            return Result("FAIL", "", time.time() - start, "sprig stopped answering: %s" %
                          str(e).splitlines()[-1])
        text = "\n".join(guest_lines(out, vm))
        summary = summary_of(text)
        m = re.search(r"^vm %s exited: status (-?\d+)" % vm, out, re.M)
        if m:
            r = Result(verdict_of_code(int(m.group(1))), summary, secs)
        elif re.search(r"^vm %s stopped: Ctrl-C after \d+ ms \(paused" % vm, out, re.M):
            r = Result("TIMEOUT", summary, secs, "guest time not up after %ds of wall time "
                       "(Bochs's clock); Ctrl-C paused it" % secs)
        elif re.search(r"^vm %s stopped: .* after \d+ ms \(paused" % vm, out, re.M):
            r = Result("TIMEOUT", summary, secs, "timeout; duration=%ds" % timeout)
        else:
            m = re.search(r"^vm %s stopped: (.*)$" % vm, out, re.M)
            r = Result("FAIL", summary, secs, m.group(1) if m else out.strip()[-300:])
        r.failures = failures_of(text)
        r.counters = {k: int(v) for k, v in re.findall(r"^\s*(\w+)\s+(\d+)\s*$", stats, re.M)}
        r.exits = {k[len("exits_"):]: n for k, n in r.counters.items() if k.startswith("exits_")}
        r.output = out
        return r


def select(tests, names):
    if not names:
        return tests
    want = set(names)
    unknown = want - {t.name for t in tests}
    if unknown:
        raise SystemExit("kut: no such test in unittests.cfg: %s" % ", ".join(sorted(unknown)))
    return [t for t in tests if t.name in want]


def load_tests(tree):
    return [Test(d, tree) for d in parse_cfg(os.path.join(tree, "x86", "unittests.cfg"))]


def table(rows):
    """The results table: test, bare verdict, sprig verdict, the counts of
    sprig's SUMMARY line, the seconds of each."""
    lines = ["%-40s %-8s %-8s %6s %6s %6s %8s %8s  %s" % (
        "test", "bare", "sprig", "pass", "fail", "skip", "bare_s", "sprig_s", "note")]
    for name, bare, sprig in rows:
        p, f, s = counts_of(sprig.summary) if sprig.summary else ("-", "-", "-")
        note = sprig.detail if sprig.verdict != "PASS" else ""
        if bare.verdict == "FAIL" and sprig.verdict == "FAIL":
            note = failing_note(bare, sprig)
        if bare.verdict == "TIMEOUT":
            note = ("bare timed out; " + note).rstrip("; ")
        lines.append("%-40s %-8s %-8s %6s %6s %6s %8.1f %8.1f  %s" % (
            name, bare.verdict, sprig.verdict, p, f, s, bare.seconds, sprig.seconds, note[:80]))
    return lines


def summary_line(rows):
    def count(i, v):
        return sum(1 for r in rows if r[i].verdict == v)
    both = sum(1 for _, b, s in rows if b.verdict == "PASS" and s.verdict == "PASS")
    bare_pass = count(1, "PASS")
    return ("kut: %d tests; bare %d pass, %d fail, %d timeout, %d skip; sprig %d pass, %d fail, "
            "%d timeout, %d skip; %d of the %d that pass bare pass under sprig" % (
                len(rows), bare_pass, count(1, "FAIL"), count(1, "TIMEOUT"), count(1, "SKIP"),
                count(2, "PASS"), count(2, "FAIL"), count(2, "TIMEOUT"), count(2, "SKIP"),
                both, bare_pass))


def main():
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["run", "build"])
    ap.add_argument("--tests", default=os.environ.get("KUT_TESTS", ""),
                    help="comma-separated test names (default: all)")
    ap.add_argument("--no-bare", action="store_true", help="skip the bare QEMU runs")
    ap.add_argument("--backend", choices=["svm", "vmx"], default="svm",
                    help="sprig on AMD SVM under QEMU (default) or Intel VMX under Bochs")
    ap.add_argument("--scale", type=float, default=float(os.environ.get("KUT_TIMEOUT_SCALE", "2")),
                    help="multiply each test's timeout (default 2: TCG is slow)")
    a = ap.parse_args()
    src = find_source()
    tree = build(src)
    if a.cmd == "build":
        print(tree)
        return 0
    scale = a.scale
    tests = select(load_tests(tree), [n for n in a.tests.split(",") if n])
    print("kut: %s, %d tests" % (src, len(tests)), flush=True)
    bare = {}
    for t in tests:
        bare[t.name] = Result("SKIP", detail="not run (--no-bare)") if a.no_bare else \
            run_bare(t, scale)
        print("bare  %-40s %s %s" % (t.name, bare[t.name].verdict, bare[t.name].detail), flush=True)
    session = SprigSession(sprig_iso(tests), a.backend)
    rows, record = [], []
    logs = os.path.join(OUT, "logs")
    os.makedirs(logs, exist_ok=True)
    try:
        for t in tests:
            r = session.run(t, scale)
            print("sprig %-40s %s %s" % (t.name, r.verdict, r.detail), flush=True)
            rows.append((t.name, bare[t.name], r))
            rec = {"test": t.name, "bare": bare[t.name].as_dict(), "sprig": r.as_dict()}
            if getattr(r, "exits", None):
                rec["sprig"]["exits"] = r.exits
            record.append(rec)
            if getattr(r, "output", None):
                with open(os.path.join(logs, t.name + ".log"), "w") as f:
                    f.write(r.output)
    finally:
        session.close()
    lines = table(rows) + [summary_line(rows)]
    print("\n".join(lines))
    stem = os.path.join(OUT, "results" + ("" if a.backend == "svm" else "-" + a.backend))
    with open(stem + ".txt", "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(stem + ".json", "w") as f:
        json.dump({"source": src, "backend": a.backend, "results": record}, f, indent=1)
    print("kut: results in %s.txt and .json" % os.path.relpath(stem, ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
