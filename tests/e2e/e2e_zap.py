"""The leaf-empty hint in a guest (`bench zap`, virt/bench/zap.c): the churn
guest faults, writes and checks its memory while sprig zaps the same 16 MiB of
it again and again, hint off and on, in one boot of sprig under QEMU (SVM with
nested paging). Zaps keep the backing: the guest must find all its data. Then
the discard variant: the guest learns what it lost and checks exactly that."""
import os
import re

from machine import GUESTS_DIR, PROMPT, bench_lines, Machine, make_iso

SCENARIOS = ["qemu_bench_zap"]

ROW = re.compile(r"^(off|on)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\S+)$",
                 re.M)


def check_run(check, name, out, discard):
    table = {m.group(1): m.groups() for m in ROW.finditer(out)}
    check(name + "/table", set(table) == {"off", "on"}, out)
    rows = {r["leaf_hint"]: r for r in bench_lines(out, "zap") if r.get("in") == "guest"}
    check(name + "/bench-lines", set(rows) == {"off", "on"} and
          all(r["in"] == "guest" and r["pattern"] == "same16" for r in rows.values()), out)
    if set(rows) != {"off", "on"}:
        return
    off, on = rows["off"], rows["on"]
    check(name + "/guest-data-ok", off["data"] == "ok" and on["data"] == "ok" and
          "FAILED" not in out and out.count("data check ok") == 2, out)
    # Exits, not time, drive the zaps: both runs see the same schedule.
    check(name + "/same-schedule", off["zaps"] == on["zaps"] and int(on["zaps"]) > 20 and
          off["guest_faults"] == on["guest_faults"], out)
    check(name + "/hint-off-no-checks", off["hint_checks"] == "0" and off["skips"] == "0", out)
    check(name + "/hint-skips", int(on["skips"]) > 0 and
          int(on["zap_leaf_visits"]) < int(off["zap_leaf_visits"]), out)
    if discard:
        m = re.findall(r"lost (\d+) ranges \((\d+) pages\)", out)
        check(name + "/guest-told-losses", len(m) == 2 and all(int(r) > 0 for r, _ in m), out)


def qemu_bench_zap(check):
    m = Machine(make_iso("zap", "", [os.path.join(GUESTS_DIR, "churn.elf")]))
    try:
        m.expect(PROMPT, timeout=60)
        out = m.command("bench zap same16", timeout=300)
        check_run(check, "zap/same16", out, False)
        out = m.command("bench zap same16 discard touches=6000", timeout=300)
        check_run(check, "zap/same16-discard", out, True)
        out = m.command("bench zap nosuch")
        check("zap/bad-pattern-refused", "unknown zap pattern" in out, out)
        out = m.command("mmu leaf_hint=off")
        out = m.command("mmu")
        check("zap/switch-on-console", re.search(r"leaf_hint\s*=?\s*off", out) is not None, out)
        m.command("mmu leaf_hint=on")
        out = m.command("version")
        check("zap/sprig-goes-on", "sprig " in out, out)
    finally:
        m.close()
