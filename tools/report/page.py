"""The report's two HTML pages: index.html (the figures, each with its
caption, and the verdicts) and compare.html (each proposal's published table
beside sprig's measured rows). Plain HTML and CSS: no script, no inline SVG,
no data: URIs, nothing fetched from the network."""
import html

from . import kut, proposals
from .verdicts import (VIRTUAL_TIME, WHERE_NAMES, exit_cost, lowered, one, one_vcpu, ratio,
                       select, several_vcpus, stale_verdict, zap_vcpus_keys)

STYLE = """body{font-family:sans-serif;max-width:60em;margin:1em auto;padding:0 1em;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.8em;border-bottom:1px solid #ccc}
figure{margin:1.2em 0}img{max-width:100%;border:1px solid #ddd}
figcaption{font-size:.9em;color:#444}table{border-collapse:collapse;margin:.6em 0}
td,th{border:1px solid #ccc;padding:.2em .5em;text-align:right;font-size:.9em}
td:nth-child(2){text-align:left}
th{background:#f2f2f2}td:first-child,th:first-child{text-align:left}
.met{color:#075}.notmet{color:#b00;font-weight:bold}.nodata{color:#850}
.note{background:#fffbe6;border:1px solid #e6d98c;padding:.5em}
ul.verdicts li{font-family:monospace;font-size:.85em}"""


def esc(x):
    return html.escape(str(x))


def head(title):
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<title>%s</title><style>%s</style></head><body>\n" % (esc(title), STYLE))


def verdict_class(v):
    return {"met": "met", "not met": "notmet"}.get(v["verdict"], "nodata")


def verdict_list(vs):
    if not vs:
        return "<p>No verdicts: this run has no data for these targets.</p>\n"
    return "<ul class=\"verdicts\">\n%s</ul>\n" % "".join(
        "<li class=\"%s\">%s</li>\n" % (verdict_class(v), esc(v["line"])) for v in vs)


def run_summary(data, data_href):
    m = data["machine"]
    steps = "".join("<tr><td>%s</td><td>%s</td><td>%s</td><td>%d</td><td>%.0f</td></tr>\n" % (
        esc(s["where"]), esc(s["name"]), "ok" if s["ok"] else
        "<span class=\"notmet\">FAILED</span>", s["records"], s["seconds"])
        for s in data["steps"])
    return ("<p>sprig <b>%s</b>, run on %s; machine <b>%s</b>: %s, %s cores, %s GiB, "
            "Linux %s; %s. Whole run: %s s. Data: <a href=\"%s\">%s</a> (every @bench line "
            "of the run).</p>\n<table><tr><th>where</th><th>step</th><th>result</th>"
            "<th>@bench lines</th><th>seconds</th></tr>\n%s</table>\n" % (
                esc(data["sprig_version"]), esc(data["date"]), esc(m.get("hostname")),
                esc(m.get("cpu")), esc(m.get("cores")), esc(m.get("mem_gib")),
                esc(m.get("kernel")), esc(m.get("qemu")), esc(data.get("wall_s", "?")),
                esc(data_href), esc(data_href), steps))


def figure(f):
    return ("<figure><img src=\"%s\" alt=\"%s\"><figcaption><b>%s.</b> %s"
            "</figcaption></figure>\n" % (esc(f["file"]), esc(f["title"]), esc(f["title"]),
                                          esc(f["caption"])))


