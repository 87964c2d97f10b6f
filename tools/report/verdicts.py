"""Verdicts: each target of docs/targets.md judged on a run's records. Every
value comes from the records; a target whose data is missing says so and is
never counted as met."""
from . import curves as curves_mod, targets as targets_mod

WHERE_NAMES = {"host": "host", "qemu": "in guest under QEMU (SVM, NPT)",
               "bochs": "in guest under Bochs (VMX, EPT)",
               "linux": "in a Linux guest (sprig-bench) under QEMU (SVM, NPT)",
               "bare": "bare under QEMU (no sprig)"}

# Where the several-vCPU rows' times are an emulator's virtual time, which the
# host's scheduler cannot stretch, and why; their fault-wait verdict has a
# target of its own (zap_vcpus_fault_wait_p999_ratio_virtual).
VIRTUAL_TIME = {"bochs": "Bochs runs every CPU in one host thread, a few instructions "
                         "each in turn, and its TSC counts instructions (clock sync=none), "
                         "so these are virtual times, which the host's scheduler cannot "
                         "stretch"}


def select(records, bench, **fields):
    return [r for r in records if r.get("bench") == bench and
            all(r.get(k) == v for k, v in fields.items())]


def one(records, bench, **fields):
    rows = select(records, bench, **fields)
    return rows[0] if rows else None


def one_vcpu(records):
    """The records of runs on one vCPU: the guest benchmarks' `vcpus=N` rows
    (the concurrency experiments) are not the same runs and must not stand
    in for them."""
    return [r for r in records if "vcpus" not in r]


def several_vcpus(records):
    """The concurrency experiments' rows (`vcpus=N`)."""
    return [r for r in records if "vcpus" in r]


def zap_vcpus_keys(records):
    """(where, pattern, vcpus) of the `bench zap PATTERN vcpus=N` runs with
    both hint settings, in the run's order."""
    keys = []
    for r in select(several_vcpus(records), "zap"):
        k = (r["where"], r["pattern"], r["vcpus"])
        if k not in keys and all(one(records, "zap", where=k[0], pattern=k[1], vcpus=k[2],
                                     leaf_hint=h) for h in ("off", "on")):
            keys.append(k)
    return keys


def lowered(off, on):
    """off / on, where 0 / 0 is no change and x / 0 infinite."""
    if on:
        return float(off) / float(on)
    return float("inf") if off else 1.0


def ratio(a, b):
    return float(a) / float(b) if b else float("inf")


class Judge:
    def __init__(self, targets):
        self.targets = targets
        self.out = []

    def __call__(self, proposal, key, where, label, value, fmt="%.3g", note=""):
        t = self.targets[key]
        if value is None:
            met, verdict = False, "no data"
        else:
            met = targets_mod.met(t, value)
            verdict = "met" if met else "not met"
        shown = "-" if value is None else fmt % value
        line = "%s, %s: %s = %s (target %s %g): %s%s" % (
            where, label, key, shown, t["test"], t["figure"], verdict,
            "; " + note if note else "")
        self.out.append({"proposal": proposal, "key": key, "where": where, "label": label,
                         "value": value, "test": t["test"], "figure": t["figure"],
                         "met": met, "verdict": verdict, "kind": t["kind"], "line": line})


