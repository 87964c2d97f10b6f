"""Boot tests: sprig under QEMU with SeaBIOS and OVMF, and under Bochs, driven
through the serial console. Checks are batched into few boots (OVMF and Bochs
boot slowly)."""
import json
import os
import re
import shutil
import socket
import tempfile
import time

from machine import GUESTS_DIR, Machine, PROMPT, make_iso, run_bochs, split_run_output

SCENARIOS = ["qemu_bios_console", "qemu_bios_panic", "qemu_bios_reboot", "qemu_bios_no_uart", "qemu_1g_pages",
             "qemu_uefi", "bochs_vmx"]


def qemu_bios_console(check):
    """One interactive boot: every console command, editing, bad input, run=, poweroff."""
    mod = os.path.join(tempfile.mkdtemp(prefix="sprig-mod-"), "hello.bin")
    with open(mod, "wb") as f:
        f.write(b"module payload " * 100)
    iso = make_iso("console", 'run="version; cmdline" leaf_hint=on', [mod])
    m = Machine(iso, smp=2)
    try:
        boot = m.expect(PROMPT, timeout=60)
        check("bios/banner", "sprig " in boot, boot[-500:])
        check("bios/tsc-calibrated", re.search(r"tsc: \d+\.\d+ MHz from", boot) is not None, boot[-800:])
        # run= commands print as if typed, before the first interactive prompt.
        ver = m.expect(PROMPT, 30)
        check("bios/run-version", "version" in ver and "sprig " in ver, ver)
        cl = m.expect(PROMPT, 30)
        check("bios/run-cmdline", "cmdline: " in cl and "leaf_hint=on" in cl and
              "run=version; cmdline" in cl, cl)

        out = m.command("help")
        for c in ["help", "version", "mem", "cpus", "cmdline", "modules", "reboot",
                  "poweroff", "panic-test"]:
            check("bios/help-lists-" + c, re.search(r"^  %s\b" % re.escape(c), out, re.M)
                  is not None, out)
        out = m.command("mem")
        check("bios/mem-total", re.search(r"total\D+\d+", out) is not None, out)
        check("bios/mem-free", re.search(r"free\D+\d+", out) is not None, out)
        check("bios/mem-blocks", "2M" in out or "1G" in out, out)
        out = m.command("cpus")
        check("bios/cpus-svm", re.search(r"svm: yes", out) is not None, out)
        check("bios/cpus-npt", re.search(r"npt[: ]+yes", out) is not None, out)
        check("bios/cpus-count", re.search(r"cpus: 2\b", out) is not None, out)
        check("bios/cpus-vmx-no", re.search(r"vmx: no", out) is not None, out)
        out = m.command("modules")
        check("bios/modules", "hello.bin" in out and "1500 bytes" in out, out)
        out = m.command("frobnicate now")
        check("bios/unknown-command", "unknown command 'frobnicate'" in out and
              len(out.strip().splitlines()) == 1, out)
        out = m.command("mem extra")
        check("bios/bad-argument", "mem: unexpected argument 'extra'" in out and
              len(out.strip().splitlines()) == 1, out)
        out = m.command("panic-test nosuchkind")
        check("bios/bad-argument-panic-test", "unknown kind" in out, out)
        # Backspace edits the line: "cmdlinx<BS>e" runs cmdline.
        out = m.command("cmdlinx\x7fe")
        check("bios/line-editing", out.startswith("cmdline: "), out)
        out = m.command("x" * 400)
        check("bios/overlong-line", "unknown command" in out, out[:200])
        m.send("poweroff\r")
        rc = m.wait_exit(30)
        check("bios/poweroff-exits", rc is not None, str(rc))
    finally:
        m.close()


def panic_boot(kind):
    m = Machine(make_iso("panic-" + kind, 'run="panic-test %s"' % kind))
    try:
        m.expect("*** CPU stopped.", timeout=60)
        return m.log
    finally:
        m.close()


def qemu_bios_panic(check):
    """Exceptions raised on purpose: the report, and sprig's own W^X mapping."""
    log = panic_boot("pf")
    check("panic/vector", "CPU exception 14 (page fault)" in log, log[-1500:])
    check("panic/cr2", re.search(r"CR2=0*[0-9a-f]*1234000", log) is not None, log[-1500:])
    check("panic/registers", all(r in log for r in
          ["RIP=", "RAX=", "RBX=", "R15=5151515151515151", "error code 0x2"]), log[-1500:])
    # Error code 0x3: present page, write access: the text is mapped read-only.
    log = panic_boot("wx")
    check("panic/text-not-writable", "CPU exception 14 (page fault), error code 0x3" in log,
          log[-1500:])
    # Error code 0x11: present page, instruction fetch: data is mapped NX.
    log = panic_boot("nx")
    check("panic/data-not-executable", "CPU exception 14 (page fault), error code 0x11" in log,
          log[-1500:])
    log = panic_boot("ud")
    check("panic/invalid-opcode", "CPU exception 6 (invalid opcode)" in log, log[-1500:])


def qemu_bios_reboot(check):
    # -no-reboot turns the reset into an exit of QEMU.
    iso = make_iso("reboot", 'run="reboot"')
    m = Machine(iso)
    try:
        m.expect("sprig> reboot", timeout=60)
        rc = m.wait_exit(30)
        check("reboot/resets", rc == 0, "rc=%r" % rc)
    finally:
        m.close()


