"""A running Linux guest snapshotted, restored and cloned (issue 27, parts 3
and 4), under QEMU with two host CPUs, AMD SVM. Debian's stock kernel with 2
vCPUs and the busybox initramfs (guests/linux/) gives its shell on COM1
through `vm console`; memsum (guests/linux/memsum.c) runs in the background,
rewriting and checking 16 MiB every 500 ms and logging one line a
generation to /tmp/memsum.log. Ctrl-] pauses the VM wherever its vCPUs are.

linux_snapshot: snapshot the paused VM, destroy it, restore it and attach
again: the shell answers; a typed 60-character token comes back whole;
`sleep 1` returns, on each vCPU; the uptime and the date go on from where
they were (no step back) and move by about the wall time; both vCPUs are
online and each runs a program; memsum's log goes on with consecutive
generations, every line whole and ok. Then, in the same boot, the restored
VM paused again is the parent of 8 clones, each told a different seed
through its console (a clone cannot be given new arguments), each writing
its own data on top of the memory it shares copy-on-write; then each again,
its log whole and ok with its own sums, after the others ran; destroying the
clones gives back exactly the memory they took, the parent goes on with its
own data; `poweroff -f` is an ACPI power off, `vm audit` is clean, and
memory comes back once the VM and its image are gone (but for the one page
sprig sets up for the boot's first clone that runs).

Timing under load is noisy: the clock checks only bound the guest's time by
the host's loosely (no stall, no step back, no leap)."""
import hashlib
import os
import re
import time

from machine import PROMPT, ROOT, Machine, Timeout, make_iso, scenario_main, make_linux_images

SCENARIOS = ["linux_snapshot"]

VMLINUZ = os.path.join(ROOT, "build", "linux", "vmlinuz")
INITRD = os.path.join(ROOT, "build", "linux", "initrd")
GUEST_MIB = 256
WORK_MIB = 16
PERIOD_MS = 500
LOG = "/tmp/memsum.log"
SEEDFILE = "/tmp/seed"
CLONES = 8
# A line typed and echoed back: lost or doubled characters change it.
TOKEN = hashlib.sha256(b"sprig linux snapshot").hexdigest()[:60]

MEMSUM_OK = re.compile(r"^memsum: gen (\d+) seed (\d+) ok sum (0x[0-9a-f]{16}) dt (\d+) max (\d+)$")


class Shell:
    """The guest's shell on an attached `vm console`: each command is
    followed by a marker whose number the shell computes, so that the echo
    of the typed line never matches it."""

    def __init__(self, m):
        self.m = m
        self.n = 0

    def run(self, cmd, timeout=60):
        """(output, exit status) of cmd; output holds the echoed line too.
        Returns at the next prompt, so that nothing is typed ahead."""
        self.n += 1
        self.m.send("%s; echo @@$((%d))@ rc=$?\r" % (cmd, self.n))
        out = self.m.expect("@@%d@ rc=" % self.n, timeout)
        rc = self.m.expect("\n", timeout).strip()
        self.m.expect("# ", timeout)
        return out.replace("\r", ""), rc

    def value(self, cmd, key, timeout=60):
        """The value `cmd` prints as KEY=VALUE, or None."""
        out, _ = self.run(cmd, timeout)
        r = re.search(r"^%s=(\S+)$" % key, out, re.M)
        return r.group(1) if r else None


def boot(check, m, name):
    """Create a 2-vCPU Linux VM and attach to it until its shell answers;
    returns the seconds that took."""
    out = m.command("vm create %s vmlinuz initrd=initrd vcpus=2 mem=%dM -- console=ttyS0 quiet"
                    % (name, GUEST_MIB))
    check(name + "/created", "vm %s created" % name in out and "2 vCPUs" in out, out)
    t = time.time()
    m.send("vm console %s timeout=3600\r" % name)
    m.expect("sprig-linux: up, 2 CPUs", timeout=240)
    m.expect("# ", timeout=60)
    return time.time() - t


