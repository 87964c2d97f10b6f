"""Multi-vCPU VMs on a one-CPU sprig (QEMU, AMD SVM; Bochs, Intel VMX with
unrestricted guest, where the APs start in real mode): every vCPU shares CPU 0.
The smp guest (guests/smp/) starts its APs with INIT and SIPI from the MADT,
runs work on each and sends IPIs between them; under sprig with vcpus=2 and 4
it must pass what it passes bare under `qemu -smp N`
(tests/e2e/e2e_smp_guest.py). Also: `vm create` refuses vCPU counts and CPU
lists this machine cannot take, stats count exits per vCPU, the MMU audit
stays clean, and a kernel that never starts its APs runs as before.
On four CPUs, `bench faults` (fault throughput against vCPUs) runs its
counts and the probe guest's CPUID loop; the same probe bare is QEMU's own
VMRUN/VMMCALL loop."""
import os
import re

from bare import run_bare
from e2e_smp_guest import check_sprig_run
from machine import (GUESTS_DIR, PROMPT, BochsConsole, Machine, bench_lines, make_iso,
                     scenario_main)

SCENARIOS = ["vcpus_svm", "vcpus_smp4", "vcpus_overcommit", "vcpus_vmx", "probe_bare"]


def run_smp(check, m, n, prefix="svm", args="", shared=False):
    """The smp guest with n vCPUs passes; each vCPU exited and ran; with
    shared (more vCPUs than CPUs), its spins gave the CPU away."""
    name = "s%d" % n
    out = m.command("vm create %s smp vcpus=%d -- cpus=%d %s" % (name, n, n, args))
    check("%s/vcpus%d-created" % (prefix, n),
          "vm %s created" % name in out and "%d vCPUs" % n in out, out)
    out = m.command("vm run %s timeout=600" % name, timeout=700)
    check_sprig_run(check, "%s/vcpus%d" % (prefix, n), out, name, n)
    stats = m.command("stats " + name)
    exits = [re.search(r"vcpu%d_exits\s+(\d+)" % i, stats) for i in range(n)]
    idle = [i for i, v in enumerate(exits) if v is None or int(v.group(1)) == 0]
    check("%s/vcpus%d-every-vcpu-exits" % (prefix, n), not idle, "none from %s\n%s" % (idle, stats))
    runs = [re.search(r"vcpu%d_run_us\s+(\d+)" % i, stats) for i in range(n)]
    idle = [i for i, v in enumerate(runs) if v is None or int(v.group(1)) == 0]
    check("%s/vcpus%d-every-vcpu-ran" % (prefix, n), not idle, "not run: %s\n%s" % (idle, stats))
    if shared:
        y = re.search(r"^\s+spin_yields\s+(\d+)", stats, re.M)
        check("%s/vcpus%d-spins-yield" % (prefix, n), y is not None and int(y.group(1)) > 0, stats)
    total = re.search(r"^\s+exits\s+(\d+)", stats, re.M)
    per = [int(x) for x in re.findall(r"vcpu\d+_exits\s+(\d+)", stats)]
    check("%s/vcpus%d-exits-sum" % (prefix, n),
          total is not None and sum(per) == int(total.group(1)), stats)
    out = m.command("vm audit " + name)
    check("%s/vcpus%d-audit" % (prefix, n), "mmu audit: ok" in out, out)
    m.command("vm destroy " + name)


STALE = re.compile(r"^stale: rounds=(\d+) hits=(\d+)", re.M)


def check_stale(check, prefix, m, rounds):
    """The stale-translation test both ways: with the remote flush no round
    reads the old word, without its kick some do (QEMU and Bochs flush a
    vCPU's TLB only when it enters or leaves the guest)."""
    for flush, ok in (("on", lambda h: h == 0), ("off", lambda h: h > 0)):
        m.command("mmu remote_flush=" + flush)
        out = m.command("bench stale rounds=%d" % rounds, timeout=300)
        st = STALE.search(out)
        check("%s/stale-remote-flush-%s" % (prefix, flush),
              st is not None and int(st.group(1)) == rounds and ok(int(st.group(2))) and
              "data=ok" in out, out)
    m.command("mmu remote_flush=on")


