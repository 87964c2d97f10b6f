"""Every CPU's state when sprig hangs: QEMU's monitor (QMP, HMP commands
through human-monitor-command) or Bochs's debugger (SIGINT stops the
simulation at its prompt), each CPU's registers and a frame-pointer walk
(sprig is built with frame pointers), RIPs named against build/sprig.elf.

A RIP is sprig's when the bytes there are sprig.elf's: sprig and the test
guests are both linked low, so an address alone cannot tell a CPU in sprig
from one in a guest."""
import json
import os
import re
import select
import signal
import socket
import struct
import subprocess
import time

from machine import ROOT, BochsConsole, Timeout

SPRIG_ELF = os.path.join(ROOT, "build", "sprig.elf")
FRAMES = 8


class Symbols:
    """sprig.elf's functions (nm) and loaded bytes (its PT_LOAD segments)."""

    def __init__(self, elf=SPRIG_ELF):
        out = subprocess.run(["nm", "-n", elf], stdout=subprocess.PIPE, text=True).stdout
        syms = [l.split() for l in out.splitlines() if len(l.split()) == 3]
        self.funcs = [(int(a, 16), n) for a, t, n in syms if t in "tTwW"]
        # sprig runs every CPU on the page tables boot/paging.c builds from
        # its pool, the root first: any other CR3 is a guest's.
        self.cr3 = next((int(a, 16) for a, t, n in syms if n == "pool"), None)
        with open(elf, "rb") as f:
            data = f.read()
        phoff, = struct.unpack_from("<Q", data, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
        self.segments = []
        for i in range(phnum):
            typ, _, off, vaddr, _, filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
            if typ == 1:
                self.segments.append((vaddr, data[off:off + filesz]))

    def name(self, addr):
        best = None
        for a, n in self.funcs:
            if a > addr:
                break
            best = (a, n)
        return "%s+0x%x" % (best[1], addr - best[0]) if best else "?"

    def code(self, addr, n):
        for vaddr, data in self.segments:
            if vaddr <= addr and addr + n <= vaddr + len(data):
                return data[addr - vaddr:addr - vaddr + n]
        return None

    def where(self, rip, mem_bytes, cr3=None):
        """"sprig: FUNC+OFF" when the bytes at rip (read through the CPU's own
        mapping) are sprig's and so is its CR3; a guest's when they differ;
        when they cannot be read, most likely a guest's (QEMU's monitor does
        not walk nested paging), with the name it would have in sprig."""
        if cr3 is not None and self.cr3 is not None and cr3 & ~0xfff != self.cr3:
            return "in a guest (CR3 not sprig's; if sprig's: %s)" % self.name(rip)
        if mem_bytes is None:
            return "in a guest or unreadable (if sprig's: %s)" % self.name(rip)
        if self.code(rip, len(mem_bytes)) == mem_bytes:
            return "sprig: " + self.name(rip)
        return "in a guest (not sprig's code there)"


def memory_bytes(out, sep, n):
    """The bytes a monitor's `x /NxB ADDR` printed, lines "ADDRESS<sep> 0x.. 0x..";
    None unless n of them."""
    vals = [int(v, 16) for l in out.splitlines() if sep in l
            for v in re.findall(r"0x([0-9a-f]{2})\b", l.split(sep, 1)[1])]
    return bytes(vals) if len(vals) == n else None


def describe(cpu, regs, read, syms):
    """One CPU: its RIP named, then the return addresses of its frame chain.
    read(addr, n) gives n bytes of the CPU's memory or None."""
    rip, rbp = regs.get("rip"), regs.get("rbp")
    if rip is None:
        return "cpu %d: no registers" % cpu
    where = syms.where(rip, read(rip, 16), regs.get("cr3"))
    line = "cpu %d: RIP 0x%x %s; RSP 0x%x RBP 0x%x CR3 0x%x" % (
        cpu, rip, where, regs.get("rsp", 0), rbp or 0, regs.get("cr3", 0))
    if not where.startswith("sprig"):
        return line
    frames = []
    for _ in range(FRAMES):
        raw = read(rbp, 16) if rbp else None
        if not raw or len(raw) < 16:
            break
        rbp, ret = struct.unpack("<QQ", raw)
        if not ret or syms.code(ret, 1) is None:
            break
        frames.append(syms.name(ret))
    return line + ("\n    called from " + " <- ".join(frames) if frames else "")


class Qmp:
    """QEMU's QMP on a unix socket: qemu_args() for the command line."""

    def __init__(self, path):
        self.path = path
        self.sock = None

    def qemu_args(self):
        return ["-qmp", "unix:%s,server=on,wait=off" % self.path]

    def _call(self, cmd, timeout=20):
        if self.sock is None:
            self.sock = socket.socket(socket.AF_UNIX)
            self.sock.settimeout(timeout)
            self.sock.connect(self.path)
            self.buf = b""
            self._reply()  # the greeting
            self._call({"execute": "qmp_capabilities"})
        self.sock.sendall(json.dumps(cmd).encode() + b"\n")
        return self._reply()

    def _reply(self):
        while True:
            line, nl, rest = self.buf.partition(b"\n")
            if nl:
                self.buf = rest
                msg = json.loads(line)
                if "event" not in msg:
                    return msg
                continue
            data = self.sock.recv(65536)
            if not data:
                raise Timeout("QMP closed")
            self.buf += data

    def hmp(self, line, cpu=None):
        args = {"command-line": line}
        if cpu is not None:
            args["cpu-index"] = cpu
        r = self._call({"execute": "human-monitor-command", "arguments": args})
        return r.get("return", str(r))

    def read(self, cpu, addr, n):
        return memory_bytes(self.hmp("x /%dxb 0x%x" % (n, addr), cpu), ":", n)

    def dump(self, syms):
        text = self.hmp("info registers -a")
        parts = re.split(r"^CPU#(\d+)\s*$", text, flags=re.M)
        lines = []
        for i in range(1, len(parts) - 1, 2):
            cpu, body = int(parts[i]), parts[i + 1]
            regs = {k.lower(): int(v, 16) for k, v in
                    re.findall(r"\b(RIP|RSP|RBP|CR3)=([0-9a-f]+)", body)}
            lines.append(describe(cpu, regs, lambda a, n, c=cpu: self.read(c, a, n), syms))
        return "\n".join(lines) + "\n--- info registers -a ---\n" + text

    def close(self):
        if self.sock:
            self.sock.close()


class BochsDebugConsole(BochsConsole):
    """BochsConsole (COM1 on a TCP socket) with CPUS CPUs and its debugger on
    pipes: the simulation runs ("c" from the rc file) until dump() stops it
    with SIGINT and reads every CPU's registers at the debugger's prompt.
    Holds the one-Bochs lock."""

    PROMPT_RE = re.compile(rb"<bochs:\d+> $")

    def __init__(self, iso, cpus=2, model="corei7_skylake_x", megs=512):
        self.cpus = cpus
        super().__init__(iso, model=model, megs=megs, cpus=cpus, debugger=True)

    def _debugger(self, line, timeout=60):
        """Send a debugger command (None: none, only wait), return its output up to the prompt."""
        if line is not None:
            self.proc.stdin.write(line.encode() + b"\n")
            self.proc.stdin.flush()
        out, end = b"", time.time() + timeout
        fd = self.proc.stdout.fileno()
        while not self.PROMPT_RE.search(out):
            r, _, _ = select.select([fd], [], [], max(0.1, end - time.time()))
            if not r:
                if time.time() > end:
                    raise Timeout("no Bochs debugger prompt; got:\n" + out.decode("utf-8", "replace")[-2000:])
                continue
            data = os.read(fd, 65536)
            if not data:
                raise Timeout("Bochs exited; its last output:\n" + out.decode("utf-8", "replace")[-2000:])
            out += data
        return out.decode("utf-8", "replace")

    def read(self, addr, n):
        return memory_bytes(self._debugger("x /%dxb 0x%x" % (n, addr)), ">:", n)

    def dump(self, syms):
        os.killpg(self.proc.pid, signal.SIGINT)
        text = self._debugger(None)
        lines = []
        for cpu in range(self.cpus):
            self._debugger("set $cpu = %d" % cpu)
            regs = self._debugger("r")
            cregs = self._debugger("creg")
            text += "\n--- cpu %d ---\n%s\n%s" % (cpu, regs, cregs)
            vals = {k.lower(): int(v.replace("_", ""), 16) for k, v in
                    re.findall(r"\b(rip|rsp|rbp)\s*[:=]\s*(?:0x)?([0-9a-f_]+)", regs, re.I)}
            m = re.search(r"CR3=0x([0-9a-f_]+)", cregs, re.I)
            if m:
                vals["cr3"] = int(m.group(1).replace("_", ""), 16)
            lines.append(describe(cpu, vals, self.read, syms))
        return "\n".join(lines) + "\n--- Bochs debugger ---\n" + text