def scale_table(recs):
    """The exit costs and the fault rows, as numbers."""
    limit, npt, npf, cpuid, fault = exit_cost(recs)
    rows = [[name, WHERE_NAMES[r["where"]], r[field], fmt(r["tsc_khz"] * 1000.0 / r[field])]
            for name, r, field in (("VMRUN/VMMCALL loop (the emulator's limit)", limit,
                                    "cycles_per_exit"),
                                   ("the same with nested paging", npt, "cycles_per_exit"),
                                   ("nested page faults, each mapped (a fault's minimum)", npf,
                                    "cycles_per_exit"),
                                   ("CPUID loop (sprig's cheapest exit)", cpuid,
                                    "cycles_per_exit"),
                                   ("nested page faults, 1 vCPU", fault, "cycles_per_fault"))
            if r and r[field]]
    out = table(["exit", "where", "cycles per exit", "exits per second"], rows) if rows else ""
    faults = select(recs, "faults", where="qemu")
    if faults:
        out += table(["vCPUs", "host CPUs", "faults", "time, ms (min..max)", "faults/s",
                      "cycles/fault", "ok"],
                     [[r["vcpus"], r["host_cpus"], r["faults"], "%s (%s..%s)" % (
                         fmt(r["time_ns"] / 1e6), fmt(r["ns_min"] / 1e6),
                         fmt(r["ns_max"] / 1e6)), r["faults_per_s"], r["cycles_per_fault"],
                       r["ok"]] for r in faults])
    shares = select(recs, "share")
    if shares:
        out += table(["where", "vCPUs", "host CPUs", "ms", "runs", "least share of its CPU, %",
                      "most, %", "least share of the VM, %", "most, %", "ok"],
                     [[WHERE_NAMES[r["where"]], r["vcpus"], r["host_cpus"], r["ms"], r["runs"]] +
                      ["%s (%s..%s)" % (r[f], r[f + "_min"], r[f + "_max"])
                       for f in ("cpu_min_pct", "cpu_max_pct", "vm_min_pct", "vm_max_pct")] +
                      [r["ok"]] for r in shares])
    pvs = select(recs, "pv", where="linux")
    if pvs:
        out += ("<p>KVM's paravirtual features off and on (bench pv guest=linux: Linux's "
                "TLB-flush IPIs under sprig-bench ipi), medians of the runs:</p>\n" +
                table(["PV", "vCPUs", "unmaps/s", "exits per unmap", "IPIs by ICR",
                       "KVM_HC_SEND_IPI (IPIs)", "PV TLB flushes (IPIs avoided)",
                       "spin exits", "ok"],
                      [[r["pv"], r["vcpus"], fmt(r["unmaps"] * 1e9 / r["ns"] if r["ns"] else None),
                        fmt(r["exits_per_unmap_milli"] / 1000.0), r["ipis_sent"],
                        "%s (%s)" % (r["pv_send_ipi"], r["pv_ipi_delivered"]),
                        r["pv_tlb_flushes"], r["spin_exits"], r["ok"]] for r in pvs]))
    boots = select(recs, "boot", where="linux")
    if boots:
        out += table(["vCPUs", "boot, s (min..max)", "exits", "faults", "CPUs online", "ok"],
                     [[r["vcpus"], "%s (%s..%s)" % (fmt(r["time_ns"] / 1e9),
                                                    fmt(r["ns_min"] / 1e9),
                                                    fmt(r["ns_max"] / 1e9)),
                       r["exits"], r["faults"], r["online"], r["ok"]] for r in boots])
    return out


# Sections of index.html: id, title, the figures' file prefixes, and a table
# of numbers after the figures (or None).
SECTIONS = [
    ("leaf", "Leaf-empty hint", ("zap_cdf_", "zap_visits", "zap_guest"), None),
    ("split", "Split on fault and dirty logging", ("split_",), None),
    ("rmap", "Counted rmap descriptors", ("rmap_fork", "rmaps_hist", "rmap_ops"), None),
    ("prefetch", "Forward prefetch", ("prefetch_",), None),
    ("curves", "Cost curves", ("curve_",), None),
    ("scale", "Scale: faults, exits and Linux's boot against vCPUs", ("scale_",), scale_table),
]


