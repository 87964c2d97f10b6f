"""Run the benchmarks of one report and gather their @bench lines: the host
benchmarks (build/host/bench), the in-guest scenarios in one boot of sprig
under QEMU (SVM with nested paging, 4 CPUs: the concurrency experiments run
there too, and the same experiments inside a Linux guest, where="linux"), and
the VMX rows in one boot under Bochs.
Each step prints a progress line. The QEMU and Bochs machinery is the e2e
tests' own (tests/e2e/machine.py)."""
import datetime
import os
import platform
import subprocess
import sys
import time

from . import benchlines, kut

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
import bare  # noqa: E402  (tests/e2e/bare.py)
import machine  # noqa: E402  (tests/e2e/machine.py)

BENCH = os.path.join(ROOT, "build", "host", "bench")

# Host benchmarks, by the name build/host/bench selects them with (a prefix:
# "rmap" runs rmap and rmap_fork).
HOST = [("zap", "leaf-empty hint: zaps, hint off/on"),
        ("split", "split on fault: exec and dirty logging"),
        ("rmap", "rmap operations and the fork workload"),
        ("prefetch", "prefetch on restore"),
        ("curve", "cost curves: zap time against range, fork time against clones")]

# In-guest scenarios in one QEMU boot: (console command, timeout in seconds).
# The one-vCPU runs first, then the concurrency experiments: the vCPUs on CPUs
# 1 to 3 while the console CPU zaps (bench zap) or waits.
QEMU = [("bench zap same16", 600), ("bench zap same4", 600),
        ("bench exec", 300), ("bench dirty", 600),
        ("bench rmap 10 100", 600), ("bench prefetch", 900),
        ("bench zap same16 vcpus=3", 1800), ("bench zap same4 vcpus=3", 1800),
        # More vCPUs than CPUs 1 to 3: they share them (3 runs each way: about 2 min).
        ("bench zap same16 vcpus=4 reps=3", 1800), ("bench zap same4 vcpus=4 reps=3", 1800),
        ("bench zap same16 vcpus=8 reps=3", 1800), ("bench zap same4 vcpus=8 reps=3", 1800),
        ("bench exec vcpus=3", 600), ("bench dirty vcpus=3", 900),
        ("bench faults runs=5", 900), ("bench share ms=10000 runs=3", 600)]
QEMU_CPUS = 4
QEMU_MEM = "2G"  # the Linux guest's 512 MiB beside the others
# The same experiments inside a Linux guest (its sprig-bench workload), in the
# same boot: where="linux".
LINUX = [("bench zap same16 guest=linux vcpus=3", 1800), ("bench zap same4 guest=linux vcpus=3", 1800),
         ("bench exec guest=linux vcpus=3", 900), ("bench dirty guest=linux vcpus=3", 900),
         ("bench rmap guest=linux 100", 1200), ("bench prefetch guest=linux", 1800),
         ("bench reporting vcpus=3", 1800), ("bench boot guest=linux", 1800),
         ("bench pv guest=linux runs=3", 1800)]
LINUX_MODULES = [os.path.join(ROOT, "build", "linux", m) for m in ("vmlinuz", "initrd")]
# The stale-translation test, remote flush on, then off (mmu remote_flush=).
STALE = [("on", 300), ("off", 300)]
RMAPS_CLONES = 20

# The Bochs rows (Intel VMX with EPT), as the issue limits them: (command,
# timeout, how the step runs).
BOCHS = [("bench exec mib=64", 1200, "console"), ("bench zap same4", 1200, "console")]
# The fault waits in virtual time, in a second Bochs boot with 4 CPUs: Bochs
# runs them all in one host thread, a few instructions each in turn, and its
# TSC counts instructions. The remote flush is off for them: its wait for the
# kicked vCPUs often takes about 10 ms of Bochs's time, which would stand in
# for every tail (and Bochs flushes its TLB at every VM entry and exit anyway).
# The same boot measures the scheduler's shares where no host preempts its
# CPUs (bench share; docs/platform.md, "Shares with equal work").
BOCHS_CPUS = 4
BOCHS_SMP = [("bench zap same16 vcpus=3 reps=3", 1800, "no_flush"),
             ("bench zap same4 vcpus=3 reps=3", 1800, "no_flush"),
             ("bench share vcpus=16 ms=500 runs=3", 900, "console")]

