"""The report's figures, one PNG file each, drawn with matplotlib (Debian's
python3-matplotlib) from a run's records. Each function returns a list of
figures: {"file", "title", "caption"}; the caption says what was measured,
how often, the spread and where."""
import math
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from . import curves, proposals  # noqa: E402
from .verdicts import (VIRTUAL_TIME, WHERE_NAMES, exit_cost, one, one_vcpu, select,  # noqa: E402
                       several_vcpus, zap_vcpus_keys)

DPI = 90


def save(fig, outdir, name):
    fig.tight_layout()
    fig.savefig("%s/%s" % (outdir, name), dpi=DPI)
    plt.close(fig)
    return name


def fig_entry(name, title, caption):
    return {"file": name, "title": title, "caption": caption}


def pattern_order(name):
    """same16, same4, sweep16 ... sweep1."""
    m = re.match(r"([a-z]+)(\d+)$", name)
    return (m.group(1), -int(m.group(2))) if m else (name, 0)


def zap_cdf(recs, outdir):
    """Zap time CDF per pattern, hint off and on, every refault row (host)."""
    out = []
    rows = select(recs, "zap_cdf", where="host")
    for pattern in sorted({r["pattern"] for r in rows}, key=pattern_order):
        fig, ax = plt.subplots(figsize=(6, 3.6))
        runs, zaps = None, []
        for r in sorted(select(rows, "zap_cdf", pattern=pattern),
                        key=lambda r: (r["refault"], r["leaf_hint"])):
            ns = [float(x) for x in str(r["pct_ns"]).split(",")]
            label = "hint %s" % r["leaf_hint"]
            if not pattern.startswith("sweep"):
                label += ", refault %d%%" % r["refault"]
            ax.plot([x / 1000 for x in ns], [q / 100 for q in range(len(ns))],
                    linestyle="-" if r["leaf_hint"] == "on" else "--", label=label)
            runs = r["runs"]
            zaps.append(r["zaps"])
        ax.set_xscale("log")
        ax.set_xlabel("zap time, us (log)")
        ax.set_ylabel("fraction of zaps")
        ax.set_title("%s: zap time distribution" % pattern)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
        name = save(fig, outdir, "zap_cdf_%s.png" % pattern)
        out.append(fig_entry(name, "Zap time CDF, %s, leaf-empty hint off and on" % pattern,
                             "Every zap of %s runs pooled (%s zaps per curve), timed by the "
                             "MMU's own zap_cycles counter (TSC), host benchmark "
                             "tests/bench/zap_bench.c, 1 GiB VM mapped at 4 KiB; the curve is "
                             "the spread." % (runs, min(zaps) if min(zaps) == max(zaps) else
                                              "%d to %d" % (min(zaps), max(zaps)))))
    return out


def zap_visits(recs, outdir):
    """SPTE and leaf visits per zap, hint off/on, per row (host)."""
    rows = select(recs, "zap", where="host")
    keys = []
    for r in rows:
        k = (r["pattern"], r["refault"])
        if k not in keys:
            keys.append(k)
    if not keys:
        return []
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    width = 0.4
    for ax, field, what in ((axes[0], "zap_spte_visits", "SPTE visits (all levels)"),
                            (axes[1], "zap_leaf_visits", "leaf visits (4 KiB tables)")):
        for h, hint in enumerate(("off", "on")):
            vals = []
            for p, rf in keys:
                r = one(rows, "zap", pattern=p, refault=rf, leaf_hint=hint)
                vals.append(r[field] / r["zaps"] if r and r["zaps"] else 0)
            ax.bar([i + (h - 0.5) * width for i in range(len(keys))], vals, width,
                   label="hint " + hint)
        ax.set_xticks(range(len(keys)))
        ax.set_xticklabels(["%s\nrf %s" % (p, rf) if not p.startswith("sweep") else p
                            for p, rf in keys], fontsize=7)
        ax.set_yscale("log")
        ax.set_ylabel(what + " per zap")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=7)
    runs = rows[0].get("runs")
    name = save(fig, outdir, "zap_visits.png")
    return [fig_entry(name, "Entries read per zap, leaf-empty hint off and on",
                      "Counts from the zap counters (zap_spte_visits, zap_leaf_visits) "
                      "divided by the zaps of one run (the counts are the same in every run "
                      "of the %s; no spread), host benchmark; 'rf' is the percentage of the "
                      "range's 2 MiB regions refaulted between zaps, as run." % runs)]


