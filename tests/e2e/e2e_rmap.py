"""Clones, copy on write, aliases and reclaim under SVM (QEMU -cpu max), in one
boot. The rmapfork guest writes a pattern and stops at its clone point; two
clones each check the parent's memory and write their own tags; the parent,
resumed, checks that no clone's write reached it. The shared frames' rmaps
hold several SPTEs (rmaps, max_mmu_rmap_size); a discard in one VM reclaims
them from all; an alias shows one frame at two guest-physical addresses; the
audit passes after every step."""
import os
import re

from machine import GUESTS_DIR, PROMPT, Machine, make_iso, stat

SCENARIOS = ["qemu_rmap_clones"]


def audit(m, check, name, step):
    out = m.command("vm audit " + name)
    check("rmap/audit-%s-%s" % (step, name), "mmu audit: ok" in out, out)


def qemu_rmap_clones(check):
    m = Machine(make_iso("rmap", "", [os.path.join(GUESTS_DIR, "rmapfork.elf")]))
    try:
        m.expect(PROMPT, timeout=60)
        m.command("vm create p rmapfork mem=16M")
        out = m.command("vm run p", timeout=60)
        check("rmap/clone-point", "vm p stopped: clone point" in out, out)
        for c in ["c1", "c2"]:
            out = m.command("vm clone p " + c)
            check("rmap/clone-" + c, "vm %s cloned from p" % c in out, out)
            audit(m, check, "p", "clone")
        for c in ["c1", "c2"]:
            out = m.command("vm run %s timeout=30" % c, timeout=60)
            check("rmap/cow-" + c, "rmapfork: clone ok" in out and
                  "vm %s exited: status 0" % c in out, out)
            audit(m, check, c, "cow")
        # The code and stack pages the three VMs still share: rmaps of 2-3.
        out = m.command("rmaps c2")
        row = re.search(r"^Level=4K:\s+(.*)$", out, re.M)
        check("rmap/rmaps-shared", row is not None and
              sum(int(x) for x in row.group(1).split()[2:]) > 0, out)
        st = m.command("stats c2")
        check("rmap/max-rmap-size", (stat(st, "max_mmu_rmap_size") or 0) >= 2, st)
        out = m.command("vm run p timeout=30", timeout=60)
        check("rmap/parent-isolated", "rmapfork: parent ok after clone" in out and
              "vm p exited: status 0" in out, out)
        audit(m, check, "p", "parent")
        # Reclaim: a discard in one VM zaps the shared frames in every VM.
        out = m.command("vm discard c1 0x400000 0x100000")
        check("rmap/discard", "vm c1 discarded" in out, out)
        for name in ["p", "c1", "c2"]:
            audit(m, check, name, "discard")
        for name in ["c1", "c2", "p"]:
            m.command("vm destroy " + name)
        # An alias: one backing at two guest-physical ranges.
        out = m.command("vm create a rmapfork mem=16M backing=eager alias=0x2000000:0x100000@0x400000")
        check("rmap/alias-create", "vm a created" in out, out)
        out = m.command("vm run a", timeout=60)
        check("rmap/alias-run", "vm a stopped: clone point" in out, out)
        audit(m, check, "a", "alias")
        out = m.command("vm create b rmapfork mem=16M alias=0x2000000:0x100000@0x400000")
        check("rmap/alias-needs-eager", "cannot create 'b'" in out, out)
        m.command("vm destroy a")
    finally:
        m.close()
