"""Debian's stock kernel under sprig (QEMU, SVM): one boot of sprig with 2
CPUs, a Linux VM with 2 vCPUs and the busybox initramfs (guests/linux/), its
init running a few commands from sprig.run= and powering off. Checked: the
banner with both CPUs up, a sleep ending (a halted vCPU's timer wakes it), uname, /proc/cpuinfo listing both vCPUs, free
seeing about the VM's memory, 16 MiB written from /dev/urandom read back
twice with the same checksum, the ACPI power-off, and `vm audit` clean
afterwards, and KVM's paravirtual features that sprig offers named in Linux's
log (dmesg) as taken; steal time (the two vCPUs share sprig's CPU 1, so each
waits for it) seen by the guest in /proc/stat and written by sprig; PV EOI
and PV TLB flush used (sprig's counts of the EOIs Linux signalled through
its word and of the flushes it left for a preempted vCPU). Then
malformed bzImages built from the real one's header are refused with their
reasons. (The shell through `vm console`, typed at, is
tests/e2e/e2e_linux_snap.py's, before and after a restore.) The images come
from `make linux-images`, the only place beside run-linux and report that
fetches the kernel."""
import os
import re

from machine import GUESTS_DIR, ROOT, Machine, guest_lines, make_iso, make_linux_images

SCENARIOS = ["linux_boot"]

VMLINUZ = os.path.join(ROOT, "build", "linux", "vmlinuz")
INITRD = os.path.join(ROOT, "build", "linux", "initrd")
GUEST_MIB = 512
# sleep: Linux's idle halts the vCPUs, and only their timers wake them.
RUN = ("uname -a; grep -c ^processor /proc/cpuinfo; free -k; sleep 1; "
       "dd if=/dev/urandom of=/tmp/x bs=1M count=16; md5sum /tmp/x /tmp/x; "
       "dmesg|grep kvm;head -1 /proc/stat")  # sprig's shell takes 32 words a line
# What Linux's arch/x86/kernel/kvm.c logs for each paravirtual feature it takes.
PV_LINES = {
    "pv-ipi": r"kvm-guest: setup PV IPIs",
    "pv-spinlocks": r"kvm-guest: PV spinlocks enabled",
    "pv-sched-yield": r"kvm-guest: setup PV sched yield",
    "pv-tlb-flush": r"kvm-guest: KVM setup pv remote TLB flush",
}


def malformed_images():
    """(module name, reason the loader must give) for images cut from the
    real kernel: too short for the setup code, an old protocol, no
    LOADED_HIGH; each a module file in build/e2e/."""
    with open(VMLINUZ, "rb") as f:
        head = bytearray(f.read(64 * 1024))
    out = os.path.join(ROOT, "build", "e2e")
    os.makedirs(out, exist_ok=True)
    cases = []

    def put(name, data, reason):
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
        cases.append((name, reason))

    put("bz_truncated", head[:0x800], "bzImage: truncated")
    old = bytearray(head)
    old[0x206:0x208] = (0x0204).to_bytes(2, "little")
    put("bz_old", old, "boot protocol 2.04 is too old")
    low = bytearray(head)
    low[0x211] &= 0xfe
    put("bz_zimage", low, "no LOADED_HIGH")
    return [(os.path.join(out, n), n, r) for n, r in cases]


def linux_boot(check):
    make_linux_images()
    bad = malformed_images()
    iso = make_iso("linux", "", [os.path.join(GUESTS_DIR, "hello.elf"), VMLINUZ, INITRD] +
                   [path for path, _, _ in bad])
    m = Machine(iso, smp=2, mem="2G")
    try:
        m.expect("sprig> ", timeout=120)
        out = m.command("vm create linux vmlinuz initrd=initrd vcpus=2 mem=%dM -- "
                        "console=ttyS0 quiet sprig.run=\"%s\"" % (GUEST_MIB, RUN))
        check("linux/create", "vm linux created" in out and "2 vCPUs" in out, out)
        out = m.command("vm run linux timeout=100", timeout=130)
        lines = guest_lines(out, "linux")
        text = "\n".join(lines)
        check("linux/banner", "sprig-linux: up, 2 CPUs" in lines, text[-3000:])
        check("linux/uname", re.search(r"^Linux \S+ \d+\.\d+\.\S+-amd64 .* x86_64", text, re.M)
              is not None, text[-3000:])
        cpus = [l for l in lines if l.strip().isdigit()]
        check("linux/cpuinfo-2", cpus[:1] == ["2"], text[-3000:])
        mem = re.search(r"^Mem:\s+(\d+)", text, re.M)
        check("linux/free", mem is not None and
              GUEST_MIB * 1024 * 3 // 4 < int(mem.group(1)) <= GUEST_MIB * 1024, text[-3000:])
        sums = re.findall(r"^([0-9a-f]{32})  /tmp/x$", text, re.M)
        check("linux/md5-equal", len(sums) == 2 and sums[0] == sums[1], text[-3000:])
        check("linux/run-status", "sprig-linux: run done, status 0" in lines, text[-3000:])
        check("linux/poweroff", "vm linux exited: status 0 (ACPI power off)" in out, out[-3000:])
        for name, line in PV_LINES.items():
            check("linux/" + name, re.search(line, text) is not None,
                  "\n".join(l for l in lines if "kvm" in l))
        cpu = re.search(r"^cpu\s+((?:\d+\s*){8,})$", text, re.M)
        check("linux/steal-time", cpu is not None and int(cpu.group(1).split()[7]) > 0,
              cpu.group(0) if cpu else text[-3000:])
        out = m.command("stats linux")
        records = re.search(r"^\s+steal_records\s+(\d+)$", out, re.M)
        check("linux/steal-records", records is not None and int(records.group(1)) > 0, out)
        # PV EOI, which Linux takes without a line: its EOIs through the word.
        eois = re.search(r"^\s+pv_eois\s+(\d+)$", out, re.M)
        check("linux/pv-eois", eois is not None and int(eois.group(1)) > 0, out)
        # PV TLB flush: flushes Linux left in the record of a vCPU waiting
        # for the CPU they share, taken at that vCPU's entry.
        flushes = re.search(r"^\s+pv_tlb_flushes\s+(\d+)$", out, re.M)
        check("linux/pv-tlb-flushes", flushes is not None and int(flushes.group(1)) > 0, out)
        out = m.command("vm audit linux")
        check("linux/audit-clean", "mmu audit: ok, 0 errors" in out, out)
        for _, name, reason in bad:
            out = m.command("vm create %s %s initrd=initrd" % (name, name))
            check("linux/refuse-" + name, "cannot create" in out and reason in out, out)
        out = m.command("vm create mbrd hello initrd=initrd")
        check("linux/refuse-initrd-multiboot", "initrd= is for a Linux kernel" in out, out)
    finally:
        m.close()


if __name__ == "__main__":
    from machine import scenario_main
    scenario_main(globals(), "linux_boot")
