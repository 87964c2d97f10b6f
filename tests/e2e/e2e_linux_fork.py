"""The rmap fork benchmark on a booted Linux guest, a smoke run (`bench rmap
guest=linux 4 mib=16`, bench/rmap_linux.c): one boot of sprig under
QEMU, Debian's kernel boots once, its sprig-bench writes 16 MiB, then for each
rmap variant (ext3, ext14, counted, counted with the back-reference) 4 clones
map all its resident memory and are destroyed. Checked from the @bench lines:
one row per variant, every clone mapped every page, the rmaps reached the
parent and its 4 clones, the descriptors and memory came back (a failed
audit fails a row), and sprig's free memory is what it was before. Figures
are `make report`'s; a stray mib= is refused."""
import os

from e2e_linux_snap import free_bytes
from machine import PROMPT, ROOT, Machine, bench_lines, make_iso, scenario_main, make_linux_images

SCENARIOS = ["linux_fork"]

MODULES = [os.path.join(ROOT, "build", "linux", "vmlinuz"),
           os.path.join(ROOT, "build", "linux", "initrd")]
VARIANTS = [("ext3", "off"), ("ext14", "off"), ("counted", "off"), ("counted", "on")]
CLONES = 4
# Slabs keep a spare empty slab per cache: what a round may keep.
KEPT_MAX = 64 << 10


def linux_fork(check):
    make_linux_images()
    m = Machine(make_iso("linux-fork", "", MODULES), mem="1G")
    try:
        m.expect(PROMPT, timeout=120)
        before = m.command("mem")
        out = m.command("bench rmap guest=linux %d mib=16" % CLONES, timeout=300)
        rows = bench_lines(out, "rmap_fork")
        check("fork/rows", [(r.get("rmap_desc"), r.get("rmap_backref")) for r in rows] ==
              VARIANTS and all(r.get("in") == "linux" and r.get("clones") == str(CLONES)
                               for r in rows), out)
        if len(rows) == len(VARIANTS):
            pages = {r["pages"] for r in rows}
            check("fork/pages", len(pages) == 1 and int(pages.pop()) >= 16 * 256, out)
            check("fork/ok", all(r["ok"] == "yes" for r in rows), out)
            check("fork/max-rmap", all(int(r["max_rmap"]) == CLONES + 1 for r in rows), out)
            check("fork/descriptors", all(int(r["rmap_descs"]) > 0 and
                                          int(r["desc_bytes"]) > 0 for r in rows), out)
            check("fork/times", all(int(r["time_ns"]) == int(r["clone_ns"]) +
                                    int(r["map_ns"]) + int(r["destroy_ns"]) for r in rows), out)
            check("fork/memory-kept", all(int(r["kept_bytes"]) <= KEPT_MAX for r in rows), out)
        check("fork/histogram", "Rmap_Count:" in out and "Level=4K:" in out, out)
        after = m.command("mem")
        check("fork/memory-back", abs(free_bytes(before) - free_bytes(after)) <= KEPT_MAX,
              before + after)
        out = m.command("vm list")
        check("fork/no-vms-left", "linux-bench" not in out and "fork-" not in out, out)
        out = m.command("bench rmap 4 mib=16")
        check("fork/mib-refused", "mib= is for guest=linux" in out and "@bench" not in out, out)
    finally:
        m.close()


if __name__ == "__main__":
    scenario_main(globals(), "linux_fork")
