"""sprig's own writes into guest memory reach the dirty log, under SVM (QEMU
-cpu max): the hvwrite guest stops, the console turns dirty logging on, and
the guest then has sprig write four pages at 0x400000-0x403fff (the
instruction emulator's REP MOVSD from the local APIC into RAM, the
paravirtual clock's system time and wall clock, a hypercall's result) that
it never writes itself. At its second stop `vm dirty w get` must list the
four pages, as one range: the pages on either side stay clean. Before
mmu_write_guest marked the log, none of them was listed."""
import os
import re

from machine import GUESTS_DIR, PROMPT, Machine, make_iso, scenario_main

SCENARIOS = ["qemu_hvwrite"]

RANGE = "gpa 0x400000-0x403fff"


def qemu_hvwrite(check):
    m = Machine(make_iso("hvwrite", "", [os.path.join(GUESTS_DIR, "hvwrite.elf")]))
    try:
        m.expect(PROMPT, timeout=60)
        m.command("vm create w hvwrite mem=64M -- hello")
        out = m.command("vm run w", timeout=60)
        check("hvwrite/first-stop", "stopped: snapshot point" in out, out)
        out = m.command("vm dirty w on")
        check("hvwrite/dirty-on", "vm w dirty logging on" in out, out)
        out = m.command("vm run w", timeout=60)
        check("hvwrite/written", "stopped: snapshot point" in out and
              re.search(r'hvwrite: clock version [1-9]\d*, wall clock version 2, args "hello"',
                        out) is not None, out)
        out = m.command("vm dirty w get")
        got = re.search(r"vm w dirty: (\d+) pages", out)
        check("hvwrite/dirty-lists-sprig-writes", got is not None and RANGE in out, out)
        out = m.command("vm audit w")
        check("hvwrite/audit", "mmu audit: ok" in out, out)
        out = m.command("vm run w", timeout=60)
        check("hvwrite/exit", "hvwrite ok" in out and "vm w exited: status 0" in out, out)
    finally:
        m.close()


if __name__ == "__main__":
    scenario_main(globals(), "qemu_hvwrite")
