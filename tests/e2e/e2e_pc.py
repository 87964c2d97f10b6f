"""The PC chipset guest (guests/pc/) and the low-loaded guest
(guests/lowload/): bare under QEMU's pc machine (with -device pc-testdev),
the reference; then under sprig on AMD SVM (QEMU), where every check that
passes bare must pass too.

The pc guest prints `PASS: NAME`, `FAIL: NAME (detail)` or `SKIP: NAME (why)`
per check, `info:` lines (measurements; never compared) and a summary line
`pc: N passed, N failed, N skipped`; it exits with status 0 when nothing
failed. `pc poweroff` and `pc reset=cf9|fadt|kbd` end the machine instead:
bare, QEMU (-no-reboot) exits with status 0 either way, so the bare runs
tell the two apart by QMP's SHUTDOWN event ("guest-shutdown" for the ACPI S5
write, "guest-reset" for a reset).

lowload is linked at 0x8000, over QEMU's own multiboot information area
(0x9000-0x9600): QEMU's -kernel loader cannot boot it, so bare it boots from
a GRUB ISO (GRUB drops the file name from the command line, so the ISO gives
a first word, "lowload", as sprig's "MODULE ARGS" has). It prints the length,
byte sum and last 8 characters of its arguments: a 4000-character argument
must arrive whole."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

from bare import GUESTS, QemuError, SHUTDOWN, TIMEOUT
from machine import GUESTS_DIR, scenario_main, PROMPT, BochsConsole, Machine, check_lockcheck, \
    guest_lines, make_iso

SCENARIOS = ["pc_bare", "pc_sprig_svm", "pc_sprig_vmx"]

# Every check the default run prints, in its order.
ALL_CHECKS = ["acpi-walk", "pit-calibrate", "pmtimer-rate", "rtc-read", "ioapic-regs",
              "ioapic-pit", "pic-mask", "fwcfg", "pci-scan", "testdev-regs",
              "testdev-irq-edge", "testdev-irq-level", "testdev-flush"]

# What the bare machine (QEMU pc, -device pc-testdev) skips: nothing.
BARE_SKIPS = {}
# Without -device pc-testdev, the testdev checks skip and nothing else.
NO_TESTDEV_SKIPS = {n: "no pc-testdev" for n in ALL_CHECKS if n.startswith("testdev-")}

# QEMU's pc machine has an ACPI 1.0 FADT (revision 1, 116 bytes): no reset
# register, so `reset=fadt` skips bare.
FADT_RESET_SKIP_BARE = ("SKIP", "the FADT has no reset register")

LOWLOAD_ARG = "".join(chr(ord("a") + i % 26) for i in range(3992)) + "ENDMARK!"
assert len(LOWLOAD_ARG) == 4000


def lowload_line(arg):
    return 'lowload: image at 0x00008000, args length %d, sum %d, tail "%s"' % (
        len(arg), sum(arg.encode()), arg[-8:])


LINE = re.compile(r"^(PASS|FAIL|SKIP): (\S+)(?: \((.*)\))?$")
SUMMARY = re.compile(r"^pc: (\d+) passed, (\d+) failed, (\d+) skipped$", re.M)


def results(lines):
    """{check name: (PASS|FAIL|SKIP, detail)} from the guest's lines."""
    if isinstance(lines, str):
        lines = lines.splitlines()
    out = {}
    for line in lines:
        m = LINE.match(line.strip())
        if m:
            out[m.group(2)] = (m.group(1), m.group(3) or "")
    return out


class _Qmp(threading.Thread):
    """Collects QMP events from QEMU's socket until QEMU closes it."""

    def __init__(self, path, deadline):
        super().__init__(daemon=True)
        self.events = []
        self.sock = None
        while True:
            try:
                s = socket.socket(socket.AF_UNIX)
                s.connect(path)
                self.sock = s
                break
            except OSError:
                s.close()
                if time.time() > deadline:
                    raise QemuError("no QMP socket at " + path)
                time.sleep(0.02)
        self.f = self.sock.makefile("rwb")
        self.f.readline()  # the greeting
        self.f.write(b'{"execute": "qmp_capabilities"}\n')
        self.f.flush()

    def run(self):
        try:
            for line in self.f:
                try:
                    msg = json.loads(line)
                except ValueError:
                    continue
                if "event" in msg:
                    self.events.append(msg)
        except OSError:
            pass

    def shutdown_reason(self):
        for e in self.events:
            if e["event"] == "SHUTDOWN":
                return e.get("data", {}).get("reason")
        return None