def zap_verdicts(j, recs):
    recs = one_vcpu(recs)
    for where in ("host", "qemu", "bochs"):
        rows = select(recs, "zap", where=where)
        keys = sorted({(r["pattern"], r.get("refault", r.get("every"))) for r in rows},
                      key=str)
        for pattern, refault in keys:
            f = {"pattern": pattern}
            if where == "host":
                f["refault"] = refault
            else:
                f["every"] = refault
            off = one(recs, "zap", where=where, leaf_hint="off", **f)
            on = one(recs, "zap", where=where, leaf_hint="on", **f)
            if not off or not on:
                continue
            label = "%s %s=%s" % (pattern, "refault" if where == "host" else "every", refault)
            sweep = pattern.startswith("sweep")
            visits = ratio(off["zap_spte_visits"], on["zap_spte_visits"])
            time = ratio(off["zap_median_ns"], on["zap_median_ns"])
            if where == "host" and not sweep and on.get("nonempty_tables"):
                j("leaf", "zap_leaf_visits_per_table", where, label,
                  on["zap_leaf_visits"] / on["nonempty_tables"], "%.1f")
            if sweep:
                if where == "host":
                    j("leaf", "zap_sweep_visit_ratio", where, label, visits, "%.3f")
                if pattern == "sweep1":
                    j("leaf", "zap_sweep1_hint_checks", where, label, on["hint_checks"], "%d")
                continue
            j("leaf", "zap_time_vs_visits", where, label, time / visits, "%.2f",
              "time off/on %.1fx, visits off/on %.1fx" % (time, visits))
            if where == "host" and refault == 0:
                j("leaf", "zap_same_refault0_time_ratio", where, label, time, "%.1f")


def split_verdicts(j, recs):
    recs = one_vcpu(recs)
    for where in ("host", "qemu", "bochs"):
        off = one(recs, "exec", where=where, split_on_fault="off")
        on = one(recs, "exec", where=where, split_on_fault="on")
        if off and on:
            j("split", "split_exec_fault_ratio", where, "exec %s MiB" % off.get("mib", "?"),
              ratio(off["faults"], on["faults"]), "%.1f",
              "time off/on %.1fx" % ratio(off["time_ns"], on["time_ns"]))
        for writes, key in ((5, "split_dirty5_fault_ratio"), (100, "split_dirty100_fault_ratio")):
            off = one(recs, "dirty", where=where, writes=writes, eager_page_split="off",
                      split_on_fault="off")
            on = one(recs, "dirty", where=where, writes=writes, eager_page_split="off",
                     split_on_fault="on")
            if off and on:
                j("split", key, where, "dirty %d%% writes" % writes,
                  ratio(off["faults"], on["faults"]), "%.2f",
                  "time off/on %.2fx" % ratio(off["time_ns"], on["time_ns"]))


def rmap_verdicts(j, recs):
    rows = select(recs, "rmap_fork", where="host")
    if rows:
        clones = max(r["clones"] for r in rows)
        t = {(r["rmap_desc"], r.get("rmap_backref")): r["time_ns"]
             for r in rows if r["clones"] == clones}
        if ("ext3", "off") in t and ("ext14", "off") in t:
            j("rmap", "rmap_fork_ext14_speedup", "host", "fork, %d clones" % clones,
              ratio(t[("ext3", "off")], t[("ext14", "off")]), "%.2f")
        if ("ext14", "off") in t and ("counted", "off") in t:
            j("rmap", "rmap_fork_count_speedup", "host",
              "fork, %d clones, back-reference off" % clones,
              ratio(t[("ext14", "off")], t[("counted", "off")]), "%.2f",
              "with the back-reference on: %.2fx" % ratio(t[("ext14", "off")],
                                                        t.get(("counted", "on"), 0)))
    r16 = one(recs, "rmap_remove", where="host", chain=16)
    r1000 = one(recs, "rmap_remove", where="host", chain=1000)
    if r16 and r1000:
        j("rmap", "rmap_remove_chain_growth", "host", "counted remove, chain 1000 vs 16",
          ratio(r1000["backref_ns"], r16["backref_ns"]), "%.2f",
          "by scan instead: %.1fx" % ratio(r1000["scan_ns"], r16["scan_ns"]))