def vcpus_svm(check):
    m = Machine(make_iso("vcpus", "", [os.path.join(GUESTS_DIR, "smp.elf"),
                                       os.path.join(GUESTS_DIR, "hello.elf")]))
    try:
        m.expect(PROMPT, timeout=60)
        for line, expect in [
            ("vm create bad smp vcpus=129", "bad vcpus '129' (1 to 128)"),
            ("vm create bad smp vcpus=0", "bad vcpus '0'"),
            ("vm create bad smp vcpus=2 cpus=1", "CPU 1 does not exist"),
            ("vm create bad smp cpus=1-", "bad CPU list '1-'"),
            ("vm create bad smp cpus=0,0", "CPU 0 is listed twice"),
        ]:
            out = m.command(line)
            check("svm/refused " + line, expect in out, out)
        out = m.command("vm list")
        check("svm/refused-left-nothing", "no VMs" in out, out)
        run_smp(check, m, 2)
        run_smp(check, m, 4)
        # Pinned on CPU 0 by name: the same.
        out = m.command("vm create p smp vcpus=2 cpus=0 -- cpus=2")
        check("svm/pinned-created", "vm p created" in out, out)
        out = m.command("vm run p timeout=200", timeout=300)
        check("svm/pinned-passes", "smp: 8 passed, 0 failed, 0 skipped" in out and
              "vm p exited: status 0" in out, out)
        # A kernel that never starts its APs: they wait, it runs as with one.
        out = m.command("vm create h hello vcpus=3 -- three")
        out = m.command("vm run h timeout=60", timeout=120)
        check("svm/aps-never-started", "vm h exited: status 0" in out and
              'args: "three"' in out, out)
        stats = m.command("stats h")
        check("svm/aps-never-ran", re.search(r"vcpu1_exits\s+0\b", stats) is not None and
              re.search(r"vcpu2_exits\s+0\b", stats) is not None, stats)
        # Images hold every vCPU (e2e_vcpus_snap.py restores them).
        out = m.command("vm create sn smp vcpus=2 -- cpus=2")
        out = m.command("vm snapshot sn img")
        check("svm/snapshot-all-vcpus", "vm sn snapshot: image 'img'" in out and
              "2 vCPUs" in out, out)
        # The remote flush's debug switch is listed and set like the others.
        out = m.command("mmu")
        check("svm/remote-flush-listed", re.search(r"remote_flush=on\s", out) is not None, out)
        out = m.command("mmu remote_flush=off")
        out = m.command("mmu")
        check("svm/remote-flush-off", re.search(r"remote_flush=off\s", out) is not None, out)
        m.command("mmu remote_flush=on")
        out = m.command("version")
        check("svm/sprig-goes-on", "sprig " in out, out)
    finally:
        m.close()


FAULT_COUNTS = (1, 2, 4)
FAULT_MIB = 2
PROBE_EXITS = 5000


def check_scale_benches(check, m):
    """bench faults: a row per vCPU count, each vCPU's every page one fault
    at least, the vCPUs on CPUs 1-3; the CPUID loop's every CPUID an exit;
    bad arguments refused with the usage. bench share: every vCPU ran."""
    out = m.command("bench faults vcpus=%s mib=%d runs=1 exits=%d" % (
        ",".join(str(n) for n in FAULT_COUNTS), FAULT_MIB, PROBE_EXITS), timeout=300)
    rows = {int(r["vcpus"]): r for r in bench_lines(out, "faults")}
    check("smp4/faults-rows", sorted(rows) == list(FAULT_COUNTS) and
          all(r["ok"] == "yes" and r["in"] == "guest" and
              int(r["faults"]) >= n * FAULT_MIB * 256 and int(r["host_cpus"]) == min(n, 3) and
              int(r["time_ns"]) > 0 and int(r["cycles_per_fault"]) > 0
              for n, r in rows.items()), out)
    loop = bench_lines(out, "exitloop")
    check("smp4/faults-exit-loop", len(loop) == 1 and loop[0]["ok"] == "yes" and
          loop[0]["mode"] == "cpuid" and int(loop[0]["exits"]) >= PROBE_EXITS and
          int(loop[0]["cycles_per_exit"]) > 0, out)
    out = m.command("bench faults vcpus=1,0")
    check("smp4/faults-bad-args", "bad arguments" in out and "@bench" not in out, out)
    # Eight vCPUs that only compute, on CPUs 1-3: every one ran, each share said.
    out = m.command("bench share vcpus=8 ms=300 runs=1", timeout=120)
    rows = bench_lines(out, "share")
    check("smp4/share-row", len(rows) == 1 and rows[0]["ok"] == "yes" and
          rows[0]["vcpus"] == "8" and rows[0]["host_cpus"] == "3" and
          all(rows[0][f].isdigit() for f in ("cpu_min_pct", "cpu_max_pct", "vm_min_pct",
                                             "vm_max_pct")), out)


