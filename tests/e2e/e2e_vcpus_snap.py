"""Snapshots and clones of multi-vCPU VMs (snapshot format version 5,
docs/snapshot.md) under QEMU with two host CPUs, AMD SVM: the smp guest
(guests/smp/) snapshotted mid-run by a timeout, at its snapshot point (called
by an AP while the other CPUs spin), and before it ever ran (its APs waiting
for their start-up IPIs), restored, and finishing with every check passed;
clones of 2- and 4-vCPU VMs taken at the guest's clone point, called by an
AP while the others are at work, each running to completion, the call's
return value 0 in the clones and the clone's number in the parent; `vm audit` clean after each step. On a
one-CPU sprig: images of several vCPUs as GRUB modules (tests/e2e/mksnap.c),
restored, and refused when a field of an AP is broken or when they hold more
vCPUs than the machine takes. Under Bochs (Intel VMX, one CPU): an image
of a 2-vCPU VM never run, its AP in the INIT state waiting for SIPI (real
mode: the unrestricted guest's state checks), restored, run to its clone
point, cloned, and both to the end."""
import os
import re
import subprocess
import tempfile

from e2e_input import MKSNAP, fpu_area
from machine import (GUESTS_DIR, PROMPT, BochsConsole, Machine, guest_lines, make_iso,
                     scenario_main)

SCENARIOS = ["snap_vcpus_svm", "snap_vcpu_images", "snap_vcpus_vmx"]

SUMMARY = "smp: 8 passed, 0 failed, 0 skipped"
EXITED = re.compile(r"vm (\S+) exited: status (\d+)")


def audit(check, m, name, label):
    out = m.command("vm audit " + name)
    check(label + "-audit", "mmu audit: ok" in out, out)


def runs_to_the_end(check, m, name, label, returned=None, timeout=420):
    """Run a VM that resumes the smp guest: it exits 0 with the guest's
    summary counting every check (those before the pause too), none
    failed; returned: what its snapshot or clone point returned."""
    out = m.command("vm run %s timeout=300" % name, timeout=timeout)
    guest = "\n".join(guest_lines(out, name))
    st = EXITED.search(out)
    check(label + "-exits-0", st is not None and st.group(2) == "0", out[-3000:])
    check(label + "-all-passed", SUMMARY in guest and "FAIL" not in guest, out[-3000:])
    if returned is not None:
        check(label + "-point-returned", "returned %d" % returned in guest, guest[-2000:])
    audit(check, m, name, label)
    return guest


def pause_at(check, m, name, label, reason, timeout=420):
    out = m.command("vm run %s timeout=300" % name, timeout=timeout)
    check(label + "-paused", "vm %s stopped: %s" % (name, reason) in out and
          "FAIL" not in out, out[-3000:])
    audit(check, m, name, label + "-paused")


def snapshot_restore(check, m, vm, img, new, vcpus, label):
    out = m.command("vm snapshot %s %s" % (vm, img))
    check(label + "-snapshot", "vm %s snapshot: image '%s'" % (vm, img) in out and
          "%d vCPUs" % vcpus in out, out)
    out = m.command("vm images")
    check(label + "-listed", re.search(r"^%s\s.*\b%d vCPUs" % (img, vcpus), out, re.M)
          is not None, out)
    out = m.command("vm create %s restore=%s" % (new, img))
    check(label + "-restored", "vm %s created" % new in out and "%d vCPUs" % vcpus in out, out)
    out = m.command("stats " + new)
    check(label + "-restored-vcpus", "vcpu%d_exits" % (vcpus - 1) in out and
          "vcpu%d_exits" % vcpus not in out, out)


def snap_vcpus_svm(check):
    m = Machine(make_iso("vcpus-snap", "", [os.path.join(GUESTS_DIR, "smp.elf")]), smp=2)
    try:
        m.expect(PROMPT, timeout=60)
        # Mid-run: paused by the timeout wherever its vCPUs were.
        m.command("vm create a smp vcpus=2 -- cpus=2 rounds=3000")
        out = m.command("vm run a timeout=3", timeout=120)
        check("mid-run-paused", "vm a stopped: timeout" in out and "FAIL" not in out,
              out[-3000:])
        audit(check, m, "a", "mid-run-paused")
        snapshot_restore(check, m, "a", "ia", "ra", 2, "mid-run")
        m.command("vm destroy a")
        runs_to_the_end(check, m, "ra", "mid-run-resumed")
        m.command("vm destroy ra")
        m.command("vm image-free ia")

        # At the snapshot point, the APs spinning: restored twice, and the
        # original goes on too.
        m.command("vm create b smp vcpus=2 -- cpus=2 snapshot=1")
        pause_at(check, m, "b", "point", "snapshot point")
        snapshot_restore(check, m, "b", "ib", "rb", 2, "point")
        out = m.command("vm create rb2 restore=ib")
        check("point-restored-again", "vm rb2 created" in out, out)
        runs_to_the_end(check, m, "rb", "point-resumed", returned=0)
        runs_to_the_end(check, m, "rb2", "point-resumed-again", returned=0)
        runs_to_the_end(check, m, "b", "point-original", returned=0)
        for name in ("b", "rb", "rb2"):
            m.command("vm destroy " + name)
        m.command("vm image-free ib")

        # Never run: the AP waits for its start-up IPI in the image, and the
        # restored guest still starts it.
        m.command("vm create c smp vcpus=2 -- cpus=2")
        snapshot_restore(check, m, "c", "ic", "rc", 2, "unstarted")
        runs_to_the_end(check, m, "rc", "unstarted-aps-start")
        m.command("vm destroy c")
        m.command("vm destroy rc")
        m.command("vm image-free ic")

        # Clones at the clone point, the APs spinning: 2 and 4 vCPUs.
        for n in (2, 4):
            p = "p%d" % n
            m.command("vm create %s smp vcpus=%d -- cpus=%d clone=1" % (p, n, n))
            pause_at(check, m, p, "clone%d" % n, "clone point")
            for k in (1, 2):
                c = "%sc%d" % (p, k)
                out = m.command("vm clone %s %s" % (p, c))
                check("clone%d-%s-made" % (n, c), "vm %s cloned from %s" % (c, p) in out and
                      "%d vCPUs" % n in out, out)
                audit(check, m, c, "clone%d-%s" % (n, c))
            for k in (1, 2):
                c = "%sc%d" % (p, k)
                runs_to_the_end(check, m, c, "clone%d-%s" % (n, c), returned=0)
            # The parent's call returns the last clone's number (its id + 1).
            guest = runs_to_the_end(check, m, p, "clone%d-parent" % n)
            r = re.search(r"HC_CLONE_POINT returned (\d+)", guest)
            check("clone%d-parent-got-a-number" % n, r is not None and int(r.group(1)) > 0, guest)
            for k in (1, 2):
                m.command("vm destroy %sc%d" % (p, k))
            m.command("vm destroy " + p)
        out = m.command("vm list")
        check("nothing-left", "no VMs" in out, out)
    finally:
        m.close()


