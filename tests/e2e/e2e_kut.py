"""kvm-unit-tests' conformance set under sprig (docs/kut.md): every test of
tests/kut/expected, which passes bare under QEMU TCG and under sprig, must
pass under sprig on AMD SVM, all in one sprig boot. The suite is built once
per tarball into build/kut/ (tools/kut.py); no bare runs here, make kut has
those. Tests of sprig's own fixes ride on the tests' output: the tsc test's
RDTSCP checks (TSC_AUX reaches RDTSCP) must be among its PASS lines. The
emulator test, which fails bare (QEMU TCG gets two of its checks wrong),
runs too: it must reach its summary with only those two checks failing."""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "tools"))
import kut  # noqa: E402
from machine import scenario_main  # noqa: E402

SCENARIOS = ["kut_expected"]
EXPECTED = os.path.join(kut.ROOT, "tests", "kut", "expected")

# Lines a test's output must hold beyond its verdict: the checks that prove a
# fix of sprig's, named so that a test that skips them cannot pass unseen.
MUST_PASS = {
    "tsc": ["PASS: Test RDTSCP 0", "PASS: Test RDTSCP 10", "PASS: Test RDTSCP 256"],
    # One check of each family sprig's MMIO emulator runs (virt/insn.h).
    "emulator": ["PASS: repe cmpsq (2)", "PASS: smsw (3)", "PASS: outsb down",
                 "PASS: lock negb", "PASS: btcq reg, r/m", "PASS: bsrq r/m, reg",
                 "PASS: imul rax, mem, imm", "PASS: movdqu (write)",
                 "PASS: unaligned movaps exception", "PASS: shrd (cl)", "PASS: ltr",
                 "PASS: cross-page mmio write", "PASS: string_io_mmio", "PASS: pop mem",
                 "PASS: leave", "PASS: enter", "PASS: xadd reg, r/m (4)", "PASS: ljmp",
                 "PASS: divq (fault)", "PASS: mulq mem", "PASS: movq (mmx, write)",
                 "PASS: movb $imm, 0(%rip)", "PASS: mov null, %ss (with ss.rpl != cpl)",
                 "PASS: cmovnel", "PASS: push16"],
}

# Tests that fail bare under QEMU TCG and run here for the checks they hold:
# the checks that fail, and why. The rest must pass.
QEMU_TCG_FAILS = {
    # The guest's own access to a non-canonical [rsp+...] or [rbp+...] must
    # raise #SS; QEMU's TCG raises #GP, bare and under sprig alike (no exit
    # is involved).
    "emulator": ["FAIL: non-canonical rsp-based access, should #SS(0), got #GP(0)",
                 "FAIL: non-canonical rbp-based access, should #SS(0), got #GP(0)"],
}


def expected_tests():
    """tests/kut/expected: one test name a line, each with a '# reason'."""
    names, bad = [], []
    for n, line in enumerate(open(EXPECTED), 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        name, _, reason = text.partition("#")
        if not name.strip() or not reason.strip():
            bad.append("line %d: %r (a name and a '# reason')" % (n, text))
        else:
            names.append(name.strip())
    return names, bad


def halt_polls(check, session, t):
    """vmexit_ipi_halt with its two vCPUs on CPUs of their own (0 and 1), the
    target's CPU halting and polling between the IPIs (virt/sched.c). How
    many halts polling ends depends on the host's timing (230 of 252 on a
    quiet machine, none on a loaded one): the test checks that the run
    passes and the counters are there, not how they came out."""
    if not session.m:
        session.boot()
    m = session.m
    out = m.command("vm create hp %s mem=64M vcpus=2 cpus=0,1 -- %s" % (
        kut.module_name(t.flat), " ".join(t.args)), timeout=60)
    out = m.command("vm run hp timeout=120", timeout=200)
    check("e2e/kut-vmexit_ipi_halt-two-cpus", "vm hp exited: status 0" in out, out[-2000:])
    stats = m.command("stats hp", timeout=60)
    check("e2e/kut-vmexit_ipi_halt-halt-poll-counters",
          re.search(r"^\s+halt_polls_ok\s+\d+$", stats, re.M) is not None and
          re.search(r"^\s+halt_polls_failed\s+\d+$", stats, re.M) is not None, stats)
    m.command("vm destroy hp", timeout=60)


def kut_expected(check):
    names, bad = expected_tests()
    check("e2e/kut-expected-list", names and not bad, "; ".join(bad) or "empty list")
    tree = kut.build(kut.find_source())
    tests = {t.name: t for t in kut.load_tests(tree)}
    unknown = [n for n in names if n not in tests]
    check("e2e/kut-expected-known", not unknown, "not in unittests.cfg: %s" % unknown)
    run = [tests[n] for n in names + sorted(QEMU_TCG_FAILS) if n in tests]
    session = kut.SprigSession(kut.sprig_iso(run))
    try:
        for t in run:
            r = session.run(t, 2)
            out = getattr(r, "output", "")
            if t.name in QEMU_TCG_FAILS:
                fails = [l.split("] ", 1)[-1] for l in out.splitlines() if "FAIL: " in l]
                check("e2e/kut-%s-only-known-fails" % t.name,
                      "SUMMARY:" in out and fails == QEMU_TCG_FAILS[t.name],
                      "%s %s; failed: %s; output tail:\n%s" % (r.verdict, r.detail, fails,
                                                                  out[-2000:]))
            else:
                check("e2e/kut-%s" % t.name, r.verdict == "PASS",
                      "%s %s %s; output tail:\n%s" % (r.verdict, r.summary, r.detail,
                                                      out[-2000:]))
            for line in MUST_PASS.get(t.name, []):
                check("e2e/kut-%s: %s" % (t.name, line), line in out, out[-2000:])
        if "vmexit_ipi_halt" in tests:
            halt_polls(check, session, tests["vmexit_ipi_halt"])
    finally:
        session.close()


if __name__ == "__main__":
    scenario_main(globals(), "kut_expected")
