"""virtio-blk and virtio-balloon under Debian's stock kernel (QEMU, SVM): one
boot of sprig, one Linux VM with a writable disk made from a module
(`disk=vdisk:rw`) and a balloon (`balloon=on`), its init loading the virtio
modules from the initramfs, its shell on an attached `vm console` (Ctrl-]
pauses the VM for sprig's console).

Disk: the module is an ext2 image made with mke2fs, holding a file of
seeded random bytes. The device on the virtio bus (/sys/bus/virtio/devices,
device ID 2) and as /dev/vda of the module's size; the file system mounted
and the file's checksum right; the disk read whole with the module's
checksum, a 4 KiB block written, the page cache dropped and the disk read
back with the checksum of the image so changed.

Balloon (device ID 5): sprig's free memory (`mem`) is measured with the
guest holding all but MARGIN_MIB of its free memory (dd's buffer, touched
as /dev/zero is read into it), so that every guest page but the balloon's
and the margin's is backed then. `vm balloon linux 64M`: the guest's
MemTotal drops by 64 MiB, and sprig's free memory so measured rises by
about 64 MiB; `vm balloon linux 0`: MemTotal comes back and the free memory
falls back by about as much. The guest then frees its big allocation: free
page reporting (about 2 s later) reports its 2 MiB blocks, the reporting
counters rise by at least REPORT_MIB and sprig's free memory by as much.
The guest's statistics show with their names. Bad `vm balloon` arguments
are refused; `vm audit` is clean afterwards; a paused VM with a disk, or a
VM with a balloon, refuses snapshots and clones (their records hold
neither)."""
import hashlib
import os
import random
import re
import subprocess
import zlib

from e2e_linux_snap import Shell, free_bytes
from machine import GUESTS_DIR, PROMPT, ROOT, Machine, guest_lines, make_iso, make_linux_images

SCENARIOS = ["virtio_linux"]

VMLINUZ = os.path.join(ROOT, "build", "linux", "vmlinuz")
INITRD = os.path.join(ROOT, "build", "linux", "initrd")
DISK_BYTES = 2 << 20
PAYLOAD = "payload.bin"
PAYLOAD_BYTES = 300 * 1024
BLOCK = 4096
COPY_TO = 10  # block 0 is written over block 10
MIB = 1 << 20
BALLOON_MIB = 64
MARGIN_MIB = 8     # guest memory the fill leaves free: backed or not, the noise
TOLERANCE_MIB = 16
REPORT_MIB = 48
MEMINFO = "awk '/%s:/{print int($2/1024)}' /proc/meminfo"
BAD_GUEST = os.path.join(GUESTS_DIR, "virtio_bad.elf")
# guests/virtio_bad.c's bad rings, in its order, and sprig's reason for each
BAD_RINGS = [
    ("mmio-buffer", r"descriptor 1: buffer 0xfe000000\+512 is outside guest RAM"),
    ("past-ram", r"descriptor 1: buffer 0x[0-9a-f]+\+512 is outside guest RAM"),
    ("loop", r"chain at head 0 runs past 8 descriptors \(a loop\?\)"),
    ("next-past-queue", r"descriptor 200 past the queue's table of 8"),
    ("avail-past-queue", r"available idx 1000 is 1000 entries past 0, the queue holds 8"),
    ("no-status", r"a request without its header or status byte"),
]