def zap_guest(recs, outdir):
    rows = [r for r in one_vcpu(recs) if r.get("bench") == "zap" and
            r["where"] in ("qemu", "bochs")]
    if not rows:
        return []
    keys = []
    for r in rows:
        k = (r["where"], r["pattern"])
        if k not in keys:
            keys.append(k)
    fig, ax = plt.subplots(figsize=(6, 3.6))
    width = 0.2
    for h, hint in enumerate(("off", "on")):
        for s, stat in enumerate(("zap_median_ns", "zap_p999_ns")):
            vals = [(one(rows, "zap", where=w, pattern=p, leaf_hint=hint) or {}).get(stat, 0)
                    / 1000 for w, p in keys]
            ax.bar([i + (2 * h + s - 1.5) * width for i in range(len(keys))], vals, width,
                   label="hint %s, %s" % (hint, "median" if s == 0 else "p99.9"))
    ax.set_xticks(range(len(keys)))
    ax.set_xticklabels(["%s\n%s" % (p, w) for w, p in keys], fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("zap time, us (log)")
    ax.legend(fontsize=7)
    ax.grid(True, axis="y", alpha=0.3)
    zaps = ", ".join("%s %s: %d zaps" % (w, p, one(rows, "zap", where=w, pattern=p,
                                                    leaf_hint="on")["zaps"])
                     for w, p in keys if one(rows, "zap", where=w, pattern=p, leaf_hint="on"))
    name = save(fig, outdir, "zap_guest.png")
    return [fig_entry(name, "Zaps in a guest: median and p99.9, hint off and on",
                      "`bench zap` with the churn guest (one zap every 16 exits), one run "
                      "each way in one boot (%s); median and p99.9 of the zap latency "
                      "histogram (TSC; the spread is the gap between them); under QEMU "
                      "(SVM, NPT) and Bochs (VMX, EPT), both emulators, so absolute times "
                      "are the emulator's." % zaps)]


def split_plots(recs, outdir):
    recs = one_vcpu(recs)
    out = []
    for where in ("host", "qemu", "bochs"):
        bars = []  # (label, off, on, eager) for faults and time
        ex_off = one(recs, "exec", where=where, split_on_fault="off")
        ex_on = one(recs, "exec", where=where, split_on_fault="on")
        if ex_off and ex_on:
            bars.append(("exec", ex_off, ex_on, None))
        for w in (5, 100):
            d = [one(recs, "dirty", where=where, writes=w, eager_page_split=e, split_on_fault=s)
                 for e, s in (("off", "off"), ("off", "on"), ("on", "on"))]
            if d[0] and d[1]:
                bars.append(("dirty %d%%" % w, d[0], d[1], d[2]))
        if not bars:
            continue
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
        width = 0.27
        for ax, field, scale, ylabel in ((axes[0], "faults", 1, "faults"),
                                         (axes[1], "time_ns", 1e6, "time, ms")):
            for k, (cfg, idx) in enumerate((("split off (zap)", 1), ("split on", 2),
                                            ("eager split", 3))):
                vals = [b[idx][field] / scale if b[idx] else 0 for b in bars]
                errs = None
                if field == "time_ns" and all(b[idx] is None or "ns_min" in b[idx] for b in bars):
                    errs = [[(b[idx]["time_ns"] - b[idx]["ns_min"]) / scale if b[idx] else 0
                             for b in bars],
                            [(b[idx]["ns_max"] - b[idx]["time_ns"]) / scale if b[idx] else 0
                             for b in bars]]
                ax.bar([i + (k - 1) * width for i in range(len(bars))], vals, width,
                       yerr=errs, capsize=2, label=cfg)
            ax.set_xticks(range(len(bars)))
            ax.set_xticklabels([b[0] for b in bars])
            ax.set_yscale("log")
            ax.set_ylabel(ylabel + " (log)")
            ax.grid(True, axis="y", alpha=0.3)
            ax.legend(fontsize=7)
        runs = ex_off.get("runs", 1) if ex_off else 1
        mib = (ex_off or bars[0][1]).get("mib", "?")
        name = save(fig, outdir, "split_%s.png" % where)
        how = ("median of %d interleaved runs, error bars min to max" % runs
               if where == "host" else "one run each way in one boot (no spread measured)")
        ran = " and ".join(b[0] for b in bars)
        out.append(fig_entry(name, "Split on fault: %s, %s" % (ran, WHERE_NAMES[where]),
                             "Faults and time of what ran here (%s; exec: the execute pass "
                             "with nx_huge_pages=on; dirty N%%: dirty-log iteration 1 with N%% "
                             "of pages written), split_on_fault off and on, and eager_page_split "
                             "on for dirty logging, %s MiB, prefetch off; %s; %s." %
                             (ran, mib, how, WHERE_NAMES[where])))
    return out


def rmap_fork(recs, outdir):
    rows = select(recs, "rmap_fork", where="host")
    if not rows:
        return []
    clones = sorted({r["clones"] for r in rows})
    variants = [("ext3", "off"), ("ext14", "off"), ("counted", "off"), ("counted", "on")]
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    width = 0.2
    for k, (desc, br) in enumerate(variants):
        rs = [one(rows, "rmap_fork", rmap_desc=desc, rmap_backref=br, clones=c) for c in clones]
        vals = [r["time_ns"] / 1e6 if r else 0 for r in rs]
        errs = [[(r["time_ns"] - r["ns_min"]) / 1e6 if r else 0 for r in rs],
                [(r["ns_max"] - r["time_ns"]) / 1e6 if r else 0 for r in rs]]
        ax.bar([i + (k - 1.5) * width for i in range(len(clones))], vals, width, yerr=errs,
               capsize=2, label="%s, back-reference %s" % (desc, br))
    ax.set_xticks(range(len(clones)))
    ax.set_xticklabels(["%d clones" % c for c in clones])
    ax.set_yscale("log")
    ax.set_ylabel("fork workload, ms (log)")
    ax.legend(fontsize=7)
    ax.grid(True, axis="y", alpha=0.3)
    name = save(fig, outdir, "rmap_fork.png")
    return [fig_entry(name, "Fork time by rmap descriptor layout, back-reference off and on",
                      "A parent maps 256 frames, N clones map them all for reading, all torn "
                      "down (tests/bench/rmap_fork_bench.c); median of %d interleaved runs, "
                      "error bars min to max; host." % rows[0].get("runs", 0))]


def rmap_ops(recs, outdir):
    rows = select(recs, "rmap", where="host")
    scans = select(recs, "rmap_remove", where="host")
    if not rows:
        return []
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.4))
    for ax, field in zip(axes, ("add_ns", "remove_ns", "count_ns")):
        for desc in ("ext3", "ext14", "counted"):
            rs = sorted(select(rows, "rmap", rmap_desc=desc), key=lambda r: r["chain"])
            ax.plot([r["chain"] for r in rs], [r[field] for r in rs], marker=".", label=desc)
        if field == "remove_ns" and scans:
            rs = sorted(scans, key=lambda r: r["chain"])
            ax.plot([r["chain"] for r in rs], [r["scan_ns"] for r in rs], marker=".",
                    linestyle="--", label="counted, by scan")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("chain length (log)")
        ax.set_ylabel(field.replace("_ns", "") + ", ns per op (log)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    name = save(fig, outdir, "rmap_ops.png")
    return [fig_entry(name, "Rmap add, remove and count against chain length",
                      "About 65536 SPTEs per point in chains of the given length "
                      "(tests/bench/rmap_bench.c); median of the interleaved runs, ns per "
                      "operation (the spreads are in the run's data, *_spread_pct); host.")]


def rmaps_hist(recs, outdir):
    rows = [r for r in recs if r.get("bench") == "rmaps"]
    if not rows:
        return []
    fig, ax = plt.subplots(figsize=(7, 3.4))
    width = 0.8 / len(rows)
    for k, r in enumerate(rows):
        ax.bar([i + (k - (len(rows) - 1) / 2) * width for i in range(len(r["counts"]))],
               r["counts"], width, label="%s, level %s" % (r["where"], r["level"]))
    ax.set_xticks(range(len(rows[0]["buckets"])))
    ax.set_xticklabels(rows[0]["buckets"], fontsize=7, rotation=45)
    ax.set_xlabel("rmap size (SPTEs mapping the frame)")
    ax.set_ylabel("leaves of the parent")
    ax.set_yscale("symlog")
    ax.legend(fontsize=7)
    ax.grid(True, axis="y", alpha=0.3)
    name = save(fig, outdir, "rmaps_hist.png")
    return [fig_entry(name, "Rmap chain sizes (the rmaps command)",
                      "The rmaps table (KVM's mmu_rmaps_stat) of a parent (the rmapread "
                      "guest) after %s clones each read its 1 MiB; bucket 0 counts level-sized "
                      "regions no leaf maps; one snapshot, no repetition; %s." %
                      (rows[0].get("clones"), WHERE_NAMES[rows[0]["where"]]))]


def prefetch_plots(recs, outdir):
    out = []
    for where in ("host", "qemu"):
        rows = select(recs, "prefetch", where=where)
        if not rows:
            continue
        adaptives = sorted({r["adaptive"] for r in rows}, reverse=True)
        combos = []
        for r in rows:
            k = (r["chunk"], r["order"])
            if k not in combos:
                combos.append(k)
        fig, axes = plt.subplots(2, 1, figsize=(11, 6.5))
        modes = [(m, a) for a in adaptives for m in ("off", "forward", "both")]
        width = 0.8 / len(modes)
        for ax, field, scale, ylabel in ((axes[0], "faults", 1, "faults (log)"),
                                         (axes[1], "time_ns", 1e6, "time, ms")):
            for k, (mode, ad) in enumerate(modes):
                rs = [one(rows, "prefetch", chunk=c, order=o, prefetch=mode, adaptive=ad)
                      for c, o in combos]
                vals = [r[field] / scale if r else 0 for r in rs]
                errs = None
                if field == "time_ns" and all(r and "ns_min" in r for r in rs):
                    errs = [[(r["time_ns"] - r["ns_min"]) / scale for r in rs],
                            [(r["ns_max"] - r["time_ns"]) / scale for r in rs]]
                ax.bar([i + (k - (len(modes) - 1) / 2) * width for i in range(len(combos))],
                       vals, width, yerr=errs, capsize=1,
                       label="%s%s" % (mode, ", adaptive " + ad if len(adaptives) > 1 else ""))
            ax.set_xticks(range(len(combos)))
            ax.set_xticklabels(["%s\n%s" % co for co in combos], fontsize=7)
            if field == "faults":
                ax.set_yscale("log")
            ax.set_ylabel(ylabel)
            ax.grid(True, axis="y", alpha=0.3)
            ax.legend(fontsize=6, loc="center left", bbox_to_anchor=(1.0, 0.5))
        runs = rows[0].get("runs", 1)
        name = save(fig, outdir, "prefetch_%s.png" % where)
        how = ("median of %d interleaved runs, error bars min to max" % runs
               if where == "host" else "one run each (no spread measured)")
        out.append(fig_entry(name, "Prefetch: faults and time per chunk size and order, %s"
                             % WHERE_NAMES[where],
                             "%s MiB restored from an image in 4K to 2M chunks and touched "
                             "forwards, backwards or at random; prefetch off, forward, both; "
                             "adaptive %s; %s; %s." %
                             (rows[0].get("mib"), "/".join(adaptives), how, WHERE_NAMES[where])))
    return out


WAITS = (("fault_wait_p50_ns", "p50"), ("fault_wait_p99_ns", "p99"),
         ("fault_wait_p999_ns", "p99.9"), ("fault_wait_max_ns", "max"))
HOLDS = (("zap_hold_p50_ns", "p50"), ("zap_hold_p99_ns", "p99"),
         ("zap_hold_p999_ns", "p99.9"), ("zap_hold_max_ns", "max"))
BAR = 0.2


def smp_panels(recs, where, fields):
    """One figure for WHERE's `bench zap PATTERN vcpus=N` rows that have
    FIELDS: a row of panels per pattern, a column per vCPU count. Returns the
    figure and [(axes, hint off row, hint on row)], or None without rows."""
    keys = [k for k in zap_vcpus_keys(recs) if k[0] == where and
            fields[0][0] in one(recs, "zap", where=where, pattern=k[1], vcpus=k[2])]
    if not keys:
        return None
    patterns = sorted({k[1] for k in keys}, key=pattern_order)
    counts = sorted({k[2] for k in keys})
    fig, axes = plt.subplots(len(patterns), len(counts), figsize=(4.5 * len(counts),
                                                                  3.6 * len(patterns)),
                             squeeze=False)
    panels = []
    for i, pattern in enumerate(patterns):
        for j, vcpus in enumerate(counts):
            if (where, pattern, vcpus) not in keys:
                axes[i][j].axis("off")
                continue
            panels.append((axes[i][j], [one(recs, "zap", where=where, pattern=pattern,
                                            vcpus=vcpus, leaf_hint=h) for h in ("off", "on")]))
    return fig, panels


def tail_bars(ax, rows, fields, ylabel):
    """Each row's percentiles (the medians of its runs), hint off and on, with
    min..max error bars where the table gave them; whether all had them."""
    spread = True
    for h, r in enumerate(rows):
        errs = None
        if all(f + "_min" in r for f, _ in fields):
            errs = [[(r[f] - r[f + "_min"]) / 1000 for f, _ in fields],
                    [(r[f + "_max"] - r[f]) / 1000 for f, _ in fields]]
        spread = spread and errs is not None
        ax.bar([i + (h - 1.5) * BAR for i in range(len(fields))],
               [r[f] / 1000 for f, _ in fields], BAR, yerr=errs, capsize=2,
               label="sprig, hint %s" % r["leaf_hint"])
    ax.set_xticks(range(len(fields)))
    ax.set_xticklabels([name for _, name in fields])
    ax.set_yscale("log")
    ax.set_ylabel(ylabel)
    ax.set_title("%s, %d vCPUs" % (rows[0]["pattern"], rows[0]["vcpus"]))
    ax.grid(True, axis="y", alpha=0.3)
    return spread


def clock_note(where, panels):
    """What the times of WHERE's several-vCPU rows (in PANELS) are worth."""
    note = VIRTUAL_TIME.get(where, "under an emulator on a shared host the vCPU threads and "
                            "the lock holder are descheduled for whole host time slices, so "
                            "the tails here are the host scheduler's, not sprig's")
    if any(r.get("remote_flush") == "off" for _, rows in panels for r in rows):
        note += "; measured with the remote flush off (mmu remote_flush=off)"
    return note


def smp_fault_waits(recs, outdir):
    """Fault-side mmu_lock wait percentiles, hint off and on, per pattern and
    vCPU count (`bench zap PATTERN vcpus=N`), with the proposal's p99.9
    beside them; and the zaps' write-lock hold times, where the rows have them."""
    out = []
    for where in WHERE_NAMES:
        got = smp_panels(recs, where, WAITS)
        if not got:
            continue
        fig, panels = got
        reps, spread = set(), True
        for ax, rows in panels:
            reps |= {r["reps"] for r in rows}
            spread = tail_bars(ax, rows, WAITS, "fault's mmu_lock wait, us (log)") and spread
            kvm = proposals.LEAF_HINT["wait_p999_us"].get(rows[0]["pattern"])
            if kvm:
                for h, us in enumerate(kvm):
                    ax.bar([2 + (h + 0.5) * BAR], [us], BAR, hatch="//", fill=False,
                           edgecolor="C%d" % h,
                           label="proposal p99.9, %s" % ("original" if h == 0 else "patched"))
            ax.legend(fontsize=7)
        name = save(fig, outdir, "smp_fault_wait_%s.png" % where)
        out.append(fig_entry(
            name, "Fault-side mmu_lock wait, leaf-empty hint off and on, %s" % WHERE_NAMES[where],
            "bench zap PATTERN vcpus=N%s: %s (on the CPUs other than the "
            "console's) fault and write their memory while the console CPU zaps the pattern's "
            "ranges every 1 ms; a wait is the TSC time from a "
            "fault's read-lock request to its acquisition, every fault that takes the lock "
            "counted; median of %s interleaved runs each way, %s; hatched: the proposal's "
            "p99.9 (%s). Times: %s; %s." % (
                " guest=linux" if where == "linux" else "",
                "sprig-bench's threads in Linux, one a vCPU," if where == "linux"
                else "the churn guest's vCPUs",
                "/".join(str(x) for x in sorted(reps)),
                "error bars min to max of the runs" if spread else "no spread recorded",
                proposals.LEAF_HINT["wait_source"], clock_note(where, panels), WHERE_NAMES[where])))
        got = smp_panels(recs, where, HOLDS)
        if not got:
            continue
        fig, panels = got
        spread = True
        for ax, rows in panels:
            spread = tail_bars(ax, rows, HOLDS, "zap's write-lock hold, us (log)") and spread
            ax.legend(fontsize=7)
        name = save(fig, outdir, "smp_zap_hold_%s.png" % where)
        out.append(fig_entry(
            name, "Zaps' mmu_lock write hold, leaf-empty hint off and on, %s" %
            WHERE_NAMES[where],
            "The same runs: how long each zap held mmu_lock for write, from acquiring it to "
            "releasing it, its TLB flush included and its yields' handovers left out (what a "
            "fault behind it may wait); median of the runs, %s. Times: %s; %s." % (
                "error bars min to max of the runs" if spread else "no spread recorded",
                clock_note(where, panels), WHERE_NAMES[where])))
    return out


def smp_exec_dirty(recs, outdir):
    """Execute pass and dirty-log iteration 1 on one vCPU and on N, split on
    fault off and on."""
    out = []
    for where in WHERE_NAMES:
        multi = [r for r in several_vcpus(recs) if r["where"] == where and
                 r["bench"] in ("exec", "dirty")]
        if not multi:
            continue
        single = [r for r in one_vcpu(recs) if r["where"] == where]
        vcpus = multi[0]["vcpus"]
        bars = []  # (label, {(vcpus, split): row})
        for label, bench, f in (("exec", "exec", {}),
                                ("dirty 5%", "dirty", {"writes": 5, "eager_page_split": "off"}),
                                ("dirty 100%", "dirty", {"writes": 100,
                                                         "eager_page_split": "off"})):
            cells = {}
            for n, rows in ((1, single), (vcpus, multi)):
                for split in ("off", "on"):
                    r = one(rows, bench, split_on_fault=split, **f)
                    if r:
                        cells[(n, split)] = r
            if cells:
                bars.append((label, cells))
        configs = [(n, split) for n in (1, vcpus) for split in ("off", "on")]
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
        width = 0.2
        for ax, field, scale, ylabel in ((axes[0], "time_ns", 1e6, "time, ms"),
                                         (axes[1], "faults", 1, "faults")):
            for k, (n, split) in enumerate(configs):
                ax.bar([i + (k - 1.5) * width for i in range(len(bars))],
                       [c[(n, split)][field] / scale if (n, split) in c else 0
                        for _, c in bars], width,
                       label="%d vCPU%s, split %s" % (n, "s" if n > 1 else "", split))
            ax.set_xticks(range(len(bars)))
            ax.set_xticklabels([b[0] for b in bars])
            ax.set_yscale("log")
            ax.set_ylabel(ylabel + " (log)")
            ax.grid(True, axis="y", alpha=0.3)
            ax.legend(fontsize=7, ncol=2, loc="lower center", bbox_to_anchor=(0.5, 1.0))
        mib = sorted({r.get("mib", "?") for r in multi}, key=str)
        name = save(fig, outdir, "smp_exec_dirty_%s.png" % where)
        out.append(fig_entry(
            name, "Execute pass and dirty logging on 1 and %d vCPUs, %s" % (vcpus,
                                                                           WHERE_NAMES[where]),
            "bench exec and bench dirty%s (iteration 1, eager_page_split off), split_on_fault "
            "off and on, %s MiB, on one vCPU and on %d vCPUs each writing its share at once "
            "(the same boot); one run each way (no spread measured); %s." % (
                " guest=linux" if where == "linux" else "",
                "/".join(str(m) for m in mib), vcpus, WHERE_NAMES[where])))
    return out


def curve_panel(ax, family, cs, field, scale, ylabel):
    """One cost's curves on log-log: the medians with min..max bars where the
    points have them, and each curve's fitted line, its slope in the legend."""
    for n, c in enumerate(cs):
        xs = [p[family["work"]] for p in c["points"]]
        dodge = 1.04 ** (n - (len(cs) - 1) / 2)  # side by side: each curve's bars seen
        ys = [p[field] / scale for p in c["points"]]
        errs = None
        if field == "time_ns":
            errs = [[(p["time_ns"] - p["ns_min"]) / scale for p in c["points"]],
                    [(p["ns_max"] - p["time_ns"]) / scale for p in c["points"]]]
        kc = curves.slope(c, family, field)
        ax.errorbar([x * dodge for x in xs], ys, yerr=errs, fmt="o", markersize=3, capsize=2,
                    color="C%d" % n, label=c["label"] if kc is None else
                    "%s: k = %.3f" % (c["label"], kc[0]))
        if kc:
            k, b = kc
            ax.plot([xs[0], xs[-1]], [math.exp(b) * x ** k / scale for x in
                                      (xs[0], xs[-1])], color="C%d" % n, linewidth=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)


def cost_curves(recs, outdir):
    """Zap time and SPTE visits against the range, fork time against the
    clones: log-log, the fitted lines' slopes in the legends."""
    out = []
    zap = curves.curves(recs, curves.ZAP)
    if zap:
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
        curve_panel(axes[0], curves.ZAP, zap, "time_ns", 1000, "zap time, us (log)")
        curve_panel(axes[1], curves.ZAP, zap, "spte_visits", 1, "entries read (log)")
        for ax in axes:
            ax.set_xlabel("range, MiB (log)")
        name = save(fig, outdir, "curve_zap.png")
        out.append(fig_entry(
            name, "Zap cost against its range, leaf-empty hint off and on",
            "For each range (%s to %s MiB), a VM mapped at 4 KiB over it is zapped (first) and "
            "zapped again, empty (repeat), hint off and on interleaved; left: the median zap "
            "time of %s runs by the MMU's zap_cycles, bars min to max; right: the entries the "
            "zap read at every level (zap_spte_visits, the same in every run). Lines: least "
            "squares on log-log, cost ~ range^k; host benchmark tests/bench/zap_curve_bench.c." %
            (zap[0]["points"][0]["range_mib"], zap[0]["points"][-1]["range_mib"],
             curves.runs(zap))))
    fork = curves.curves(recs, curves.FORK)
    if fork:
        fig, ax = plt.subplots(figsize=(6.5, 4.2))
        curve_panel(ax, curves.FORK, fork, "time_ns", 1e6, "fork workload, ms (log)")
        ax.set_xlabel("clones (log)")
        name = save(fig, outdir, "curve_fork.png")
        out.append(fig_entry(
            name, "Fork time against the clones, per rmap variant",
            "A parent maps %s frames, N clones map them all for reading, all are torn down "
            "(tests/bench/fork_curve_bench.c, the rmap_fork workload with fewer frames a "
            "clone); median of %s interleaved runs, bars min to max. Lines: least squares on "
            "log-log, time ~ clones^k; host." % (
                fork[0]["points"][0].get("pages", "?"),
                curves.runs(fork))))
    return out


def scale_plots(recs, outdir):
    """Fault time and throughput against vCPUs, Linux's boot time against
    vCPUs, and the cost of one exit: the emulator's limit, sprig's cheapest
    exit, sprig's fault."""
    out = []
    faults = curves.curves(recs, curves.FAULTS)
    boot = curves.curves(recs, curves.BOOT)
    if faults or boot:
        fig, axes = plt.subplots(1, 3, figsize=(14, 4.2))
        if faults:
            curve_panel(axes[0], curves.FAULTS, faults, "time_ns", 1e6,
                        "time for all vCPUs' faults, ms (log)")
            for n, c in enumerate(faults):
                axes[1].plot([p["vcpus"] for p in c["points"]],
                             [p["faults_per_s"] for p in c["points"]], "o-",
                             color="C%d" % n, label=c["label"])
            axes[1].set_ylabel("faults per second")
            axes[1].set_xscale("log", base=2)
            counts = sorted({p["vcpus"] for c in faults for p in c["points"]})
            axes[1].set_xticks(counts)
            axes[1].set_xticklabels([str(n) for n in counts])
            axes[1].set_ylim(bottom=0)
            axes[1].grid(True, alpha=0.3)
            axes[1].legend(fontsize=7)
        if boot:
            curve_panel(axes[2], curves.BOOT, boot, "time_ns", 1e9,
                        "Linux boot to init, s (log)")
        for ax in axes:
            ax.set_xlabel("vCPUs (log)")
        cpus = sorted({p.get("host_cpus") for c in faults for p in c["points"]})
        name = save(fig, outdir, "scale_vcpus.png")
        out.append(fig_entry(
            name, "Faults and Linux's boot against vCPUs",
            "Left and middle (bench faults): N vCPUs each write one word into every 4 KiB "
            "page of a share of their own, all at once, on lazy memory with prefetch off (a "
            "fault a page); the time from the first write to the last (median of %s "
            "interleaved runs, bars min to max) and the faults per second; the vCPUs run "
            "on %s host CPUs of sprig's machine (the console's left out), so past those "
            "they share CPUs. Right (bench boot guest=linux): Debian's kernel from "
            "vm_create to its init's first command, median of %s boots. Lines: least "
            "squares on log-log, time ~ vCPUs^k; under QEMU TCG on the report machine." % (
                curves.runs(faults) if faults else "-",
                "/".join(str(c) for c in cpus if c is not None) or "-",
                curves.runs(boot) if boot else "-")))
    limit, npt, npf, cpuid, fault = exit_cost(recs)
    bars = [(label, r[field], color) for label, r, field, color in (
        ("emulator's limit:\nVMRUN/VMMCALL, bare", limit, "cycles_per_exit", "C7"),
        ("bare, with\nnested paging", npt, "cycles_per_exit", "C7"),
        ("bare: nested page\nfault, mapped", npf, "cycles_per_exit", "C7"),
        ("sprig: CPUID exit", cpuid, "cycles_per_exit", "C0"),
        ("sprig: nested page fault", fault, "cycles_per_fault", "C1")) if r]
    if bars:
        fig, ax = plt.subplots(figsize=(6.5, 3.6))
        ax.bar(range(len(bars)), [b[1] for b in bars], color=[b[2] for b in bars])
        ax.set_xticks(range(len(bars)))
        ax.set_xticklabels([b[0] for b in bars], fontsize=8)
        ax.set_ylabel("host TSC cycles per exit")
        ax.grid(True, axis="y", alpha=0.3)
        name = save(fig, outdir, "scale_exit_cost.png")
        out.append(fig_entry(
            name, "The cost of one exit, against the emulator's limit",
            "Cycles of the host's TSC (QEMU TCG's guest TSC is the host's, bare and under "
            "sprig alike) per exit: the probe guest run bare as the host of a nested "
            "guest that only executes VMMCALL (the emulator's world switch and nothing "
            "else), the same with nested paging on, and a nested guest whose every write "
            "faults on a page the probe then maps; the same guest under sprig running "
            "CPUIDs (sprig's cheapest exit); and "
            "bench faults' one-vCPU run (a nested page fault, a frame allocated and mapped, "
            "per page)."))
    return out


def all_figures(recs, outdir):
    figs = []
    for f in (zap_cdf, zap_visits, zap_guest, split_plots, rmap_fork, rmaps_hist, rmap_ops,
              prefetch_plots, smp_fault_waits, smp_exec_dirty, cost_curves, scale_plots):
        figs += f(recs, outdir)
    return figs