GUESTS = ["churn", "exec", "dirty", "rmapread", "restore_touch", "stale", "probe"]
# The probe guest bare (guests/probe.c): the emulator's own limit for an exit.
PROBE_EXITS = 100000


def sprig_version():
    p = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=ROOT,
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return p.stdout.strip() or "unknown"


def machine_info():
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem_kib = 0
    try:
        with open("/proc/meminfo") as f:
            mem_kib = int(f.readline().split()[1])
    except (OSError, ValueError, IndexError):
        pass
    qemu = subprocess.run(["qemu-system-x86_64", "--version"], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True).stdout.split("\n")[0]
    return {"hostname": platform.node(), "cpu": cpu, "cores": os.cpu_count(),
            "mem_gib": round(mem_kib / 2**20, 1), "kernel": platform.release(),
            "os": platform.platform(), "qemu": qemu}


class Run:
    """One report's data, gathered step by step."""

    def __init__(self, total_steps):
        self.data = {"sprig_version": sprig_version(), "machine": machine_info(),
                     "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
                         timespec="seconds"),
                     "records": [], "steps": []}
        self.total = total_steps
        self.done = 0
        self.t0 = time.time()

    def step(self, where, name, fn):
        """Run fn() -> (output, ok, records); print one progress line."""
        self.done += 1
        print("[%d/%d] %-5s %s ..." % (self.done, self.total, where, name), flush=True)
        t = time.time()
        try:
            output, ok, records = fn()
        except Exception as e:  # a failed step is recorded, the report goes on
            output, ok, records = "%s: %s" % (type(e).__name__, e), False, []
        secs = time.time() - t
        self.data["records"] += records
        self.data["steps"].append({"where": where, "name": name, "seconds": round(secs, 1),
                                   "ok": ok, "records": len(records),
                                   "tail": "" if ok else output[-2000:]})
        print("[%d/%d] %-5s %s: %s, %d @bench lines, %.0f s (total %.0f s)"
              % (self.done, self.total, where, name, "ok" if ok else "FAILED", len(records),
                 secs, time.time() - self.t0), flush=True)
        return output


