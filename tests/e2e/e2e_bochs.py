"""Guests under sprig on Intel VMX with EPT (Bochs, corei7_skylake_x): the
test guests must print and exit as they do bare under QEMU, the counters must
make sense, and every failure path is reported while sprig goes on. One boot of
Bochs runs the whole suite from the kernel's run= argument."""
import os
import re

from bare import run_bare
from machine import GUESTS_DIR, make_iso, run_bochs, split_run_output

SCENARIOS = ["bochs_vmx_guests"]

# (VM name, guest, guest args, sprig-only vm create options). Sizes are kept
# small: Bochs takes about 15 us per EPT violation.
MATCHING = [
    ("hello", "hello", "one two", ""),
    ("touch", "touch", "mib=16", ""),
    ("exec", "exec", "mib=8", ""),
    ("fpu", "fpu", "loops=300000", ""),
    ("io", "misbehave", "io", ""),
]

# (VM name, misbehave mode, run options, what sprig must report)
FAILING = [
    ("triple", "triple", "", "vm triple stopped: triple fault"),
    ("outside", "outside", "",
     "vm outside stopped: write outside guest memory at gpa 0xc0000000"),
    ("badcall", "badcall", "", "vm badcall stopped: unknown hypercall 0x7777"),
    ("spin", "spin", "timeout=1", "vm spin stopped: timeout"),
]


def guest_lines(out, vm):
    """The guest's own console lines, without sprig's '[vm] ' prefix."""
    pre = "[%s] " % vm
    return [l[len(pre):] for l in out.splitlines() if l.startswith(pre)]


def stat(out, name):
    m = re.search(r"^\s*%s\s+(\d+)\s*$" % re.escape(name), out, re.M)
    return int(m.group(1)) if m else None


def command(*words):
    return " ".join(w for w in words if w)


def bochs_vmx_guests(check):
    # Eight VMs at most exist at once: each is destroyed once looked at.
    cmds = ["cpus"]
    for vm, guest, args, opts in MATCHING:
        cmds += [command("vm create", vm, guest, opts, "--", args),
                 "vm run %s timeout=120" % vm, "stats " + vm, "vm audit " + vm,
                 "vm destroy " + vm]
    for vm, mode, run_opts, _ in FAILING:
        cmds += [command("vm create", vm, "misbehave -- " + mode),
                 command("vm run", vm, run_opts), "vm destroy " + vm]
    cmds += ["vm create eager touch mem=64M backing=eager -- mib=16", "vm run eager",
             "stats eager", "vm audit eager", "version", "poweroff"]
    names = sorted({g for _, g, _, _ in MATCHING} | {"misbehave"})
    iso = make_iso("vmx-guests", 'run="%s"' % "; ".join(cmds),
                   [os.path.join(GUESTS_DIR, n + ".elf") for n in names])
    log = run_bochs(iso, timeout=600)
    parts = split_run_output(log)

    def part(cmd):
        return parts.get(cmd, "")

    cpus = part("cpus")
    check("vmx/boots", "sprig " in log and "cpus" in parts, log[-1500:])
    check("vmx/backend-chosen", re.search(r"virt: vmx with ept(-ad)?\b", log) is not None,
          log[:3000])
    check("vmx/cpus-vmx", "vmx: yes" in cpus and re.search(r"ept[: ]+yes", cpus) is not None
          and "unrestricted yes" in cpus, cpus)
    check("vmx/cpus-tdp-ept", "tdp: ept" in cpus, cpus)

    for vm, guest, args, opts in MATCHING:
        bare_status, bare_out = run_bare(guest, args)
        out = part("vm run %s timeout=120" % vm)
        check("vmx/created-" + vm, "vm %s created" % vm in
              part(command("vm create", vm, guest, opts, "--", args)), log[-1500:])
        check("vmx/output-matches-bare-" + vm, guest_lines(out, vm) == bare_out.strip().splitlines(),
              "bare:\n%s\nsprig:\n%s" % (bare_out, out))
        check("vmx/status-matches-bare-" + vm, "vm %s exited: status %s" % (vm, bare_status) in out,
              "bare status %r; sprig:\n%s" % (bare_status, out))

    out = part("stats touch")
    npf = stat(out, "pf_taken")
    check("vmx/touch-lazy-faults", npf is not None and 4096 <= npf <= 4096 + 128,
          "pf_taken %r\n%s" % (npf, out))
    check("vmx/touch-lazy-4k", stat(out, "pages_2m") == 0 and (stat(out, "pages_4k") or 0) >= 4096,
          out)
    out = part("stats io")
    check("vmx/io-ports-counted", stat(out, "io_port_0x1234") == 1 and
          stat(out, "io_port_0x5678") == 1, out)
    out = part("stats hello")
    check("vmx/hypercall-exits", (stat(out, "exits_hypercall") or 0) >= 1, out)

    for vm, mode, run_opts, expect in FAILING:
        out = part(command("vm run", vm, run_opts))
        check("vmx/%s-reported" % vm, expect in out, out)
    check("vmx/triple-fault-dump", "RIP=" in part("vm run triple") and
          "exit reason 2 (triple fault)" in part("vm run triple"), part("vm run triple"))

    out = part("vm run eager")
    check("vmx/eager-runs", "vm eager exited: status 0" in out, out)
    out = part("stats eager")
    check("vmx/eager-huge-pages", (stat(out, "pages_2m") or 0) >= 8 and
          (stat(out, "pf_taken") or 9999) < 200, out)
    for vm in [m[0] for m in MATCHING] + ["eager"]:
        out = part("vm audit " + vm)
        check("vmx/audit-" + vm, "mmu audit: ok" in out, out)
    check("vmx/sprig-goes-on", "sprig " in part("version"), log[-1500:])
    check("vmx/poweroff", "poweroff" in parts, log[-500:])
