#!/usr/bin/env python3
"""sprig's test command: the layer rules of the include lines (docs/layers.md),
host unit tests (ASan+UBSan, then the concurrency
tests under TSan), a smoke run of the benchmarks, short runs of the fuzz
targets (clang libFuzzer), then the end-to-end boots under QEMU (SeaBIOS,
OVMF) and Bochs, in two lanes side by side. Prints one line per check and
closes with 'N passed, N failed'.

  tests/run.py [SUITE...]   suites: unit tsan bench report fuzz e2e (default: all)
"""
import html
import json
import os
import re
import subprocess
import sys
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))


class Results:
    """The checks' counts; the lanes of main() check at the same time."""

    def __init__(self):
        import threading
        self.passed = 0
        self.failed = 0
        self.lock = threading.Lock()

    def check(self, name, ok, detail=""):
        with self.lock:
            if ok:
                self.passed += 1
                print("ok " + name, flush=True)
            else:
                self.failed += 1
                print("FAIL " + name + (": " + detail if detail else ""), flush=True)
        return ok


def host_program(res, suite, argv):
    """Run a host test program; each 'ok NAME' / 'FAIL NAME' line is one check."""
    t = time.time()
    p = subprocess.run(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    seen = 0
    for line in p.stdout.splitlines():
        m = re.match(r"^(ok|FAIL) (\S+)", line)
        if m:
            seen += 1
            res.check("%s/%s" % (suite, m.group(2)), m.group(1) == "ok")
        elif line.startswith("  ") or "ERROR" in line or "WARNING" in line:
            print(line)
    res.check("%s/exit" % suite, p.returncode == 0 and seen > 0,
              "exit %d, %d tests; tail:\n%s" % (p.returncode, seen, p.stdout[-3000:]))
    print("# %s: %.1f s" % (suite, time.time() - t), flush=True)


def suite_unit(res):
    # The include lines against docs/layers.md: a lower layer never reaches up.
    host_program(res, "layers", [sys.executable, "tools/layers.py"])
    host_program(res, "unit", ["build/host/unit"])


def suite_tsan(res):
    host_program(res, "tsan", ["build/host/unit-tsan", "conc_"])


def suite_bench(res):
    t = time.time()
    p = subprocess.run(["build/host/bench", "--smoke"], cwd=ROOT, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    lines = [l for l in p.stdout.splitlines() if l.startswith("@bench ")]
    res.check("bench/smoke", p.returncode == 0 and len(lines) > 0,
              "exit %d, %d @bench lines; tail:\n%s" % (p.returncode, len(lines), p.stdout[-2000:]))
    print("# bench: %.1f s" % (time.time() - t), flush=True)


REPORT_PY = os.environ.get("REPORT_PY", "/usr/bin/python3")


def unescape(text):
    import html
    return html.unescape(text)


def check_report_smp(res, name, sample, pages, lines):
    """The concurrency experiments on the rendered pages: the fault-wait and
    exec/dirty figures, one fault-wait table row per `bench zap PATTERN
    vcpus=N` record, the proposal's p99.9 beside sprig's, the fault-wait and
    stale verdicts, and the stale table's verdict as the sample's rows give it
    (met only when no round hit with the remote flush and some did without);
    the same table with a hit under the flush must say "not met"."""
    import copy
    sys.path.insert(0, ROOT)
    from tools.report import page, verdicts
    with open(sample) as f:
        recs = json.load(f)["records"]
    index = pages["index.html"]
    res.check("report/%s-smp-figures" % name,
              re.search(r'<img src="smp_fault_wait_qemu\.png"', index) is not None and
              re.search(r'<img src="smp_exec_dirty_qemu\.png"', index) is not None and
              "not SMP yet" not in index, index[-3000:])
    zap_rows = [r for r in recs if r.get("bench") == "zap" and "vcpus" in r]
    table = re.search(r"<th>proposal p99\.9, us</th>.*?</table>", index, re.S)
    res.check("report/%s-fault-wait-table" % name,
              len(zap_rows) >= 4 and table is not None and
              table.group(0).count("<tr>") == len(zap_rows) and
              "78 -&gt; 61 (1.28x)" in pages["compare.html"] and
              "62 -&gt; 38 (1.63x)" in pages["compare.html"],
              "%d rows; %s" % (len(zap_rows), table and table.group(0)[:2000]))
    res.check("report/%s-smp-verdicts" % name,
              sum("zap_vcpus_fault_wait_p999_ratio" in l for l in lines) == len(zap_rows) // 2
              and any("stale_hits_remote_flush_on" in l for l in lines) and
              any("stale_hits_remote_flush_off" in l for l in lines), "\n".join(lines))
    check_report_smp_counts_and_clocks(res, name, recs, index, lines)

    def stale_row(records):
        html = page.stale_table(records, verdicts.compute(records))
        m = re.search(r"<tr><td>qemu</td><td>(\d+) of \d+ \(data=ok\)</td>"
                      r"<td>(\d+) of \d+ \(data=ok\)</td><td>([a-z ]+)</td></tr>", html)
        return m.groups() if m else html
    on = [r for r in recs if r.get("bench") == "stale" and r.get("remote_flush") == "on"]
    off = [r for r in recs if r.get("bench") == "stale" and r.get("remote_flush") == "off"]
    want = "met" if on and off and on[0]["hits"] == 0 and off[0]["hits"] > 0 else "not met"
    got = stale_row(recs)
    res.check("report/%s-stale-table" % name,
              len(on) == 1 and len(off) == 1 and
              got == (str(on[0]["hits"]), str(off[0]["hits"]), want) and
              "<p id=\"stale\">" in index and
              re.sub(r"\s+", " ", page.stale_table(recs, verdicts.compute(recs))) in
              re.sub(r"\s+", " ", index), "want %s; got %r" % (want, got))
    hit = copy.deepcopy(recs)
    for r in hit:
        if r.get("bench") == "stale" and r.get("remote_flush") == "on":
            r["hits"] += 1
    res.check("report/%s-stale-hit-not-met" % name,
              on and stale_row(hit) == (str(on[0]["hits"] + 1), str(off[0]["hits"]), "not met"),
              repr(stale_row(hit)))


def check_report_smp_counts_and_clocks(res, name, recs, index, lines):
    """Several vCPU counts in one figure per where; the zaps' hold times in a
    figure of their own and in the table; the rows measured in virtual time
    (verdicts.VIRTUAL_TIME) judged by their own target, met exactly when
    their p99.9 off / on is, and "not met" once the hint's p99.9 equals the
    other's."""
    import copy
    from tools.report import verdicts
    zap = [r for r in recs if r.get("bench") == "zap" and "vcpus" in r]
    counts = {r["vcpus"] for r in zap if r["where"] == "qemu"}
    table = re.search(r"<th>proposal p99\.9, us</th>.*?</table>", index, re.S)
    res.check("report/%s-smp-vcpu-counts" % name,
              len(counts) >= 3 and table is not None and
              all("<td>%d</td>" % n in table.group(0) for n in counts) and
              index.count('<img src="smp_fault_wait_qemu.png"') == 1, str(sorted(counts)))
    held = [r for r in zap if "zap_hold_p999_ns" in r]
    res.check("report/%s-zap-hold" % name,
              held and '<img src="smp_zap_hold_qemu.png"' in index and
              "<th>hold p99.9, us</th>" in index, "%d rows with holds" % len(held))
    virtual = [r for r in zap if r["where"] in verdicts.VIRTUAL_TIME and
               r["pattern"].startswith("same")]

    def judged(records):
        """{(pattern, vcpus): met} of the virtual-time verdicts."""
        return {tuple(v["label"].split(",")[0].split(" vcpus=")): v["met"]
                for v in verdicts.compute(records)
                if v["key"] == "zap_vcpus_fault_wait_p999_ratio_virtual"}
    want = {}
    for r in virtual:
        if r["leaf_hint"] == "off":
            on = [o for o in virtual if o["leaf_hint"] == "on" and o["pattern"] == r["pattern"]
                  and o["vcpus"] == r["vcpus"]][0]
            want[(r["pattern"], str(r["vcpus"]))] = \
                r["fault_wait_p999_ns"] >= 1.125 * on["fault_wait_p999_ns"]
    res.check("report/%s-virtual-verdicts" % name,
              want and judged(recs) == want and
              sum("zap_vcpus_fault_wait_p999_ratio_virtual" in l for l in lines) == len(want),
              "want %s; got %s" % (want, judged(recs)))
    same = copy.deepcopy(recs)
    for r in same:
        if r.get("where") in verdicts.VIRTUAL_TIME and r.get("leaf_hint") == "on" and \
                "vcpus" in r and r.get("bench") == "zap":
            r["fault_wait_p999_ns"] = [o for o in same if o.get("bench") == "zap" and
                                       o.get("where") == r["where"] and
                                       o.get("leaf_hint") == "off" and
                                       o.get("vcpus") == r["vcpus"] and
                                       o.get("pattern") == r["pattern"]][0]["fault_wait_p999_ns"]
    res.check("report/%s-virtual-equal-not-met" % name,
              judged(same) and not any(judged(same).values()), str(judged(same)))


def check_report_linux_restore(res, name, sample, pages):
    """bench prefetch guest=linux on the comparison page: a table row for each
    chunk size of the sample's Linux restore rows, every mode's faults as the
    records give them."""
    with open(sample) as f:
        recs = [r for r in json.load(f)["records"]
                if r.get("bench") == "prefetch" and r.get("where") == "linux"]
    if not recs:
        return
    table = re.search(r"In a Linux guest \(bench prefetch guest=linux\).*?</table>",
                      pages["compare.html"], re.S)
    res.check("report/%s-linux-restore-rows" % name,
              table is not None and
              table.group(0).count("<tr>") == len({r["chunk"] for r in recs}) + 1 and
              all("%d faults" % r["faults"] in table.group(0) for r in recs),
              table.group(0)[:3000] if table else pages["compare.html"][-3000:])


def check_report_scale(res, name, sample, pages, lines):
    """The scale section, for a sample with its rows: both figures, the exit
    table with the bare loops' cycles, the fault and share tables, and a
    verdict for each scale target, the exit rate's computed from the rows
    (against the bare VMMCALL loop without nested paging, mode svm)."""
    with open(sample) as f:
        recs = json.load(f)["records"]
    loops = [r for r in recs if r.get("bench") == "exitloop" and r["where"] == "bare"]
    bare = [r for r in loops if r["mode"] == "svm"]
    fault = [r for r in recs if r.get("bench") == "faults" and r.get("vcpus") == 1]
    if not bare or not fault:
        return
    index = pages["index.html"]
    res.check("report/%s-scale-figures" % name,
              "scale_vcpus.png" in index and "scale_exit_cost.png" in index, index[-3000:])
    res.check("report/%s-scale-tables" % name,
              "cycles per exit" in index and
              all("<td>%d</td>" % r["cycles_per_exit"] in index for r in loops) and
              "least share of its CPU, %" in index and "boot, s (min..max)" in index,
              index[-3000:])
    keys = ("fault_curve_time_slope", "boot_curve_time_slope", "fault_exit_rate_of_limit",
            "share_cpu_min_pct", "share_cpu_max_pct")
    res.check("report/%s-scale-verdicts" % name,
              all(any(": %s = " % k in l for l in lines) for k in keys), "\n".join(lines))
    pv = [r for r in recs if r.get("bench") == "pv"]
    if pv:
        res.check("report/%s-pv-table" % name, "PV TLB flushes (IPIs avoided)" in index and
                  all("<td>%d</td>" % r["pv_tlb_flushes"] in index for r in pv), index[-3000:])
    rate = "%.3f" % (bare[0]["cycles_per_exit"] / fault[0]["cycles_per_fault"])
    res.check("report/%s-scale-exit-rate" % name,
              any(": fault_exit_rate_of_limit = %s " % rate in l for l in lines),
              "%s\n%s" % (rate, "\n".join(lines)))


def suite_report(res):
    """make report's rendering, from the runs recorded in tests/report/sample/:
    the pages and every image they name exist and are not empty, the pages hold
    no script, inline SVG, data: URI or network address, and the verdicts are
    computed from the data (the sample misses a target: its verdict must say
    "not met", and every verdict line must be on the page). Debian's python3
    renders (REPORT_PY), as in make report: python3-matplotlib is there. The
    several-vCPU part: check_report_smp."""
    import glob
    import tempfile
    t = time.time()
    samples = sorted(glob.glob(os.path.join(ROOT, "tests", "report", "sample", "*.json")))
    res.check("report/samples", bool(samples), "no tests/report/sample/*.json")
    for sample in samples:
        name = os.path.basename(sample)[:-5]
        with tempfile.TemporaryDirectory(prefix="sprig-report-") as out:
            p = subprocess.run([REPORT_PY, "-m", "tools.report", "render", sample, "--out", out],
                               cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
            res.check("report/%s-render" % name, p.returncode == 0, p.stdout[-3000:])
            pages = {}
            for page in ("index.html", "compare.html"):
                path = os.path.join(out, page)
                pages[page] = open(path).read() if os.path.exists(path) else ""
                res.check("report/%s-%s" % (name, page), len(pages[page]) > 1000, path)
            text = "".join(pages.values())
            imgs = re.findall(r'<img src="([^"]+)"', text)
            missing = [i for i in imgs if not os.path.isfile(os.path.join(out, i)) or
                       os.path.getsize(os.path.join(out, i)) == 0]
            res.check("report/%s-images" % name, len(imgs) >= 8 and not missing,
                      "%d images, missing or empty: %s" % (len(imgs), missing))
            res.check("report/%s-no-script-svg-data" % name,
                      not re.search(r"<script|<svg|<iframe|<link|url\(|"
                                    r"(?:src|href)\s*=\s*\"\s*(?:data|https?|javascript):",
                                    text, re.I),
                      text[:2000])
            lines = [l[len("verdict: "):] for l in p.stdout.splitlines()
                     if l.startswith("verdict: ")]
            shown = unescape(text)
            res.check("report/%s-verdicts" % name,
                      len(lines) >= 10 and any(l.endswith(": not met") or ": not met;" in l
                                               for l in lines) and
                      all(l in shown for l in lines),
                      "\n".join(lines))
            check_report_smp(res, name, sample, pages, lines)
            check_report_linux_restore(res, name, sample, pages)
            check_report_scale(res, name, sample, pages, lines)
    check_report_kut(res)
    print("# report: %.1f s" % (time.time() - t), flush=True)


def check_report_kut(res):
    """make report shows the kvm-unit-tests tables make kut wrote, each
    line as written (escaped), and says so when there is none."""
    import tempfile
    from tools.report import kut
    lines = ["test   bare   sprig", "pku    SKIP   PASS", "x<y>   FAIL   FAIL  a&b",
             "kut: 2 tests; sprig 1 pass"]
    with tempfile.TemporaryDirectory(prefix="sprig-kut-") as root:
        os.makedirs(os.path.join(root, "build", "kut"))
        with open(os.path.join(root, "build", "kut", "results-vmx.txt"), "w") as f:
            f.write("\n".join(lines) + "\n")
        tables = kut.recorded(root)
        shown = kut.section(tables)
    res.check("report/kut-table", len(tables) == 1 and tables[0]["backend"] == "vmx" and
              all(html.escape(l) in shown for l in lines) and "x<y>" not in shown, shown)
    res.check("report/kut-none", "No results recorded" in kut.section([]))


def fuzz_targets():
    """FUZZ_TARGETS from the Makefile, and the make environment to build them:
    a make above us (make test) must not hand its jobserver down through run.py."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    p = subprocess.run(["make", "-s", "--no-print-directory", "fuzz-targets"], cwd=ROOT, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return p.stdout.split() if p.returncode == 0 else [], env


def fuzz_inputs(d):
    if not os.path.isdir(d):
        return []
    return sorted(os.path.join(d, f) for f in os.listdir(d)
                  if not f.startswith(".") and os.path.isfile(os.path.join(d, f)))


def suite_fuzz(res):
    """Each fuzz target (tests/fuzz/README.md): built; its seed corpus and past
    crashes replayed (NAME-replay); then 20000 deterministic runs mutating them,
    in a temporary copy so that the repository is not written (NAME-run)."""
    import concurrent.futures
    import shutil
    import tempfile
    t = time.time()
    targets, env = fuzz_targets()
    if not targets:
        res.check("fuzz/targets", False, "make fuzz-targets listed none")
        return
    bins = {n: os.path.join("build", "fuzz", "fuzz_" + n) for n in targets}

    def build(name):
        return subprocess.run(["make", "--no-print-directory", bins[name]], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    # Packages first (tools/deps.sh fuzz), then the targets side by side.
    subprocess.run(["make", "-s", "--no-print-directory", "fuzz-deps"], cwd=ROOT, env=env)
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        builds = dict(zip(targets, pool.map(build, targets)))
    for b in builds.values():
        for line in b.stdout.splitlines():
            if "warning:" in line or "error:" in line:
                print("  " + line)
    print("# fuzz build: %.1f s" % (time.time() - t), flush=True)
    crash_dir = os.path.join(ROOT, "build", "fuzz", "crashes")
    os.makedirs(crash_dir, exist_ok=True)
    for name in targets:
        t = time.time()
        binary = os.path.join(ROOT, bins[name])
        corpus = fuzz_inputs(os.path.join(ROOT, "tests", "fuzz", "corpus", name))
        crashes = fuzz_inputs(os.path.join(ROOT, "tests", "fuzz", "crashes", name))
        if builds[name].returncode != 0:
            detail = "build failed; tail:\n" + builds[name].stdout[-3000:]
            res.check("fuzz/%s-replay" % name, False, detail)
            res.check("fuzz/%s-run" % name, False, detail)
            continue
        r = subprocess.run([binary, "-timeout=30"] + corpus + crashes, cwd=ROOT,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           errors="replace")
        executed = len(re.findall(r"^Executed ", r.stdout, re.M))
        res.check("fuzz/%s-replay" % name,
                  r.returncode == 0 and bool(corpus) and executed == len(corpus) + len(crashes),
                  "exit %d, %d of %d inputs run (%d seeds, %d past crashes); tail:\n%s"
                  % (r.returncode, executed, len(corpus) + len(crashes), len(corpus),
                     len(crashes), r.stdout[-3000:]))
        with tempfile.TemporaryDirectory(prefix="sprig-fuzz-") as tmp:
            for f in corpus + crashes:
                shutil.copy(f, tmp)
            r = subprocess.run([binary, "-seed=1", "-runs=20000", "-merge=0", "-timeout=30",
                                "-artifact_prefix=%s/%s-" % (crash_dir, name), tmp], cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               errors="replace")
        res.check("fuzz/%s-run" % name, r.returncode == 0 and "Done 20000 runs" in r.stdout,
                  "exit %d (a crash's input is saved in build/fuzz/crashes/); tail:\n%s"
                  % (r.returncode, r.stdout[-3000:]))
        print("# fuzz %s: %.1f s" % (name, time.time() - t), flush=True)


E2E_MODULES = ["e2e_boot", "e2e_guests", "e2e_bochs", "e2e_prefetch", "e2e_zap", "e2e_split",
               "e2e_rmap", "e2e_rmap_bench", "e2e_hvwrite", "e2e_hostile", "e2e_soak_smp",
               "e2e_input", "e2e_apic", "e2e_pc", "e2e_smp_guest", "e2e_smp", "e2e_vcpus", "e2e_crwin",
               "e2e_console", "e2e_grub_entry", "e2e_vcpus_snap",
               "e2e_safety", "e2e_selftest", "e2e_uart", "lab_check", "e2e_linux", "e2e_linux_snap",
               "e2e_linux_bench", "e2e_linux_fork", "e2e_linux_restore", "e2e_virtio",
               "e2e_kut"]


def e2e_scenarios(bochs):
    """(module, scenario) of E2E_MODULES in order: those that boot Bochs
    (their names say bochs or vmx) or the others."""
    import importlib
    out = []
    for modname in E2E_MODULES:
        mod = importlib.import_module(modname)
        out += [(mod, n) for n in mod.SCENARIOS if ("bochs" in n or "vmx" in n) == bochs]
    return out


def run_scenario(res, mod, name):
    t = time.time()
    try:
        getattr(mod, name)(res.check)
    except Exception:
        res.check("e2e/%s" % name, False, traceback.format_exc()[-5000:])
    print("# e2e %s: %.1f s" % (name, time.time() - t), flush=True)


SUITES = {"unit": suite_unit, "tsan": suite_tsan, "bench": suite_bench, "report": suite_report,
          "fuzz": suite_fuzz, "e2e": None}


def main():
    """The host suites alone (their concurrency tests measure how threads
    interleave), then the boots in two lanes side by side, as the machine
    has two CPUs and an emulator mostly keeps one busy: the Bochs scenarios
    (one Bochs at a time) then QEMU scenarios from the end of their list; and
    QEMU scenarios from its front."""
    import collections
    import concurrent.futures
    import threading
    import machine
    names = sys.argv[1:] or list(SUITES)
    unknown = [n for n in names if n not in SUITES]
    if unknown:
        print("unknown suite %s; suites: %s" % (", ".join(unknown), " ".join(SUITES)))
        return 2
    res = Results()
    for n in names:
        if n != "e2e":
            SUITES[n](res)
    e2e = "e2e" in names
    qemu_left = collections.deque(e2e_scenarios(bochs=False) if e2e else [])
    taking = threading.Lock()

    def run_qemu_scenarios(from_end):
        while True:
            with taking:
                if not qemu_left:
                    return
                mod, name = qemu_left.pop() if from_end else qemu_left.popleft()
            run_scenario(res, mod, name)

    def bochs_then_qemu():
        machine.LANE.name = "bochs"
        for mod, name in e2e_scenarios(bochs=True) if e2e else []:
            run_scenario(res, mod, name)
        run_qemu_scenarios(from_end=True)

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        lanes = [pool.submit(bochs_then_qemu), pool.submit(run_qemu_scenarios, False)]
        for lane in lanes:
            lane.result()
    print("%d passed, %d failed" % (res.passed, res.failed))
    return 1 if res.failed else 0


if __name__ == "__main__":
    sys.exit(main())