def index(data, figures, verdicts, data_href):
    out = [head("sprig MMU report"), "<h1>sprig MMU report</h1>\n",
           "<p>Every figure and verdict on this page comes from the run described here "
           "(<code>make report</code>); the targets come from docs/targets.md. "
           "<a href=\"compare.html\">Comparison with the KVM proposals</a>.</p>\n",
           run_summary(data, data_href)]
    failed = sum(1 for v in verdicts if v["verdict"] != "met")
    out.append("<p>Verdicts: %d met, %d not met or without data, of %d.</p>\n" %
               (len(verdicts) - failed, failed, len(verdicts)))
    for key, title, prefixes, numbers in SECTIONS:
        out.append("<h2 id=\"%s\">%s</h2>\n" % (key, esc(title)))
        for f in figures:
            if f["file"].startswith(prefixes):
                out.append(figure(f))
        if numbers:
            out.append(numbers(data["records"]))
        out.append(verdict_list([v for v in verdicts if v["proposal"] == key]))
    out.append(smp_section(data, figures, verdicts))
    out.append(kut.section(data.get("kut", [])))
    out.append("</body></html>\n")
    return "".join(out)


def table(header, rows):
    return "<table><tr>%s</tr>\n%s</table>\n" % (
        "".join("<th>%s</th>" % esc(h) for h in header),
        "".join("<tr>%s</tr>\n" % "".join("<td>%s</td>" % esc(c) for c in r) for r in rows))


def fmt(x, f="%.3g"):
    return "-" if x is None else f % x


def num(x):
    """Three significant digits, without an exponent."""
    return "%.0f" % x if abs(x) >= 100 else "%.3g" % x


def spread(r, field, scale=1000):
    """A field's median and, where the run recorded them, (min..max)."""
    if field + "_min" not in r:
        return num(r[field] / scale)
    return "%s (%s..%s)" % (num(r[field] / scale), num(r[field + "_min"] / scale),
                            num(r[field + "_max"] / scale))


def fault_wait_table(recs):
    """Each `bench zap PATTERN vcpus=N` row, with the proposal's p99.9 and the
    zaps' write-lock hold (rows from before the hold was measured: -)."""
    rows = []
    for where, pattern, vcpus in zap_vcpus_keys(recs):
        kvm = proposals.LEAF_HINT["wait_p999_us"].get(pattern)
        for h, hint in enumerate(("off", "on")):
            r = one(recs, "zap", where=where, pattern=pattern, vcpus=vcpus, leaf_hint=hint)
            holds = [spread(r, f) if f in r else "-" for f in
                     ("zap_hold_p50_ns", "zap_hold_p99_ns", "zap_hold_p999_ns", "zap_hold_max_ns")]
            rows.append((pattern, where, vcpus, hint, r["reps"], spread(r, "zaps", 1),
                         spread(r, "zap_median_ns"), spread(r, "fault_waits", 1),
                         spread(r, "fault_wait_p50_ns"), spread(r, "fault_wait_p99_ns"),
                         spread(r, "fault_wait_p999_ns"), spread(r, "fault_wait_max_ns"),
                         "%g" % kvm[h] if kvm else "-", *holds, r["data"]))
    return table(["pattern", "where", "vCPUs", "hint", "runs", "zaps", "zap median, us",
                  "fault waits", "wait p50, us", "wait p99, us", "wait p99.9, us",
                  "wait max, us", "proposal p99.9, us", "hold p50, us", "hold p99, us",
                  "hold p99.9, us", "hold max, us", "data"], rows)


def fault_wait_ratios(recs):
    """The p99.9 fault wait, hint off -> on, sprig's and the proposal's."""
    rows = []
    for where, pattern, vcpus in zap_vcpus_keys(recs):
        off, on = (one(recs, "zap", where=where, pattern=pattern, vcpus=vcpus, leaf_hint=h)
                   for h in ("off", "on"))
        kvm = proposals.LEAF_HINT["wait_p999_us"].get(pattern)
        rows.append((pattern, "%g -> %g (%.2fx)" % (kvm + (kvm[0] / kvm[1],)) if kvm else "-",
                     where, vcpus, "%s -> %s (%.2fx)" % (
                         num(off["fault_wait_p999_ns"] / 1000), num(on["fault_wait_p999_ns"] / 1000),
                         lowered(off["fault_wait_p999_ns"], on["fault_wait_p999_ns"]))))
    return table(["pattern", "proposal p99.9 off -> on, us (4 vCPUs, hardware)", "where",
                  "sprig vCPUs", "sprig p99.9 off -> on, us (median of the runs)"], rows)