def disk_image():
    """build/e2e/vdisk: an ext2 file system of DISK_BYTES (mke2fs, as a user
    makes a disk image) holding PAYLOAD, seeded random bytes; the image's
    md5, its md5 once block 0 is copied over block COPY_TO, and PAYLOAD's."""
    out = os.path.join(ROOT, "build", "e2e")
    tree = os.path.join(out, "vdisk.d")
    os.makedirs(tree, exist_ok=True)
    payload = random.Random(28).randbytes(PAYLOAD_BYTES)
    with open(os.path.join(tree, PAYLOAD), "wb") as f:
        f.write(payload)
    path = os.path.join(out, "vdisk")
    if os.path.exists(path):
        os.remove(path)
    subprocess.run(["mke2fs", "-q", "-F", "-t", "ext2", "-b", "1024", "-d", tree, path,
                    "%dk" % (DISK_BYTES // 1024)], check=True, stdout=subprocess.DEVNULL)
    with open(path, "rb") as f:
        data = bytearray(f.read())
    before = hashlib.md5(data).hexdigest()
    data[COPY_TO * BLOCK:(COPY_TO + 1) * BLOCK] = data[:BLOCK]
    return path, before, hashlib.md5(data).hexdigest(), hashlib.md5(payload).hexdigest()


def meminfo(sh, key):
    """/proc/meminfo's KEY in MiB, or None."""
    v = sh.value("echo V=$(%s)" % (MEMINFO % key), "V")
    return int(v) if v and v.isdigit() else None


def wait_guest(sh, cond, tries=120):
    """Until the shell condition holds (once a second, at most tries)."""
    out, _ = sh.run("for i in $(seq %d); do %s && break; sleep 1; done; %s && echo W=ok"
                    % (tries, cond, cond), timeout=tries * 3 + 60)
    return "W=ok" in out.split("echo W=ok")[-1]


def fill(sh):
    """dd holds all but MARGIN_MIB of the guest's free memory (until
    `killall dd`): true once it does."""
    sh.run("dd if=/dev/zero bs=$(($(%s)-%d))M count=1 2>/dev/null | sleep 100000 & true"
           % (MEMINFO % "MemFree", MARGIN_MIB))
    return wait_guest(sh, "[ $(%s) -lt %d ]" % (MEMINFO % "MemFree", MARGIN_MIB + 8), 60)


def console(m, line):
    """Detach from the guest (the VM pauses), run a console line, attach again."""
    m.send("\x1d")
    m.expect(PROMPT, timeout=60)
    out = m.command(line, timeout=60)
    m.send("vm console linux timeout=3600\r")
    m.expect("(Ctrl-] detaches)", timeout=60)
    return out


def sprig_free(m, then=""):
    """sprig's free bytes (`mem`) with the VM paused, and what `then` printed."""
    m.send("\x1d")
    m.expect(PROMPT, timeout=60)
    free = free_bytes(m.command("mem"))
    out = m.command(then, timeout=60) if then else ""
    m.send("vm console linux timeout=3600\r")
    m.expect("(Ctrl-] detaches)", timeout=60)
    return free, out


def counter(out, name):
    r = re.search(r"^\s+%s\s+(\d+)$" % re.escape(name), out, re.M)
    return int(r.group(1)) if r else None


def about(delta, want):
    return abs(delta - want * MIB) <= TOLERANCE_MIB * MIB


def disk_checks(check, sh, boot, before, after, payload):
    out, _ = sh.run("ls /sys/bus/virtio/devices; cat /sys/bus/virtio/devices/*/device")
    check("virtio/modules-loaded", "insmod" not in boot, boot[-3000:])
    check("virtio/bus-lists-devices", "virtio0" in out and "virtio1" in out and
          "0x0002" in out and "0x0005" in out, out)
    out, _ = sh.run("cat /sys/block/vda/size")
    check("virtio/vda-size", str(DISK_BYTES // 512) in out.splitlines()[1:], out)
    out, _ = sh.run("mount -o ro /dev/vda /mnt && md5sum /mnt/%s; umount /mnt; echo rc=$?"
                    % PAYLOAD)
    check("virtio/mount-file-md5", "%s  /mnt/%s" % (payload, PAYLOAD) in out and
          "rc=0" in out, out)
    out, _ = sh.run("md5sum /dev/vda; dd if=/dev/vda of=/tmp/b bs=%d count=1 2>/dev/null; "
                    "dd if=/tmp/b of=/dev/vda bs=%d seek=%d conv=fsync 2>/dev/null; "
                    "echo 3 >/proc/sys/vm/drop_caches; md5sum /dev/vda" % (BLOCK, BLOCK, COPY_TO))
    sums = re.findall(r"^([0-9a-f]{32})  /dev/vda$", out, re.M)
    check("virtio/read-md5", sums[:1] == [before], "%s want %s\n%s" % (sums, before, out))
    check("virtio/write-read-back-md5", sums[1:2] == [after], "%s want %s\n%s" % (sums, after, out))


def balloon_checks(check, m, sh):
    total0 = meminfo(sh, "MemTotal")
    check("balloon/fill", fill(sh), m.log[-2000:])
    free0, out = sprig_free(m, "vm balloon linux %dM" % BALLOON_MIB)
    check("balloon/target-set", "balloon target %d KiB" % (BALLOON_MIB * 1024) in out, out)
    sh.run("killall dd")
    check("balloon/guest-inflated", wait_guest(sh, "[ $(%s) -le %d ]" % (
        MEMINFO % "MemTotal", total0 - BALLOON_MIB)), "MemTotal %s MiB, was %s" %
        (meminfo(sh, "MemTotal"), total0))
    check("balloon/fill-inflated", fill(sh), m.log[-2000:])
    free1, out = sprig_free(m, "vm balloon linux")
    check("balloon/actual", counter(out, "balloon_pages") == BALLOON_MIB * 256 and
          counter(out, "inflated_pages") >= BALLOON_MIB * 256 and
          counter(out, "discards") > 0, out)
    check("balloon/inflate-frees-sprig-memory", about(free1 - free0, BALLOON_MIB),
          "sprig free %+.1f MiB, want %+d" % ((free1 - free0) / MIB, BALLOON_MIB))
    console(m, "vm balloon linux 0")
    sh.run("killall dd")
    check("balloon/guest-deflated", wait_guest(sh, "[ $(%s) -ge %d ]" % (
        MEMINFO % "MemTotal", total0)), "MemTotal %s MiB, was %s" %
        (meminfo(sh, "MemTotal"), total0))
    check("balloon/fill-deflated", fill(sh), m.log[-2000:])
    free2, out2 = sprig_free(m, "vm balloon linux")
    check("balloon/deflated", counter(out2, "balloon_pages") == 0 and
          counter(out2, "deflated_pages") >= BALLOON_MIB * 256, out2)
    check("balloon/deflate-gives-memory-back", about(free1 - free2, BALLOON_MIB),
          "sprig free %+.1f MiB, want %+d" % ((free2 - free1) / MIB, -BALLOON_MIB))
    # The guest frees its big allocation: reporting discards the 2 MiB blocks.
    sh.run("killall dd; sleep 8")
    free3, out3 = sprig_free(m, "vm balloon linux")
    reported = (counter(out3, "reported_bytes") or 0) - (counter(out2, "reported_bytes") or 0)
    check("balloon/reporting-counts", reported >= REPORT_MIB * MIB and
          counter(out3, "reported_ranges") > counter(out2, "reported_ranges"),
          "reported %.1f MiB more\n%s" % (reported / MIB, out3))
    check("balloon/reporting-frees-sprig-memory", free3 - free2 >= REPORT_MIB * MIB,
          "sprig free %+.1f MiB, want at least %+d" % ((free3 - free2) / MIB, REPORT_MIB))
    check("balloon/guest-stats", re.search(r"stat-free-memory\s+\d+", out3) and
          re.search(r"stat-total-memory\s+\d+", out3) and counter(out3, "stat_updates") >= 1,
          out3)
    check("balloon/no-bad-input", counter(out3, "bad_pfns") == 0 and
          counter(out3, "bad_rings") == 0, out3)


def bad_ring_checks(check, m, sh, disk, after):
    """With the Linux VM paused, a second VM on the same disk module
    (guests/virtio_bad.c) reads sector 0, then writes one bad ring after
    another, resetting the device between them: each sets
    DEVICE_NEEDS_RESET without a byte of its memory written, sprig reports
    each, and a good read works after each reset. The Linux VM then goes on
    and reads its whole disk through the page cache's drop, as it left it."""
    with open(disk, "rb") as f:
        crc = zlib.crc32(f.read(512))
    m.send("\x1d")
    m.expect(PROMPT, timeout=60)
    out = m.command("vm create vbad virtio_bad disk=vdisk mem=64M -- crc=0x%08x sectors=%d"
                    % (crc, DISK_BYTES // 512))
    check("bad-ring/create", "vm vbad created" in out, out)
    out = m.command("vm run vbad timeout=120", timeout=300)
    lines = guest_lines(out, "vbad")
    want = ["PASS: find-device", "PASS: good-read"] + [
        "PASS: %s%s" % (case, end) for case, _ in BAD_RINGS for end in ("", "/recovered")]
    missing = [w for w in want if w not in lines]
    check("bad-ring/guest-passes", not missing and not any(l.startswith("FAIL") for l in lines)
          and "vm vbad exited: status 0" in out, "missing %s\n%s" % (missing, out[-4000:]))
    reports = re.findall(r"^vm vbad: virtio-blk: (.*); device needs reset\s*$", out, re.M)
    check("bad-ring/each-reported", len(reports) == len(BAD_RINGS) and all(
        re.fullmatch(why, got) for (_, why), got in zip(BAD_RINGS, reports)),
        "\n".join(reports))
    out = m.command("stats vbad")
    check("bad-ring/sprig-goes-on", "vm vbad (" in out and "sprig " in m.command("version"), out)
    check("bad-ring/counted", counter(out, "virtio_blk_bad_rings") == len(BAD_RINGS), out)
    m.command("vm destroy vbad")
    m.send("vm console linux timeout=3600\r")
    m.expect("(Ctrl-] detaches)", timeout=60)
    out, _ = sh.run("echo 3 >/proc/sys/vm/drop_caches; md5sum /dev/vda; echo rc=$?")
    sums = re.findall(r"^([0-9a-f]{32})  /dev/vda$", out, re.M)
    check("bad-ring/linux-reads-its-disk", sums == [after] and "rc=0" in out,
          "%s want %s\n%s" % (sums, after, out))
    check("bad-ring/linux-device-untouched", "vm linux: virtio" not in m.log,
          m.log[-2000:])


def virtio_linux(check):
    make_linux_images(os.path.relpath(BAD_GUEST, ROOT))
    disk, before, after, payload = disk_image()
    iso = make_iso("virtio", "", [VMLINUZ, INITRD, disk, BAD_GUEST])
    m = Machine(iso, smp=2, mem="1G")
    try:
        m.expect(PROMPT, timeout=120)
        out = m.command("vm create linux vmlinuz initrd=initrd disk=vdisk:rw balloon=on "
                        "mem=256M -- console=ttyS0 quiet")
        check("virtio/create", "vm linux created" in out, out)
        m.send("vm console linux timeout=3600\r")
        # The line is there or expect times out: what came before it and after.
        boot = m.expect("sprig-linux: up, 1 CPUs", timeout=240) + m.expect("# ", timeout=60)
        sh = Shell(m)
        disk_checks(check, sh, boot, before, after, payload)
        balloon_checks(check, m, sh)
        bad_ring_checks(check, m, sh, disk, after)
        m.send("poweroff -f\r")
        out = m.expect(PROMPT, timeout=120)
        check("virtio/poweroff", "vm linux exited: status 0" in out, out[-2000:])
        out = m.command("vm audit linux")
        check("virtio/audit-clean", "mmu audit: ok, 0 errors" in out, out)
        out = (m.command("vm balloon linux 4G") + m.command("vm balloon linux 5000") +
               m.command("vm balloon nosuch") + m.command("vm balloon linux 1M 2"))
        check("balloon/bad-arguments", out.count("bad balloon size") == 2 and
              "no VM named 'nosuch'" in out and "at most a SIZE" in out, out)
        # Neither a disk's state nor a balloon's is in the records yet: a
        # snapshot or a clone of a VM with one is refused, not made without it.
        m.command("vm create paused vmlinuz initrd=initrd disk=vdisk mem=256M -- console=ttyS0")
        m.command("vm run paused timeout=1", timeout=60)
        out = m.command("vm create bal vmlinuz initrd=initrd balloon=on mem=256M -- "
                        "console=ttyS0")
        check("balloon/second-vm-created", "vm bal created" in out, out)
        m.command("vm run bal timeout=1", timeout=60)
        out = m.command("vm balloon paused")
        check("balloon/none-refused", "has no balloon" in out, out)
        out = (m.command("vm snapshot paused img") + m.command("vm clone paused c") +
               m.command("vm snapshot bal img") + m.command("vm clone bal c"))
        check("virtio/snapshot-clone-refused", out.count("has a virtio disk") == 2 and
              out.count("has a virtio balloon") == 2 and "vm c created" not in out, out)
        m.command("vm destroy paused")
        m.command("vm destroy bal")
        check("virtio/sprig-goes-on", "sprig " in m.command("version"), "")
    finally:
        m.close()


if __name__ == "__main__":
    from machine import scenario_main
    scenario_main(globals(), "virtio_linux")
