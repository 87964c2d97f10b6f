"""Boot a sprig ISO under QEMU or Bochs and talk to its serial console."""
import fcntl
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, "build", "e2e")
GUESTS_DIR = os.path.join(ROOT, "build", "guests")
PROMPT = "sprig> "
OVMF_CODE = "/usr/share/OVMF/OVMF_CODE_4M.fd"
OVMF_VARS = "/usr/share/OVMF/OVMF_VARS_4M.fd"


# tests/run.py runs two lanes of scenarios at once; a lane's name keeps its
# ISOs apart from the other's.
LANE = threading.local()


def make_linux_images(*more):
    """`make linux-images` (and more targets), one lane at a time: two makes
    at once would build the same initramfs tree together."""
    os.makedirs(BUILD, exist_ok=True)
    with open(os.path.join(BUILD, "linux-images.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        subprocess.run(["make", "-s", "-C", ROOT, "linux-images"] + list(more), check=True)


def iso_path(name):
    """build/e2e/NAME.iso, or NAME-LANE.iso inside a named lane."""
    os.makedirs(BUILD, exist_ok=True)
    lane = getattr(LANE, "name", "")
    return os.path.join(BUILD, name + ("-" + lane if lane else "") + ".iso")


def make_iso(name, args="", modules=()):
    """Build build/e2e/NAME.iso booting build/sprig.elf with kernel ARGS."""
    iso = iso_path(name)
    subprocess.run([os.path.join(ROOT, "tools", "mkiso.sh"),
                    os.path.join(ROOT, "build", "sprig.elf"), iso, args, *modules],
                   check=True)
    return iso


class Timeout(Exception):
    pass


# A lock-rule violation sprig found (arch/x86/lock_check.c, docs/locking.md):
# every line of its report starts with this. Any boot that prints it fails.
LOCKCHECK_MARKER = "lockcheck: "
SPRIG_ELF = os.path.join(ROOT, "build", "sprig.elf")


class LockcheckViolation(Exception):
    pass


def symbolize(text):
    """The report's addresses as function (file:line), inlined callers too."""
    addrs = sorted(set(re.findall(r"0x[0-9a-f]+", text)))
    if not addrs or not os.path.exists(SPRIG_ELF):
        return text
    try:
        out = subprocess.run(["addr2line", "-f", "-i", "-p", "-e", SPRIG_ELF, *addrs],
                             capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return text
    names, lines = {}, out.splitlines()
    # -i prints an address's inlined callers on lines of their own, after it.
    k = -1
    for line in lines:
        if line.startswith(" (inlined by)") and k >= 0:
            names[addrs[k]] += "; " + line.strip()
        elif k + 1 < len(addrs):
            k += 1
            names[addrs[k]] = line.strip()
    return re.sub(r"0x[0-9a-f]+",
                  lambda m: "%s [%s]" % (m.group(0), names.get(m.group(0), "?")), text)


def check_lockcheck(log):
    """Raise LockcheckViolation, with the reports symbolized, if sprig printed one."""
    if LOCKCHECK_MARKER not in log:
        return
    report = "\n".join(l for l in log.splitlines() if l.startswith(LOCKCHECK_MARKER))
    raise LockcheckViolation("sprig reported a lock-rule violation:\n" + symbolize(report))


class Console:
    """sprig's serial console, whatever carries it; `log` keeps everything it
    printed. Subclasses give _recv (bytes, b"" at the end, None for nothing
    yet), send_bytes and close."""

    def _start_log(self):
        self.log = ""
        self.pending_cr = ""
        self.pos = 0  # how much of log has been consumed by expect()

    def _read(self, timeout):
        data = self._recv(timeout)
        if data is None:
            return False
        if not data:
            return None
        # A "\r\n" may straddle two reads: hold a trailing "\r" back.
        text = self.pending_cr + data.decode("utf-8", "replace")
        self.pending_cr = "\r" if text.endswith("\r") else ""
        self.log += text[:len(text) - len(self.pending_cr)].replace("\r\n", "\n")
        return True

    def expect(self, text, timeout=30):
        """Wait until `text` appears after what was consumed; return what came before it."""
        deadline = time.time() + timeout
        while True:
            i = self.log.find(text, self.pos)
            if i >= 0:
                out = self.log[self.pos:i]
                self.pos = i + len(text)
                return out
            left = deadline - time.time()
            if left <= 0:
                raise Timeout("no %r within %ss; console tail:\n%s%s%s" %
                              (text, timeout, self.log[-1500:], self.oops_head(),
                               self.hang_report()))
            if self._read(min(left, 1.0)) is None:
                raise Timeout("emulator exited before %r; console tail:\n%s" % (text, self.log[-1500:]))

    # A Linux guest's report of its own trouble: its first lines say what
    # happened, which the tail of a panic no longer shows.
    OOPS = re.compile(r"\] (BUG:|Oops|WARNING:|general protection|double fault|"
                      r"Kernel panic|rcu: INFO)")

    def oops_head(self):
        """The first 3000 characters from a guest's first oops line since
        the last expect, if there was one."""
        r = self.OOPS.search(self.log, self.pos)
        if not r:
            return ""
        start = self.log.rfind("\n", 0, r.start()) + 1
        return "\nthe guest's first trouble:\n" + self.log[start:start + 3000]

    def hang_report(self):
        """What the emulator can tell of its CPUs when sprig stops answering."""
        return ""

    def send(self, raw):
        self.send_bytes(raw.encode())

    def command(self, line, timeout=30):
        """Type LINE, return its output (between the echoed line and the next prompt)."""
        self.send(line + "\r")
        self.expect("\n", timeout)  # the echoed line
        out = self.expect(PROMPT, timeout)
        return out.lstrip("\n")


class Machine(Console):
    """QEMU running sprig, its console on QEMU's standard input and output."""

    def __init__(self, iso, firmware="bios", smp=1, mem="1G", extra=(), serial="stdio"):
        self.tmp = tempfile.mkdtemp(prefix="sprig-e2e-")
        cmd = ["qemu-system-x86_64", "-accel", "tcg", "-cpu", "max", "-m", mem,
               "-smp", str(smp), "-display", "none", "-serial", serial,
               "-monitor", "none", "-no-reboot",
               "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04", "-cdrom", iso]
        if firmware == "uefi":
            vars_copy = os.path.join(self.tmp, "vars.fd")
            shutil.copy(OVMF_VARS, vars_copy)
            cmd += ["-drive", "if=pflash,format=raw,unit=0,readonly=on,file=" + OVMF_CODE,
                    "-drive", "if=pflash,format=raw,unit=1,file=" + vars_copy]
        # A monitor of its own, for hang_report.
        self.qmp_path = os.path.join(self.tmp, "hang.sock")
        cmd += ["-qmp", "unix:%s,server=on,wait=off" % self.qmp_path] + list(extra)
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        self._start_log()

    def _recv(self, timeout):
        r, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not r:
            return None
        return os.read(self.proc.stdout.fileno(), 65536)

    def hang_report(self):
        """Each CPU's RIP and frames, and the console CPU's local APIC (its
        tick wakes the shell), from QEMU's monitor."""
        from monitor import Qmp, Symbols  # monitor imports this module
        qmp = Qmp(self.qmp_path)
        try:
            cpus = qmp.dump(Symbols()).split("\n---", 1)[0]
            return "\nCPUs:\n%s\nCPU 0's local APIC:\n%s" % (cpus, qmp.hmp("info lapic", 0))
        except Exception as e:  # the report must not hide the timeout
            return "\n(no CPU report: %s)" % e
        finally:
            qmp.close()

    def send_bytes(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def wait_exit(self, timeout=30):
        deadline = time.time() + timeout
        while self.proc.poll() is None:
            if time.time() > deadline:
                raise Timeout("emulator still running after %ss" % timeout)
            self._read(0.2)
        while self._read(0.05):
            pass
        return self.proc.returncode

    def close(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)
        check_lockcheck(self.log)


BOCHSRC = """megs: {megs}
cpu: model={model}, count={cpus}, ips=200000000, reset_on_triple_fault=0
romimage: file=/usr/share/bochs/BIOS-bochs-latest
vgaromimage: file=/usr/share/vgabios/vgabios.bin
ata0: enabled=1, ioaddr1=0x1f0, ioaddr2=0x3f0, irq=14
ata0-slave: type=cdrom, path={iso}, status=inserted
boot: cdrom
com1: enabled=1, mode=file, dev={out}
display_library: rfb, options="timeout=0"
log: {log}
panic: action=fatal
clock: sync=none, time0=local
speaker: enabled=0
"""


BOCHS_LOCK = os.path.join(tempfile.gettempdir(), "sprig-bochs.lock")


def run_bochs(iso, model="corei7_skylake_x", megs=512, timeout=300, cpus=1):
    """Boot ISO under Bochs (with cpus CPUs), wait for it to end, return the
    serial output. One Bochs at a time on this machine, whoever starts it: its
    display holds a TCP port, and a second instance hangs."""
    with open(BOCHS_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _run_bochs_locked(iso, model, megs, timeout, cpus)


def _run_bochs_locked(iso, model, megs, timeout, cpus):
    tmp = tempfile.mkdtemp(prefix="sprig-bochs-")
    try:
        out = os.path.join(tmp, "com1.txt")
        rc = os.path.join(tmp, "rc")
        conf = os.path.join(tmp, "bochsrc")
        with open(rc, "w") as f:
            f.write("c\nquit\n")
        with open(conf, "w") as f:
            f.write(BOCHSRC.format(megs=megs, model=model, iso=iso, out=out, cpus=cpus,
                                   log=os.path.join(tmp, "bochs.log")))
        proc = subprocess.Popen(["bochs", "-q", "-f", conf, "-rc", rc],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        with open(out, "rb") as f:
            log = f.read().decode("utf-8", "replace").replace("\r\n", "\n")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    check_lockcheck(log)
    return log


class BochsConsole(Console):
    """Bochs running sprig, its COM1 on a TCP socket: the console driven
    interactively, as Machine drives QEMU's. Holds the one-Bochs lock.
    debugger: Bochs's debugger reads its commands from a pipe (self.proc's
    stdin and stdout) once the rc file's "c" stops running, instead of
    quitting."""

    def __init__(self, iso, model="corei7_skylake_x", megs=512, cpus=1, debugger=False):
        self.lock = open(BOCHS_LOCK, "w")
        fcntl.flock(self.lock, fcntl.LOCK_EX)
        self.tmp = tempfile.mkdtemp(prefix="sprig-bochs-")
        self.sock = None
        self._start_log()
        srv = socket.socket()
        try:
            srv.bind(("127.0.0.1", 0))
            srv.listen(1)
            srv.settimeout(60)
            conf = os.path.join(self.tmp, "bochsrc")
            rc = os.path.join(self.tmp, "rc")
            with open(rc, "w") as f:
                f.write("c\n" if debugger else "c\nquit\n")
            text = BOCHSRC.format(megs=megs, model=model, iso=iso, out="/dev/null", cpus=cpus,
                                  log=os.path.join(self.tmp, "bochs.log"))
            text = text.replace("com1: enabled=1, mode=file, dev=/dev/null",
                                "com1: enabled=1, mode=socket-client, dev=127.0.0.1:%d"
                                % srv.getsockname()[1])
            with open(conf, "w") as f:
                f.write(text)
            pipe = subprocess.PIPE if debugger else subprocess.DEVNULL
            self.proc = subprocess.Popen(["bochs", "-q", "-f", conf, "-rc", rc], stdin=pipe,
                                         stdout=pipe,
                                         stderr=subprocess.STDOUT if debugger else pipe,
                                         start_new_session=True)
            self.sock, _ = srv.accept()
        finally:
            srv.close()

    def _recv(self, timeout):
        r, _, _ = select.select([self.sock], [], [], timeout)
        if not r:
            return None
        return self.sock.recv(65536)

    def send_bytes(self, data):
        self.sock.sendall(data)

    def close(self):
        try:
            if self.sock:
                self.sock.close()
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.lock.close()
        check_lockcheck(self.log)


def guest_lines(out, vm):
    """The guest's own console lines, without sprig's '[vm] ' prefix."""
    pre = "[%s] " % vm
    return [l[len(pre):] for l in out.splitlines() if l.startswith(pre)]


def stat(out, name):
    """The value of a `stats` line `name value`, or None."""
    m = re.search(r"^\s*%s\s+(\d+)\s*$" % re.escape(name), out, re.M)
    return int(m.group(1)) if m else None


def bench_lines(out, bench):
    """The `@bench bench=BENCH ...` lines of out, each as a dict of its fields."""
    return [dict(kv.split("=", 1) for kv in line.split()[1:])
            for line in out.splitlines() if line.startswith("@bench bench=%s " % bench)]


def split_run_output(log):
    """Map each command run from run= (echoed as 'sprig> CMD') to its output."""
    parts = {}
    chunks = log.split(PROMPT)
    for chunk in chunks[1:]:
        line, _, rest = chunk.partition("\n")
        parts.setdefault(line.strip(), rest)
    return parts


def scenario_main(module_globals, default):
    """Run a module's scenarios named on the command line (default: one),
    printing each check; exit 1 if any failed. For running one e2e module
    by hand; tests/run.py runs them all."""
    import sys
    failed = []

    def check(name, ok, detail=""):
        print(("ok " if ok else "FAIL ") + name + ("" if ok else ": " + detail), flush=True)
        if not ok:
            failed.append(name)
        return ok

    for name in sys.argv[1:] or [default]:
        module_globals[name](check)
    sys.exit(1 if failed else 0)
