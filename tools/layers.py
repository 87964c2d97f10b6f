#!/usr/bin/env python3
"""Check sprig's #include lines against the layer rules of docs/layers.md.

  tools/layers.py            one 'ok FOLDER' or 'FAIL FOLDER' line per folder
                             (each offending include below it); exit 1 on any
  tools/layers.py --cycles   the include cycles between modules (x.c and x.h
                             are one module), largest first

The rules are the lines of docs/layers.md's block that reads 'FOLDER: ITEM...';
an item is a folder or one file. A file belongs to the longest FOLDER that
holds it; a folder without a rule fails, so a new folder needs one.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RULES_DOC = os.path.join(ROOT, "docs", "layers.md")
NOT_PRODUCT = {"build", "docs", "guests", "lab", "tests", "tools"}  # and hidden folders
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
RULE = re.compile(r"^([a-z0-9_/]+):((?:\s+[a-z0-9_./]+)+)\s*$")


def read_rules():
    rules, block = {}, False
    with open(RULES_DOC) as f:
        for line in f:
            if line.startswith("```"):
                block = not block
                continue
            m = RULE.match(line) if block else None
            if m:
                rules[m.group(1)] = m.group(2).split()
    return rules


def sources():
    """Every product source: the files of every top folder but these."""
    for top in sorted({d for d in next(os.walk(ROOT))[1] if not d.startswith(".")} - NOT_PRODUCT):
        for d, _, files in os.walk(os.path.join(ROOT, top)):
            for name in sorted(files):
                if name.endswith((".c", ".h", ".S")):
                    yield os.path.relpath(os.path.join(d, name), ROOT)


def includes(path):
    with open(os.path.join(ROOT, path), errors="replace") as f:
        for n, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if m:
                yield n, m.group(1)


def folder_of(path, rules):
    holders = [r for r in rules if path.startswith(r + "/")]
    return max(holders, key=len) if holders else os.path.dirname(path)


def allowed(target, items):
    return any(target == i or target.startswith(i.rstrip("/") + "/") for i in items)


def check():
    rules = read_rules()
    bad = {}
    for path in sources():
        folder = folder_of(path, rules)
        for n, target in includes(path):
            if folder not in rules or not allowed(target, rules[folder]):
                bad.setdefault(folder, []).append("%s:%d includes %s" % (path, n, target))
    for folder in sorted(set(rules) | set(bad)):
        if bad.get(folder):
            print("FAIL %s" % folder)
            why = "has no rule in docs/layers.md" if folder not in rules else \
                "may include only " + " ".join(rules[folder])
            print("  %s %s" % (folder, why))
            for line in bad[folder]:
                print("  " + line)
        else:
            print("ok %s" % folder)
    return 1 if bad else 0


def components(edges):
    """Tarjan's strongly connected components of more than one node, largest first."""
    index, low, stack, on, comps = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(comps, key=len, reverse=True)


def cycles():
    modules, folders = {}, {}
    for path in sources():
        mod = os.path.splitext(path)[0]
        modules.setdefault(mod, set())
        for _, target in includes(path):
            if os.path.exists(os.path.join(ROOT, target)):
                modules[mod].add(os.path.splitext(target)[0])
                folders.setdefault(os.path.dirname(path), set()).add(os.path.dirname(target))
    comps = components(modules)
    print("%d include cycles between modules, %d modules in them (of %d)" %
          (len(comps), sum(map(len, comps)), len(modules)))
    for comp in comps:
        count = {}
        for m in comp:
            count[os.path.dirname(m)] = count.get(os.path.dirname(m), 0) + 1
        print("  %d modules: %s" % (len(comp), ", ".join(
            "%s %d" % (f, n) for f, n in sorted(count.items()))))
        print("    " + " ".join(comp))
    comps = components(folders)
    print("%d include cycles between folders" % len(comps))
    for comp in comps:
        print("  " + " ".join(comp))
    return 0


if __name__ == "__main__":
    sys.exit(cycles() if sys.argv[1:] == ["--cycles"] else check())
