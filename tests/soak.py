#!/usr/bin/env python3
"""sprig's soak test (`make soak`): one boot of sprig under QEMU (AMD SVM with
nested paging), driven through its console for a set time by a seeded random
schedule of VM life-cycle steps:

  create    a VM of one of the test guests (small memory, lazy or eager)
  run       run a VM to its next pause point or to its end
  clone     clone a paused VM (memory shared copy-on-write)
  snapshot  capture a ready or paused VM into an image
  restore   create a VM from an image (random chunk size)
  dirty     dirty logging of a VM: on, get (checked page by page), off
  discard   drop a range of a VM's memory (vm discard)
  destroy   destroy a VM
  free      free an image (refused while a VM restores from it)

A model of every VM (its guest, where it stands, what its memory holds, its
clone family, its image) says what each step must print; the guests check
their own data, as each defines it:
  - soakg (guests/soakg.c) does the heavy lifting: rounds of checking every
    word of its memory and writing a run of pages, paused between rounds at
    its clone or snapshot point; after a discard it must report exactly the
    pages it lost (HC_LOST_RANGES) and find them zero, or the image's contents
    in a VM restored from one; clones check the memory they share with their
    parent, parents that no clone's write reached them, restored VMs the
    image; a dirty log must hold exactly the pages it wrote;
  - touch (checksum computed here), restore_touch (the pattern, after its
    snapshot point, in the order its restore asks for; a discard refaults the
    image), rmapfork and rmapread (clones read the parent's memory; rmapfork's
    parent checks no clone's write reached it), dirty (its own check; the
    dirty log holds at least the pages it wrote).
A discard of a guest that cannot see it (any guest but soakg and restored
restore_touch) dooms the VM: it is only destroyed afterwards.

After every step: `vm audit` of every VM, `vm list` and `vm images` against
the model, and, with no VM and no image left, `mem`'s free memory (the sum of
its free blocks, to the byte) against its start value, taken after a warm-up
clone (see warm_up). At the end everything is destroyed and freed and the free
memory must be back to its start value.

One line per step: step number, action, VM, result. The seed is printed at
the start; the same seed (and step count) replays the same schedule:

  tests/soak.py [--seconds S] [--seed N] [--steps N] [--mode life|hostile-smp]
               [--machine qemu|bochs]
  (or SOAK_SECONDS, SOAK_SEED, SOAK_STEPS, SOAK_MODE, SOAK_MACHINE in the
  environment; seconds 0: no time limit)

This is the life-cycle mode (the default). --mode hostile-smp runs hostile
guests on several vCPUs beside keeper VMs under QEMU with 4 CPUs or, with
--machine bochs, under Bochs (Intel VMX) with 2, every step bounded in time
and a hang reported with every CPU's state (tests/soak_smp.py).

On a failure: the seed, the step, the console's tail, and exit 1. At the end a
summary (steps per action, failures); exit 0 when all passed.
"""
import argparse
import os
import random
import re
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from machine import GUESTS_DIR, PROMPT, Machine, Timeout, guest_lines, make_iso  # noqa: E402

GUESTS = ["soakg", "touch", "restore_touch", "rmapfork", "rmapread", "dirty"]
ACTIONS = ["create", "run", "clone", "snapshot", "restore", "dirty", "discard", "destroy",
           "free"]
WEIGHTS = {"create": 8, "run": 30, "clone": 10, "snapshot": 6, "restore": 7, "dirty": 6,
           "discard": 7, "destroy": 8, "free": 3}
KIND_WEIGHTS = {"soakg": 8, "touch": 1, "restore_touch": 3, "rmapfork": 2, "rmapread": 1,
                "dirty": 2}