def prefetch_verdicts(j, recs):
    for where in ("host", "qemu"):
        def faults(chunk, mode):
            f = {"where": where, "chunk": chunk, "order": "forward", "prefetch": mode,
                 "adaptive": "on"}
            r = one(recs, "prefetch", **f)
            return r
        off2, fwd2 = faults("2M", "off"), faults("2M", "forward")
        if off2 and fwd2:
            j("prefetch", "prefetch_2m_fault_ratio", where, "2M chunks, forward order",
              ratio(off2["faults"], fwd2["faults"]), "%.0f",
              "time off/forward %.2fx" % ratio(off2["time_ns"], fwd2["time_ns"]))
        off4, fwd4 = faults("4K", "off"), faults("4K", "forward")
        if off4 and fwd4:
            j("prefetch", "prefetch_4k_fault_ratio", where, "4K chunks, forward order, adaptive",
              ratio(fwd4["faults"], off4["faults"]), "%.3f",
              "time %+.1f%%" % (100 * (ratio(fwd4["time_ns"], off4["time_ns"]) - 1)))
            if where == "host":
                i0, i1 = off4.get("instructions", 0), fwd4.get("instructions", 0)
                j("prefetch", "prefetch_4k_instructions_pct", where,
                  "4K chunks, forward order, adaptive",
                  100 * (i1 / i0 - 1) if i0 else None, "%+.2f",
                  "" if i0 else "instructions not counted in this run (valgrind's "
                  "callgrind.h was absent when the benchmark was built)")
    linux_prefetch_verdicts(j, recs)


def linux_prefetch_verdicts(j, recs):
    """The same two fault ratios for a Linux guest's restore (bench prefetch
    guest=linux), prefetch as configured by default (forward, adaptive);
    a run whose data or audit failed has no value."""
    for chunk, key, label in (("2M", "prefetch_2m_fault_ratio", "2M chunks, Linux guest"),
                              ("4K", "prefetch_4k_fault_ratio", "4K chunks, Linux guest")):
        off, ad = (one(recs, "prefetch", where="linux", chunk=chunk, mode=m)
                   for m in ("off", "adaptive"))
        if not off or not ad:
            continue
        good = all(r["data"] == "ok" and r["audit"] == "ok" for r in (off, ad))
        faults = ratio(off["faults"], ad["faults"]) if chunk == "2M" else \
            ratio(ad["faults"], off["faults"])
        j("prefetch", key, "linux", label + ", off vs adaptive", faults if good else None,
          "%.3g", "time %+.1f%%, %d -> %d faults" % (
              100 * (ratio(ad["time_ns"], off["time_ns"]) - 1), off["faults"], ad["faults"])
          if good else "the run failed (data=%s/%s, audit=%s/%s)" % (
              off["data"], ad["data"], off["audit"], ad["audit"]))


def smp_verdicts(j, recs):
    for where, pattern, vcpus in zap_vcpus_keys(recs):
        if not pattern.startswith("same"):
            continue
        off, on = (one(recs, "zap", where=where, pattern=pattern, vcpus=vcpus, leaf_hint=h)
                   for h in ("off", "on"))
        key = "zap_vcpus_fault_wait_p999_ratio"
        j("smp", key + "_virtual" if where in VIRTUAL_TIME else key, where,
          "%s vcpus=%d, median of %d runs each way" % (pattern, vcpus, off["reps"]),
          lowered(off["fault_wait_p999_ns"], on["fault_wait_p999_ns"]), "%.2f",
          "p99.9 off %.1f us, on %.1f us" % (off["fault_wait_p999_ns"] / 1000,
                                             on["fault_wait_p999_ns"] / 1000))
    for where in WHERE_NAMES:
        for flush in ("on", "off"):
            r = one(recs, "stale", where=where, remote_flush=flush)
            if not r:
                continue
            ran = r["data"] == "ok" and r["rounds"] > 0
            j("smp", "stale_hits_remote_flush_" + flush, where,
              "bench stale, remote flush %s" % flush, r["hits"] if ran else None, "%d",
              "%d rounds" % r["rounds"] if ran else
              "the run failed (data=%s after %d rounds)" % (r["data"], r["rounds"]))


def stale_verdict(verdicts, where):
    """The stale-translation test on WHERE as one verdict: met only when no
    round hit with the remote flush and some did without it."""
    vs = [v for v in verdicts if v["where"] == where and v["key"].startswith("stale_")]
    if len(vs) < 2:
        return "no data"
    return "met" if all(v["met"] for v in vs) else "not met"