def exec_dirty_table(recs):
    """exec and dirty iteration 1 on one vCPU and on N, split on fault off/on."""
    rows = []
    for where in WHERE_NAMES:
        multi = [r for r in several_vcpus(recs) if r["where"] == where]
        if not any(r["bench"] in ("exec", "dirty") for r in multi):
            continue
        single = [r for r in one_vcpu(recs) if r["where"] == where]
        for label, bench, f in (("exec", "exec", {}),
                                ("dirty 5%", "dirty", {"writes": 5, "eager_page_split": "off"}),
                                ("dirty 100%", "dirty", {"writes": 100,
                                                         "eager_page_split": "off"})):
            for rs in (single, multi):
                off = one(rs, bench, split_on_fault="off", **f)
                on = one(rs, bench, split_on_fault="on", **f)
                if off and on:
                    rows.append((label, where, off.get("vcpus", 1), off.get("mib", "?"),
                                 "%.0f (%d)" % (off["time_ns"] / 1e6, off["faults"]),
                                 "%.0f (%d)" % (on["time_ns"] / 1e6, on["faults"]),
                                 "%.1fx" % ratio(off["time_ns"], on["time_ns"])))
    return table(["row", "where", "vCPUs", "MiB", "split off: ms (faults)",
                  "split on: ms (faults)", "time off / on"], rows)


def stale_table(recs, verdicts):
    rows = []
    for where in WHERE_NAMES:
        got = [one(recs, "stale", where=where, remote_flush=f) for f in ("on", "off")]
        if not any(got):
            continue
        cells = ["%d of %d (data=%s)" % (r["hits"], r["rounds"], r["data"]) if r else "no run"
                 for r in got]
        rows.append((where, cells[0], cells[1], stale_verdict(verdicts, where)))
    if not rows:
        return "<p>No stale-translation rows in this run.</p>\n"
    return ("<p id=\"stale\">The stale-translation test (bench stale): the guest spins "
            "on CPU 1 reading a word of a page that the console CPU moves each round, "
            "with the word changed; a round that reads the old word is a hit. Met only "
            "when no round hits with the remote flush and some do without it (the test "
            "can fail).</p>\n" +
            table(["where", "hits, remote flush on", "hits, remote flush off", "verdict"],
                  rows))


def smp_section(data, figures, verdicts):
    recs = data["records"]
    out = ["<h2 id=\"smp\">Several vCPUs: fault-side mmu_lock wait, exec and dirty logging, "
           "stale translations</h2>\n"]
    if not several_vcpus(recs) and not select(recs, "stale"):
        out.append("<p>This run has no several-vCPU rows.</p>\n")
        return "".join(out)
    out.append("<p class=\"note\">QEMU TCG runs each vCPU of sprig's machine as a host "
               "thread, and here those threads share a %s-core host with QEMU's own work "
               "(and whatever else runs): a vCPU, a fault holding mmu_lock's read side or "
               "a zap holding its write side is descheduled for whole host time slices. "
               "The absolute latencies, the wait tails above all, are the host scheduler's "
               "and cannot reproduce the proposal's (hardware, a core per vCPU); the "
               "figures say that the experiment runs and what it counts. The verdicts are "
               "computed from the rows all the same.</p>\n" % esc(data["machine"].get("cores")))
    for where, why in VIRTUAL_TIME.items():
        if any(r["where"] == where for r in several_vcpus(recs)):
            out.append("<p class=\"note\">Except %s: %s; their fault-wait verdict has its "
                       "own target.</p>\n" % (esc(WHERE_NAMES[where]), esc(why)))
    for prefix, tail in ((("smp_fault_wait", "smp_zap_hold"), fault_wait_table(recs)),
                         ("smp_exec_dirty", exec_dirty_table(recs))):
        for f in figures:
            if f["file"].startswith(prefix):
                out.append(figure(f))
        out.append(tail)
    out.append(stale_table(recs, verdicts))
    out.append(verdict_list([v for v in verdicts if v["proposal"] == "smp"]))
    return "".join(out)


