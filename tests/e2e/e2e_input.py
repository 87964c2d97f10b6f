"""Hostile input from outside the guests, under SVM (QEMU -cpu max): crafted
snapshot images given as GRUB modules, console lines that are too long or hold
bytes the console refuses, keys typed while a guest runs, names that do not
fit, and numeric arguments that overflow. Each must get its reason while
sprig, its memory and its other VMs go on. Two boots: the first reads the
vCPU FPU area size that images must match (`cpus`) and drives the console;
the second carries an image per broken field (tests/e2e/mksnap.c)."""
import os
import re
import subprocess
import tempfile

from machine import GUESTS_DIR, PROMPT, ROOT, Machine, make_iso

SCENARIOS = ["qemu_console_input", "qemu_snapshot_images"]

MKSNAP = os.path.join(ROOT, "build", "host", "mksnap")

# (module and fault name, what the refusal must say)
BROKEN_IMAGES = [
    ("apic_base", "APIC base 0xfee00b00 sets reserved bits"),
    ("uart_len", "UART line length 100000 beyond its 160-byte buffer"),
    ("xcr0_zero", "XCR0 0x0 is not one XSETBV accepts"),
    ("xcr0_avx_no_sse", "XCR0 0x5 is not one XSETBV accepts"),
    ("xstate_bv", "XSTATE_BV 0x4000000000000000 names components outside XCR0"),
    ("xcomp_bv", "XSAVE header byte 8 is not zero"),
    ("mxcsr", "MXCSR 0xffffffff sets bits outside its mask"),
    ("rflags", "reserved RFLAGS bits"),
    ("rip", "RIP outside the code segment's mode"),
    ("cr0_high", "CR0 bits 63:32 set"),
    ("efer", "EFER bits a guest may not set"),
    ("fs_base", "a non-canonical base or MSR address"),
    ("pat", "G_PAT holds a reserved memory type"),
    ("backend", "the state is from the 'xxxxxxxx' backend"),
    ("state_bytes", "a record header at byte 0 would run past the 8-byte state"),
    ("record_unknown", "unknown record id 999"),
    ("record_version", "record pic: version 9, this sprig reads 1"),
    ("pic_state", "record pic: chip[1].init_state 7 is not 0-3"),
    ("pit_count", "record pit: ch[2].count 0 is not 1-65536"),
    ("ioapic_pins", "record ioapic: line 0x40000000 asserts pins above 23"),
    ("com1_rx", "record uart: rx_count 200 is beyond the receiver's"),
    ("mem_size", "memory size 0x4000000000000000 is not whole pages up to 3 GiB"),
    ("mem_offset", "is unaligned or outside the"),
    ("magic", "not a snapshot image"),
    ("truncated", "is unaligned or outside the"),
]


def memory_state(out):
    """`mem` without its first word: free memory and every free block size."""
    return [l for l in out.splitlines() if l.startswith(("frames:", "free blocks:"))]


def fpu_area():
    """The vCPU FPU area size that images must match, as `cpus` states it."""
    m = Machine(make_iso("input-cpus", ""))
    try:
        m.expect(PROMPT, timeout=60)
        out = m.command("cpus")
        mt = re.search(r"vcpu-fpu: \S+ area (\d+) bytes", out)
        return int(mt.group(1)) if mt else None
    finally:
        m.close()


