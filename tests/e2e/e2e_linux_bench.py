"""The proposals' workloads inside a Linux guest, a smoke run (`bench zap|exec|
dirty|boot|pv guest=linux`, bench/linux_*.c, boot_linux.c and pv_linux.c, and `bench
reporting`, bench/reporting.c, with guests/linux-bench/sprig-bench):
one boot of sprig under QEMU with 3 CPUs, each scenario boots Debian's kernel
on 2 vCPUs and takes turns with sprig-bench through the bench port. Checked
from each run's @bench lines, off and on: the workload's data intact, the
host's counters moving as each optimisation says (exec: split on fault maps
with fewer faults and splits; dirty: every frame the guest wrote is in the
log; zap: the hint skips empty leaf tables only when on, and with it the zaps
visit fewer entries; boot: Linux brings both vCPUs online; pv: Linux uses
KVM's PV TLB flush or send-IPI only when offered), the MMU audit clean (a failed audit fails the scenario's
data). Figures are `make report`'s; a bad argument is refused."""
import os

from machine import GUESTS_DIR, ROOT, Machine, bench_lines, make_iso, make_linux_images

SCENARIOS = ["linux_bench"]

MODULES = [os.path.join(GUESTS_DIR, "hello.elf"), os.path.join(ROOT, "build", "linux", "vmlinuz"),
           os.path.join(ROOT, "build", "linux", "initrd")]


def numeric(rows):
    """The rows with their integer fields as ints."""
    return [{k: int(v) if v.isdigit() else v for k, v in r.items()} for r in rows]


def by(rows, key):
    return {r[key]: r for r in numeric(rows)}


def linux_bench(check):
    make_linux_images()
    m = Machine(make_iso("linux-bench", "", MODULES), smp=3, mem="2G")
    try:
        m.expect("sprig> ", timeout=120)

        out = m.command("bench exec guest=linux vcpus=2 mib=16", timeout=300)
        rows = by(bench_lines(out, "exec"), "split_on_fault")
        off, on = rows.get("off"), rows.get("on")
        check("linux/exec rows", off and on and off.get("in") == "linux", out)
        if off and on:
            check("linux/exec ok", off["ok"] == "yes" and on["ok"] == "yes", out)
            check("linux/exec split on: fewer faults", on["faults"] * 4 < off["faults"], out)
            check("linux/exec split on: splits", on["huge_page_splits"] > 0 and
                  off["huge_page_splits"] == 0, out)

        out = m.command("bench dirty guest=linux vcpus=2 mib=16 writes=10", timeout=300)
        rows = numeric(bench_lines(out, "dirty"))
        check("linux/dirty rows", len(rows) == 3, out)
        check("linux/dirty every written frame logged",
              rows and all(r["ok"] == "yes" and r["missed"] == 0 and r["written"] > 0 and
                           r["logged"] >= r["written"] for r in rows), out)

        out = m.command("bench zap same4 guest=linux vcpus=2 reps=1 ms=400", timeout=300)
        rows = by(bench_lines(out, "zap"), "leaf_hint")
        off, on = rows.get("off"), rows.get("on")
        check("linux/zap rows", off and on and off.get("in") == "linux", out)
        if off and on:
            check("linux/zap data", off["data"] == "ok" and on["data"] == "ok", out)
            check("linux/zap zaps", off["zaps"] > 0 and on["zaps"] > 0, out)
            check("linux/zap hint skips only when on", off["skips"] == 0 and on["skips"] > 0, out)
            check("linux/zap touches counted", off["touches_per_s"] > 0 and
                  on["touches_per_s"] > 0, out)

        # Linux reports freed blocks 2 s after the free, from a workqueue:
        # 6 s leaves room for a loaded host (4 s once saw no report in the
        # first round while builds ran beside the suite), and two cycles a
        # round two chances (one cycle of 8 s once saw none in a CI run).
        out = m.command("bench reporting vcpus=2 reps=1 cycles=2 mib=32 wait_ms=6000",
                        timeout=400)
        rows = by(bench_lines(out, "reporting"), "leaf_hint")
        off, on = rows.get("off"), rows.get("on")
        check("linux/reporting rows", off and on and off.get("in") == "linux", out)
        if off and on:
            check("linux/reporting data", off["data"] == "ok" and on["data"] == "ok", out)
            check("linux/reporting reports discarded",
                  all(r["reported_ranges"] > 0 and r["zaps"] > 0 for r in (off, on)), out)
            check("linux/reporting refaults", off["guest_faults"] > 0 and
                  on["guest_faults"] > 0, out)
            # Reported blocks are 2 MiB-aligned and cover whole leaf tables:
            # with the hint on, a zap that went through one looked at it.
            check("linux/reporting hint consulted only when on",
                  off["hint_checks"] == 0 and
                  (on["hint_checks"] > 0 or on["zap_leaf_visits"] == 0), out)
        out = m.command("bench reporting vcpus=2 mib=300")
        check("linux/reporting too much memory refused", "to spare" in out, out)

        # Linux's boot against its vCPUs: one boot on 2 vCPUs, both online.
        out = m.command("bench boot guest=linux vcpus=2 runs=1", timeout=600)
        rows = numeric(bench_lines(out, "boot"))
        check("linux/boot row", len(rows) == 1 and rows[0]["in"] == "linux" and
              rows[0]["vcpus"] == 2 and rows[0]["online"] == 2 and rows[0]["ok"] == "yes" and
              rows[0]["time_ns"] > 0 and rows[0]["exits"] > 0 and rows[0]["faults"] > 0, out)
        # KVM's PV features off and on, four vCPUs on CPUs 1-2: two share
        # each CPU, get preempted, and Linux flushes their TLBs through
        # steal time and IPIs several through KVM_HC_SEND_IPI, only when on.
        out = m.command("bench pv guest=linux vcpus=4 ms=600 runs=1", timeout=600)
        rows = by(bench_lines(out, "pv"), "pv")
        off, on = rows.get("off"), rows.get("on")
        check("linux/pv rows", off and on and off["ok"] == "yes" and on["ok"] == "yes" and
              off["unmaps"] > 0 and on["unmaps"] > 0, out)
        if off and on:
            check("linux/pv off: none used", off["pv_send_ipi"] == 0 and
                  off["pv_tlb_flushes"] == 0 and off["ipis_sent"] > 0, out)
            check("linux/pv on: used", on["pv_send_ipi"] + on["pv_tlb_flushes"] > 0, out)
        out = m.command("vm create x hello pv=maybe")
        check("linux/pv= refused", "bad pv 'maybe' (on or off)" in out, out)

        out = m.command("bench boot vcpus=2")
        check("linux/boot without guest=linux refused", "give guest=linux" in out and
              "@bench" not in out, out)

        out = m.command("bench zap same4 guest=linux touches=5")
        check("linux/zap touches= refused", "not touches=" in out, out)
        out = m.command("bench zap same4 ms=5")
        check("linux/zap ms= alone refused", "ms= is for guest=linux" in out, out)
    finally:
        m.close()
