"""Split on fault and dirty logging under SVM (QEMU -cpu max), in one boot:
`bench exec` (the exec guest writes then calls every 4 KiB page of 2 MiB-mapped
memory with nx_huge_pages=on) must take at least 20x fewer nested page faults
in the execute pass with split_on_fault=on than off; `bench dirty writes=5`
(the dirty guest touches every page once, writing 5%) at least 10x fewer in
iteration 1, with every page the guest logged as written in sprig's dirty log
and no page besides its own; the guests check their data, the audit passes.
Then the console's `vm dirty NAME on|get|off` on a guest of its own.

With vcpus=3 on -smp 4, small sizes: the same rows with vcpus=3 and the same
fault counts' ratios, each vCPU on its own share of the memory."""
import os
import re

from machine import GUESTS_DIR, PROMPT, bench_lines, Machine, make_iso

SCENARIOS = ["qemu_split", "qemu_split_vcpus"]


def qemu_split(check):
    m = Machine(make_iso("split", "", [os.path.join(GUESTS_DIR, g + ".elf")
                                       for g in ["exec", "dirty"]]))
    try:
        m.expect(PROMPT, timeout=60)
        out = m.command("mmu", timeout=30)
        check("split/switches", "split_on_fault=on" in out and "eager_page_split=off" in out
              and "nx_huge_pages=" in out, out)

        out = m.command("bench exec", timeout=120)
        rows = {r["split_on_fault"]: r for r in bench_lines(out, "exec")}
        check("split/exec-runs", set(rows) == {"on", "off"} and
              all(r["ok"] == "yes" and r["in"] == "guest" for r in rows.values()), out)
        if set(rows) == {"on", "off"}:
            off, on = int(rows["off"]["faults"]), int(rows["on"]["faults"])
            print("  exec faults: zap %d, split %d" % (off, on))
            check("split/exec-20x-fewer-faults", on > 0 and off >= 20 * on, str(rows))
            check("split/exec-nx-splits", int(rows["on"]["nx_lpage_splits"]) > 0, str(rows))

        out = m.command("bench dirty writes=5", timeout=120)
        rows = {(r["eager_page_split"], r["split_on_fault"]): r
                for r in bench_lines(out, "dirty")}
        check("split/dirty-runs", len(rows) == 3 and
              all(r["ok"] == "yes" for r in rows.values()), out)
        check("split/dirty-log-complete",
              all(r["missed"] == "0" and r["unexpected"] == "0" and int(r["written"]) > 0
                  for r in rows.values()), out)
        if ("off", "off") in rows and ("off", "on") in rows:
            off, on = int(rows[("off", "off")]["faults"]), int(rows[("off", "on")]["faults"])
            print("  dirty 5%% faults: zap %d, split %d" % (off, on))
            check("split/dirty-10x-fewer-faults", on > 0 and off >= 10 * on, str(rows))

        m.command("vm create d dirty mem=64M backing=eager -- mib=16 writes=50")
        out = m.command("vm run d", timeout=60)
        check("split/vm-dirty-populated", "stopped: snapshot point" in out, out)
        out = m.command("vm dirty d on")
        check("split/vm-dirty-on", "vm d dirty logging on" in out, out)
        out = m.command("vm run d", timeout=60)
        check("split/vm-dirty-iterated", "stopped: snapshot point" in out, out)
        out = m.command("vm dirty d get")
        got = re.search(r"vm d dirty: (\d+) pages", out)
        # Half of 4096 pages written, give or take the pattern, plus the guest's own.
        check("split/vm-dirty-get", got is not None and 1800 < int(got.group(1)) < 2400, out)
        out = m.command("vm dirty d get")
        check("split/vm-dirty-get-clears", "vm d dirty: 0 pages" in out, out)
        out = m.command("vm audit d")
        check("split/vm-dirty-audit", "mmu audit: ok" in out, out)
        out = m.command("vm dirty d off")
        check("split/vm-dirty-off", "vm d dirty logging off" in out, out)
        out = m.command("vm run d", timeout=60)
        check("split/vm-dirty-data", "dirty ok" in out and "vm d exited: status 0" in out, out)
        out = m.command("stats d")
        check("split/stats", re.search(r"huge_page_splits_fault\s+[1-9]", out) is not None and
              re.search(r"dirty_pages_logged\s+[1-9]", out) is not None, out)
    finally:
        m.close()


def qemu_split_vcpus(check):
    m = Machine(make_iso("split-vcpus", "", [os.path.join(GUESTS_DIR, g + ".elf")
                                             for g in ["exec", "dirty"]]), smp=4)
    try:
        m.expect(PROMPT, timeout=60)
        out = m.command("bench exec mib=16 mem=64M vcpus=3", timeout=120)
        rows = {r["split_on_fault"]: r for r in bench_lines(out, "exec")}
        check("split-vcpus/exec-runs", set(rows) == {"on", "off"} and
              all(r["ok"] == "yes" and r["in"] == "guest" and r["vcpus"] == "3" and
                  r["faults"].isdigit() and r["time_ns"].isdigit() for r in rows.values()) and
              "exec: 16 MiB at 0x400000, 3 CPUs" in out, out)
        if set(rows) == {"on", "off"}:
            off, on = int(rows["off"]["faults"]), int(rows["on"]["faults"])
            check("split-vcpus/exec-20x-fewer-faults", on > 0 and off >= 20 * on, str(rows))

        out = m.command("bench dirty mib=16 mem=64M writes=5 vcpus=3", timeout=120)
        rows = {(r["eager_page_split"], r["split_on_fault"]): r
                for r in bench_lines(out, "dirty")}
        check("split-vcpus/dirty-runs", len(rows) == 3 and
              all(r["ok"] == "yes" and r["vcpus"] == "3" and r["missed"] == "0" and
                  r["unexpected"] == "0" and int(r["written"]) > 0 for r in rows.values()) and
              out.count("3 CPUs") == 3, out)
        if ("off", "off") in rows and ("off", "on") in rows:
            off, on = int(rows[("off", "off")]["faults"]), int(rows[("off", "on")]["faults"])
            check("split-vcpus/dirty-10x-fewer-faults", on > 0 and off >= 10 * on, str(rows))

        out = m.command("bench exec mib=16 mem=64M", timeout=120)
        check("split-vcpus/one-vcpu-lines-unchanged", len(bench_lines(out, "exec")) == 2 and
              "vcpus=" not in out, out)
    finally:
        m.close()