CURVE_TARGETS = ((curves_mod.ZAP, "curves", (("time_ns", "zap_curve_time_slope"),
                                              ("spte_visits", "zap_curve_visit_slope"))),
                 (curves_mod.FORK, "curves", (("time_ns", "fork_curve_time_slope"),)),
                 (curves_mod.FAULTS, "scale", (("time_ns", "fault_curve_time_slope"),)),
                 (curves_mod.BOOT, "scale", (("time_ns", "boot_curve_time_slope"),)))


def curve_verdicts(j, recs):
    """Each cost curve's log-log slope, fitted to the run's points."""
    for family, section, fields in CURVE_TARGETS:
        for c in curves_mod.curves(recs, family):
            p = c["points"]
            label = "%s, %s, %d points" % (c["label"], family["span"] % (
                p[0][family["work"]], p[-1][family["work"]]), len(p))
            if not all(q.get("ok", "yes") == "yes" for q in p):
                j(section, fields[0][1], family["where"], label, None,
                  note="a point whose runs failed")
                continue
            for field, key in fields:
                kc = curves_mod.slope(c, family, field)
                j(section, key, family["where"], label, kc and kc[0], "%.3f",
                  "" if kc else "a point without %s" % field)


def exit_cost(recs):
    """(limit, npt, npf, cpuid, fault): the bare probe's VMRUN/VMMCALL loop
    (the verdict's limit), the same with nested paging and its nested page
    fault loop, sprig's CPUID loop and sprig's one-vCPU fault row, each None
    where missing."""
    fault = [r for r in select(recs, "faults", where="qemu", vcpus=1) if r.get("ok") == "yes"]
    return (one(recs, "exitloop", where="bare", mode="svm"),
            one(recs, "exitloop", where="bare", mode="npt"),
            one(recs, "exitloop", where="bare", mode="npf"),
            one(recs, "exitloop", where="qemu", mode="cpuid", ok="yes"),
            fault[0] if fault else None)


def share_verdicts(j, recs):
    """bench share: the least and the most share of a host CPU any vCPU had,
    under QEMU (the host preempts its threads) and Bochs (virtual time)."""
    for r in select(recs, "share"):
        label = "%s vCPUs computing on %s host CPUs, %s ms, median of %s runs" % (
            r["vcpus"], r["host_cpus"], r["ms"], r["runs"])
        ok = r.get("ok") == "yes"
        for field, key in (("cpu_min_pct", "share_cpu_min_pct"),
                           ("cpu_max_pct", "share_cpu_max_pct")):
            j("scale", key, r["where"], label, r[field] if ok else None, "%d",
              "" if ok else "a run failed or a vCPU never ran")


def exit_cost_verdict(j, recs):
    """The fault path's exit rate as a fraction of the emulator's limit:
    cycles per exit of the bare loop over cycles per fault (both the same host
    TSC under QEMU TCG)."""
    limit, _, _, _, fault = exit_cost(recs)
    value = None
    if limit and fault and fault["cycles_per_fault"]:
        value = limit["cycles_per_exit"] / fault["cycles_per_fault"]
    j("scale", "fault_exit_rate_of_limit", "qemu", "1 vCPU, a fault a page, against the bare "
      "VMRUN/VMMCALL loop", value, "%.3f", "" if value is not None else
      "needs the bare probe's row and a one-vCPU bench faults row")


def compute(records, targets=None):
    """All verdicts of a run, in page order."""
    j = Judge(targets or targets_mod.load())
    zap_verdicts(j, records)
    split_verdicts(j, records)
    rmap_verdicts(j, records)
    prefetch_verdicts(j, records)
    smp_verdicts(j, records)
    curve_verdicts(j, records)
    exit_cost_verdict(j, records)
    share_verdicts(j, records)
    return j.out
