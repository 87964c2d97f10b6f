"""A short run of the soak's hostile-smp mode (tests/soak_smp.py) under QEMU
with 4 CPUs: a fixed seed, a bounded number of steps, every check of the soak
(storm guests' PASS lines and stops, keepers' data, audits, free memory).
And its hang report for real: a hostile `spin` VM run with no timeout keeps
the console waiting past a short limit, and the CPU dump from QEMU's monitor
must name the sprig functions the console CPU waits in (vm_run among its
callers) and not take the vCPU's CPU, in the guest, for sprig."""
import argparse
import io
import os
import random
import sys
from contextlib import redirect_stdout

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import soak_smp  # noqa: E402
from machine import GUESTS_DIR, PROMPT, Machine, Timeout, make_iso, scenario_main  # noqa: E402
from monitor import Qmp, Symbols  # noqa: E402

SCENARIOS = ["soak_smp_short", "soak_smp_hang_report"]
SEED = 25
STEPS = 14


def soak_smp_short(check):
    out = io.StringIO()
    args = argparse.Namespace(machine="qemu", seconds=0, steps=STEPS, qemu_mem="1G")
    with redirect_stdout(out):
        rc = soak_smp.run(args, SEED, random.Random(SEED))
    text = out.getvalue()
    check("soak-smp-qemu-%d-steps" % STEPS, rc == 0 and "; 0 failures" in text, text[-5000:])
    check("soak-smp-ran-storms", "storm passed, exited 0" in text, text[-3000:])


def soak_smp_hang_report(check):
    iso = make_iso("soak-hang", "", [os.path.join(GUESTS_DIR, "hostile.elf")])
    qmp = Qmp(os.path.join(os.path.dirname(iso), "soak-hang-%d.sock" % os.getpid()))
    m = Machine(iso, smp=2, mem="512M", extra=qmp.qemu_args())
    try:
        m.expect(PROMPT, timeout=120)
        m.command("vm create s hostile mem=8M cpus=1 -- spin")
        hung = False
        try:
            m.command("vm run s", timeout=15)
        except Timeout:
            hung = True
        check("hang-detected", hung, m.log[-2000:])
        dump = qmp.dump(Symbols())
        summary = dump.split("\n---", 1)[0]
        cpu0 = summary.split("cpu 1:")[0]
        cpu1 = "cpu 1:" + summary.split("cpu 1:")[-1]
        check("hang-console-cpu-in-sprig", "sprig: " in cpu0 and "vm_run" in cpu0, dump[:3000])
        check("hang-vcpu-cpu-not-sprig", "sprig: " not in cpu1 and "in a guest" in cpu1,
              dump[:3000])
        check("hang-full-registers", dump.count("RIP=") >= 2, dump[:3000])
    finally:
        qmp.close()
        m.close()


if __name__ == "__main__":
    scenario_main(globals(), "soak_smp_short")