def qemu_console_input(check):
    m = Machine(make_iso("input", "", [os.path.join(GUESTS_DIR, g + ".elf")
                                      for g in ("misbehave", "touch", "hello")]))
    try:
        m.expect(PROMPT, timeout=60)
        mem0 = m.command("mem")
        # A line over 4096 bytes: refused whole, nothing of it runs.
        m.send_bytes(b"vm create big touch " + b" " * 5000 + b"mem=2M\r")
        out = m.expect(PROMPT, timeout=30)
        check("input/line-too-long", "error: line longer than 4096 bytes" in out and
              "created" not in out, out[-300:])
        out = m.command("vm list")
        check("input/line-too-long-ran-nothing", "no VMs" in out, out)
        # Within 4096 bytes the same line is whole: mem=2M is not lost.
        out = m.command("vm create t touch" + " " * 300 + "mem=2M -- mib=1")
        check("input/long-line-whole", "vm t created: 2 MiB" in out, out)
        # Bytes the console does not take: the line is refused, not filtered.
        for name, data in [("control", b"vm destroy t\x01\r"), ("utf8", b"vm destroy t\xc3\xa9\r"),
                           ("escape", b"vm destroy t\x1b[A\r")]:
            m.send_bytes(data)
            out = m.expect(PROMPT, timeout=30)
            check("input/bad-byte-" + name, "is not accepted" in out and "destroyed" not in out,
                  out)
        out = m.command("vm list")
        check("input/bad-bytes-ran-nothing", re.search(r"^t\s", out, re.M) is not None, out)
        # Editing still works: backspace and Ctrl-U.
        m.send_bytes(b"vm lisx\x7ft\r")
        out = m.expect(PROMPT, timeout=30)
        check("input/backspace", re.search(r"^t\s+ready", out, re.M) is not None, out)
        m.send_bytes(b"garbage garbage\x15version\r")
        out = m.expect(PROMPT, timeout=30)
        check("input/ctrl-u", "sprig" in out and "unknown command" not in out, out)

        # Keys typed while a guest runs wait for the next prompt.
        m.command("vm create spin misbehave -- spin")
        m.send_bytes(b"vm run spin timeout=4\r")
        m.expect("misbehave: spinning", timeout=30)
        m.send_bytes(b"vm list\r")
        out = m.expect("vm spin stopped: timeout", timeout=30)
        m.expect(PROMPT, timeout=30)
        out = m.expect(PROMPT, timeout=30)
        check("input/keys-kept-during-run", re.search(r"^spin\s+paused", out, re.M) is not None,
              out)
        # More than 4 KiB of them: the rest is dropped, and said so. Ctrl-C
        # after them stops the run once every one of them has been read.
        m.send_bytes(b"vm run spin\r")
        m.expect("\n", timeout=30)
        m.send_bytes(b"x" * 5000 + b"\x03")
        out = m.expect("vm spin stopped: Ctrl-C", timeout=60)
        out = m.expect(PROMPT, timeout=30)
        check("input/keys-dropped", "console: 904 keys dropped" in out, out)
        m.send_bytes(b"\x15")  # the 4096 kept keys form a line: erase it
        out = m.command("vm destroy spin")
        check("input/after-keys", "vm spin destroyed" in out, out)
        # A guest that is running hears Ctrl-C and stays whole.
        m.command("vm create spin2 misbehave -- spin")
        m.send_bytes(b"vm run spin2\r")
        m.expect("misbehave: spinning", timeout=30)
        m.send_bytes(b"\x03")
        out = m.expect(PROMPT, timeout=30)
        check("input/ctrl-c", "vm spin2 stopped: Ctrl-C" in out, out)

        # Names: 1-15 of A-Z a-z 0-9 _ -, everywhere, never cut.
        out = m.command("vm clone spin2 abcdefghijklmnopqrstuvwxyz")
        check("input/clone-long-name", "bad VM name" in out and "cloned" not in out, out)
        out = m.command("vm clone spin2 bad/name")
        check("input/clone-bad-name", "bad VM name" in out and "cloned" not in out, out)
        out = m.command("vm snapshot spin2 abcdefghijklmnop")
        check("input/image-long-name", "bad image name" in out and "image '" not in out, out)
        out = m.command("vm snapshot spin2 a.b")
        check("input/image-bad-name", "bad image name" in out, out)
        out = m.command("vm create abcdefghijklmnop hello")
        check("input/create-long-name", "bad VM name" in out and "created" not in out, out)
        out = m.command("vm clone spin2 abcdefghijklmno")
        check("input/clone-15-chars", "vm abcdefghijklmno cloned from spin2" in out, out)
        out = m.command("vm list")
        check("input/names-whole", re.search(r"^abcdefghijklmno\s", out, re.M) is not None, out)

        # Numbers: out of range or overflowing, refused before any work.
        for cmd in ["bench exec mib=18446744073709551615", "bench exec mib=17592186044416",
                    "bench dirty mib=4398046511104", "bench dirty writes=101",
                    "bench zap same4 every=99999999999999999999", "bench prefetch mib=0",
                    "vm run t timeout=18446744073709551616", "vm create u touch mem=16E",
                    "vm create u touch alias=0xffffffffffff0000:0x20000@0"]:
            out = m.command(cmd)
            check("input/range-" + cmd.split()[1] + "-" + cmd.split()[-1].split("=")[0],
                  ("bad" in out or "usage" in out) and "@bench" not in out and
                  "created" not in out, out)
        for vm in ["t", "spin2", "abcdefghijklmno"]:
            m.command("vm destroy " + vm)
        out = m.command("mem")
        check("input/memory-back", memory_state(out) == memory_state(mem0), mem0 + out)
    finally:
        m.close()


def make_images(backend, area, faults):
    d = tempfile.mkdtemp(prefix="sprig-snap-")
    paths = []
    for name, fault in faults:
        p = os.path.join(d, name)
        subprocess.run([MKSNAP, p, backend, str(area), fault], check=True)
        paths.append(p)
    return paths


def qemu_snapshot_images(check):
    area = fpu_area()
    if not check("images/fpu-area-known", area is not None, "cpus gave no vcpu-fpu line"):
        return
    images = make_images("svm", area, [("ok", "none"), ("a-very-long-image-name", "none")] +
                         [(f, f) for f, _ in BROKEN_IMAGES])
    m = Machine(make_iso("images", "", images + [os.path.join(GUESTS_DIR, "hello.elf")]))
    try:
        m.expect(PROMPT, timeout=60)
        mem0 = m.command("mem")
        m.command("vm create keeper hello -- kept")
        for fault, reason in BROKEN_IMAGES:
            out = m.command("vm create v restore=%s" % fault)
            check("images/refused-" + fault, ("module '%s'" % fault) in out and reason in out
                  and "created" not in out, out)
        # A refused image never takes a slot: far more refusals than slots.
        for i in range(12):
            m.command("vm create v restore=uart_len")
        out = m.command("vm images")
        check("images/no-slots-taken", "no images" in out, out)
        out = m.command("vm create v restore=a-very-long-image-name")
        check("images/module-name-refused", "cannot name an image" in out, out)
        # The good image restores and runs; so does the VM beside it.
        out = m.command("vm create good restore=ok")
        check("images/good-created", "vm good created" in out, out)
        out = m.command("vm run good timeout=20")
        check("images/good-runs", "vm good exited: status 42" in out, out)
        out = m.command("vm audit good")
        check("images/good-audit", "mmu audit: ok" in out, out)
        out = m.command("vm run keeper timeout=20")
        check("images/keeper-runs", "[keeper] hello from a multiboot guest" in out and "exited: status 0" in out, out)
        m.command("vm destroy good")
        m.command("vm destroy keeper")
        out = m.command("vm image-free ok")
        check("images/free", "image ok freed" in out, out)
        out = m.command("mem")
        check("images/memory-back", memory_state(out) == memory_state(mem0), mem0 + out)
    finally:
        m.close()
