"""Guests under sprig on AMD SVM with nested paging (QEMU -cpu max): each test
guest runs bare under QEMU and under sprig and the outputs must match; the
counters must make sense; every failure path is reported while sprig goes on.
All of it in one boot of sprig."""
import os
import re
import tempfile

from bare import SHUTDOWN, run_bare
from machine import GUESTS_DIR, PROMPT, guest_lines, Machine, make_iso, stat

SCENARIOS = ["qemu_guests"]

# (VM name, guest, guest args, sprig-only vm create options)
MATCHING = [
    ("hello", "hello", "one two", ""),
    ("touch", "touch", "mib=16", ""),
    ("touch-stride", "touch", "mib=8 stride=12288", ""),
    ("exec", "exec", "mib=8", ""),
    ("fpu", "fpu", "loops=3000000", ""),
    ("balloon", "balloon", "", ""),
    ("io", "misbehave", "io", ""),
    # A write nothing claims is dropped, as on bare QEMU's PC.
    ("outside", "misbehave", "outside", ""),
]


def bad_modules():
    d = tempfile.mkdtemp(prefix="sprig-bad-")
    with open(os.path.join(GUESTS_DIR, "hello.elf"), "rb") as f:
        hello = f.read()
    paths = []
    for name, data in [("garbage", os.urandom(3000)), ("truncated", hello[:300]),
                       ("noheader", b"\0" * 9000)]:
        p = os.path.join(d, name)
        with open(p, "wb") as f:
            f.write(data)
        paths.append(p)
    return paths


