"""Cost curves: each cost against its work, one curve per setting, and the
slope k of the least-squares line through the points on log-log (cost ~
work^k). On the host (build/host/bench curve_zap, curve_fork): zap time
against range, fork time against clones; in guests under QEMU (`bench faults`,
`bench boot guest=linux`): fault time against vCPUs, each faulting a share of
its own, and Linux's boot time against vCPUs. The report fits the points of
the run itself; the host benchmark's own fitted lines (`fit=loglog`) are not
read."""
import math

# Each curve family: its @bench name, the field that is its work and how its
# span reads, the fields that tell its curves apart, and how a curve is named.
ZAP = {"bench": "zap_curve", "where": "host", "work": "range_mib", "span": "range %s to %s MiB",
       "keys": ("leaf_hint", "zap"),
       "label": lambda r: "hint %s, %s zap" % (r["leaf_hint"], r["zap"])}
FORK = {"bench": "fork_curve", "where": "host", "work": "clones", "span": "%s to %s clones",
        "keys": ("rmap_desc", "rmap_backref"),
        "label": lambda r: "%s, back-reference %s" % (r["rmap_desc"], r["rmap_backref"])}
FAULTS = {"bench": "faults", "where": "qemu", "work": "vcpus", "span": "%s to %s vCPUs",
          "keys": ("mib_per_vcpu",),
          "label": lambda r: "%s MiB a vCPU" % r["mib_per_vcpu"]}
BOOT = {"bench": "boot", "where": "linux", "work": "vcpus", "span": "%s to %s vCPUs",
        "keys": ("mem_mib",),
        "label": lambda r: "Linux in %s MiB" % r["mem_mib"]}


def fit(xs, ys):
    """(k, c) of the least-squares line log y = k log x + c; k rounded to three
    decimals, as the benchmark prints and judges it."""
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    n = len(lx)
    mx, my = sum(lx) / n, sum(ly) / n
    k = sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)
    return round(k, 3), my - k * mx


def curves(recs, family):
    """The family's curves where it is measured, in the run's order: each a
    dict with label, the points sorted by work, and runs."""
    out = {}
    for r in recs:
        if (r.get("bench") != family["bench"] or r["where"] != family["where"] or
                family["work"] not in r):
            continue  # a fitted line, not a point
        key = tuple(r[k] for k in family["keys"])
        c = out.setdefault(key, {"label": family["label"](r), "points": [], "runs": set()})
        c["points"].append(r)
        c["runs"].add(r["runs"])
    for c in out.values():
        c["points"].sort(key=lambda r: r[family["work"]])
    return [c for c in out.values() if len(c["points"]) >= 2]


def runs(cs):
    """The run counts of curves, as text: "9", or "3/9" where they differ."""
    return "/".join(str(r) for r in sorted(set().union(*(c["runs"] for c in cs))))


def slope(curve, family, field):
    """k and c of FIELD against the family's work; None where a value is 0."""
    xs = [p[family["work"]] for p in curve["points"]]
    ys = [p.get(field, 0) for p in curve["points"]]
    if not all(ys):
        return None
    return fit(xs, ys)
