#!/usr/bin/env python3
"""sprig's test command: host unit tests (ASan+UBSan, then the concurrency
tests under TSan), a smoke run of the benchmarks, then the end-to-end boots
under QEMU (SeaBIOS, OVMF) and Bochs. Prints one line per check and closes
with 'N passed, N failed'.

  tests/run.py [SUITE...]   suites: unit tsan bench e2e (default: all)
"""
import os
import re
import subprocess
import sys
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))


class Results:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, name, ok, detail=""):
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


E2E_MODULES = ["e2e_boot", "e2e_guests", "e2e_bochs", "e2e_prefetch", "e2e_zap", "e2e_split",
               "e2e_rmap", "e2e_rmap_bench"]


def suite_e2e(res):
    import importlib
    for modname in E2E_MODULES:
        mod = importlib.import_module(modname)
        for name in mod.SCENARIOS:
            t = time.time()
            try:
                getattr(mod, name)(res.check)
            except Exception:
                res.check("e2e/%s" % name, False, traceback.format_exc()[-3000:])
            print("# e2e %s: %.1f s" % (name, time.time() - t), flush=True)


SUITES = {"unit": suite_unit, "tsan": suite_tsan, "bench": suite_bench, "e2e": suite_e2e}


def main():
    names = sys.argv[1:] or list(SUITES)
    res = Results()
    for n in names:
        SUITES[n](res)
    print("%d passed, %d failed" % (res.passed, res.failed))
    return 1 if res.failed else 0


if __name__ == "__main__":
    sys.exit(main())
