"""docs/targets.md, the one table of targets: read it, and judge a value."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TARGETS_MD = os.path.join(ROOT, "docs", "targets.md")

ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|\s*([-0-9.]+)\s*\|\s*(>=|<=|==)\s*\|\s*(\w+)\s*\|\s*(.*?)\s*\|\s*$")


def load(path=TARGETS_MD):
    """{key: {"figure", "test", "kind", "meaning"}} from the table's rows."""
    targets = {}
    with open(path) as f:
        for line in f:
            m = ROW.match(line)
            if m:
                targets[m.group(1)] = {"key": m.group(1), "figure": float(m.group(2)),
                                       "test": m.group(3), "kind": m.group(4),
                                       "meaning": m.group(5)}
    return targets


def met(target, value):
    if target["test"] == ">=":
        return value >= target["figure"]
    if target["test"] == "<=":
        return value <= target["figure"]
    return value == target["figure"]