def compare_leaf(recs):
    p = proposals.LEAF_HINT
    rows = []
    for pattern, (before, after) in p["rows"].items():
        host = [r for r in select(recs, "zap", where="host", pattern=pattern)]
        refaults = sorted({r["refault"] for r in host})
        rf = refaults[0] if refaults else None
        off = one(host, "zap", leaf_hint="off", refault=rf)
        on = one(host, "zap", leaf_hint="on", refault=rf)
        sr = ratio(off["zap_median_ns"], on["zap_median_ns"]) if off and on else None
        rows.append((pattern, "%g" % before, "%g" % after, "%.2fx" % (before / after),
                     "refault %s%%" % rf if rf is not None else "-",
                     fmt(off and off["zap_median_ns"] / 1000), fmt(on and on["zap_median_ns"] / 1000),
                     fmt(sr, "%.2fx"), fmt(sr and sr / (before / after), "%.2f")))
    out = table(["pattern", "KVM before, ms", "KVM after, ms", "KVM ratio", "sprig row (host)",
                 "sprig off, us", "sprig on, us", "sprig ratio", "sprig ratio / KVM ratio"],
                rows)
    out += reporting_table(recs)
    if zap_vcpus_keys(recs):
        out += ("<p>Fault-side mmu_lock wait p99.9, published: %s; sprig: bench zap "
                "PATTERN vcpus=N in a guest (index.html has every percentile and the "
                "spread).</p>\n" % esc(p["wait_source"])) + fault_wait_ratios(recs)
    return out


def reporting_table(recs):
    """`bench reporting`: the proposal's named workload, Linux's free page
    reporting through the balloon, hint off and on."""
    off, on = (one(recs, "reporting", where="linux", leaf_hint=h) for h in ("off", "on"))
    if not (off and on):
        return ""
    rows = [(h, r["reps"], r["reported_ranges"], r["zaps"], num(r["zap_median_ns"] / 1000),
             num(r["zap_p999_ns"] / 1000), r["zap_spte_visits"], r["zap_leaf_visits"],
             r["hint_checks"], r["skips"], r["guest_faults"], r["touches_per_s"], r["data"])
            for h, r in (("off", off), ("on", on))]
    sr = ratio(off["zap_median_ns"], on["zap_median_ns"])
    return ("<p>The workload the proposal names, for real (bench reporting, %s vCPUs, "
            "%s cycles of %s MiB a process a round): Linux reports the 2 MiB blocks its "
            "processes freed and sprig discards each; the same blocks are refaulted and "
            "reported again. Median zap, hint off -> on: %s (the proposal's same16: "
            "9.4x, same4: 6.3x).</p>\n" % (esc(off["vcpus"]), esc(off["cycles"]),
                                          esc(off["mib"]), fmt(sr, "%.2fx")) +
            table(["hint", "rounds", "reported ranges", "zaps", "zap median, us",
                   "zap p99.9, us", "spte visits", "leaf visits", "hint checks", "skips",
                   "refaults", "guest touches/s", "data"], rows))


