"""virtio-blk under Debian's stock kernel (QEMU, SVM): one boot of sprig, a
Linux VM with a writable disk made from a module (`disk=vdisk:rw`), its
init loading the virtio modules from the initramfs. Checked: the device on
the virtio bus (/sys/bus/virtio/devices, device ID 2) and as /dev/vda of the
module's size, the disk read whole with the module's checksum, a 4 KiB
block written, the page cache dropped and the disk read back with the
checksum of the image so changed, and `vm audit` clean afterwards; a paused
VM with a disk refuses snapshots and clones (their records hold no disk)."""
import hashlib
import os
import random
import re
import subprocess

from machine import ROOT, Machine, guest_lines, make_iso

SCENARIOS = ["virtio_blk_linux"]

VMLINUZ = os.path.join(ROOT, "build", "linux", "vmlinuz")
INITRD = os.path.join(ROOT, "build", "linux", "initrd")
DISK_BYTES = 1 << 20
BLOCK = 4096
COPY_TO = 10  # block 0 is written over block 10
# Few words: a console line holds at most 32.
RUN = ("ls /sys/bus/virtio/devices;cat /sys/bus/virtio/devices/*/device /sys/block/vda/size;"
       "md5sum /dev/vda;dd if=/dev/vda of=/tmp/b bs=%d count=1;"
       "dd if=/tmp/b of=/dev/vda bs=%d seek=%d conv=fsync;"
       "echo 3 >/proc/sys/vm/drop_caches;md5sum /dev/vda" % (BLOCK, BLOCK, COPY_TO))


def disk_image():
    """build/e2e/vdisk: DISK_BYTES of seeded random bytes; its md5 and the
    md5 once block 0 is copied over block COPY_TO."""
    data = bytearray(random.Random(28).randbytes(DISK_BYTES))
    out = os.path.join(ROOT, "build", "e2e")
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "vdisk")
    with open(path, "wb") as f:
        f.write(data)
    before = hashlib.md5(data).hexdigest()
    data[COPY_TO * BLOCK:(COPY_TO + 1) * BLOCK] = data[:BLOCK]
    return path, before, hashlib.md5(data).hexdigest()


def virtio_blk_linux(check):
    subprocess.run(["make", "-s", "-C", ROOT, "linux-images"], check=True)
    disk, before, after = disk_image()
    iso = make_iso("virtio", "", [VMLINUZ, INITRD, disk])
    m = Machine(iso, smp=2, mem="1G")
    try:
        m.expect("sprig> ", timeout=120)
        out = m.command("vm create linux vmlinuz initrd=initrd disk=vdisk:rw mem=256M -- "
                        "console=ttyS0 quiet sprig.run=\"%s\"" % RUN)
        check("virtio/create", "vm linux created" in out, out)
        out = m.command("vm run linux timeout=100", timeout=130)
        lines = guest_lines(out, "linux")
        text = "\n".join(lines)
        check("virtio/modules-loaded", "sprig-linux: up, 1 CPUs" in lines and
              "insmod" not in text, text[-3000:])
        check("virtio/bus-lists-device", "virtio0" in lines and "0x0002" in lines, text[-3000:])
        check("virtio/vda-size", str(DISK_BYTES // 512) in lines, text[-3000:])
        sums = re.findall(r"^([0-9a-f]{32})  /dev/vda$", text, re.M)
        check("virtio/read-md5", sums[:1] == [before], "%s want %s\n%s" % (sums, before, text[-3000:]))
        check("virtio/write-read-back-md5", sums[1:2] == [after],
              "%s want %s\n%s" % (sums, after, text[-3000:]))
        check("virtio/run-status", "sprig-linux: run done, status 0" in lines, text[-3000:])
        out = m.command("vm audit linux")
        check("virtio/audit-clean", "mmu audit: ok, 0 errors" in out, out)
        # A disk's state is not in the records yet: a snapshot or a clone
        # of a VM with one is refused, not made without it.
        m.command("vm create paused vmlinuz initrd=initrd disk=vdisk mem=256M -- console=ttyS0")
        m.command("vm run paused timeout=1", timeout=60)
        out = m.command("vm snapshot paused img") + m.command("vm clone paused c")
        check("virtio/snapshot-clone-refused", out.count("has a virtio disk") == 2 and
              "vm c created" not in out, out)
        m.command("vm destroy paused")
        check("virtio/sprig-goes-on", "sprig " in m.command("version"), "")
    finally:
        m.close()


if __name__ == "__main__":
    from machine import scenario_main
    scenario_main(globals(), "virtio_blk_linux")