def make_image(path, area, fault, vcpus):
    subprocess.run([MKSNAP, path, "svm", str(area), fault, str(2 << 20), str(vcpus)], check=True)
    return path


# Images of several vCPUs with one field of an AP (or the count) broken, and
# the reason sprig must give.
BROKEN = [
    ("ap_apic_id", 2, "record lapic 1: APIC initial ID 0x0, this vCPU's is 0x1"),
    ("ap_bsp", 2, "record lapic 1: APIC base 0xfee00900: the BSP flag belongs to APIC ID 0 alone"),
    ("ap_halt_waiting", 3, "record cpu 1: halted and waiting for a start-up IPI at once"),
    ("ap_xcr0", 2, "record cpu 1: XCR0 0x0 is not one XSETBV accepts"),
    ("vcpus_zero", 2, "0 vCPUs (1 to 128)"),
    ("vcpus_many", 2, "1000 vCPUs (1 to 128)"),
    ("vcpus_mismatch", 2, "the VM state holds 2 vCPUs, the header says 1"),
]


def snap_vcpu_images(check):
    area = fpu_area()
    if not check("images/fpu-area-known", area is not None, "cpus gave no vcpu-fpu line"):
        return
    d = tempfile.mkdtemp(prefix="sprig-snapv-")
    images = [make_image(os.path.join(d, "two"), area, "none", 2),
              make_image(os.path.join(d, "four"), area, "none", 4),
              make_image(os.path.join(d, "eight"), area, "none", 8)]
    images += [make_image(os.path.join(d, f), area, f, n) for f, n, _ in BROKEN]
    m = Machine(make_iso("vcpus-images", "", images))
    try:
        m.expect(PROMPT, timeout=60)
        for f, _, reason in BROKEN:
            out = m.command("vm create v restore=" + f)
            check("images/refused-" + f, ("module '%s'" % f) in out and reason in out and
                  "created" not in out, out)
        out = m.command("vm images")
        check("images/refused-took-no-slot", not any(f in out for f, _, _ in BROKEN), out)
        # Eight vCPUs on this one CPU: they take it in turns.
        for name, n in (("two", 2), ("four", 4), ("eight", 8)):
            out = m.command("vm create r%s restore=%s" % (name, name))
            check("images/%s-created" % name, "vm r%s created" % name in out and
                  "%d vCPUs" % n in out, out)
            out = m.command("vm run r%s timeout=20" % name)
            check("images/%s-runs" % name, "vm r%s exited: status 42" % name in out, out)
            stats = m.command("stats r" + name)
            check("images/%s-aps-wait" % name, all(
                re.search(r"vcpu%d_exits\s+0\b" % i, stats) for i in range(1, n)), stats)
            audit(check, m, "r" + name, "images/" + name)
    finally:
        m.close()


def snap_vcpus_vmx(check):
    m = BochsConsole(make_iso("vcpus-snap-vmx", "", [os.path.join(GUESTS_DIR, "smp.elf")]))
    try:
        m.expect(PROMPT, timeout=240)
        m.command("vm create u smp vcpus=2 -- cpus=2 clone=1", timeout=60)
        snapshot_restore(check, m, "u", "iu", "ru", 2, "vmx/unstarted")
        pause_at(check, m, "ru", "vmx/clone", "clone point", timeout=600)
        out = m.command("vm clone ru c1", timeout=60)
        check("vmx/clone-made", "vm c1 cloned from ru" in out and "2 vCPUs" in out, out)
        runs_to_the_end(check, m, "c1", "vmx/clone", returned=0, timeout=600)
        runs_to_the_end(check, m, "ru", "vmx/parent", timeout=600)
    finally:
        m.close()


if __name__ == "__main__":
    scenario_main(globals(), "snap_vcpus_svm")
