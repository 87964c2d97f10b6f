"""The guests' 16550A and `vm console`, under SVM (QEMU -cpu max), in one boot
of sprig: guests/uart checks the UART as Linux's 8250 driver probes it, then
echoes what it receives upper-cased from its interrupt handler (IRQ 4 through
the I/O APIC). Not attached, its output keeps the `[NAME] ` prefix; attached,
the keys typed reach it, Ctrl-C included, its echo comes back raw, Ctrl-]
pauses it and a second `vm console` continues it to its end; a second VM
takes IRQ 4 through the 8259 (LINT0 in ExtINT mode) instead. The same keys
typed at the guest bare under QEMU (QEMU's own 16550) must give the same echo.
A second boot, under Bochs (VMX with EPT), types, detaches and continues once
more: the interrupt injected from the console CPU on the other backend."""
import os
import re
import select
import subprocess
import time

from machine import GUESTS_DIR, PROMPT, BochsConsole, Machine, guest_lines, make_iso, stat

SCENARIOS = ["qemu_uart_console", "bochs_vmx_uart_console"]

BANNER = "uart: 16550A at 0x3f8, IRQ 4 on GSI 4"
# More than the 16-byte receive FIFO at once: the rest waits for room.
LONG = "the quick brown fox jumps over the lazy dog 0123456789"
SUMMARY = re.compile(r"uart: (\d+) bytes in (\d+) interrupts \(data (\d+), timeout (\d+), "
                     r"THR empty (\d+), line status (\d+)\), (\d+) overruns")