def qmp(sock, command, arguments=None):
    """One QMP command to QEMU through its socket; its return value."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(sock)
    f = s.makefile("rw")
    f.readline()  # the greeting
    for cmd, args in (("qmp_capabilities", None), (command, arguments)):
        f.write(json.dumps({"execute": cmd, "arguments": args or {}}) + "\n")
        f.flush()
        while True:
            r = json.loads(f.readline())
            if "return" in r or "error" in r:
                break
    s.close()
    return r.get("return")


def no_uart_machine(run, tmp):
    iso = make_iso("nouart", 'run="%s"' % run, [os.path.join(GUESTS_DIR, "hello.elf")])
    sock = os.path.join(tmp, "qmp.sock")
    m = Machine(iso, serial="none",
                extra=("-no-shutdown", "-qmp", "unix:%s,server=on,wait=off" % sock))
    deadline = time.time() + 30
    while not os.path.exists(sock) and time.time() < deadline:
        time.sleep(0.2)
    return m, sock


def qemu_bios_no_uart(check):
    """No UART at COM1 (its ports float and read 0xFF, "data ready" for ever).
    Boot 1: sprig runs its run= commands, a guest among them, to the power-off.
    -no-shutdown keeps QEMU in the "shutdown" state after ACPI S5, where a
    reset or triple fault would end it (-no-reboot): the state tells a
    power-off from a crash. (Without a poweroff in run=, sprig powers off
    by itself: e2e_console.qemu_no_serial.)"""
    tmp = tempfile.mkdtemp(prefix="sprig-nouart-")
    m, sock = no_uart_machine("vm create hello hello; vm run hello timeout=30; poweroff", tmp)
    try:
        status = None
        deadline = time.time() + 120
        while time.time() < deadline and m.proc.poll() is None and status != "shutdown":
            time.sleep(1)
            status = (qmp(sock, "query-status") or {}).get("status")
        check("no-uart/powers-off", status == "shutdown",
              "QEMU %s, last status %r" % ("exited" if m.proc.poll() is not None else
                                           "still running", status))
    finally:
        m.close()
        shutil.rmtree(tmp, ignore_errors=True)


def qemu_1g_pages(check):
    """1 GiB nested pages only where CPUID says Page1GB: the same eager 1 GiB
    VM gets a 1 GiB leaf under -cpu max and 2 MiB leaves under
    -cpu max,-pdpe1gb (QEMU would walk a 1 GiB leaf either way; hardware
    without the feature faults on it as reserved)."""
    iso = make_iso("pages1g", "", [os.path.join(GUESTS_DIR, "touch.elf")])
    for cpu, has_1g in (("max", True), ("max,-pdpe1gb", False)):
        m = Machine(iso, mem="4G", extra=("-cpu", cpu))
        try:
            m.expect(PROMPT, timeout=90)
            cpus = m.command("cpus")
            check("1g/%s-cpuid" % cpu, ("1g-pages: %s" % ("yes" if has_1g else "no")) in cpus,
                  cpus)
            m.command("vm create t touch mem=1G backing=eager -- mib=8 stride=2097152")
            out = m.command("vm run t timeout=60", timeout=120)
            check("1g/%s-runs" % cpu, "vm t exited: status 0" in out, out)
            stats = m.command("stats t")
            p1g = re.search(r"pages_1g\s+(\d+)", stats)
            p2m = re.search(r"pages_2m\s+(\d+)", stats)
            want = "pages_1g 1" if has_1g else "pages_1g 0, pages_2m > 0"
            ok = p1g and p2m and ((int(p1g.group(1)) == 1) if has_1g else
                                  (int(p1g.group(1)) == 0 and int(p2m.group(1)) > 0))
            check("1g/%s-leaves" % cpu, bool(ok), "want %s:\n%s" % (want, stats))
        finally:
            m.close()


def qemu_uefi(check):
    iso = make_iso("uefi", 'run="cmdline; mem; cpus; modules; poweroff"')
    m = Machine(iso, firmware="uefi")
    try:
        rc = m.wait_exit(120)
        parts = split_run_output(m.log)
        check("uefi/boots", "sprig " in m.log and "cmdline" in parts, m.log[-1500:])
        check("uefi/efi-memory-map", "EFI memory map" in m.log, m.log[-2500:])
        check("uefi/mem", re.search(r"free\D+\d+", parts.get("mem", "")) is not None,
              parts.get("mem", ""))
        check("uefi/cpus-svm", "svm: yes" in parts.get("cpus", ""), parts.get("cpus", ""))
        check("uefi/poweroff", rc is not None and "poweroff" in parts, "rc=%r" % rc)
    finally:
        m.close()


def bochs_vmx(check):
    iso = make_iso("bochs", 'run="cpus; mem; poweroff"')
    log = run_bochs(iso)
    parts = split_run_output(log)
    cpus = parts.get("cpus", "")
    check("bochs/boots", "sprig " in log and "cpus" in parts, log[-1500:])
    check("bochs/vmx", "vmx: yes" in cpus, cpus)
    check("bochs/ept", re.search(r"ept[: ]+yes", cpus) is not None, cpus)
    # Bochs' TSC runs at its ips setting (200 MHz); leaf 0x16 claims 3.5 GHz.
    m = re.search(r"tsc: (\d+) kHz \((\S+)\)", cpus)
    khz = int(m.group(1)) if m else 0
    check("bochs/tsc-not-nominal", 150000 <= khz <= 250000, cpus)
    check("bochs/poweroff", "poweroff" in parts, log[-500:])