MAX_VMS = 6        # live VMs at once
MAX_IMAGES = 8     # sprig's SNAPSHOT_MAX: one more snapshot must be refused
MAX_LOST = 4       # discards a soakg VM may collect at once (sprig keeps 64 ranges)
MIB = 1 << 20
PAGE = 4096
AREA = 4 * MIB     # GUEST_PLAYGROUND: where every guest keeps its data
CHUNKS = ["4K", "16K", "64K", "512K", "2M"]
RUN_TIMEOUT = 60   # seconds a guest may run before sprig pauses it (a failure here)


class Fail(Exception):
    pass


class VM:
    """What the soak knows of one VM."""

    def __init__(self, name, kind, mem, backing, params):
        self.name = name
        self.kind = kind
        self.mem = mem            # MiB
        self.backing = backing    # lazy, eager, restore
        self.params = params      # the guest's arguments
        self.state = "ready"      # as `vm list` says: ready, paused, exited, stopped
        self.phase = "start"      # where the guest stands (per guest)
        self.round = 0            # soakg: rounds done
        self.role = "clone"       # rmapfork, rmapread at the clone point: the call returns 0
        self.order = "forward"    # restore_touch: the order of its check
        self.restore_id = None    # soakg: the restore=K it will report on its next run
        self.lost = set()         # soakg: area pages discarded since it last ran
        self.discards = 0         # soakg: discards since it last ran
        self.image = None         # the image its memory comes from (clones inherit it)
        self.discard_safe = False  # restore_touch: restored at its point, so a discard refaults
        self.doomed = False       # its data was dropped behind its back: destroy only
        self.dirty = False        # dirty logging on
        self.written = set()      # soakg: area pages written since logging on / the last get
        self.dirty_count = None   # dirty guest: pages the log held at its second point
        self.family = None        # the set of VM names sharing memory with it, or None

    def copy(self, name):
        c = VM(name, self.kind, self.mem, self.backing, dict(self.params))
        for k in ("state", "phase", "round", "role", "order", "image", "discard_safe"):
            setattr(c, k, getattr(self, k))
        return c

    def runnable(self):
        return self.state in ("ready", "paused") and not self.doomed

    def pages(self):
        return self.params.get("mib", 0) * MIB // PAGE


class Image:
    def __init__(self, name, vm):
        self.name = name
        self.vm = vm              # a copy of the VM's model when it was taken


def touch_checksum(mib, stride, cache={}):
    """touch's output for mib=MIB stride=S: pages touched and FNV-1a checksum."""
    key = (mib, stride)
    if key not in cache:
        h, pages, last = 0xcbf29ce484222325, 0, None
        mask = (1 << 64) - 1
        for a in range(AREA, AREA + mib * MIB, stride):
            v = ((a * 0x9e3779b97f4a7c15) & mask) ^ 0x5a5a5a5a00000001
            if a // PAGE != last:
                last = a // PAGE
                pages += 1
            for i in range(8):
                h = ((h ^ ((v >> (8 * i)) & 0xff)) * 0x100000001b3) & mask
        cache[key] = (pages, "0x%016x" % h)
    return cache[key]


