"""The hostile-smp mode of sprig's soak (tests/soak.py --mode hostile-smp):
hostile guests on several vCPUs (guests/hostile.c's storm mode: pc-testdev
flush storms, balloon releases, CR0/CR3/CR4 writes and trips through real,
protected, 32-bit, PAE and long mode on every vCPU at once, the BSP first
running one of the hostile modes) beside keeper VMs, in one boot of sprig:
under QEMU (AMD SVM) with 4 CPUs, or under Bochs (Intel VMX,
corei7_skylake_x) with 2. A seeded random schedule of steps:

  create    a hostile VM: 2 to 4 vCPUs (2 under Bochs), sometimes on a list
            of host CPUs that holds the console's, a main mode, a seed
  run       a hostile VM with a short timeout= (it pauses mid-storm) or to
            its end: exit 0 with "PASS storm", or the stop its main mode
            asks for (triple fault, unknown hypercall); never a FAIL line
  clone     a hostile VM paused mid-storm (its vCPUs anywhere: in real
            mode, PAE paging, a flush); the clone runs on to its own end
  destroy   a hostile VM

Two keepers (soakg, eager memory, one vCPU) run one round after every
step: each checks every word of its memory and writes some (a flush or a
zap that reached the wrong VM shows there). After every step: `vm audit` of
every VM, `vm list` against the model, and, with no hostile VM left, the
free memory against its value after the warm-up; at the end, with the
keepers gone too, against its value before them.

Every step has a time limit (STEP_LIMIT per machine). A step that does not
finish within it is a hang: the soak prints every CPU's state (QEMU's
monitor or Bochs's debugger, tests/e2e/monitor.py: registers, the RIP and
its callers named against build/sprig.elf) and sprig's console tail, and
fails."""
import os
import re
import time

from machine import GUESTS_DIR, PROMPT, Machine, Timeout, guest_lines, make_iso
from monitor import BochsDebugConsole, Qmp, Symbols

GUESTS = ["soakg", "hostile"]
ACTIONS = ["create", "run", "clone", "destroy"]
WEIGHTS = {"create": 6, "run": 20, "clone": 10, "destroy": 5}
MAX_HOSTILE = 4
KEEPERS = 2
HOSTILE_MEM = 8         # MiB
# The hostile modes the BSP runs first, and how each ends the VM (None: exit 0).
MAINS = {None: None, "cpuid": None, "msr": None, "msr-policy": None, "ports": None,
         "modes": "triple fault", "hypercall": "unknown hypercall 0x5350000a"}
MACHINES = {
    # host CPUs, vCPUs of a hostile VM, its steps per vCPU, `vm run` timeouts,
    # a step's limit (s), host CPU lists (None: sprig's default), main modes
    "qemu": dict(cpus=4, vcpus=(2, 3, 4), iters=(300, 1000, 3000), run=(1, 2, 5, 30),
                 limit=240, lists=(None, None, "0-3", "0,1", "1-3"), mains=list(MAINS)),
    "bochs": dict(cpus=2, vcpus=(2,), iters=(50, 100, 200), run=(2, 5, 30), limit=600,
                  lists=("0,1", "0,1", None), mains=[m for m in MAINS if m != "ports"]),
}


class Fail(Exception):
    pass


class Hostile:
    def __init__(self, name, vcpus, main, iters, seed):
        self.name, self.vcpus, self.main, self.iters, self.seed = name, vcpus, main, iters, seed
        self.state = "ready"
        self.lines = []         # the guest's lines so far (a clone inherits its parent's)

    def copy(self, name):
        c = Hostile(name, self.vcpus, self.main, self.iters, self.seed)
        c.lines = list(self.lines)
        return c


