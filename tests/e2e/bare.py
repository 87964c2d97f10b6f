"""Run a test guest (build/guests/NAME.elf) bare under QEMU, as `-kernel`.

The same guests run under sprig; comparing the two outputs shows that sprig
loads and runs a multiboot kernel as QEMU does."""
import os
import signal
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GUESTS = os.path.join(ROOT, "build", "guests")

# Exit statuses that are not the guest's own: QEMU stopped without a write to
# the exit port (a triple fault, with -no-reboot), or the guest outlived the
# timeout and was killed.
SHUTDOWN = "shutdown"
TIMEOUT = "timeout"


class QemuError(Exception):
    """QEMU itself failed, for example refusing to load the kernel."""


def run_bare(name, args="", mem="128M", timeout=60):
    """Boot build/guests/NAME.elf with -append ARGS and return
    (exit_status, output): the guest's exit status (or SHUTDOWN or TIMEOUT)
    and its serial output with "\\r\\n" turned into "\\n". Nothing precedes
    the guest's first line: SeaBIOS does not print on the serial port."""
    kernel = os.path.join(GUESTS, name + ".elf")
    cmd = ["qemu-system-x86_64", "-accel", "tcg", "-cpu", "max", "-m", mem,
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


if __name__ == "__main__":
    import sys
    st, text = run_bare(sys.argv[1], " ".join(sys.argv[2:]))
    sys.stdout.write(text)
    print("[exit status: %s]" % st)
