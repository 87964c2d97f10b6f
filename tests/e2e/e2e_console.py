"""The console under QEMU: which serial port sprig chooses (no UART at all,
COM2 only, a silent COM1), a bad console= value, and the screen mirrors read
back from guest memory through QMP: VGA text under SeaBIOS, the GOP
framebuffer under OVMF, decoded with sprig's own font table."""
import os
import re
import shutil
import tempfile
import time

from e2e_boot import qmp
from machine import GUESTS_DIR, Machine, PROMPT, ROOT, make_iso, scenario_main

FB_POLL_S = 10

SCENARIOS = ["qemu_no_serial", "qemu_com2_only", "qemu_silent_com1", "qemu_bad_value",
             "qemu_uefi_framebuffer"]

VGA_TEXT = 0xb8000


def qmp_machine(iso, tmp, serial, extra=(), firmware="bios"):
    """QEMU with a QMP socket in tmp (and -no-shutdown, so that a power-off
    leaves QEMU in the "shutdown" state, its memory still readable)."""
    sock = os.path.join(tmp, "qmp.sock")
    m = Machine(iso, firmware=firmware, serial=serial,
                extra=("-no-shutdown", "-qmp", "unix:%s,server=on,wait=off" % sock) + tuple(extra))
    deadline = time.time() + 30
    while not os.path.exists(sock) and time.time() < deadline:
        time.sleep(0.2)
    return m, sock


def read_memory(sock, tmp, addr, size):
    path = os.path.join(tmp, "mem-%x.bin" % addr)
    qmp(sock, "pmemsave", {"val": addr, "size": size, "filename": path})
    with open(path, "rb") as f:
        return f.read()


def vga_rows(sock, tmp):
    """The 25 rows of VGA text memory, trailing blanks stripped."""
    cells = read_memory(sock, tmp, VGA_TEXT, 80 * 25 * 2)
    text = "".join(chr(cells[i]) if 0x20 <= cells[i] < 0x7f else "?" for i in range(0, len(cells), 2))
    return [text[r * 80:(r + 1) * 80].rstrip() for r in range(25)]