def compare_split(recs):
    recs = one_vcpu(recs)
    p = proposals.SPLIT
    rows = []
    for where in ("host", "qemu", "bochs"):
        for name, (before, after, eager) in p["rows"].items():
            if name == "exec":
                off = one(recs, "exec", where=where, split_on_fault="off")
                on = one(recs, "exec", where=where, split_on_fault="on")
                eps = None
            else:
                w = int(name.split()[1].rstrip("%"))
                off = one(recs, "dirty", where=where, writes=w, eager_page_split="off",
                          split_on_fault="off")
                on = one(recs, "dirty", where=where, writes=w, eager_page_split="off",
                         split_on_fault="on")
                eps = one(recs, "dirty", where=where, writes=w, eager_page_split="on")
            if not off or not on:
                continue
            sr = ratio(off["time_ns"], on["time_ns"])
            rows.append((name, where, "%.3f" % before, "%.3f" % after, fmt(eager, "%.3f"),
                         "%.1fx" % (before / after), "%.1f" % (off["time_ns"] / 1e6),
                         "%.1f" % (on["time_ns"] / 1e6), fmt(eps and eps["time_ns"] / 1e6, "%.1f"),
                         "%.1fx" % sr, "%d / %d" % (off["faults"], on["faults"])))
    return table(["row", "where", "KVM zap, s", "KVM split, s", "KVM eager, s", "KVM ratio",
                  "sprig zap, ms", "sprig split, ms", "sprig eager, ms", "sprig ratio",
                  "sprig faults zap / split"], rows)


def compare_rmap(recs):
    p = proposals.RMAP

    def fork_times(where):
        rows = select(recs, "rmap_fork", where=where)
        clones = max([r["clones"] for r in rows] or [0])
        return clones, {(r["rmap_desc"], r.get("rmap_backref")): r["time_ns"] for r in rows
                        if r["clones"] == clones}
    clones, t = fork_times("host")
    linux_clones, lt = fork_times("linux")
    rows = []
    base, lbase = t.get(("ext3", "off")), lt.get(("ext3", "off"))
    for (desc, br), kvm in ((("ext3", "off"), p["rows"]["ext3"]),
                            (("ext14", "off"), p["rows"]["ext14"]),
                            (("counted", "off"), p["rows"]["counted"]),
                            (("counted", "on"), None)):
        mine, linux = t.get((desc, br)), lt.get((desc, br))
        rows.append(("%s, back-reference %s" % (desc, br), fmt(kvm, "%.2f"),
                     fmt(kvm and p["rows"]["ext3"] / kvm, "%.2fx"),
                     fmt(mine and mine / 1e6, "%.2f"),
                     fmt(mine and base and base / mine, "%.2fx"),
                     fmt(linux and linux / 1e6, "%.1f"),
                     fmt(linux and lbase and lbase / linux, "%.2fx")))
    return ("<p>sprig: host, %d clones (tests/bench/rmap_fork_bench.c); Linux: %d clones of a "
            "booted Linux guest under QEMU, each mapping its resident memory "
            "(bench/rmap_linux.c).</p>\n" % (clones, linux_clones) +
            table(["layout", "KVM fork time", "KVM speedup vs ext3", "sprig ms",
                   "sprig speedup vs ext3", "sprig Linux ms", "sprig Linux speedup vs ext3"],
                  rows))


def compare_prefetch(recs):
    p = proposals.PREFETCH
    rows = []
    for where in ("host", "qemu"):
        for chunk in ("2M", "512K", "4K"):
            off = one(recs, "prefetch", where=where, chunk=chunk, order="forward",
                      prefetch="off", adaptive="on")
            fwd = one(recs, "prefetch", where=where, chunk=chunk, order="forward",
                      prefetch="forward", adaptive="on")
            if not off or not fwd:
                continue
            rows.append((chunk, where, prefetch_kvm(chunk), "%.1f -> %.1f ms (%+.0f%%)" % (
                off["time_ns"] / 1e6, fwd["time_ns"] / 1e6,
                100 * (fwd["time_ns"] / off["time_ns"] - 1)),
                "%d -> %d (%.0fx)" % (off["faults"], fwd["faults"],
                                      ratio(off["faults"], fwd["faults"]))))
    return table(["chunk", "where", "KVM (forward prefetch)", "sprig time off -> forward",
                  "sprig faults off -> forward"], rows) + compare_prefetch_linux(recs)