def run_qemu(kernel=None, cdrom=None, args="", testdev=True, mem="128M", timeout=60):
    """Boot KERNEL (-kernel, -append ARGS) or CDROM bare under QEMU's pc
    machine, with -device pc-testdev unless testdev is False. Returns
    (outcome, output, seconds): outcome is ("exit", status) for the guest's
    own exit through port 0xf4, ("poweroff",) or ("reset",) from QMP's
    SHUTDOWN event, (SHUTDOWN,) for another stop, (TIMEOUT,) when killed."""
    tmp = tempfile.mkdtemp(prefix="sprig-pc-")
    qmp_path = os.path.join(tmp, "qmp.sock")
    cmd = ["qemu-system-x86_64", "-accel", "tcg", "-cpu", "max", "-m", mem,
           "-display", "none", "-serial", "stdio", "-monitor", "none",
           "-no-reboot", "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04",
           "-qmp", "unix:%s,server=on,wait=on" % qmp_path]
    if testdev:
        cmd += ["-device", "pc-testdev"]
    if kernel:
        cmd += ["-kernel", kernel, "-append", args]
    else:
        cmd += ["-cdrom", cdrom]
    start = time.time()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        try:
            qmp = _Qmp(qmp_path, start + 10)
        except QemuError:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            raise QemuError("%s: %s" % (" ".join(cmd), err.decode("utf-8", "replace")))
        qmp.start()
        try:
            out, err = proc.communicate(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            timed_out = True
        qmp.join(2)
        seconds = time.time() - start
        output = out.decode("utf-8", "replace").replace("\r\n", "\n")
        check_lockcheck(output)  # sprig's, when it boots sprig (cdrom)
        errors = [line for line in err.decode("utf-8", "replace").splitlines()
                  if line.strip() and "warning" not in line and "QEMU waiting" not in line]
        if timed_out:
            return (TIMEOUT,), output, seconds
        reason = qmp.shutdown_reason()
        if reason == "guest-shutdown":
            return ("poweroff",), output, seconds
        if reason == "guest-reset":
            return ("reset",), output, seconds
        if errors:
            raise QemuError("%s: %s" % (" ".join(cmd), "\n".join(errors)))
        if proc.returncode & 1:
            return ("exit", proc.returncode >> 1), output, seconds
        return (SHUTDOWN,), output, seconds
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def run_grub_iso(name, grub_args, timeout=60):
    """Boot GUESTS/NAME.elf from a GRUB ISO (multiboot, version 1) bare under
    QEMU: for kernels QEMU's -kernel loader cannot place."""
    d = tempfile.mkdtemp(prefix="sprig-pc-iso-")
    try:
        os.makedirs(os.path.join(d, "iso", "boot", "grub"))
        shutil.copy(os.path.join(GUESTS, name + ".elf"), os.path.join(d, "iso", "boot"))
        with open(os.path.join(d, "iso", "boot", "grub", "grub.cfg"), "w") as f:
            f.write("set timeout=0\n"
                    "serial --unit=0 --speed=115200\n"
                    "menuentry %s {\n"
                    "  multiboot /boot/%s.elf %s\n"
                    "  boot\n"
                    "}\n" % (name, name, grub_args))
        iso = os.path.join(d, name + ".iso")
        p = subprocess.run(["grub-mkrescue", "-o", iso, os.path.join(d, "iso")],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if p.returncode != 0:
            raise QemuError("grub-mkrescue: " + p.stdout.decode("utf-8", "replace"))
        return run_qemu(cdrom=iso, testdev=False, timeout=timeout)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def pc_kernel():
    return os.path.join(GUESTS, "pc.elf")


_bare_cache = {}


def bare_runs():
    """Every bare run, once per process: {key: (outcome, output, seconds)}."""
    if not _bare_cache:
        _bare_cache["pc"] = run_qemu(pc_kernel(), timeout=120)
        _bare_cache["pc-no-testdev"] = run_qemu(pc_kernel(), testdev=False, timeout=120)
        _bare_cache["poweroff"] = run_qemu(pc_kernel(), args="poweroff")
        for how in ("cf9", "fadt", "kbd"):
            _bare_cache["reset=" + how] = run_qemu(pc_kernel(), args="reset=" + how)
        _bare_cache["lowload"] = run_grub_iso("lowload", "lowload " + LOWLOAD_ARG)
    return _bare_cache


def check_default_run(check, pre, outcome, out, want_skips):
    res = results(out)
    check(pre + "-status", outcome == ("exit", 0), "outcome %r\n%s" % (outcome, out[-3000:]))
    fails = {n: d for n, (s, d) in res.items() if s == "FAIL"}
    check(pre + "-no-fail", not fails and "FAIL" not in out, out[-3000:])
    missing = [n for n in ALL_CHECKS if n not in res]
    check(pre + "-all-checks-reported", not missing, "missing %s\n%s" % (missing, out[-3000:]))
    skips = {n: d for n, (s, d) in res.items() if s == "SKIP"}
    check(pre + "-skips", skips == want_skips, "skipped %r, expected %r" % (skips, want_skips))
    check(pre + "-summary", SUMMARY.search(out) is not None, out[-3000:])


def pc_bare(check):
    runs = bare_runs()
    for key, (outcome, _, seconds) in runs.items():
        print("bare %s: %r in %.2f s" % (key, outcome, seconds), flush=True)
    outcome, out, _ = runs["pc"]
    check_default_run(check, "pc/bare", outcome, out, BARE_SKIPS)
    check("pc/bare-tsc-info", re.search(r"^info: TSC \d+ kHz against the PIT", out, re.M)
          is not None, out[-3000:])
    outcome, out, _ = runs["pc-no-testdev"]
    check_default_run(check, "pc/bare-no-testdev", outcome, out, NO_TESTDEV_SKIPS)

    outcome, out, _ = runs["poweroff"]
    check("pc/bare-poweroff", outcome == ("poweroff",), "outcome %r\n%s" % (outcome, out))
    check("pc/bare-poweroff-slp-typ", "info: poweroff: DSDT _S5_ SLP_TYPa 0, PM1a_CNT 0x604"
          in out, out)
    for how in ("cf9", "kbd"):
        outcome, out, _ = runs["reset=" + how]
        check("pc/bare-reset-" + how, outcome == ("reset",) and "FAIL" not in out,
              "outcome %r\n%s" % (outcome, out))
    outcome, out, _ = runs["reset=fadt"]
    check("pc/bare-reset-fadt-skips", outcome == ("exit", 0) and
          results(out).get("reset-fadt") == FADT_RESET_SKIP_BARE,
          "outcome %r\n%s" % (outcome, out))

    outcome, out, _ = runs["lowload"]
    check("pc/bare-lowload-status", outcome == ("exit", 0), "outcome %r\n%s" % (outcome, out))
    check("pc/bare-lowload-args", lowload_line(LOWLOAD_ARG) in out.splitlines(),
          "expected %r\n%s" % (lowload_line(LOWLOAD_ARG), out[-500:]))


def compare_with_bare(check, prefix, out, vm="pc"):
    """sprig's default run of the guest against the bare one: a check that
    passed bare must pass; nothing may fail; the exit status is 0."""
    runs = bare_runs()
    bare = results(runs["pc"][1])
    under = results(guest_lines(out, vm))
    check(prefix + "/pc-exit-status-0", "vm %s exited: status 0" % vm in out, out[-3000:])
    check(prefix + "/pc-all-checks-reported", all(n in under for n in ALL_CHECKS),
          "missing %s\n%s" % ([n for n in ALL_CHECKS if n not in under], out[-3000:]))
    fails = {n: d for n, (s, d) in under.items() if s == "FAIL"}
    check(prefix + "/pc-no-fail", not fails, "%r" % fails)
    for name in ALL_CHECKS:
        if bare.get(name, ("",))[0] == "PASS":
            got = under.get(name, ("missing", ""))
            check("%s/pc-%s" % (prefix, name), got[0] == "PASS",
                  "passes bare; under sprig: %s %s" % (got[0], got[1]))


def run_through_snapshot(check, m, prefix, timeout, cmd_timeout):
    """The default run, stopped inside ioapic-pit (the PIT counting through
    the I/O APIC: argument `snapshot`), snapshotted, destroyed and restored
    from the image: the restored guest finishes its checks as a bare run
    does, which it can only with the chipset's state restored
    (docs/snapshot.md)."""
    out = m.command("vm create pc pc mem=128M -- snapshot", timeout=60)
    check(prefix + "/pc-created", "vm pc created" in out, out)
    first = m.command("vm run pc timeout=%d" % timeout, timeout=cmd_timeout)
    check(prefix + "/pc-paused-mid-check", "vm pc stopped: snapshot point" in first,
          first[-2000:])
    check(prefix + "/pc-unfinished-line-waits", "stopped at the snapshot point" not in first,
          first[-2000:])
    out = m.command("vm snapshot pc mid", timeout=60)
    check(prefix + "/pc-snapshot", "vm pc snapshot: image 'mid'" in out, out)
    out = m.command("vm destroy pc", timeout=60)
    check(prefix + "/pc-destroy-prints-unfinished-line",
          "[pc] info: ioapic-pit: stopped at the snapshot point" in
          [line.rstrip() for line in out.splitlines()], out)
    out = m.command("vm create pc restore=mid", timeout=60)
    check(prefix + "/pc-restored", "vm pc created" in out, out)
    out = m.command("vm run pc timeout=%d" % timeout, timeout=cmd_timeout)
    check(prefix + "/pc-line-whole-across-restore",
          "[pc] info: ioapic-pit: stopped at the snapshot point and went on" in out, out[-3000:])
    compare_with_bare(check, prefix, first + out)
    m.command("vm destroy pc", timeout=60)
    out = m.command("vm image-free mid", timeout=60)
    check(prefix + "/pc-image-freed", "FAIL" not in out and "cannot" not in out, out)


def pc_sprig_svm(check):
    bare_runs()
    m = Machine(make_iso("pc-svm", "", [os.path.join(GUESTS_DIR, "pc.elf"),
                                        os.path.join(GUESTS_DIR, "lowload.elf")]))
    try:
        m.expect(PROMPT, timeout=60)
        out = m.command("vm create pc pc mem=128M")
        check("svm/pc-created", "vm pc created" in out, out)
        out = m.command("vm run pc timeout=60", timeout=180)
        compare_with_bare(check, "svm", out)
        m.command("vm destroy pc")
        run_through_snapshot(check, m, "svm-snap", 60, 180)

        out = m.command("vm create off pc mem=128M -- poweroff")
        check("svm/pc-poweroff-created", "vm off created" in out, out)
        out = m.command("vm run off timeout=30", timeout=90)
        check("svm/pc-poweroff", "vm off exited: status 0 (ACPI power off)" in out, out)

        for how in ("cf9", "fadt", "kbd"):
            vm = "rst" + how
            out = m.command("vm create %s pc mem=128M -- reset=%s" % (vm, how))
            check("svm/pc-reset-%s-created" % how, "vm %s created" % vm in out, out)
            out = m.command("vm run %s timeout=30" % vm, timeout=90)
            # sprig's FADT must carry a reset register (revision >= 2,
            # RESET_REG_SUP), unlike QEMU's: fadt is expected to reset too.
            check("svm/pc-reset-" + how, "vm %s stopped: guest reset" % vm in out, out)

        out = m.command("vm create low lowload -- " + LOWLOAD_ARG)
        check("svm/lowload-created", "vm low created" in out, out[-2000:])
        out = m.command("vm run low timeout=30", timeout=90)
        check("svm/lowload-status", "vm low exited: status 0" in out, out[-2000:])
        bare_line = [l for l in runs_lines("lowload") if l.startswith("lowload:")]
        got = [l for l in guest_lines(out, "low") if l.startswith("lowload:")]
        check("svm/lowload-same-as-bare", got == bare_line and bool(got),
              "bare %r, under sprig %r" % (bare_line, got))
    finally:
        m.close()


def pc_sprig_vmx(check):
    """The same chipset under VMX (Bochs corei7_skylake_x): the default run,
    through a snapshot and restore, and S5, kept short."""
    bare_runs()  # before BochsConsole takes the one-Bochs lock
    m = BochsConsole(make_iso("pc-vmx", "", [os.path.join(GUESTS_DIR, "pc.elf")]))
    try:
        m.expect(PROMPT, timeout=240)
        run_through_snapshot(check, m, "vmx", 300, 420)
        m.command("vm create off pc mem=128M -- poweroff", timeout=60)
        out = m.command("vm run off timeout=60", timeout=180)
        check("vmx/pc-poweroff", "vm off exited: status 0 (ACPI power off)" in out, out)
    finally:
        m.close()


def runs_lines(key):
    return bare_runs()[key][1].splitlines()


if __name__ == "__main__":
    scenario_main(globals(), "pc_bare")