def start_memsum(check, sh, label, gens=3):
    sh.run("memsum %d %d %s > %s 2>&1 & true" % (WORK_MIB, PERIOD_MS, SEEDFILE, LOG))
    check(label + "/memsum-runs", wait_gen(sh, gens - 1) is not None, sh.m.log[-2000:])


def last_gen(sh):
    """The generation of memsum's last line, or None."""
    g = sh.value("echo G=$(tail -n 1 %s | cut -d' ' -f3)" % LOG, "G")
    return int(g) if g and g.isdigit() else None


def wait_gen(sh, gen, tries=60):
    """Wait until memsum logged generation gen (or later); its last one."""
    for _ in range(tries):
        g = last_gen(sh)
        if g is not None and g >= gen:
            return g
        sh.run("sleep 1")
    return None


def memsum_log(sh):
    """memsum's log, printed through the serial line: its lines."""
    out, _ = sh.run("cat " + LOG, timeout=120)
    return [l for l in out.splitlines() if l.startswith("memsum:")]


def check_log(check, label, lines, after_gen, seeds):
    """Every line whole and ok, the generations consecutive from 0 past
    after_gen, the seeds those allowed; returns {gen: (seed, sum)}."""
    parsed = [MEMSUM_OK.match(l) for l in lines]
    bad = [l for l, p in zip(lines, parsed) if p is None]
    check(label + "/log-lines-whole-and-ok", bool(lines) and not bad, "\n".join(bad[:10] or lines[-5:]))
    gens = [int(p.group(1)) for p in parsed if p]
    check(label + "/log-gens-consecutive", gens == list(range(len(gens))),
          " ".join(map(str, gens)))
    check(label + "/log-goes-on", bool(gens) and gens[-1] > after_gen,
          "last gen %s, before the pause %d" % (gens[-1:] or None, after_gen))
    used = {int(p.group(2)) for p in parsed if p}
    check(label + "/log-seeds", used <= set(seeds), "seeds %s, expected %s" % (used, seeds))
    return {int(p.group(1)): (int(p.group(2)), p.group(3)) for p in parsed if p}


def clock(sh):
    """(uptime seconds, date seconds, host time) read together."""
    out, _ = sh.run("echo CLK=$(cut -d' ' -f1 /proc/uptime),$(date +%s)")
    r = re.search(r"^CLK=([\d.]+),(\d+)$", out, re.M)
    return (float(r.group(1)), int(r.group(2)), time.time()) if r else None


def about_wall(guest_s, host_s):
    """The guest's clock moved, and by about the host's time: a loose bound,
    for console latency and a loaded machine."""
    return guest_s > 0 and guest_s <= host_s * 1.5 + 2 and guest_s >= host_s * 0.5 - 2


def detach(check, m, name, label):
    m.send("\x1d")
    out = m.expect(PROMPT, timeout=60)
    check(label + "/paused", "vm %s stopped: detached" % name in out, out[-2000:])


def attach(check, m, name, label):
    m.send("vm console %s timeout=3600\r" % name)
    out = m.expect("(Ctrl-] detaches)", timeout=60)
    check(label + "/attached", "vm %s: console attached" % name in out, out[-2000:])


def power_off(check, m, sh, name, label):
    sh.m.send("poweroff -f\r")
    out = m.expect(PROMPT, timeout=120)
    check(label + "/acpi-poweroff", "vm %s exited: status 0 (ACPI power off)" % name in out,
          out[-2000:])
    out = m.command("vm audit " + name)
    check(label + "/audit-clean", "mmu audit: ok, 0 errors" in out, out)