def parse_ranges(out):
    """`vm dirty get`'s ranges: [(first_page, end_page)] of guest-physical pages."""
    return [(int(a, 16) // PAGE, (int(b, 16) + 1) // PAGE)
            for a, b in re.findall(r"^\s+gpa (0x[0-9a-f]+)-(0x[0-9a-f]+)$", out, re.M)]


def free_bytes(out):
    """The free memory `mem` reports, exactly: the sum of its free blocks."""
    m = re.search(r"^free blocks: (.*)$", out, re.M)
    if not m:
        raise Fail("no free blocks line in `mem`:\n" + out)
    total = 0
    for size, count in re.findall(r"(\d+[KMG]):(\d+)", m.group(1)):
        total += int(size[:-1]) * {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[size[-1]] * int(count)
    return total


class Soak:
    def __init__(self, machine, rng):
        self.m = machine
        self.rng = rng
        self.vms = {}             # name -> VM, live ones
        self.images = {}          # name -> Image
        self.next_vm = 1
        self.next_image = 1
        self.next_restore = 1
        self.counts = {a: 0 for a in ACTIONS}
        self.start_free = None
        self.memory_checks = 0

    # --- console -------------------------------------------------------

    def cmd(self, line, timeout=60):
        return self.m.command(line, timeout=timeout)

    def expect_in(self, out, text, what):
        if text not in out:
            raise Fail("%s: expected %r in:\n%s" % (what, text, out))

    # --- choosing ------------------------------------------------------

    def pick(self, seq):
        return seq[self.rng.randrange(len(seq))] if seq else None

    def new_vm_name(self):
        name = "v%d" % self.next_vm
        self.next_vm += 1
        return name

    def image_users(self, img):
        return [v for v in self.vms.values() if v.image == img]

    def candidates(self, action):
        vms = sorted(self.vms.values(), key=lambda v: int(v.name[1:]))
        room = len(self.vms) < MAX_VMS
        if action == "create":
            return [None] if room else []
        if action == "run":
            return [v for v in vms if v.runnable()]
        if action == "clone":
            return [v for v in vms if room and self.cloneable(v)]
        if action == "snapshot":
            return [v for v in vms if v.runnable() and not v.lost]
        if action == "restore":
            return sorted(self.images) if room else []
        if action == "dirty":
            return [v for v in vms if self.dirty_target(v)]
        if action == "discard":
            return vms
        if action == "destroy":
            return vms
        if action == "free":
            return sorted(self.images)
        raise AssertionError(action)

    def cloneable(self, v):
        if v.state != "paused" or v.doomed or v.lost:
            return False
        return v.kind in ("soakg", "restore_touch", "rmapfork", "rmapread", "dirty")

    def dirty_target(self, v):
        if not v.runnable():
            return False
        if v.kind == "soakg":
            return True
        if v.kind == "dirty":
            return (v.phase == "p1" and not v.dirty) or (v.phase == "p2" and v.dirty and
                                                         v.dirty_count is None)
        return False

    # --- one step ------------------------------------------------------

    def choose(self):
        """The next step: (action, target, the target's name for the log)."""
        weights = dict(WEIGHTS)
        # Images pile up: free them more often the more there are, and try a
        # snapshot only now and then once all of sprig's slots are taken.
        weights["free"] += len(self.images)
        # And make room for new VMs once the cap is reached.
        if len(self.vms) >= MAX_VMS:
            weights["destroy"] += 8
        if len(self.images) >= MAX_IMAGES:
            weights["snapshot"] = 1
        choices = [(a, c) for a in ACTIONS for c in [self.candidates(a)] if c]
        r = self.rng.randrange(sum(weights[a] for a, _ in choices))
        for action, cands in choices:
            r -= weights[action]
            if r < 0:
                break
        if action == "destroy":
            # Mostly VMs that are done.
            target = self.rng.choices(cands, [6 if self.done(v) else 1 for v in cands])[0]
        elif action == "discard":
            # Mostly guests that see it, then VMs that are done; seldom others.
            weight = {"lost": 6, "refault": 12}
            target = self.rng.choices(cands, [weight.get(self.discard_kind(v)) or
                                              (2 if self.done(v) else 1) for v in cands])[0]
        else:
            target = self.pick(cands)
        name = target if isinstance(target, str) else target.name if target else "-"
        return action, target, name

    def do(self, action, target):
        result = getattr(self, "do_" + action)(target)
        self.counts[action] += 1
        return result

    def check_all(self):
        """Every VM's audit, and sprig's lists of VMs and images against the model."""
        for name in sorted(self.vms, key=lambda n: int(n[1:])):
            out = self.cmd("vm audit " + name)
            if "mmu audit: ok, 0 errors" not in out:
                raise Fail("vm audit %s:\n%s" % (name, out))
        out = self.cmd("vm list")
        seen = {}
        for line in out.splitlines():
            f = line.split()
            if len(f) >= 2 and f[0] != "no":
                seen[f[0]] = f[1]
        want = {n: v.state for n, v in self.vms.items()}
        if seen != want:
            raise Fail("vm list says %s, the model %s:\n%s" % (seen, want, out))
        out = self.cmd("vm images")
        seen = {line.split()[0] for line in out.splitlines()
                if line.strip() and line.split()[0] != "no"}
        if seen != set(self.images):
            raise Fail("vm images says %s, the model %s:\n%s" % (sorted(seen), sorted(self.images),
                                                                    out))
        if not self.vms and not self.images:
            self.check_memory("with no VM and no image")

    def warm_up(self):
        """Take the free memory to come back to. A slab cache keeps one empty slab
        when its last object goes (mm/slab.c): a clone that reads its parent's
        memory makes the rmap descriptor cache allocate (two SPTEs per frame)
        and keep its spare slab before the value is taken, as it will after."""
        boot_free = free_bytes(self.cmd("mem"))
        for line, want in [("vm create w0 rmapread mem=6M", "vm w0 created"),
                           ("vm run w0", "vm w0 stopped: clone point"),
                           ("vm clone w0 w1", "vm w1 cloned from w0"),
                           ("vm run w1", "vm w1 exited: status 0"),
                           ("vm destroy w1", "vm w1 destroyed"),
                           ("vm destroy w0", "vm w0 destroyed")]:
            self.expect_in(self.cmd(line), want, "warm-up")
        self.start_free = free_bytes(self.cmd("mem"))
        print("soak: %d KiB free after boot, %d KiB after a warm-up clone" %
              (boot_free >> 10, self.start_free >> 10), flush=True)

    def check_memory(self, when):
        self.memory_checks += 1
        out = self.cmd("mem")
        free = free_bytes(out)
        if free != self.start_free:
            raise Fail("free memory %s is %d bytes, %d at the start (%+d):\n%s" %
                       (when, free, self.start_free, free - self.start_free, out))
        if "refused frees 0" not in out:
            raise Fail("frees were refused:\n" + out)

    # --- actions -------------------------------------------------------

    def do_create(self, _):
        kinds = list(KIND_WEIGHTS)
        kind = self.rng.choices(kinds, [KIND_WEIGHTS[k] for k in kinds])[0]
        rng = self.rng
        if kind == "soakg":
            mem = rng.choice([6, 8, 12, 16, 20])
            params = {"mib": rng.randint(1, min(16, mem - 5)), "rounds": rng.randint(3, 8),
                      "seed": rng.randrange(1 << 30)}
        elif kind == "touch":
            mem = rng.choice([6, 8, 12, 16])
            params = {"mib": rng.randint(1, mem - 5),
                      "stride": rng.choice([1024, 4096, 8192, 12288])}
        elif kind == "restore_touch":
            mem = rng.choice([6, 8, 12])
            params = {"mib": rng.randint(1, mem - 5)}
        elif kind in ("rmapfork", "rmapread"):
            mem = rng.choice([6, 8])
            params = {}
        else:
            mib = rng.randint(1, 4)
            mem = mib + 6
            params = {"mib": mib, "writes": rng.choice([5, 30, 100]),
                      "seed": rng.randrange(1 << 30)}
        backing = "eager" if rng.random() < 0.25 else "lazy"
        v = VM(self.new_vm_name(), kind, mem, backing, params)
        args = " ".join("%s=%s" % kv for kv in params.items())
        out = self.cmd("vm create %s %s mem=%dM backing=%s -- %s" % (v.name, kind, mem, backing,
                                                                     args))
        self.expect_in(out, "vm %s created: %d MiB %s memory, kernel '%s'" %
                       (v.name, mem, backing, kind), "create")
        self.vms[v.name] = v
        return "%s %dM %s %s" % (kind, mem, backing, args)

    def do_run(self, v):
        out = self.cmd("vm run %s timeout=%d" % (v.name, RUN_TIMEOUT), timeout=RUN_TIMEOUT + 60)
        lines = guest_lines(out, v.name)
        m = re.search(r"^vm %s (exited: status (-?\d+)|stopped: (.*))$" % re.escape(v.name), out,
                      re.M)
        if not m:
            raise Fail("run %s: no exit or stop line:\n%s" % (v.name, out))
        status = int(m.group(2)) if m.group(2) is not None else None
        stop = m.group(3)

        def fail(why):
            raise Fail("run %s (%s): %s:\n%s" % (v.name, v.kind, why, out))

        def ends(point=None):
            """The guest must pause at `point` (a pause reason) or, without one, exit 0."""
            if point is None:
                if status != 0:
                    fail("expected exit status 0")
                v.state = "exited"
            else:
                if stop is None or not stop.startswith(point + " after "):
                    fail("expected a pause at its %s" % point)
                v.state = "paused"

        def has(text):
            if not any(line.startswith(text) for line in lines):
                fail("expected a line %r" % text)

        if v.kind == "soakg":
            return self.run_soakg(v, lines, ends, fail)
        if v.kind == "touch":
            pages, checksum = touch_checksum(v.params["mib"], v.params["stride"])
            has("touch: %d pages, checksum %s" % (pages, checksum))
            has("touch ok")
            ends()
            return "touch ok, checksum %s" % checksum
        if v.kind == "restore_touch":
            if v.phase == "start":
                has("restore_touch: %d MiB written, snapshot point" % v.params["mib"])
                ends("snapshot point")
                v.phase = "point"
                return "pattern written, at its snapshot point"
            has("restore_touch: %s, %d pages checked, 0 mismatches" % (v.order, v.pages()))
            has("restore_touch ok")
            ends()
            return "pattern checked (%s)" % v.order
        if v.kind == "rmapfork":
            if v.phase == "start":
                has("rmapfork: pattern in 256 pages, clone point")
                ends("clone point")
                v.phase = "point"
                v.role = "clone"
                return "pattern written, at its clone point"
            if v.role == "parent":
                has("rmapfork: parent ok after clone")
                ends()
                return "parent ok: no clone's write reached it"
            has("rmapfork: clone ok")
            ends()
            return "clone ok: read the parent's pattern, wrote its own"
        if v.kind == "rmapread":
            if lines:
                fail("rmapread prints nothing when all is well")
            if v.phase == "start":
                ends("clone point")
                v.phase = "point"
                v.role = "clone"
                return "pattern written, at its clone point"
            ends()
            return "%s ok" % v.role
        if v.kind == "dirty":
            if v.phase in ("start", "p1"):
                if v.phase == "start":
                    has("dirty: %d MiB at 0x400000, %d%% writes, seed %d" %
                        (v.params["mib"], v.params["writes"], v.params["seed"]))
                ends("snapshot point")
                v.phase = "p1" if v.phase == "start" else "p2"
                return "at its %s snapshot point" % ("first" if v.phase == "p1" else "second")
            has("dirty ok")
            w = re.search(r"^dirty: wrote (\d+) of (\d+) pages, .* 0 bad$", "\n".join(lines), re.M)
            if not w:
                fail("no 'dirty: wrote N of N pages' line")
            ends()
            if v.dirty_count is not None and v.dirty_count < int(w.group(1)):
                fail("the dirty log held %d pages, the guest wrote %s" % (v.dirty_count,
                                                                          w.group(1)))
            return "dirty ok, wrote %s pages%s" % (
                w.group(1), "" if v.dirty_count is None else ", log had %d" % v.dirty_count)
        raise AssertionError(v.kind)

    def run_soakg(self, v, lines, ends, fail):
        n = v.round + 1
        want = []
        if v.round == 0:
            want.append("soakg: %d MiB at 0x400000, %d rounds" % (v.params["mib"],
                                                                  v.params["rounds"]))
        if v.restore_id is not None:
            want.append("soakg: restored (restore=%d) before round %d" % (v.restore_id, n))
        want.append("soakg: round %d ok: %d pages checked, wrote " % (n, v.pages()))
        if n == v.params["rounds"]:
            want.append("soakg ok")
        if len(lines) != len(want) or any(not l.startswith(w) for l, w in zip(lines, want)):
            fail("expected lines:\n  " + "\n  ".join(want))
        m = re.search(r"wrote (\d+) pages from page (\d+), lost (\d+)$",
                      next(l for l in lines if l.startswith("soakg: round ")))
        if not m:
            fail("bad round line")
        wrote, first, lost = (int(x) for x in m.groups())
        if lost != len(v.lost):
            fail("reported %d lost pages, %d were discarded" % (lost, len(v.lost)))
        ends(None if n == v.params["rounds"] else "clone point" if n % 2 else "snapshot point")
        if v.dirty:
            v.written |= {(first + k) % v.pages() for k in range(wrote)}
        v.round = n
        v.lost = set()
        v.discards = 0
        restored = "restored (restore=%d), " % v.restore_id if v.restore_id is not None else ""
        v.restore_id = None
        return "%sround %d ok, wrote %d pages, lost %d%s" % (
            restored, n, wrote, lost, ", exited 0" if v.state == "exited" else "")

    def do_clone(self, parent):
        c = parent.copy(self.new_vm_name())
        c.state = "ready"
        out = self.cmd("vm clone %s %s" % (parent.name, c.name))
        if parent.family is None:
            parent.family = {parent.name}
        parent.family.add(c.name)
        c.family = parent.family
        self.expect_in(out, "vm %s cloned from %s: %d MiB shared copy-on-write, family of %d" %
                       (c.name, parent.name, parent.mem, len(parent.family)), "clone")
        if parent.kind in ("rmapfork", "rmapread"):
            parent.role = "parent"   # HC_CLONE_POINT now returns the clone's number
            c.role = "clone"
        self.vms[c.name] = c
        return "-> %s, family of %d" % (c.name, len(parent.family))

    def do_snapshot(self, v):
        name = "i%d" % self.next_image
        self.next_image += 1
        out = self.cmd("vm snapshot %s %s" % (v.name, name))
        if len(self.images) >= MAX_IMAGES:
            self.expect_in(out, "all %d image slots are in use" % MAX_IMAGES, "snapshot refused")
            return "refused: all %d image slots in use" % MAX_IMAGES
        self.expect_in(out, "vm %s snapshot: image '%s', %d MiB at rip" % (v.name, name, v.mem),
                       "snapshot")
        self.images[name] = Image(name, v.copy(v.name))
        return "-> image %s (%s, %s)" % (name, v.state, self.where(v))

    def where(self, v):
        return "round %d" % v.round if v.kind == "soakg" else v.phase

    def do_restore(self, img_name):
        img = self.images[img_name]
        v = img.vm.copy(self.new_vm_name())
        v.state = "ready"
        v.backing = "restore"
        v.image = img_name
        chunk = self.pick(CHUNKS)
        args = ""
        if v.kind == "soakg":
            v.restore_id = self.next_restore
            self.next_restore += 1
            args = "restore=%d" % v.restore_id
        elif v.kind == "restore_touch":
            # Booted again from the start, it reads HC_ARGS only after its point.
            v.order = self.pick(["forward", "backward", "random"])
            args = "order=" + v.order
            v.discard_safe = v.phase == "point"
        out = self.cmd("vm create %s restore=%s chunk=%s -- %s" % (v.name, img_name, chunk, args))
        self.expect_in(out, "vm %s created: %d MiB restored from image '%s' in %d KiB chunks" %
                       (v.name, v.mem, img_name, int(chunk[:-1]) * (1024 if chunk[-1] == "M" else 1)),
                       "restore")
        self.vms[v.name] = v
        return "%s from %s, chunk %s, %s" % (v.name, img_name, chunk, self.where(v))

    def do_dirty(self, v):
        if v.kind == "dirty" or not v.dirty:
            op = "get" if v.dirty else "on"
        else:
            op = self.pick(["get", "get", "off"])
        out = self.cmd("vm dirty %s %s" % (v.name, op))
        if op != "get":
            self.expect_in(out, "vm %s dirty logging %s" % (v.name, op), "dirty " + op)
            v.dirty = op == "on"
            v.written = set()
            return op
        m = re.search(r"^vm %s dirty: (\d+) pages$" % re.escape(v.name), out, re.M)
        if not m:
            raise Fail("vm dirty %s get:\n%s" % (v.name, out))
        count = int(m.group(1))
        if v.kind == "dirty":
            v.dirty_count = count
            return "get: %d pages" % count
        # soakg: the log's pages in its area are exactly those it wrote.
        ranges = parse_ranges(out)
        first = AREA // PAGE
        low = sum(e - s for s, e in ranges if e <= first)
        area = set()
        for s, e in ranges:
            area.update(p - first for p in range(max(s, first), e))
        complete = len(ranges) < 8   # `get` shows the first 8 ranges
        written = v.written
        v.written = set()
        if (complete and (area != written or count != low + len(area))) or \
           (not complete and (not area <= written or count < len(written))):
            missing = sorted(written - area)[:8]
            extra = sorted(area - written)[:8]
            raise Fail("dirty log of %s: %d pages, %d in its area; the guest wrote %d there "
                       "(missing e.g. %s, extra e.g. %s)%s:\n%s" %
                       (v.name, count, len(area), len(written), missing, extra,
                        "" if complete else " [ranges cut at 8]", out))
        return "get: %d pages, %d in its area as written%s" % (
            count, len(written), "" if complete else " (ranges cut at 8)")

    def done(self, v):
        return v.state in ("exited", "stopped") or v.doomed

    def discard_kind(self, v):
        """lost: the guest must see the loss; refault: it must find the image's
        data again; doom: it cannot tell, so it is only destroyed afterwards."""
        if v.kind == "soakg" and v.runnable() and v.discards < MAX_LOST:
            return "lost"
        if v.kind == "restore_touch" and v.runnable() and v.discard_safe and v.phase == "point":
            return "refault"
        return "doom"

    def do_discard(self, v):
        rng = self.rng
        pages = v.pages()
        kind = self.discard_kind(v)
        if kind == "doom":
            lo, hi = 0, v.mem * MIB // PAGE
        else:
            lo, hi = AREA // PAGE, AREA // PAGE + pages
        first = rng.randrange(lo, hi)
        count = rng.randint(1, min(hi - first, rng.choice([1, 16, 512, 4096])))
        out = self.cmd("vm discard %s 0x%x 0x%x" % (v.name, first * PAGE, count * PAGE))
        self.expect_in(out, "vm %s discarded 0x%x-0x%x" %
                       (v.name, first * PAGE, (first + count) * PAGE - 1), "discard")
        if kind == "lost":
            v.lost |= {p - AREA // PAGE for p in range(first, first + count)}
            v.discards += 1
            return "%d pages at 0x%x: the guest must see them lost" % (count, first * PAGE)
        if kind == "refault":
            return "%d pages at 0x%x: they refault from the image" % (count, first * PAGE)
        v.doomed = True
        return "%d pages at 0x%x: only destroyed from now on" % (count, first * PAGE)

    def do_destroy(self, v):
        out = self.cmd("vm destroy " + v.name)
        self.expect_in(out, "vm %s destroyed" % v.name, "destroy")
        del self.vms[v.name]
        if v.family is not None:
            v.family.discard(v.name)
            if len(v.family) == 1:     # alone, the last member leaves the family
                self.vms[next(iter(v.family))].family = None
        return "%s (%s)" % (v.state, v.kind)

    def do_free(self, name):
        users = self.image_users(name)
        out = self.cmd("vm image-free " + name)
        if users:
            self.expect_in(out, "restores from '%s': destroy it first" % name, "image-free refused")
            return "refused: %s restore from it" % ", ".join(u.name for u in users)
        self.expect_in(out, "image %s freed" % name, "image-free")
        del self.images[name]
        return "freed"

    def cleanup(self):
        for v in sorted(self.vms.values(), key=lambda v: int(v.name[1:])):
            self.do_destroy(v)
        for name in sorted(self.images):
            self.do_free(name)
        self.check_all()
        self.check_memory("at the end")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=float(os.environ.get("SOAK_SECONDS") or 300))
    ap.add_argument("--seed", type=int, default=int(os.environ.get("SOAK_SEED") or 0) or None)
    ap.add_argument("--steps", type=int, default=int(os.environ.get("SOAK_STEPS") or 0) or None)
    ap.add_argument("--qemu-mem", default=os.environ.get("SOAK_QEMU_MEM") or "2G")
    ap.add_argument("--mode", choices=["life", "hostile-smp"],
                    default=os.environ.get("SOAK_MODE") or "life")
    ap.add_argument("--machine", choices=["qemu", "bochs"],
                    default=os.environ.get("SOAK_MACHINE") or "qemu")
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else random.SystemRandom().randrange(1, 1 << 31)
    if a.mode == "hostile-smp":
        import soak_smp
        return soak_smp.run(a, seed, random.Random(seed))
    if a.machine != "qemu":
        ap.error("the life-cycle soak runs under QEMU only")
    print("soak: seed %d, %s, %s; QEMU -m %s" % (
        seed, "%g s" % a.seconds if a.seconds else "no time limit",
        "%d steps at most" % a.steps if a.steps else "steps until the time is up", a.qemu_mem),
        flush=True)
    iso = make_iso("soak", "", [os.path.join(GUESTS_DIR, g + ".elf") for g in GUESTS])
    m = Machine(iso, mem=a.qemu_mem)
    soak = Soak(m, random.Random(seed))
    n = 0
    action = name = "boot"
    t0 = time.time()
    try:
        m.expect(PROMPT, timeout=120)
        soak.warm_up()
        while (not a.steps or n < a.steps) and (not a.seconds or time.time() - t0 < a.seconds):
            n += 1
            action, target, name = soak.choose()
            result = soak.do(action, target)
            soak.check_all()
            print("step %5d %-8s %-5s %s" % (n, action, name, result), flush=True)
        n += 1
        action, name = "cleanup", "all"
        soak.cleanup()
    except (Fail, Timeout) as e:
        print("step %5d %-8s %-5s FAILED" % (n, action, name), flush=True)
        print("soak: FAILED at step %d (%s %s), seed %d: %s" % (n, action, name, seed, e))
        print("soak: console tail:\n%s" % m.log[-4000:])
        print("soak: replay with: make soak SOAK_SEED=%d SOAK_STEPS=%d SOAK_SECONDS=0" %
              (seed, n), flush=True)
        summary(soak, n - 1, seed, t0, 1)
        return 1
    finally:
        m.close()
    summary(soak, n - 1, seed, t0, 0)
    return 0


def summary(soak, steps, seed, t0, failures):
    print("soak: %d steps in %.0f s, seed %d: %s; %d VMs created, %d images taken, free memory "
          "checked %d times; %d failures" % (
              steps, time.time() - t0, seed,
              ", ".join("%s %d" % (a, soak.counts[a]) for a in ACTIONS),
              soak.next_vm - 1, soak.next_image - 1, soak.memory_checks, failures), flush=True)


if __name__ == "__main__":
    sys.exit(main())