class HostileSoak:
    def __init__(self, console, rng, machine, dump):
        self.m = console
        self.rng = rng
        self.cfg = MACHINES[machine]
        self.dump = dump        # every CPU's state, as text
        self.vms = {}           # hostile VMs by name
        self.keepers = {}       # name -> rounds done
        self.next_vm = 1
        self.counts = {a: 0 for a in ACTIONS}
        self.deadline = None
        self.free_keepers = self.free_base = None
        self.memory_checks = 0

    # --- console -------------------------------------------------------

    def cmd(self, line):
        left = self.deadline - time.time()
        if left <= 0:
            raise Timeout("the step's limit of %d s passed" % self.cfg["limit"])
        return self.m.command(line, timeout=left)

    def expect_in(self, out, text, what):
        if text not in out:
            raise Fail("%s: expected %r in:\n%s" % (what, text, out))

    def free(self):
        out = self.cmd("mem")
        m = re.search(r"^free blocks: (.*)$", out, re.M)
        if not m or "refused frees 0" not in out:
            raise Fail("`mem` has no free blocks line or refused frees:\n" + out)
        return sum(int(s[:-1]) * {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[s[-1]] * int(c)
                   for s, c in re.findall(r"(\d+[KMG]):(\d+)", m.group(1))), out

    def check_free(self, want, when):
        self.memory_checks += 1
        got, out = self.free()
        if got != want:
            raise Fail("free memory %s is %d bytes, %d expected (%+d):\n%s" %
                       (when, got, want, got - want, out))

    # --- keepers -------------------------------------------------------

    def keeper_round(self, name):
        n = self.keepers[name] + 1
        out = self.cmd("vm run %s timeout=%d" % (name, self.cfg["limit"] // 2))
        lines = [l for l in guest_lines(out, name) if not l.startswith("soakg: %d MiB" % 1)]
        ok = re.compile(r"^soakg: round %d ok: 256 pages checked, wrote \d+ pages from page \d+, "
                        r"lost 0$" % n)
        point = "clone point" if n % 2 else "snapshot point"
        if len(lines) != 1 or not ok.match(lines[0]) or \
           "vm %s stopped: %s after " % (name, point) not in out:
            raise Fail("keeper %s, round %d: expected one 'round %d ok' line and a pause at its "
                       "%s:\n%s" % (name, n, n, point, out))
        self.keepers[name] = n

    # --- steps ---------------------------------------------------------

    def new_name(self):
        name = "h%d" % self.next_vm
        self.next_vm += 1
        return name

    def candidates(self, action):
        vms = [self.vms[n] for n in sorted(self.vms, key=lambda n: int(n[1:]))]
        if action == "create":
            return [None] if len(self.vms) < MAX_HOSTILE else []
        if action == "run":
            return [v for v in vms if v.state in ("ready", "paused")]
        if action == "clone":
            return [v for v in vms if v.state == "paused"] if len(self.vms) < MAX_HOSTILE else []
        return vms

    def choose(self):
        choices = [(a, c) for a in ACTIONS for c in [self.candidates(a)] if c]
        weights = [WEIGHTS[a] * (3 if a == "destroy" and len(self.vms) == MAX_HOSTILE else 1)
                   for a, _ in choices]
        action, cands = self.rng.choices(choices, weights)[0]
        if action == "destroy":
            target = self.rng.choices(cands, [6 if v.state in ("exited", "stopped") else 1
                                              for v in cands])[0]
        else:
            target = self.rng.choice(cands)
        return action, target, target.name if target else "-"

    def step(self, action, target):
        self.deadline = time.time() + self.cfg["limit"]
        result = getattr(self, "do_" + action)(target)
        self.counts[action] += 1
        for name in sorted(self.keepers):
            self.keeper_round(name)
        self.check_all()
        return result

    def check_all(self):
        names = sorted(self.keepers) + sorted(self.vms)
        for name in names:
            out = self.cmd("vm audit " + name)
            if "mmu audit: ok, 0 errors" not in out:
                raise Fail("vm audit %s:\n%s" % (name, out))
        out = self.cmd("vm list")
        seen = {f[0]: f[1] for f in (l.split() for l in out.splitlines())
                if len(f) >= 2 and f[0] != "no"}
        want = {n: v.state for n, v in self.vms.items()}
        want.update({n: "paused" for n in self.keepers})
        if seen != want:
            raise Fail("vm list says %s, the model %s:\n%s" % (seen, want, out))
        if not self.vms and self.free_keepers is not None:
            self.check_free(self.free_keepers, "with only the keepers")

    def do_create(self, _):
        rng, cfg = self.rng, self.cfg
        v = Hostile(self.new_name(), rng.choice(cfg["vcpus"]), rng.choice(cfg["mains"]),
                    rng.choice(cfg["iters"]), rng.randrange(1 << 30))
        cpus = rng.choice(cfg["lists"])
        out = self.cmd("vm create %s hostile mem=%dM vcpus=%d%s -- storm cpus=%d iters=%d seed=%d%s"
                       % (v.name, HOSTILE_MEM, v.vcpus, " cpus=" + cpus if cpus else "", v.vcpus,
                          v.iters, v.seed, " main=" + v.main if v.main else ""))
        self.expect_in(out, "vm %s created: %d MiB lazy memory, kernel 'hostile', %d vCPUs" %
                       (v.name, HOSTILE_MEM, v.vcpus), "create")
        self.vms[v.name] = v
        return "%d vCPUs%s, main %s, %d steps each, seed %d" % (
            v.vcpus, " on CPUs " + cpus if cpus else "", v.main or "-", v.iters, v.seed)

    def do_run(self, v):
        t = self.rng.choice(self.cfg["run"])
        out = self.cmd("vm run %s timeout=%d" % (v.name, t))
        new = guest_lines(out, v.name)
        v.lines += new
        bad = [l for l in new if l.startswith("FAIL") or "FAIL " in l]
        if bad:
            raise Fail("run %s: FAIL lines:\n%s\n%s" % (v.name, "\n".join(bad), out[-3000:]))
        if "vm %s stopped: timeout" % v.name in out:
            v.state = "paused"
            return "paused by its %d s timeout (%d lines so far)" % (t, len(v.lines))
        stop = MAINS[v.main]
        if stop is None:
            if "vm %s exited: status 0" % v.name not in out or \
               not any(l.startswith("PASS storm: %d CPUs, %d steps each" % (v.vcpus, v.iters))
                       for l in v.lines):
                raise Fail("run %s: expected 'PASS storm' and exit 0:\n%s" % (v.name, out[-3000:]))
            v.state = "exited"
            return "storm passed, exited 0"
        if "vm %s stopped: %s" % (v.name, stop) not in out:
            raise Fail("run %s (main %s): expected 'stopped: %s':\n%s" % (
                v.name, v.main, stop, out[-3000:]))
        v.state = "stopped"
        return "main %s ended it: %s" % (v.main, stop)

    def do_clone(self, parent):
        c = parent.copy(self.new_name())
        out = self.cmd("vm clone %s %s" % (parent.name, c.name))
        self.expect_in(out, "vm %s cloned from %s" % (c.name, parent.name), "clone")
        self.vms[c.name] = c
        return "-> %s, mid-storm" % c.name

    def do_destroy(self, v):
        self.expect_in(self.cmd("vm destroy " + v.name), "vm %s destroyed" % v.name, "destroy")
        del self.vms[v.name]
        return "%s (main %s)" % (v.state, v.main or "-")

    # --- start and end -------------------------------------------------

    def warm_up(self):
        """A hostile VM created, run, cloned and destroyed first (caches that
        keep a spare slab), then the free memory; then the keepers, run
        twice (every page of theirs touched), and the free memory again."""
        self.deadline = time.time() + 2 * self.cfg["limit"]
        for line, want in [("vm create w0 hostile mem=%dM vcpus=2 -- storm cpus=2 "
                            "iters=1000000" % HOSTILE_MEM, "vm w0 created"),
                           ("vm run w0 timeout=1", "vm w0 stopped: timeout"),
                           ("vm clone w0 w1", "vm w1 cloned from w0"),
                           ("vm run w1 timeout=1", "vm w1 stopped: timeout"),
                           ("vm destroy w1", "vm w1 destroyed"),
                           ("vm destroy w0", "vm w0 destroyed")]:
            self.expect_in(self.cmd(line), want, "warm-up")
        self.free_base, _ = self.free()
        for i in range(KEEPERS):
            name = "k%d" % (i + 1)
            self.expect_in(self.cmd("vm create %s soakg mem=6M backing=eager -- mib=1 "
                                    "rounds=1000000 seed=%d" % (name, self.rng.randrange(1 << 30))),
                           "vm %s created" % name, "keeper")
            self.keepers[name] = 0
            self.keeper_round(name)
            self.keeper_round(name)
        self.check_all()
        self.free_keepers, _ = self.free()
        print("soak: %d KiB free after the warm-up, %d KiB with the keepers" %
              (self.free_base >> 10, self.free_keepers >> 10), flush=True)

    def cleanup(self):
        self.deadline = time.time() + self.cfg["limit"]
        for name in sorted(self.vms):
            self.do_destroy(self.vms[name])
        for name in sorted(self.keepers):
            self.keeper_round(name)
        self.check_all()
        for name in sorted(self.keepers):
            self.expect_in(self.cmd("vm destroy " + name), "vm %s destroyed" % name, "destroy")
        self.keepers = {}
        self.check_free(self.free_base, "at the end")


def run(args, seed, rng):
    """The soak in hostile-smp mode; 0 when every step passed."""
    cfg = MACHINES[args.machine]
    print("soak: hostile-smp on %s with %d CPUs, seed %d, %s, %s" % (
        args.machine, cfg["cpus"], seed, "%g s" % args.seconds if args.seconds else
        "no time limit", "%d steps at most" % args.steps if args.steps else
        "steps until the time is up"), flush=True)
    iso = make_iso("soak-smp", "", [os.path.join(GUESTS_DIR, g + ".elf") for g in GUESTS])
    syms = Symbols()
    qmp = None
    if args.machine == "qemu":
        qmp = Qmp(os.path.join(os.path.abspath("build/e2e"), "soak-qmp-%d.sock" % os.getpid()))
        m = Machine(iso, smp=cfg["cpus"], mem=args.qemu_mem, extra=qmp.qemu_args())
        dump = lambda: qmp.dump(syms)  # noqa: E731
    else:
        m = BochsDebugConsole(iso, cpus=cfg["cpus"], megs=512)
        dump = lambda: m.dump(syms)  # noqa: E731
    soak = HostileSoak(m, rng, args.machine, dump)
    n, action, name, t0 = 0, "boot", "-", time.time()
    try:
        m.expect(PROMPT, timeout=cfg["limit"])
        action = "warm-up"
        soak.warm_up()
        while (not args.steps or n < args.steps) and \
                (not args.seconds or time.time() - t0 < args.seconds):
            n += 1
            action, target, name = soak.choose()
            result = soak.step(action, target)
            print("step %5d %-8s %-5s %s" % (n, action, name, result), flush=True)
        n += 1
        action, name = "cleanup", "all"
        soak.cleanup()
    except (Fail, Timeout) as e:
        print("step %5d %-8s %-5s FAILED" % (n, action, name), flush=True)
        print("soak: FAILED at step %d (%s %s), seed %d: %s" % (n, action, name, seed, e))
        if m.proc.poll() is not None:
            print("soak: the emulator exited (status %s): sprig reset, faulted or powered off" %
                  m.proc.returncode, flush=True)
        elif isinstance(e, Timeout):
            print("soak: HANG: the step did not finish within %d s; every CPU's state:" %
                  cfg["limit"], flush=True)
            try:
                print(dump(), flush=True)
            except (Timeout, OSError, ValueError) as d:
                print("soak: no CPU state: %s" % d, flush=True)
        print("soak: console tail:\n%s" % m.log[-4000:])
        print("soak: replay with: make soak SOAK_MODE=hostile-smp SOAK_MACHINE=%s SOAK_SEED=%d "
              "SOAK_STEPS=%d SOAK_SECONDS=0" % (args.machine, seed, n), flush=True)
        summary(soak, n - 1, seed, t0, 1)
        return 1
    finally:
        if qmp:
            qmp.close()
        m.close()
    summary(soak, n - 1, seed, t0, 0)
    return 0


def summary(soak, steps, seed, t0, failures):
    print("soak: hostile-smp: %d steps in %.0f s, seed %d: %s; %d hostile VMs, keeper rounds %s; "
          "free memory checked %d times; %d failures" % (
              steps, time.time() - t0, seed,
              ", ".join("%s %d" % (a, soak.counts[a]) for a in ACTIONS), soak.next_vm - 1,
              "/".join(str(r) for r in soak.keepers.values()) or "done", soak.memory_checks,
              failures), flush=True)
