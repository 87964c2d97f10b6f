"""The rmap descriptor layouts under clones (`bench rmap`, bench/rmap.c),
in one boot of sprig under QEMU (SVM with nested paging): the rmapread guest
writes 1 MiB and stops at its clone point; 10 clones read it all, for each of
ext3, ext14 and counted. Every clone's read must find the parent's data, the
shared frames' rmaps must reach 11 (the parent and 10 clones), the parent's
audit must pass, the switch must come back, and bad clone counts are refused
with sprig still answering."""
import os
import re

from machine import GUESTS_DIR, PROMPT, bench_lines, Machine, make_iso

SCENARIOS = ["qemu_bench_rmap"]

VARIANTS = ["ext3", "ext14", "counted"]
ROW = re.compile(r"^(ext3|ext14|counted)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)"
                 r"\s+(\S+)\s+(\S+)$", re.M)


def qemu_bench_rmap(check):
    m = Machine(make_iso("rmap-bench", "", [os.path.join(GUESTS_DIR, "rmapread.elf")]))
    try:
        m.expect(PROMPT, timeout=60)
        before = m.command("mmu")
        out = m.command("bench rmap 10", timeout=120)
        table = [row.groups() for row in ROW.finditer(out)]
        check("rmap-bench/table", [t[0] for t in table] == VARIANTS and
              all(t[1] == "10" for t in table), out)
        check("rmap-bench/data-and-audit", len(table) == 3 and
              all(t[7] == "ok" and t[8] == "ok" for t in table), out)
        rows = {r["rmap_desc"]: r for r in bench_lines(out, "rmap_fork")
                if r.get("in") == "guest"}
        check("rmap-bench/bench-lines", sorted(rows) == sorted(VARIANTS) and
              all(r["clones"] == "10" and r["audit"] == "ok" and
                  all(k in r for k in ["create_ns", "run_ns", "destroy_ns"])
                  for r in rows.values()), out)
        check("rmap-bench/max-rmap", len(rows) == 3 and
              all(int(r["max_rmap"]) >= 11 for r in rows.values()), out)
        check("rmap-bench/switch-restored", m.command("mmu") == before, before)
        for bad in ["x", "0", "5000"]:
            out = m.command("bench rmap " + bad)
            check("rmap-bench/refused-" + bad, "bad clone count" in out and
                  "@bench" not in out, out)
        out = m.command("vm list")
        check("rmap-bench/no-vms-left", "rmap-" not in out, out)
        out = m.command("version")
        check("rmap-bench/alive", "sprig" in out, out)
    finally:
        m.close()