def prefetch_kvm(chunk):
    """The proposal's published change for a chunk size, as text."""
    kvm = proposals.PREFETCH["rows"].get(chunk)
    if not kvm:
        return "-"
    if "metal_ms" in kvm:
        return "metal %.1f -> %.1f ms (%+.0f%%), nested %.1f -> %.1f ms (%+.0f%%)" % (
            kvm["metal_ms"] + (100 * (kvm["metal_ms"][1] / kvm["metal_ms"][0] - 1),) +
            kvm["nested_ms"] + (100 * (kvm["nested_ms"][1] / kvm["nested_ms"][0] - 1),))
    if "metal_pct" in kvm:
        return "metal %+.1f%%, nested %+.0f%%" % (kvm["metal_pct"], kvm["nested_pct"])
    return "%+.0f to %+.0f%% (no batching)" % kvm["regression_pct"]


LINUX_PREFETCH_MODES = ("off", "forward", "adaptive")


def compare_prefetch_linux(recs):
    """bench prefetch guest=linux: the proposal's own setting, a Linux guest
    restored from a snapshot in chunks, its workload then touching mib MiB."""
    rows = []
    for chunk in ("2M", "512K", "64K", "4K"):
        rs = [one(recs, "prefetch", where="linux", chunk=chunk, mode=m)
              for m in LINUX_PREFETCH_MODES]
        if not any(rs):
            continue
        off = rs[0]
        rows.append((chunk, prefetch_kvm(chunk)) + tuple(
            "-" if not r else "%.1f ms, %d faults%s" % (
                r["time_ns"] / 1e6, r["faults"], "" if r is off or not off else
                " (%+.0f%% time, %.3gx fewer faults)" % (
                    100 * (r["time_ns"] / off["time_ns"] - 1), ratio(off["faults"], r["faults"])))
            for r in rs) + (", ".join(sorted({"%s/%s" % (r["data"], r["audit"])
                                              for r in rs if r})),))
    if not rows:
        return "<p>No Linux-guest restore rows in this run.</p>\n"
    r0 = next(r for r in recs if r.get("bench") == "prefetch" and r["where"] == "linux")
    return ("<p>In a Linux guest (bench prefetch guest=linux): Debian's kernel in %s MiB, "
            "snapshotted with %s MiB written by its workload, restored in each chunk size "
            "and mode; time from resume until the workload has read one word of every "
            "page back, and the nested page faults of the whole guest meanwhile; one run "
            "each. Adaptive is forward with prefetch_adaptive on.</p>\n" %
            (esc(r0.get("mem_mib")), esc(r0.get("mib"))) +
            table(["chunk", "KVM (forward prefetch)"] +
                  ["sprig %s" % m for m in LINUX_PREFETCH_MODES] + ["data/audit"], rows))


def compare(data, verdicts):
    recs = data["records"]
    out = [head("sprig and the KVM proposals"), "<h1>sprig and the KVM proposals</h1>\n",
           "<p>Each proposal's published figures beside sprig's measured rows from the run "
           "of %s (sprig %s, machine %s), with the ratios; the verdict lines are computed "
           "from this run's data against docs/targets.md. <a href=\"index.html\">Back to the "
           "report</a>.</p>\n" % (esc(data["date"]), esc(data["sprig_version"]),
                                   esc(data["machine"].get("hostname")))]
    for key, p, fn in (("leaf", proposals.LEAF_HINT, compare_leaf),
                       ("split", proposals.SPLIT, compare_split),
                       ("rmap", proposals.RMAP, compare_rmap),
                       ("prefetch", proposals.PREFETCH, compare_prefetch)):
        out.append("<h2>%s</h2>\n<p>Published: %s.</p>\n" % (esc(p["title"]), esc(p["source"])))
        out.append(fn(recs))
        out.append(verdict_list([v for v in verdicts if v["proposal"] == key or (
            key == "leaf" and v["key"].startswith("zap_vcpus_fault_wait_p999_ratio"))]))
    out.append("<p>Where: %s.</p>\n</body></html>\n" % esc("; ".join(
        "%s = %s" % kv for kv in WHERE_NAMES.items())))
    return "".join(out)
