"""@bench lines: `@bench bench=NAME key=value ...`, one record each."""
import re


def value(text):
    """A field's value: an int or float where it reads as one, else the text."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parse(output, where):
    """Every @bench line of a program's or console's output, as a dict with
    `where` (host, qemu, bochs) added."""
    records = []
    for line in output.splitlines():
        line = line.strip()
        if not line.startswith("@bench "):
            continue
        rec = {"where": where}
        for field in line.split()[1:]:
            if "=" in field:
                k, v = field.split("=", 1)
                rec[k] = value(v)
        if "bench" in rec:
            records.append(rec)
    return records


def rmaps(output, where, label):
    """The table `rmaps` prints (KVM's mmu_rmaps_stat) as one record per level."""
    records, buckets = [], None
    for line in output.splitlines():
        words = line.split()
        if words and words[0] == "Rmap_Count:":
            buckets = words[1:]
        elif words and words[0].startswith("Level=") and buckets:
            records.append({"where": where, "bench": "rmaps", "label": label,
                            "level": words[0][len("Level="):].rstrip(":"),
                            "buckets": buckets, "counts": [int(x) for x in words[1:]]})
    return records


SPREAD_ROW = re.compile(r"^(\w+)\s+(\d+) \((\d+)\.\.(\d+)\)\s+(\d+) \((\d+)\.\.(\d+)\)\s*$")


def zap_spreads(output, records):
    """`bench zap PATTERN vcpus=N` prints, above its two @bench rows, a table
    of each field's median (min..max) over the runs, hint off then on: add
    FIELD_min and FIELD_max to those rows, where the table's median is the
    row's value (the table and the row are the same runs)."""
    rows = {r.get("leaf_hint"): r for r in records
            if r.get("bench") == "zap" and "vcpus" in r}
    for line in output.splitlines():
        m = SPREAD_ROW.match(line.strip())
        if not m:
            continue
        field = m.group(1)
        for hint, (med, lo, hi) in (("off", m.group(2, 3, 4)), ("on", m.group(5, 6, 7))):
            r = rows.get(hint)
            if r is not None and r.get(field) == int(med):
                r[field + "_min"], r[field + "_max"] = int(lo), int(hi)