def free_bytes(out):
    """The bytes in every free block of `mem` output."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return sum(int(n[:-1]) * units[n[-1]] * int(c)
               for n, c in re.findall(r"(\d+[KMG]):(\d+)", out))


def responds(check, m, sh, name, label):
    """The first command after a pause: the shell answers it, or the
    scenario cannot go on (a guest that lost its console): then the failure
    shows the VM's counters."""
    try:
        out, rc = sh.run("echo R=$((6 * 7))", timeout=60)
    except Timeout as e:
        m.send("\x1d")
        m.expect(PROMPT, timeout=60)
        check(label + "/shell-answers", False, "%s\nstats %s:\n%s" %
              (e, name, m.command("stats " + name)))
        return False
    return check(label + "/shell-answers", "R=42" in out and rc == "0", out)


def linux_snapshot(check):
    make_linux_images()
    m = Machine(make_iso("linux-snap", "", [VMLINUZ, INITRD]), smp=2, mem="2G")
    t_scenario = time.time()
    try:
        m.expect(PROMPT, timeout=120)
        mem0 = m.command("mem")
        print("# linux boot to its shell: %.1f s" % boot(check, m, "s"), flush=True)
        sh = Shell(m)
        print("# guest clocksource: %s" % sh.value(
            "echo CS=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)",
            "CS"), flush=True)
        start_memsum(check, sh, "snap")
        before = clock(sh)
        gen0 = last_gen(sh)
        detach(check, m, "s", "snap")
        out = m.command("vm snapshot s img")
        check("snap/snapshot", "vm s snapshot: image 'img'" in out and "2 vCPUs" in out, out)
        m.command("vm destroy s")
        out = m.command("vm create r restore=img")
        check("snap/restored", "vm r created" in out and "2 vCPUs" in out, out)
        attach(check, m, "r", "snap")
        if not responds(check, m, sh, "r", "snap"):
            return
        out, _ = sh.run("echo " + TOKEN)
        check("snap/typed-line-whole", TOKEN in out.splitlines(), out)
        after = clock(sh)
        check("snap/clock-read", None not in (before, after), m.log[-2000:])
        if None in (before, after):
            return
        # The pause is not the guest's time: its clocks go on from where
        # they stopped, never back, never by more than the host's time.
        host = after[2] - before[2]
        check("snap/uptime-no-step-back", 0 < after[0] - before[0] <= host + 2,
              "uptime %s -> %s over %.1f s" % (before[0], after[0], host))
        check("snap/date-no-step-back", 0 <= after[1] - before[1] <= host + 2,
              "date %s -> %s over %.1f s" % (before[1], after[1], host))
        for cpu in (0, 1):
            out, rc = sh.run("taskset -c %d sleep 1" % cpu, timeout=60)
            check("snap/sleep-returns-cpu%d" % cpu, rc == "0", out)
        later = clock(sh)
        if later:
            check("snap/uptime-about-wall", about_wall(later[0] - after[0], later[2] - after[2]),
                  "uptime +%.2f s over %.1f s" % (later[0] - after[0], later[2] - after[2]))
            check("snap/sleeps-last", later[0] - after[0] >= 2,
                  "uptime +%.2f s over two sleep 1" % (later[0] - after[0]))
            check("snap/date-about-wall", about_wall(later[1] - after[1], later[2] - after[2]),
                  "date +%d s over %.1f s" % (later[1] - after[1], later[2] - after[2]))
        out, _ = sh.run("echo ON=$(cat /sys/devices/system/cpu/online) N=$(nproc)")
        check("snap/both-vcpus-online", re.search(r"^ON=0-1 N=2$", out, re.M) is not None, out)
        out, _ = sh.run("for c in 0 1; do taskset -c $c awk '{print \"RAN=\" $39}' "
                        "/proc/self/stat; done")
        check("snap/both-vcpus-run", re.findall(r"^RAN=(\d)$", out, re.M) == ["0", "1"], out)
        g = wait_gen(sh, gen0 + 4)
        check("snap/memsum-goes-on", g is not None, m.log[-2000:])
        check_log(check, "snap", memsum_log(sh), gen0, [0])
        # The restored guest, paused again, is the clones' parent.
        detach(check, m, "r", "snap/before-clones")
        kept_once = clone_round(check, m, sh, "r", gen0)
        if kept_once is None:
            return
        power_off(check, m, sh, "r", "snap")
        m.command("vm destroy r")
        out = m.command("vm image-free img")
        check("snap/image-freed", "image img freed" in out, out)
        out = m.command("mem")
        check("snap/memory-back", free_bytes(mem0) - free_bytes(out) == kept_once,
              "kept once %d bytes\n%s%s" % (kept_once, mem0, out))
    finally:
        m.close()
        print("# linux_snapshot: %.1f s" % (time.time() - t_scenario), flush=True)


