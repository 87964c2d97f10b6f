"""A control-register exit racing MMU write-lock work on another CPU
(guests/crwin): one vCPU in legacy PAE paging writes CR0 in a loop (on VMX
each write exits and sprig reads the guest's PDPTEs), the other drops a page
through pc-testdev's flush port, which sprig serves under the MMU write lock
with a remote flush that waits for the first vCPU to leave the guest. Once
the CR exit was handled between kick_sync_enter and kick_sync_exit, where the
vCPU counts as in the guest, taking the MMU read lock: the two CPUs waited
for each other for ever with interrupts off, and `vm run` never returned
(the Bochs run then ends at its own timeout with no prompt after it).
Under Bochs (VMX, 2 CPUs) and QEMU (SVM, 2 CPUs, where CR0 writes do not
exit but the flushes race the vCPU's entries all the same)."""
import os
import re

from machine import GUESTS_DIR, Machine, PROMPT, make_iso, run_bochs, scenario_main, \
    split_run_output

SCENARIOS = ["bochs_crwin", "qemu_crwin"]

CRWIN = os.path.join(GUESTS_DIR, "crwin.elf")
RESULT = re.compile(r"^\[w\] crwin: (\d+) cr0 writes, (\d+) flushes, (\d+) bad$", re.M)
CREATE = "vm create w crwin vcpus=2 cpus=0,1 -- writes=%d flushes=%d"


def check_run(check, prefix, run, audit, writes, flushes):
    m = RESULT.search(run)
    check(prefix + "/returns", "vm w exited: status 0" in run, run[-2000:])
    check(prefix + "/counters", m is not None and int(m.group(1)) >= writes and
          int(m.group(2)) >= flushes and m.group(3) == "0", run[-2000:])
    check(prefix + "/audit", re.search(r"^mmu audit: ok, 0 errors", audit, re.M) is not None,
          audit)


def bochs_crwin(check):
    """VMX: the CR0 writes exit; both vCPUs on their own CPU (0 and 1)."""
    writes, flushes = 3000, 300
    create = CREATE % (writes, flushes)
    iso = make_iso("crwin-bochs", 'run="%s; vm run w timeout=150; stats w; vm audit w; '
                   'poweroff"' % create, [CRWIN])
    log = run_bochs(iso, cpus=2, timeout=400)
    parts = split_run_output(log)
    check("bochs-crwin/vmx", re.search(r"virt: vmx with ept", log) is not None, log[:3000])
    stats = parts.get("stats w", "")
    check_run(check, "bochs-crwin", parts.get("vm run w timeout=150", log[-3000:]),
              parts.get("vm audit w", ""), writes, flushes)
    # Each CR0 write is an exit the backend finished (the `handled` kind).
    m = re.search(r"^\s*exits_handled\s+(\d+)\s*$", stats, re.M)
    check("bochs-crwin/cr-exits", m is not None and int(m.group(1)) >= writes, stats)
    check("bochs-crwin/poweroff", "poweroff" in parts, log[-500:])


def qemu_crwin(check):
    """SVM under QEMU: the same guest and flushes across two CPUs."""
    writes, flushes = 20000, 2000
    m = Machine(make_iso("crwin-qemu", "", [CRWIN]), smp=2)
    try:
        m.expect(PROMPT, timeout=120)
        m.command(CREATE % (writes, flushes))
        run = m.command("vm run w timeout=120", timeout=180)
        check_run(check, "qemu-crwin", run, m.command("vm audit w"), writes, flushes)
    finally:
        m.close()


if __name__ == "__main__":
    scenario_main(globals(), "bochs_crwin")