def font_table():
    """sprig's glyphs (arch/x86/font.c), each as its 16 rows of 8 pixels."""
    with open(os.path.join(ROOT, "arch", "x86", "font.c")) as f:
        src = f.read()
    glyphs = {}
    for i, m in enumerate(re.finditer(r"\{ ((?:0x[0-9a-f]{2}, ){6}0x[0-9a-f]{2}) \}", src)):
        rows = [int(v, 16) << 2 for v in m.group(1).split(", ")]
        glyphs[chr(0x20 + i)] = tuple([0] + [rows[(y - 1) // 2] for y in range(1, 15)] + [0])
    return glyphs


def screen_text(pixels, pitch, bpp, cols, rows, glyphs):
    """Read characters back from framebuffer pixels: each 8x16 cell matched
    against the font ('?' when nothing matches)."""
    by_bits = {bits: ch for ch, bits in glyphs.items()}
    step = bpp // 8
    lines = []
    for r in range(rows):
        line = ""
        for c in range(cols):
            bits = []
            for y in range(16):
                off = (r * 16 + y) * pitch + c * 8 * step
                row = 0
                for x in range(8):
                    if any(pixels[off + x * step:off + (x + 1) * step]):
                        row |= 0x80 >> x
                bits.append(row)
            line += by_bits.get(tuple(bits), "?")
        lines.append(line.rstrip())
    return lines


def wait_shutdown(m, sock, timeout=120):
    status = None
    deadline = time.time() + timeout
    while time.time() < deadline and m.proc.poll() is None and status != "shutdown":
        time.sleep(1)
        status = (qmp(sock, "query-status") or {}).get("status")
    return status


def qemu_no_serial(check):
    """-serial none: no UART anywhere. sprig runs its run= list, a guest
    among them, and powers off by itself (no poweroff in the list); the VGA
    text screen shows what the serial line would have."""
    tmp = tempfile.mkdtemp(prefix="sprig-console-")
    iso = make_iso("console-none", 'run="vm create hello hello; vm run hello timeout=30"',
                   [os.path.join(GUESTS_DIR, "hello.elf")])
    m, sock = qmp_machine(iso, tmp, "none")
    try:
        status = wait_shutdown(m, sock)
        check("none/powers-off", status == "shutdown",
              "QEMU %s, last status %r" % ("exited" if m.proc.poll() is not None else
                                           "still running", status))
        screen = "\n".join(vga_rows(sock, tmp)) if status == "shutdown" else ""
        check("none/vga-says-none", "console: serial none" in screen and
              "no UART (scratch register check)" in screen, screen)
        check("none/vga-shows-run", "sprig> vm run hello timeout=30" in screen and
              "vm hello exited: status 0" in screen, screen)
        check("none/vga-says-why-off", "no serial console to read commands from; powering off"
              in screen, screen)
    finally:
        m.close()
        shutil.rmtree(tmp, ignore_errors=True)


def qemu_com2_only(check):
    """-serial none -serial stdio: a UART at COM2 only. console=auto finds it
    after COM1 failed its check, and the prompt works there; the VGA screen
    mirrors it, the prompt on the cursor's row. Then console=com2 on the
    same machine."""
    tmp = tempfile.mkdtemp(prefix="sprig-console-")
    iso = make_iso("console-auto", "")
    m, sock = qmp_machine(iso, tmp, "none", ("-serial", "stdio"))
    try:
        boot = m.expect(PROMPT, timeout=60)
        check("com2/auto-chosen", re.search(r"console: serial com2 at 0x2f8, 115200 baud \(auto; "
                                            r"no ACPI SPCR; legacy com1: no UART \(\w[\w ]* check\); "
                                            r"legacy com2 answered\)", boot) is not None, boot[-800:])
        out = m.command("version")
        check("com2/auto-prompt-works", "sprig " in out, out)
        # The serial line may reach us a moment before the CPU draws the
        # same bytes on the screen: look again for a few seconds.
        deadline = time.time() + 10
        while True:
            rows = vga_rows(sock, tmp)
            shown = [r for r in rows if r]
            if (shown and shown[-1] == "sprig>") or time.time() > deadline:
                break
            time.sleep(0.5)
        check("com2/vga-prompt", shown and shown[-1] == "sprig>" and "sprig> version" in rows,
              "\n".join(rows))
        check("com2/vga-banner-lines", any(r.startswith("console: serial com2") for r in rows),
              "\n".join(rows))
    finally:
        m.close()
    iso = make_iso("console-com2", "console=com2")
    m, sock = qmp_machine(iso, tmp, "none", ("-serial", "stdio"))
    try:
        boot = m.expect(PROMPT, timeout=60)
        check("com2/explicit-chosen", "console: serial com2 at 0x2f8, 115200 baud (requested com2 "
              "answered)" in boot, boot[-800:])
        out = m.command("version")
        check("com2/explicit-prompt-works", "sprig " in out, out)
    finally:
        m.close()
        shutil.rmtree(tmp, ignore_errors=True)


def qemu_silent_com1(check):
    """-serial null -serial stdio: COM1 is a UART nobody listens to; with
    console=com2 everything goes to COM2."""
    tmp = tempfile.mkdtemp(prefix="sprig-console-")
    iso = make_iso("console-com2", "console=com2")
    m, _ = qmp_machine(iso, tmp, "null", ("-serial", "stdio"))
    try:
        boot = m.expect(PROMPT, timeout=60)
        check("silent-com1/com2-chosen", "console: serial com2 at 0x2f8, 115200 baud (requested "
              "com2 answered)" in boot and "sprig " in boot, boot[-800:])
        out = m.command("cmdline")
        check("silent-com1/prompt-works", "console=com2" in out, out)
    finally:
        m.close()
        shutil.rmtree(tmp, ignore_errors=True)


def qemu_bad_value(check):
    """A console= value that means nothing is named with the accepted forms,
    and auto is used; a well-formed port with nothing behind it (0x3e8,
    COM3) falls back to auto too."""
    for value, want in (("console=com9", "console: console=com9 is not "
                         "auto|com1|com2|0xPORT[,BAUD]|none; using auto"),
                        ("console=0x3f8,12345", "console: console=0x3f8,12345 is not"),
                        ("console=0x3e8,57600", "requested 0x3e8: no UART (scratch register "
                         "check); so auto; no ACPI SPCR; legacy com1 answered")):
        iso = make_iso("console-bad", value)
        m = Machine(iso)
        try:
            boot = m.expect(PROMPT, timeout=60)
            name = value.split("=")[1].replace(",", "-")
            check("bad/%s-message" % name, want in boot, boot[-800:])
            check("bad/%s-falls-back-to-com1" % name,
                  "console: serial com1 at 0x3f8, 115200 baud" in boot, boot[-800:])
        finally:
            m.close()


def qemu_uefi_framebuffer(check):
    """OVMF: GRUB hands over the GOP framebuffer it set (all_video); read
    back, its pixels spell the console's lines in sprig's font."""
    tmp = tempfile.mkdtemp(prefix="sprig-console-")
    iso = make_iso("console-uefi", 'run="version"')
    m, sock = qmp_machine(iso, tmp, "stdio", firmware="uefi")
    try:
        m.expect(PROMPT, timeout=120)
        boot = m.log
        fb = re.search(r"console: screen framebuffer (\d+)x(\d+), (\d+) bpp at (0x[0-9a-f]+), "
                       r"(\d+)x(\d+) characters", boot)
        check("uefi/framebuffer-chosen", fb is not None, boot[-800:])
        if not fb:
            return
        m.expect(PROMPT, timeout=30)  # the one after run='s version
        width, height, bpp, addr, cols, rows = (int(v, 0) for v in fb.groups())
        # GRUB's pitch is width * bytes per pixel on QEMU's GOP (no padding).
        pitch = width * bpp // 8
        # The serial line comes first: the screen may draw the prompt a
        # moment later (a loaded host stretches that moment); read it until
        # it shows, for at most FB_POLL_S.
        deadline = time.time() + FB_POLL_S
        while True:
            pixels = read_memory(sock, tmp, addr, pitch * height)
            lines = screen_text(pixels, pitch, bpp, cols, rows, font_table())
            shown = [l for l in lines if l]
            if (shown and shown[-1] == "sprig>") or time.time() > deadline:
                break
            time.sleep(0.2)
        text = "\n".join(lines)
        check("uefi/fb-banner", any(l.startswith("sprig ") and "a small hypervisor" in l
                                    for l in lines), text)
        check("uefi/fb-console-line", any(l.startswith("console: screen framebuffer %dx%d"
                                                       % (width, height)) for l in lines), text)
        check("uefi/fb-prompt", shown and shown[-1] == "sprig>" and "sprig> version" in lines,
              text)
    finally:
        m.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    scenario_main(globals(), "qemu_com2_only")