def qemu_guests(check):
    names = sorted({g for _, g, _, _ in MATCHING} | {"misbehave"})
    mods = [os.path.join(GUESTS_DIR, n + ".elf") for n in names] + bad_modules()
    m = Machine(make_iso("guests", "", mods))
    try:
        m.expect(PROMPT, timeout=60)
        free_before = re.search(r"free (\d+) MiB", m.command("mem")).group(1)

        for vm, guest, args, opts in MATCHING:
            bare_status, bare_out = run_bare(guest, args)
            out = m.command("vm create %s %s %s -- %s" % (vm, guest, opts, args))
            check("svm/create-" + vm, "vm %s created" % vm in out, out)
            out = m.command("vm run %s timeout=120" % vm, timeout=180)
            under = guest_lines(out, vm)
            check("svm/output-matches-bare-" + vm, under == bare_out.strip().splitlines(),
                  "bare:\n%s\nsprig:\n%s" % (bare_out, out))
            check("svm/status-matches-bare-" + vm,
                  ("vm %s exited: status %s" % (vm, bare_status)) in out,
                  "bare status %r; sprig:\n%s" % (bare_status, out))

        # Touching 16 MiB of lazy memory costs about 16*256 faults at 4 KiB.
        out = m.command("stats touch")
        npf = stat(out, "pf_taken")
        check("svm/touch-lazy-faults", npf is not None and 4096 <= npf <= 4096 + 128,
              "pf_taken %r\n%s" % (npf, out))
        check("svm/touch-lazy-4k", stat(out, "pages_2m") == 0 and stat(out, "pages_4k") >= 4096,
              out)
        # Eager memory can be mapped with 2 MiB pages: far fewer faults.
        m.command("vm create eager touch mem=128M backing=eager -- mib=16")
        out = m.command("vm run eager", timeout=120)
        check("svm/eager-runs", "vm eager exited: status 0" in out, out)
        out = m.command("stats eager")
        check("svm/eager-huge-pages", (stat(out, "pages_2m") or 0) >= 8 and
              (stat(out, "pf_taken") or 9999) < 200, out)
        # The io guest's stray ports were counted.
        out = m.command("stats io")
        check("svm/io-ports-counted", stat(out, "io_port_0x1234") == 1 and
              stat(out, "io_port_0x5678") == 1, out)
        # Balloon release went through the MMU: leaves were zapped.
        out = m.command("stats balloon")
        check("svm/balloon-zapped", (stat(out, "leaves_zapped") or 0) >= 1024, out)

        # Failure paths: each reported, sprig goes on.
        m.command("vm create triple misbehave -- triple")
        out = m.command("vm run triple", timeout=60)
        check("svm/triple-fault-reported", "vm triple stopped: triple fault" in out and
              "RIP=" in out, out)
        out = m.command("stats outside")
        check("svm/outside-unclaimed-counted", stat(out, "mmio_unclaimed") == 1 and
              stat(out, "mmio_exits") == 1, out)
        # strict_mmio=on stops the guest at it instead, for debugging.
        m.command("vm create strict misbehave strict_mmio=on -- outside")
        out = m.command("vm run strict", timeout=60)
        check("svm/outside-memory-reported-strict",
              "vm strict stopped: write outside guest memory at gpa 0xc0000000" in out, out)
        m.command("vm create badcall misbehave -- badcall")
        out = m.command("vm run badcall", timeout=60)
        check("svm/bad-hypercall-reported", "vm badcall stopped: unknown hypercall 0x53507777" in out,
              out)
        m.command("vm create spin misbehave -- spin")
        out = m.command("vm run spin timeout=1", timeout=60)
        check("svm/timeout-stops-spinning-guest", "vm spin stopped: timeout" in out, out)
        # Ctrl-C on the console stops it too.
        m.send("vm run spin\r")
        m.expect("vm run spin", 10)
        import time
        time.sleep(1.0)
        m.send("\x03")
        out = m.expect(PROMPT, 60)
        check("svm/ctrl-c-stops-guest", "vm spin stopped: Ctrl-C" in out, out)
        m.command("vm create hlt misbehave -- hlt")
        out = m.command("vm run hlt", timeout=60)
        check("svm/halt-reported", "vm hlt stopped: halted with interrupts off" in out, out)
        # An NMI whose delivery faults on an IDT outside guest memory: a
        # delivery failure, not an access of the instruction at RIP to
        # emulate (and skip).
        m.command("vm create idt misbehave -- idt")
        out = m.command("vm run idt", timeout=60)
        check("svm/delivery-fault-reported",
              "vm idt stopped: fault delivering vector 2: gpa 0xc0000020 is not guest memory"
              in out and "survived" not in out, out)

        # FPU state is per vCPU: pause one fpu guest mid-loop, run another
        # with other values, then let the first finish and check its own.
        m.command("vm create fpu-a fpu -- seed=1 loops=400000000")
        out = m.command("vm run fpu-a timeout=1", timeout=60)
        check("svm/fpu-a-paused", "vm fpu-a stopped: timeout" in out, out)
        m.command("vm create fpu-b fpu -- seed=2 loops=1000000")
        out = m.command("vm run fpu-b", timeout=60)
        check("svm/fpu-b-ok", "[fpu-b] fpu ok" in out and "exited: status 0" in out, out)
        out = m.command("vm run fpu-a", timeout=120)
        check("svm/fpu-state-kept-across-vms", "[fpu-a] fpu ok" in out and
              "vm fpu-a exited: status 0" in out, out)
        for bad in ["garbage", "truncated", "noheader"]:
            out = m.command("vm create b-%s %s" % (bad, bad))
            check("svm/malformed-image-refused-" + bad,
                  "vm: cannot create 'b-%s'" % bad in out and len(out.strip().splitlines()) == 1,
                  out)
        out = m.command("vm list")
        check("svm/malformed-created-nothing", "b-garbage" not in out, out)

        # Bad console input.
        for line, expect in [
            ("vm create hello hello", "a VM named 'hello' exists"),
            ("vm create x nosuchmodule", "no module 'nosuchmodule'"),
            ("vm create x hello mem=12Q", "bad mem"),
            ("vm create x hello mem=1G0", "bad mem"),
            ("vm create x hello backing=sparse", "bad backing"),
            ("vm create x hello strict_mmio=yes", "bad strict_mmio"),
            ("vm create bad/name hello", "bad VM name"),
            ("vm run nosuch", "no VM named 'nosuch'"),
            ("vm run hello", "has exited"),
            ("vm frob", "unknown subcommand"),
            ("stats nosuch", "no VM named 'nosuch'"),
        ]:
            out = m.command(line)
            check("svm/bad-input " + line, expect in out, out)

        # The MMU's invariants hold on every VM, live.
        for vm in ["hello", "touch", "balloon", "eager", "outside"]:
            out = m.command("vm audit " + vm)
            check("svm/audit-" + vm, "mmu audit: ok" in out, out)

        # Destroying every VM gives all memory back.
        out = m.command("vm list")
        for line in out.strip().splitlines():
            m.command("vm destroy " + line.split()[0])
        out = m.command("mem")
        free_after = re.search(r"free (\d+) MiB", out).group(1)
        check("svm/no-leak-after-destroy", free_after == free_before,
              "free before %s MiB, after %s MiB" % (free_before, free_after))
        out = m.command("version")
        check("svm/sprig-goes-on", "sprig " in out, out)
    finally:
        m.close()