def vcpus_smp4(check):
    """Four host CPUs: vCPUs on CPUs 1-3 (the console's CPU 0 only watches),
    IPIs and the remote flush's kicks crossing CPUs."""
    m = Machine(make_iso("vcpus-smp4", "", [os.path.join(GUESTS_DIR, g + ".elf")
                                            for g in ("smp", "stale", "probe")]), smp=4)
    try:
        m.expect(PROMPT, timeout=60)
        out = m.command("vm create bad smp vcpus=2 cpus=1,4")
        check("smp4/absent-cpu-refused", "CPU 4 does not exist" in out, out)
        out = m.command("vm create bad smp vcpus=129")
        check("smp4/vcpus-limit", "bad vcpus '129' (1 to 128)" in out, out)
        run_smp(check, m, 4, "smp4")
        # Two or three vCPUs on each of CPUs 1-3, sharing them by slices.
        run_smp(check, m, 8, "smp4", "rounds=20", shared=True)
        # Overcommitted: sixteen on CPUs 1-3.
        run_smp(check, m, 16, "smp4", "rounds=20", shared=True)
        check_stale(check, "smp4", m, 1000)
        check_scale_benches(check, m)
        out = m.command("version")
        check("smp4/sprig-goes-on", "sprig " in out, out)
    finally:
        m.close()


def probe_bare(check):
    """The probe guest bare, as the host of a nested guest: its VMMCALL loop
    without and with nested paging, and its nested page fault loop. Every
    #VMEXIT is the loop's, and it says how long they took."""
    status, out = run_bare("probe", "exits=%d" % PROBE_EXITS, timeout=120)
    rows = bench_lines(out, "exitloop")
    check("bare/exit-probe", status == 0 and [r["mode"] for r in rows] == ["svm", "npt", "npf"] and
          all(r["in"] == "bare" and int(r["exits"]) == PROBE_EXITS and
              int(r["cycles_per_exit"]) > 0 and int(r["exits_per_s"]) > 0 for r in rows), out)


def vcpus_overcommit(check):
    """Sixty-four vCPUs on two host CPUs (all on CPU 1: the console's CPU 0
    only watches): the smp guest's checks, its IPIs between every pair
    included, pass when spinning vCPUs give their CPU away."""
    m = Machine(make_iso("vcpus-oc", "", [os.path.join(GUESTS_DIR, "smp.elf")]), smp=2)
    try:
        m.expect(PROMPT, timeout=60)
        run_smp(check, m, 64, "smp2", "rounds=5", shared=True)
    finally:
        m.close()


def vcpus_vmx(check):
    m = BochsConsole(make_iso("vcpus-vmx", "", [os.path.join(GUESTS_DIR, "smp.elf")]))
    try:
        m.expect(PROMPT, timeout=240)
        out = m.command("vm create s2 smp vcpus=2 -- cpus=2", timeout=60)
        check("vmx/vcpus2-created", "vm s2 created" in out, out)
        out = m.command("vm run s2 timeout=200", timeout=420)
        check_sprig_run(check, "vmx/vcpus2", out, "s2", 2)
        # Both vCPUs share the one CPU: spins exit on PAUSE (PAUSE-loop
        # exiting or PAUSE exiting) and give it to the other.
        stats = m.command("stats s2", timeout=60)
        y = re.search(r"^\s+spin_yields\s+(\d+)", stats, re.M)
        check("vmx/vcpus2-spins-yield", y is not None and int(y.group(1)) > 0, stats)
    finally:
        m.close()


if __name__ == "__main__":
    scenario_main(globals(), "vcpus_svm")
