"""Unattended safety under QEMU (AMD SVM): the watchdog, run_timeout=,
panic=, and a host NMI during a guest run.

QEMU runs with -no-reboot, so a reset ends it, and (where a power-off must be
told from a reset) with -no-shutdown, which keeps it in the "shutdown" state
after ACPI S5 instead; QMP's query-status tells which. Each boot checks
several things:

- watchdog: `watchdog=5` and a guest that spins with interrupts off and no
  timeout, on CPU 1 of two (so the reset must also stop the CPU running the
  guest): sprig names the command and resets the machine. The boot log also
  shows the I/O APIC masked, device memory mapped uncached and QEMU's ACPI
  tables recognised as an emulator's.
- run_timeout: `run_timeout=2` bounds a `vm run` from run= that names no
  timeout; one with timeout= keeps its own.
- panic: `panic=reboot` after an exception on an AP resets the machine;
  `panic=poweroff` after one on the console CPU powers it off through S5.
- nmi: QEMU's `nmi` monitor command while a guest runs: sprig counts it
  (`stats` host_nmis) and the guest runs on to its end."""
import os
import re
import shutil
import tempfile
import time

from e2e_boot import qmp
from machine import GUESTS_DIR, PROMPT, Machine, make_iso, split_run_output, stat

SCENARIOS = ["watchdog", "run_timeout", "panic", "nmi"]

MISBEHAVE = os.path.join(GUESTS_DIR, "misbehave.elf")
CHURN = os.path.join(GUESTS_DIR, "churn.elf")


def qmp_machine(iso, tmp, smp=1):
    sock = os.path.join(tmp, "qmp.sock")
    m = Machine(iso, smp=smp,
                extra=("-no-shutdown", "-qmp", "unix:%s,server=on,wait=off" % sock))
    deadline = time.time() + 30
    while not os.path.exists(sock) and time.time() < deadline:
        time.sleep(0.2)
    return m, sock


def wait_status(m, sock, want, timeout=60):
    """Poll QEMU's run state until it is `want` or QEMU exits; the last one."""
    status = None
    deadline = time.time() + timeout
    while time.time() < deadline and m.proc.poll() is None and status != want:
        time.sleep(0.5)
        try:
            status = (qmp(sock, "query-status") or {}).get("status")
        except OSError:
            break
    return status


def watchdog(check):
    iso = make_iso("wd-spin", 'watchdog=5 run="vm create x misbehave cpus=1 -- spin; vm run x"',
                   [MISBEHAVE])
    m = Machine(iso, smp=2)
    try:
        m.expect("sprig> vm run x", timeout=60)
        t0 = time.time()
        m.expect("watchdog: vm run x ran over 5 s", timeout=60)
        fired = time.time() - t0
        rc = m.wait_exit(30)
        log = m.log
        check("watchdog/guest-spun", "[x] misbehave: spinning" in log, log[-1500:])
        check("watchdog/not-early", fired >= 4, "fired after %.1f s" % fired)
        check("watchdog/resets", rc == 0 and "power: reboot through" in log,
              "rc=%r\n%s" % (rc, log[-800:]))
        check("watchdog/boot-line", "safety: watchdog 5 s (0: off), run_timeout 600 s, "
              "panic=halt" in log, log[:3000])
        check("boot/ioapic-masked", re.search(r"ioapic: 0xfec00000 version 0x\w+: 24 pins masked",
                                              log) is not None, log[:3000])
        check("boot/device-memory-uncached",
              re.search(r"paging: \d+ table pages, [1-9]\d* KiB of device memory mapped uncached",
                        log) is not None, log[:3000])
        check("boot/emulator-tables", "acpi: QEMU's or Bochs' tables" in log, log[:3000])
    finally:
        m.close()


def run_timeout(check):
    iso = make_iso("run-timeout",
                   'run_timeout=2 run="vm create s misbehave -- spin; vm run s; '
                   'vm run s timeout=1; version"', [MISBEHAVE])
    m = Machine(iso)
    try:
        m.expect(PROMPT + "version", timeout=90)
        m.expect(PROMPT, timeout=30)
        parts = split_run_output(m.log)
        check("run-timeout/applied", "vm s stopped: timeout" in parts.get("vm run s", ""),
              str(parts.get("vm run s"))[:800])
        check("run-timeout/explicit-kept",
              "vm s stopped: timeout" in parts.get("vm run s timeout=1", ""),
              str(parts.get("vm run s timeout=1"))[:800])
        # At the prompt (not in run=) a vm run without timeout= has none:
        # Ctrl-C ends it.
        m.send("vm run s\r")
        time.sleep(3)
        m.send("\x03")
        out = m.expect(PROMPT, timeout=30)
        check("run-timeout/not-at-prompt", "vm s stopped: Ctrl-C" in out, out[-600:])
    finally:
        m.close()


def panic(check):
    tmp = tempfile.mkdtemp(prefix="sprig-panic-")
    try:
        # An exception on CPU 1 with panic=reboot: the whole machine resets.
        m = Machine(make_iso("panic-reboot", 'panic=reboot run="panic-test ud cpu=1"'), smp=2)
        try:
            m.expect("CPU exception 6 (invalid opcode)", timeout=60)
            m.expect("panic: rebooting (panic=reboot)", timeout=30)
            rc = m.wait_exit(30)
            check("panic/reboot", rc == 0 and "power: reboot through" in m.log,
                  "rc=%r\n%s" % (rc, m.log[-800:]))
        finally:
            m.close()
        # On the console CPU with panic=poweroff: ACPI S5.
        m, sock = qmp_machine(make_iso("panic-poweroff", 'panic=poweroff run="panic-test gp"'),
                              tmp)
        try:
            m.expect("CPU exception 13 (general protection)", timeout=60)
            m.expect("panic: powering off (panic=poweroff)", timeout=30)
            m.expect("power: off through ACPI S5", timeout=30)
            status = wait_status(m, sock, "shutdown")
            while m._read(0.5):
                pass
            check("panic/poweroff", status == "shutdown", "status %r\n%s" % (status, m.log[-800:]))
            # S5 worked, so the exit ports were never needed.
            check("panic/no-exit-ports", "power: trying the QEMU and Bochs exit ports" not in m.log, m.log[-800:])
        finally:
            m.close()
        # The default: the CPU halts, and the report says so.
        m = Machine(make_iso("panic-halt", 'run="panic-test pf"'))
        try:
            m.expect("*** CPU stopped.", timeout=60)
            check("panic/halt", "panic: halting (panic=halt)" in m.log, m.log[-800:])
        finally:
            m.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def nmi(check):
    tmp = tempfile.mkdtemp(prefix="sprig-nmi-")
    iso = make_iso("nmi", "", [CHURN])
    m, sock = qmp_machine(iso, tmp)
    try:
        m.expect(PROMPT, timeout=60)
        m.command("vm create c churn mem=64M -- mib=32 touches=400000")
        m.send("vm run c timeout=120\r")
        m.expect("[c] churn", timeout=60)
        time.sleep(0.5)
        qmp(sock, "human-monitor-command", {"command-line": "nmi"})
        out = m.expect(PROMPT, timeout=180)
        check("nmi/guest-finishes", "vm c exited: status 0" in out, out[-800:])
        stats = m.command("stats c")
        n = stat(stats, "host_nmis")
        check("nmi/counted", n is not None and n >= 1, "host_nmis %r" % n)
        out = m.command("version")
        check("nmi/sprig-goes-on", "sprig" in out, out)
    finally:
        m.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    from machine import scenario_main
    scenario_main(globals(), "watchdog")
