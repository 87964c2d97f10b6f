"""The leaf-empty hint in a guest (`bench zap`, bench/zap.c): the churn
guest faults, writes and checks its memory while sprig zaps the same 16 MiB of
it again and again, hint off and on, in one boot of sprig under QEMU (SVM with
nested paging). Zaps keep the backing: the guest must find all its data. Then
the discard variant: the guest learns what it lost and checks exactly that.

With vcpus=N, on -smp 4: the churn guest on 3 vCPUs while the console CPU
zaps by time, two runs each way; the rows must be there with exactly the
issue's fields, numbers where numbers go, and the guest's data intact. Times
are never asserted. The same on one CPU, where the vCPUs and the zapper share
CPU 0: the run must end."""
import os
import re

from machine import GUESTS_DIR, PROMPT, bench_lines, Machine, make_iso

SCENARIOS = ["qemu_bench_zap", "qemu_bench_zap_vcpus"]

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


VCPUS_FIELDS = ["bench", "in", "pattern", "vcpus", "leaf_hint", "reps", "remote_flush", "zaps",
                "zap_median_ns", "zap_p999_ns", "zap_median_cycles", "zap_p999_cycles",
                "zap_spte_visits", "zap_leaf_visits", "skips", "fault_waits", "fault_wait_p50_ns",
                "fault_wait_p99_ns", "fault_wait_p999_ns", "fault_wait_max_ns", "guest_faults",
                "zap_hold_p50_ns", "zap_hold_p99_ns", "zap_hold_p999_ns", "zap_hold_max_ns",
                "data"]
VCPUS_NUMBERS = VCPUS_FIELDS[7:-1]
VCPUS_ROW = re.compile(r"^(\w+)\s+(\d+) \((\d+)\.\.(\d+)\)\s+(\d+) \((\d+)\.\.(\d+)\)$", re.M)


def check_vcpus_run(check, name, out, pattern, vcpus, reps):
    lines = [l for l in out.splitlines() if l.startswith("@bench bench=zap ")]
    check(name + "/fields", len(lines) == 2 and
          all([kv.split("=", 1)[0] for kv in l.split()[1:]] == VCPUS_FIELDS for l in lines), out)
    rows = {r["leaf_hint"]: r for r in bench_lines(out, "zap")}
    check(name + "/rows", set(rows) == {"off", "on"}, out)
    if set(rows) != {"off", "on"}:
        return
    check(name + "/row-keys", all(r["in"] == "guest" and r["pattern"] == pattern and
                                  r["vcpus"] == str(vcpus) and r["reps"] == str(reps) and
                                  r["remote_flush"] == "on" for r in rows.values()), out)
    check(name + "/numbers", all(r[k].isdigit() for r in rows.values()
                                 for k in VCPUS_NUMBERS), out)
    check(name + "/guest-data-ok", all(r["data"] == "ok" for r in rows.values()) and
          out.count("data check ok") == 2 * reps and "FAILED" not in out, out)
    off, on = rows["off"], rows["on"]
    check(name + "/zapped-and-faulted", all(int(r["zaps"]) > 0 and int(r["fault_waits"]) > 0 and
                                            int(r["guest_faults"]) >= int(r["fault_waits"])
                                            for r in rows.values()), out)
    # Every zap held the write lock a while: its histogram has them, in order.
    check(name + "/hold-recorded", all(0 < int(r["zap_hold_max_ns"]) and
                                       int(r["zap_hold_p50_ns"]) <= int(r["zap_hold_p99_ns"])
                                       <= int(r["zap_hold_p999_ns"]) for r in rows.values()),
          out)
    # A same pattern zaps tables it emptied a millisecond before: the hint skips them.
    check(name + "/hint-skips", off["skips"] == "0" and
          (int(on["skips"]) > 0 or not pattern.startswith("same")), out)
    # The table: every field, median (min..max) each way, the median within.
    table = {m.group(1): [int(x) for x in m.groups()[1:]] for m in VCPUS_ROW.finditer(out)}
    check(name + "/table", set(VCPUS_NUMBERS) <= set(table) and
          all(v[1] <= v[0] <= v[2] and v[4] <= v[3] <= v[5] for v in table.values()), out)


def qemu_bench_zap_vcpus(check):
    iso = make_iso("zap-vcpus", "", [os.path.join(GUESTS_DIR, "churn.elf")])
    m = Machine(iso, smp=4)
    try:
        m.expect(PROMPT, timeout=60)
        out = m.command("bench zap same4 vcpus=3 touches=1000 reps=2", timeout=300)
        check_vcpus_run(check, "zap-vcpus/same4", out, "same4", 3, 2)
        out = m.command("bench zap sweep2 vcpus=2 every_us=200 touches=1000 reps=1", timeout=300)
        check_vcpus_run(check, "zap-vcpus/sweep2-every-200us", out, "sweep2", 2, 1)
        out = m.command("bench zap same4 vcpus=2 discard")
        check("zap-vcpus/discard-refused", "for one vCPU" in out and "@bench" not in out, out)
        out = m.command("bench zap same4 reps=2")
        check("zap-vcpus/reps-needs-vcpus", "need vcpus=" in out and "@bench" not in out, out)
    finally:
        m.close()
    m = Machine(iso, smp=1)
    try:
        m.expect(PROMPT, timeout=60)
        out = m.command("bench zap same4 vcpus=2 touches=1000 reps=1", timeout=300)
        check_vcpus_run(check, "zap-vcpus/one-cpu", out, "same4", 2, 1)
    finally:
        m.close()