def bare_echo(keys):
    """guests/uart bare under QEMU, fed keys once it has said it is ready
    (pieces sent a moment apart): its output and exit status."""
    p = subprocess.Popen(["qemu-system-x86_64", "-accel", "tcg", "-cpu", "max", "-m", "128M",
                          "-display", "none", "-serial", "stdio", "-monitor", "none",
                          "-no-reboot", "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04",
                          "-kernel", os.path.join(GUESTS_DIR, "uart.elf")],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        # The keys typed before the guest has set up its UART would be lost.
        head = b""
        deadline = time.time() + 60
        while b"typed keys come back" not in head and time.time() < deadline:
            ready, _, _ = select.select([p.stdout], [], [], 1)
            chunk = os.read(p.stdout.fileno(), 4096) if ready else b""
            if ready and not chunk:
                break
            head += chunk
        for piece in keys:
            p.stdin.write(piece)
            p.stdin.flush()
            time.sleep(0.5)
        out, _ = p.communicate(timeout=60)
        out = head + out
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return out.decode("utf-8", "replace"), p.returncode >> 1


def qemu_uart_console(check):
    bare_out, bare_status = bare_echo([b"hello wOrld\r", b"\x03", LONG.encode(), b"\x04"])
    check("uart/bare-echo", BANNER in bare_out and "HELLO WORLD" in bare_out and
          "^C" in bare_out and LONG.upper() in bare_out and bare_status == 0,
          "status %r:\n%s" % (bare_status, bare_out))

    m = Machine(make_iso("uart", "", [os.path.join(GUESTS_DIR, g + ".elf")
                                      for g in ("uart", "hello")]))
    try:
        m.expect(PROMPT, timeout=60)
        out = m.command("vm console nosuch")
        check("uart/console-unknown-vm", "no VM named 'nosuch'" in out, out)
        out = m.command("vm console")
        check("uart/console-no-name", "which VM?" in out, out)
        out = m.command("vm create u uart")
        check("uart/create", "vm u created" in out, out)
        out = m.command("vm console u timeout=soon")
        check("uart/console-bad-timeout", "bad argument 'timeout=soon'" in out, out)

        # Not attached: the probe passed and the banner has its prefix.
        out = m.command("vm run u timeout=3", timeout=60)
        check("uart/unattached-prefixed", guest_lines(out, "u")[:1] == [BANNER + "; typed keys "
              "come back upper-cased, Ctrl-D ends"] and "vm u stopped: timeout" in out, out)

        m.send("vm console u\r")
        m.expect("console attached (Ctrl-] detaches)", timeout=30)
        m.send("hello wOrld\r")
        echoed = m.expect("HELLO WORLD", timeout=30)
        m.send("\x03")
        m.expect("^C", timeout=30)
        m.send("\x1d")
        out = m.expect(PROMPT, timeout=30)
        check("uart/console-echo-raw", "[u]" not in echoed and "[u]" not in out,
              echoed + out)
        check("uart/ctrl-c-to-guest", "Ctrl-C" not in out, out)
        check("uart/detach-pauses", "vm u stopped: detached" in out, out)
        out = m.command("vm list")
        check("uart/paused-after-detach", re.search(r"\bu\b.*paused", out) is not None, out)

        m.send("vm console u timeout=120\r")
        m.expect("console attached", timeout=30)
        m.send(LONG)
        m.expect(LONG.upper(), timeout=30)
        m.send("\x04")
        out = m.expect(PROMPT, timeout=60)
        s = SUMMARY.search(out)
        check("uart/continued-to-end", "vm u exited: status 0" in out and s is not None, out)
        if s:
            n_bytes, irqs, _, timeouts, thre, _, overruns = map(int, s.groups())
            typed = len("hello wOrld\r\x03") + len(LONG) + 1
            check("uart/every-key-once", n_bytes == typed, "%d bytes, typed %d" % (n_bytes, typed))
            check("uart/interrupt-kinds", irqs > 0 and timeouts > 0 and thre > 0 and
                  overruns == 0, s.group(0))
        out = m.command("stats u")
        check("uart/irq4-through-ioapic", (stat(out, "ioapic_pin_4") or 0) > 0, out)
        out = m.command("vm console u")
        check("uart/console-exited-vm", "'u' has exited" in out, out)

        # The same through the 8259 and LINT0 (ExtINT) instead of the I/O APIC.
        m.command("vm create up uart -- pic")
        m.send("vm console up timeout=120\r")
        m.expect("IRQ 4 through the 8259", timeout=30)
        m.send("pic path\r")
        m.expect("PIC PATH", timeout=30)
        m.send("\x04")
        out = m.expect(PROMPT, timeout=60)
        s = SUMMARY.search(out)
        check("uart/through-pic", "vm up exited: status 0" in out and s is not None and
              int(s.group(1)) == len("pic path\r") + 1, out)
        out = m.command("stats up")
        check("uart/pic-not-ioapic", "exits_pic" in out and stat(out, "ioapic_pin_4") is None,
              out)

        # Guests that only print keep their prefixed lines.
        m.command("vm create h hello -- one two")
        out = m.command("vm run h timeout=60", timeout=120)
        check("uart/hello-prefixed", guest_lines(out, "h")[:2] ==
              ["hello from a multiboot guest", 'args: "one two"'] and
              "vm h exited: status 0" in out, out)
    finally:
        m.close()


def bochs_vmx_uart_console(check):
    m = BochsConsole(make_iso("uart-bochs", "", [os.path.join(GUESTS_DIR, "uart.elf")]))
    try:
        m.expect(PROMPT, timeout=240)
        out = m.command("vm create u uart", timeout=60)
        check("uart-vmx/create", "vm u created" in out, out)
        m.send("vm console u timeout=300\r")
        m.expect(BANNER, timeout=120)
        m.send("vmx\r")
        m.expect("VMX", timeout=120)
        m.send("\x1d")
        out = m.expect(PROMPT, timeout=120)
        check("uart-vmx/detach-pauses", "vm u stopped: detached" in out, out)
        m.send("vm console u timeout=300\r")
        m.expect("console attached", timeout=120)
        m.send("ept\x04")
        out = m.expect(PROMPT, timeout=120)
        s = SUMMARY.search(out)
        check("uart-vmx/echo-to-end", "EPT" in out and "vm u exited: status 0" in out and
              s is not None and int(s.group(1)) == len("vmx\rept") + 1, out)
    finally:
        m.close()
