"""A Linux guest restored from a snapshot in chunks, a smoke run of `bench
prefetch guest=linux` (bench/prefetch_linux.c, the restore workload of
guests/linux-bench/sprig-bench): one boot of sprig under QEMU (SVM, NPT);
the scenario boots Debian's kernel, snapshots it with 16 MiB written, and
restores it in 4 KiB and 2 MiB chunks with prefetch off and adaptive; each
restored guest reads every page back. Checked from the @bench lines: one
well-formed row per chunk and mode, every word back (data=ok) and the audit
clean; the restore filled at least the workload's pages, in whole chunks;
prefetch mapped nothing when off, and with 2 MiB chunks it cut the faults;
and sprig's free memory is exactly as before the run. Figures (128 MiB, every
chunk and mode) are `make report`'s; a bad argument is refused."""
import os

from machine import ROOT, Machine, bench_lines, make_iso, scenario_main, make_linux_images
from e2e_input import memory_state

SCENARIOS = ["linux_restore"]

MODULES = [os.path.join(ROOT, "build", "linux", "vmlinuz"),
           os.path.join(ROOT, "build", "linux", "initrd")]
MIB = 16
CHUNK_PAGES = {"4K": 1, "2M": 512}
FIELDS = ("faults", "filled_pages", "time_ns", "touch_ns", "mib", "mem_mib",
          "pf_prefetch_called", "pf_prefetch_pages", "pf_prefetch_mapped",
          "pf_prefetch_unused")


def linux_restore(check):
    make_linux_images()
    m = Machine(make_iso("linux-restore", "", MODULES), smp=2, mem="2G")
    try:
        m.expect("sprig> ", timeout=120)
        out = m.command("bench prefetch guest=linux chunks=4K,8K")
        check("restore/bad-chunk-refused", "chunks= takes" in out, out)
        out = m.command("bench prefetch guest=linux mib=200 mem=256M")
        check("restore/mib-over-half-refused", "at most half" in out, out)

        mem0 = m.command("mem")
        out = m.command("bench prefetch guest=linux mib=%d mem=256M chunks=4K,2M "
                        "modes=off,adaptive" % MIB, timeout=600)
        rows = bench_lines(out, "prefetch")
        check("restore/four-rows", len(rows) == 4, out)
        well_formed = all(r.get("in") == "linux" and r.get("data") in ("ok", "BAD") and
                          r.get("audit") in ("ok", "BAD") and
                          all(r.get(f, "").isdigit() for f in FIELDS) for r in rows)
        check("restore/rows-well-formed", well_formed, out)
        if not well_formed:
            return
        got = {(r["chunk"], r["mode"]): {k: int(v) if v.isdigit() else v
                                         for k, v in r.items()} for r in rows}
        check("restore/every-chunk-and-mode",
              set(got) == {(c, mo) for c in CHUNK_PAGES for mo in ("off", "adaptive")}, out)
        if len(got) != 4 or len(rows) != 4:
            return
        check("restore/modes-as-named",
              all(r["prefetch"] == ("off" if mo == "off" else "forward") and
                  r["adaptive"] == ("on" if mo == "adaptive" else "off")
                  for (c, mo), r in got.items()), out)
        check("restore/data-and-audit",
              all(r["data"] == "ok" and r["audit"] == "ok" for r in got.values()), out)
        check("restore/filled-whole-chunks",
              all(r["filled_pages"] >= MIB * 256 and r["filled_pages"] % CHUNK_PAGES[c] == 0
                  for (c, mo), r in got.items()), out)
        check("restore/faults-at-least-touch-when-off",
              all(got[(c, "off")]["faults"] >= MIB * 256 for c in CHUNK_PAGES), out)
        check("restore/off-prefetches-nothing",
              all(got[(c, "off")]["pf_prefetch_called"] == 0 for c in CHUNK_PAGES), out)
        check("restore/2m-prefetch-fewer-faults",
              got[("2M", "adaptive")]["pf_prefetch_mapped"] > 0 and
              got[("2M", "adaptive")]["faults"] * 4 < got[("2M", "off")]["faults"], out)
        check("restore/memory-back", memory_state(m.command("mem")) == memory_state(mem0),
              mem0 + m.command("mem"))
    finally:
        m.close()


if __name__ == "__main__":
    scenario_main(globals(), "linux_restore")
