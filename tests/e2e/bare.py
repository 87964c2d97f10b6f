"""Run a test guest (build/guests/NAME.elf) bare under QEMU, as `-kernel`, or
under Bochs from a GRUB ISO (`bare.py --bochs NAME ARGS`).

The same guests run under sprig; comparing the two outputs shows that sprig
loads and runs a multiboot kernel as QEMU does."""
import os
import signal
import subprocess

from machine import iso_path, run_bochs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GUESTS = os.path.join(ROOT, "build", "guests")

# Exit statuses that are not the guest's own: QEMU stopped without a write to
# the exit port (a triple fault, with -no-reboot), or the guest outlived the
# timeout and was killed.
SHUTDOWN = "shutdown"
TIMEOUT = "timeout"


class QemuError(Exception):
    """QEMU itself failed, for example refusing to load the kernel."""


def run_bare(name, args="", mem="128M", timeout=60, cpus=1):
    """Boot build/guests/NAME.elf with -append ARGS on CPUS CPUs and return
    (exit_status, output): the guest's exit status (or SHUTDOWN or TIMEOUT)
    and its serial output with "\\r\\n" turned into "\\n". Nothing precedes
    the guest's first line: SeaBIOS does not print on the serial port."""
    kernel = os.path.join(GUESTS, name + ".elf")
    cmd = ["qemu-system-x86_64", "-accel", "tcg", "-cpu", "max", "-m", mem,
           "-smp", str(cpus),
           "-display", "none", "-serial", "stdio", "-monitor", "none",
           "-no-reboot", "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04",
           "-kernel", kernel, "-append", args]
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        status = None
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        status = TIMEOUT
    output = out.decode("utf-8", "replace").replace("\r\n", "\n")
    errors = [line for line in err.decode("utf-8", "replace").splitlines()
              if line.strip() and "warning" not in line]
    if status is None:
        if errors:
            # QEMU's own failures exit with 1, which looks like status 0.
            raise QemuError("%s: %s" % (" ".join(cmd), "\n".join(errors)))
        # isa-debug-exit ends QEMU with (v << 1) | 1.
        status = proc.returncode >> 1 if proc.returncode & 1 else SHUTDOWN
    return status, output


def make_bare_iso(name, args="", path=None):
    """A GRUB rescue ISO that boots build/guests/NAME.elf itself with
    multiboot (version 1) and ARGS: for machines without -kernel (Bochs).
    GRUB keeps to the screen, so COM1 carries only the guest's output."""
    import shutil
    import tempfile
    kernel = os.path.join(GUESTS, name + ".elf")
    if path is None:
        path = iso_path("bare-" + name)
    d = tempfile.mkdtemp(prefix="sprig-bare-")
    try:
        os.makedirs(os.path.join(d, "boot", "grub"))
        shutil.copy(kernel, os.path.join(d, "boot", name + ".elf"))
        with open(os.path.join(d, "boot", "grub", "grub.cfg"), "w") as f:
            # `serial` sets COM1 to 8N1 (the guests do not program the
            # UART); without terminal_output serial GRUB stays off it. GRUB
            # drops the file name from the command line: the guest's name
            # stands first instead, as the kernel's path does under -kernel.
            f.write("set timeout=0\n"
                    "serial --unit=0 --speed=115200\n"
                    "menuentry %s {\n"
                    "  multiboot /boot/%s.elf %s %s\n"
                    "  boot\n"
                    "}\n" % (name, name, name, args))
        p = subprocess.run(["grub-mkrescue", "-o", path, d], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
        if p.returncode != 0:
            raise QemuError("grub-mkrescue: " + p.stdout.decode("utf-8", "replace"))
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return path


def run_bare_bochs(name, args="", model="corei7_skylake_x", megs=128, timeout=300):
    """Boot build/guests/NAME.elf bare under Bochs (GRUB loads it from an ISO)
    and return its serial output ("\r\n" turned into "\n"). Bochs cannot
    report the guest's exit status: the runtime's exit() ends Bochs through
    port 0x8900, and the caller reads the status from the guest's own
    output. One Bochs at a time (machine.run_bochs holds the lock)."""
    iso = make_bare_iso(name, args, iso_path("bare-%s-%s" % (name, model)))
    return run_bochs(iso, model=model, megs=megs, timeout=timeout)


if __name__ == "__main__":
    import sys
    if len(sys.argv) > 1 and sys.argv[1] == "--bochs":
        import time
        t = time.time()
        sys.stdout.write(run_bare_bochs(sys.argv[2], " ".join(sys.argv[3:])))
        print("[bochs: %.1f s]" % (time.time() - t))
        sys.exit(0)
    st, text = run_bare(sys.argv[1], " ".join(sys.argv[2:]))
    sys.stdout.write(text)
    print("[exit status: %s]" % st)