def clone_round(check, m, sh, parent, gen0):
    """CLONES clones of the paused `parent` (its memsum running since
    generation gen0): each goes on, writes its own seed's data and checks it;
    memory comes back when they are gone; then the parent goes on, attached,
    untouched by them. The memory the first clone of the boot kept (sprig's
    one-time set-up), or None when a guest stopped answering."""
    clones = ["c%d" % k for k in range(1, CLONES + 1)]
    # The first clone that runs keeps what sprig sets up once (measured
    # here: every later clone must give back all it took, and that must be
    # all that is missing when the parent is gone).
    before_first = m.command("mem")
    m.command("vm clone %s w0" % parent)
    attach(check, m, "w0", "clones/w0")
    if not responds(check, m, sh, "w0", "clones/w0"):
        return None
    power_off(check, m, sh, "w0", "clones/w0")
    m.command("vm destroy w0")
    mem1 = m.command("mem")
    kept_once = free_bytes(before_first) - free_bytes(mem1)
    print("# memory the first clone of the boot keeps: %d bytes" % kept_once, flush=True)
    check("clones/first-clone-keeps-little", 0 <= kept_once <= 64 << 10, before_first + mem1)
    for c in clones:
        out = m.command("vm clone %s %s" % (parent, c))
        check("clones/%s-made" % c, "vm %s cloned from %s" % (c, parent) in out and
              "2 vCPUs" in out, out)
    # Each clone is told its own seed and writes its own data.
    for k, c in enumerate(clones, 1):
        attach(check, m, c, "clones/" + c)
        if not responds(check, m, sh, c, "clones/" + c):
            return None
        sh.run("echo %d > %s" % (1000 + k, SEEDFILE))
        g = last_gen(sh)
        check("clones/%s-writes-its-seed" % c, g is not None and
              wait_gen(sh, g + 2) is not None, m.log[-2000:])
        detach(check, m, c, "clones/" + c)
    # Then each again, after the others wrote theirs: its own data, whole.
    logs = {}
    for k, c in enumerate(clones, 1):
        attach(check, m, c, "clones/%s-again" % c)
        if not responds(check, m, sh, c, "clones/%s-again" % c):
            return None
        logs[c] = check_log(check, "clones/" + c, memsum_log(sh), gen0, [0, 1000 + k])
        power_off(check, m, sh, c, "clones/" + c)
    # The same generation in every clone, each with its own seed: its own data.
    common = min(max(log) for log in logs.values() if log)
    at = {c: logs[c].get(common) for c in clones}
    check("clones/own-seeds", all(at[c] and at[c][0] == 1000 + k
                                  for k, c in enumerate(clones, 1)), str(at))
    check("clones/sums-differ", len({v[1] for v in at.values() if v}) == CLONES, str(at))
    for c in clones:
        m.command("vm destroy " + c)
    out = m.command("mem")
    check("clones/memory-back-after-clones", free_bytes(out) == free_bytes(mem1), mem1 + out)
    # The parent goes on with its own seed, untouched by the clones.
    attach(check, m, parent, "clones/parent")
    if not responds(check, m, sh, parent, "clones/parent"):
        return None
    wait_gen(sh, last_gen(sh) + 2)
    check_log(check, "clones/parent", memsum_log(sh), gen0, [0])
    return kept_once


if __name__ == "__main__":
    scenario_main(globals(), "linux_snapshot")
