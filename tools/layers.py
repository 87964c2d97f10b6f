#!/usr/bin/env python3
"""Check sprig's #include lines against the layer rules of docs/layers.md, and
that each function is defined in the file named like the header declaring it.

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


# ---- every function defined in the file named like the header that declares it

COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
NAME = re.compile(r"(?<![\w*(])(\w+)\s*\(")
NOT_NAMES = {"__attribute__", "__typeof__", "typeof", "sizeof", "if", "while", "for", "return"}


def top_level(path):
    """The statements at file scope, comments and preprocessor lines left
    out: (text, ending) with ending ';' or '{'."""
    with open(os.path.join(ROOT, path), errors="replace") as f:
        text = COMMENT.sub(" ", f.read())
    lines, cont = [], False
    for line in text.split("\n"):
        if cont or line.lstrip().startswith("#"):
            cont = line.rstrip().endswith("\\")
            continue
        lines.append(line)
    text, depth, start = "\n".join(lines), 0, 0
    for i, c in enumerate(text):
        if c == "{":
            if depth == 0:
                yield " ".join(text[start:i].split()), "{"
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                start = i + 1
        elif c == ";" and depth == 0:
            yield " ".join(text[start:i].split()), ";"
            start = i + 1


def function_name(stmt):
    """The function a statement declares or defines, or None."""
    if re.match(r"(typedef|static)\b", stmt) or "=" in stmt:
        return None
    for m in NAME.finditer(stmt):
        if m.group(1) not in NOT_NAMES:
            return m.group(1)
    return None


def declared_like(header, source):
    """May a function header declares be defined in source? X.h's in X.c or
    X_*.c beside it; a folder's X_internal.h (its private interface) in any
    of the folder's files."""
    folder, base = os.path.split(header[:-2])
    if os.path.dirname(source) != folder:
        return False
    if base.endswith("_internal"):
        return True
    name = os.path.basename(source)[:-2]
    return name == base or name.startswith(base + "_")


def check_definitions():
    declared, defined = {}, {}
    for path in sources():
        for stmt, end in top_level(path):
            name = function_name(stmt)
            if not name:
                continue
            if path.endswith(".h") and end == ";":
                declared.setdefault(name, []).append(path)
            elif path.endswith(".c") and end == "{" and stmt.endswith(")"):
                defined.setdefault(name, []).append(path)
    bad = []
    for name in sorted(declared):
        for header in declared[name]:
            for source in defined.get(name, []):
                if not declared_like(header, source):
                    bad.append("%s: declared in %s, defined in %s" % (name, header, source))
    print("%s definitions (every function in the file named like its header)" %
          ("FAIL" if bad else "ok"))
    for line in bad:
        print("  " + line)
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
    sys.exit(cycles() if sys.argv[1:] == ["--cycles"] else check() | check_definitions())
