"""The SMP test guest (guests/smp/) bare under QEMU (SeaBIOS, -kernel) with
-smp 1, 2 and 4: the reference that sprig's multi-vCPU VMs must match. The
guest starts its APs with INIT-SIPI-SIPI from the MADT, runs work on each CPU
and sends IPIs between them, printing `smp: N CPUs online`, one
`PASS|FAIL|SKIP: NAME` line per check and a summary `smp: N passed, N failed,
N skipped`; it exits with status 0 when nothing failed. With `cpus=N` the
guest itself fails smp-start unless exactly N CPUs came up.

The stale-translation guest (guests/stale.c) spins on one CPU; bare, without
pages from a host, it tests its own protocol with an AP in the host's place
(`qemu -smp 2`): every round answered with the new word."""
import re

from bare import run_bare
from machine import guest_lines, scenario_main

SCENARIOS = ["smp_guest_bare", "stale_guest_bare"]

ALL_CHECKS = ["smp-madt", "smp-start", "smp-apic-ids", "smp-slices", "smp-atomic",
              "smp-ipi-ring", "smp-ipi-all", "smp-nmi"]
# What a one-CPU machine skips: the checks that need a second CPU.
ONE_CPU_SKIPS = {n: "one CPU" for n in ("smp-ipi-ring", "smp-ipi-all", "smp-nmi")}

LINE = re.compile(r"^(PASS|FAIL|SKIP): (\S+)(?: \((.*)\))?$")
SUMMARY = re.compile(r"^smp: (\d+) passed, (\d+) failed, (\d+) skipped$", re.M)
ONLINE = re.compile(r"^smp: (\d+) CPUs online", re.M)


def results(text):
    """{check name: (PASS|FAIL|SKIP, detail)} from the guest's lines."""
    out = {}
    for line in text.splitlines():
        m = LINE.match(line.strip())
        if m:
            out[m.group(2)] = (m.group(1), m.group(3) or "")
    return out


def check_run(check, prefix, status, out, cpus):
    """One run of the guest on a machine of cpus CPUs: exit status 0, every
    check reported, none failed, the skips those of the CPU count, and the
    CPU count printed right."""
    res = results(out)
    check(prefix + "-status", status == 0, "status %r\n%s" % (status, out[-3000:]))
    fails = {n: d for n, (s, d) in res.items() if s == "FAIL"}
    check(prefix + "-no-fail", not fails and "FAIL" not in out, out[-3000:])
    missing = [n for n in ALL_CHECKS if n not in res]
    check(prefix + "-all-checks-reported", not missing, "missing %s\n%s" % (missing, out[-3000:]))
    skips = {n: d for n, (s, d) in res.items() if s == "SKIP"}
    want = ONE_CPU_SKIPS if cpus == 1 else {}
    check(prefix + "-skips", skips == want, "skipped %r, expected %r" % (skips, want))
    m = ONLINE.search(out)
    check(prefix + "-cpus-online", m is not None and int(m.group(1)) == cpus,
          "expected %d CPUs online\n%s" % (cpus, out[-3000:]))
    m = SUMMARY.search(out)
    check(prefix + "-summary", m is not None and int(m.group(1)) == len(ALL_CHECKS) - len(want),
          out[-3000:])


def check_sprig_run(check, prefix, out, vm, cpus):
    """check_run on the output of `vm run VM` under sprig: the status from
    sprig's exit line, the guest's lines without their '[VM] ' prefix."""
    st = re.search(r"vm %s exited: status (\d+)" % re.escape(vm), out)
    check_run(check, prefix, int(st.group(1)) if st else None, "\n".join(guest_lines(out, vm)),
              cpus)


def smp_guest_bare(check):
    for cpus in (1, 2, 4):
        status, out = run_bare("smp", "cpus=%d" % cpus, timeout=180, cpus=cpus)
        check_run(check, "smp-guest/bare-smp%d" % cpus, status, out, cpus)
    # The guest's own count check can fail: 3 CPUs expected on a machine of 2.
    status, out = run_bare("smp", "cpus=3 rounds=5", timeout=180, cpus=2)
    check("smp-guest/bare-wrong-count-fails",
          status == 1 and results(out).get("smp-start") ==
          ("FAIL", "2 CPUs came up, 3 expected"), "status %r\n%s" % (status, out[-3000:]))


def stale_guest_bare(check):
    status, out = run_bare("stale", "", timeout=120, cpus=2)
    check("stale-guest/bare-self-test", status == 0 and
          "stale: self-test: 1000 rounds, 1000 answered, 0 stale, 0 lost" in out,
          "status %r\n%s" % (status, out[-3000:]))
    status, out = run_bare("stale", "", timeout=60, cpus=1)
    check("stale-guest/bare-self-test-one-cpu-fails", status == 1 and
          "stale: the self-test needs a second CPU" in out, "status %r\n%s" % (status, out))
    status, out = run_bare("stale", "d=0x400000 f=0x401000 a=0x402800 w=3", timeout=60)
    check("stale-guest/bare-unaligned-page-refused", status == 1 and
          "stale: bad arguments" in out, "status %r\n%s" % (status, out))


if __name__ == "__main__":
    scenario_main(globals(), "smp_guest_bare")