def host_step(name):
    def fn():
        p = subprocess.run([BENCH, name], cwd=ROOT, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        recs = benchlines.parse(p.stdout, "host")
        return p.stdout, p.returncode == 0 and bool(recs), recs
    return fn


def bare_probe_step():
    """The probe guest bare under QEMU, as sprig runs under it (-cpu max):
    a VMRUN/VMMCALL loop (the emulator's limit for one exit), the same with
    nested paging, and a loop of nested page faults, each mapped."""
    def fn():
        status, out = bare.run_bare("probe", "exits=%d" % PROBE_EXITS, timeout=300)
        recs = benchlines.parse(out, "bare")
        return out, status == 0 and bool(recs), recs
    return fn


def console_step(console, cmd, timeout, where):
    def fn():
        out = console.command(cmd, timeout=timeout)
        recs = benchlines.parse(out, where)
        benchlines.zap_spreads(out, recs)
        return out, bool(recs), recs
    return fn


def with_remote_flush(console, flush, fn):
    """fn() with the remote flush FLUSH (mmu remote_flush=); on again after."""
    console.command("mmu remote_flush=" + flush)
    try:
        return fn()
    finally:
        console.command("mmu remote_flush=on")


def stale_step(console, flush, timeout, where):
    """bench stale with the remote flush FLUSH. The row says which way it ran
    (remote_flush=): that must be FLUSH."""
    def fn():
        out = with_remote_flush(console, flush,
                                lambda: console.command("bench stale", timeout=timeout))
        recs = benchlines.parse(out, where)
        return out, bool(recs) and all(r.get("remote_flush") == flush for r in recs), recs
    return fn


def no_flush_step(console, cmd, timeout, where):
    """console_step with the remote flush off."""
    step = console_step(console, cmd, timeout, where)
    return lambda: with_remote_flush(console, "off", step)


def rmaps_step(console, where, clones):
    """A parent and CLONES clones that read its 1 MiB: the parent's rmaps."""
    def fn():
        log = [console.command("vm create rp rmapread mem=16M")]
        log.append(console.command("vm run rp", timeout=60))
        for i in range(clones):
            log.append(console.command("vm clone rp rc%d" % i))
            log.append(console.command("vm run rc%d timeout=30" % i, timeout=60))
        out = console.command("rmaps rp")
        log.append(out)
        for i in range(clones):
            console.command("vm destroy rc%d" % i)
        console.command("vm destroy rp")
        recs = benchlines.rmaps(out, where, "parent and %d clones" % clones)
        for r in recs:
            r["clones"] = clones
        return "\n".join(log), bool(recs), recs
    return fn


def bochs_steps(run, mods, cpus, steps):
    """One Bochs boot (VMX, EPT) with CPUS CPUs, and its steps."""
    consoles = {}

    def boot():
        b = machine.BochsConsole(machine.make_iso("report-vmx", "", mods), cpus=cpus)
        consoles["bochs"] = b
        out = b.expect(machine.PROMPT, timeout=300 * cpus)
        return out, "vmx with ept" in out, []
    run.step("bochs", "boot sprig (VMX, EPT, %d CPU%s)" % (cpus, "s" if cpus > 1 else ""), boot)
    try:
        for cmd, timeout, how in steps:
            if "bochs" in consoles:
                fn = no_flush_step if how == "no_flush" else console_step
                run.step("bochs", cmd, fn(consoles["bochs"], cmd, timeout, "bochs"))
    finally:
        if "bochs" in consoles:
            consoles["bochs"].close()


def collect(bochs=True):
    """Every step; returns the run's data (a dict, written as JSON)."""
    total = (len(HOST) + 1 + 1 + len(QEMU) + len(LINUX) + len(STALE) + 1 +
             (2 + len(BOCHS) + len(BOCHS_SMP) if bochs else 0))
    run = Run(total)
    for name, what in HOST:
        run.step("host", "bench %s (%s)" % (name, what), host_step(name))
    run.step("bare", "probe guest, %d exits of each loop" % PROBE_EXITS, bare_probe_step())
    mods = [os.path.join(machine.GUESTS_DIR, g + ".elf") for g in GUESTS]

    consoles = {}

    def boot_qemu():
        m = machine.Machine(machine.make_iso("report", "", mods + LINUX_MODULES), smp=QEMU_CPUS,
                            mem=QEMU_MEM)
        consoles["qemu"] = m
        out = m.expect(machine.PROMPT, timeout=120)
        return out, True, []
    run.step("qemu", "boot sprig", boot_qemu)
    try:
        for cmd, timeout in QEMU:
            if "qemu" in consoles:
                run.step("qemu", cmd, console_step(consoles["qemu"], cmd, timeout, "qemu"))
        for cmd, timeout in LINUX:
            if "qemu" in consoles:
                run.step("linux", cmd, console_step(consoles["qemu"], cmd, timeout, "linux"))
        for flush, timeout in STALE:
            if "qemu" in consoles:
                run.step("qemu", "bench stale, mmu remote_flush=%s" % flush,
                         stale_step(consoles["qemu"], flush, timeout, "qemu"))
        if "qemu" in consoles:
            run.step("qemu", "rmaps after %d clones" % RMAPS_CLONES,
                     rmaps_step(consoles["qemu"], "qemu", RMAPS_CLONES))
    finally:
        if "qemu" in consoles:
            consoles["qemu"].close()
    if bochs:
        for cpus, steps in ((1, BOCHS), (BOCHS_CPUS, BOCHS_SMP)):
            bochs_steps(run, mods, cpus, steps)
    run.data["wall_s"] = round(time.time() - run.t0, 1)
    run.data["kut"] = kut.recorded(ROOT)
    return run.data
