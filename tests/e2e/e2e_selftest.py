"""`selftest` under QEMU SeaBIOS (SVM, -smp 2): every check PASSes, the summary
says so, the time is printed (the issue asks for under 90 s; QEMU's timing is
too noisy to assert), and a later `poweroff` exits cleanly. Then a boot that
makes it fail: without the hello and smp modules (their checks SKIP, saying
why) and with a VM already named st-touch (guest-touch cannot create its VM
and FAILs), so that `poweroff` writes 1 to isa-debug-exit first: QEMU exits
with status 3."""
import os
import re
import time

from machine import GUESTS_DIR, PROMPT, Machine, make_iso, run_bochs, split_run_output

SCENARIOS = ["qemu_selftest", "bochs_selftest"]

GUESTS = ["hello", "touch", "fpu", "apic", "pc", "smp", "exec", "rmapread", "restore_touch"]
CHECKS = ["caps", "guest-hello", "guest-touch", "guest-fpu", "guest-apic", "guest-pc",
          "guest-smp", "leaf-hint", "split-on-fault", "rmap-counted", "prefetch", "audit"]
LINE = re.compile(r"^selftest: ([a-z0-9-]+): (PASS|FAIL|SKIP)(?: \((.*)\))?$", re.M)
SUMMARY = re.compile(r"^selftest: (\d+) passed, (\d+) failed, (\d+) skipped$", re.M)


def verdicts(out):
    return {name: (v, why) for name, v, why in LINE.findall(out)}


def modules(names):
    return [os.path.join(GUESTS_DIR, g + ".elf") for g in names]


def guest_failures(out, check_name):
    """A guest check's own FAIL lines (its VM is st-NAME), to say why it failed."""
    vm = "st-" + check_name[len("guest-"):] if check_name.startswith("guest-") else None
    lines = [l for l in out.splitlines() if vm and l.startswith("[%s] " % vm) and "FAIL" in l]
    return "".join("\n  " + l for l in lines[:8])


def qemu_selftest(check):
    m = Machine(make_iso("selftest", "", modules(GUESTS)), smp=2)
    try:
        m.expect(PROMPT, timeout=60)
        t = time.time()
        out = m.command("selftest", timeout=300)
        secs = time.time() - t
        print("  selftest took %.1f s under QEMU TCG (the issue's limit: 90 s)" % secs)
        v = verdicts(out)
        check("selftest/every-check-reported", sorted(v) == sorted(CHECKS), out)
        for name in CHECKS:
            check("selftest/%s-pass" % name, v.get(name, ("none",))[0] == "PASS",
                  "%s: %r%s" % (name, v.get(name), guest_failures(out, name)))
        check("selftest/summary", "selftest: %d passed, 0 failed, 0 skipped" % len(CHECKS)
              in out, out[-800:])
        check("selftest/caps-names-backend", "svm with npt" in v.get("caps", ("", ""))[1],
              str(v.get("caps")))
        m.send("poweroff\r")
        rc = m.wait_exit(timeout=30)
        check("selftest/poweroff-clean", rc == 0 and "selftest failed" not in m.log, "rc=%r" % rc)
    finally:
        m.close()

    m = Machine(make_iso("selftest-fail", "", modules(g for g in GUESTS
                                                      if g not in ("hello", "smp"))),
                smp=2)
    try:
        m.expect(PROMPT, timeout=60)
        m.command("vm create st-touch fpu")
        out = m.command("selftest", timeout=300)
        v = verdicts(out)
        for name in ["guest-hello", "guest-smp"]:
            check("selftest-fail/%s-skip" % name, v.get(name, ("",))[0] == "SKIP" and
                  "no module" in v[name][1], "%s: %r" % (name, v.get(name)))
        check("selftest-fail/guest-touch-fails", v.get("guest-touch", ("",))[0] == "FAIL" and
              "exists" in v["guest-touch"][1], str(v.get("guest-touch")))
        s = SUMMARY.search(out)
        counts = [int(n) for n in s.groups()] if s else []
        check("selftest-fail/summary", len(counts) == 3 and counts[1] == 1 and counts[2] == 2 and
              sum(counts) == len(CHECKS),
              "\n".join(l for l in out.splitlines() if l.startswith("selftest:")))
        m.send("poweroff\r")
        rc = m.wait_exit(timeout=30)
        check("selftest-fail/poweroff-exit-status", rc == 3, "rc=%r" % rc)
    finally:
        m.close()


def bochs_selftest(check):
    """Bochs, VMX with EPT, 2 CPUs: every check PASSes (the issue asks for
    under 5 minutes there; the time is printed)."""
    iso = make_iso("selftest-bochs", 'run="selftest; poweroff"', modules(GUESTS))
    t = time.time()
    log = run_bochs(iso, cpus=2, timeout=420)
    print("  Bochs boot with selftest took %.0f s (the issue's limit for selftest: 5 minutes)" %
          (time.time() - t))
    out = split_run_output(log).get("selftest", "")
    v = verdicts(out)
    for name in CHECKS:
        check("bochs-selftest/%s-pass" % name, v.get(name, ("none",))[0] == "PASS",
              "%s: %r" % (name, v.get(name)))
    check("bochs-selftest/summary", "selftest: %d passed, 0 failed, 0 skipped" % len(CHECKS)
          in out, log[-2000:])
    check("bochs-selftest/caps-names-backend", "vmx with ept" in v.get("caps", ("", ""))[1],
          str(v.get("caps")))
