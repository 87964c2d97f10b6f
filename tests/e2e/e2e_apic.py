"""The local APIC guest (guests/apic/): bare under QEMU and Bochs, the
reference; then under sprig on AMD SVM (QEMU) and Intel VMX (Bochs
corei7_skylake_x), where every check that passes bare must pass too.

The guest prints `PASS: NAME`, `FAIL: NAME (detail)` or `SKIP: NAME (why)`
per check, `info:` lines (timings; never compared) and a summary line
`apic: N passed, N failed, N skipped`. Bochs cannot report an exit status
(the guest ends it through port 0x8900), so the status is read from that
summary there.

QEMU's software emulation runs its timers on the host's clock: bare, its
timer interrupts come 0.1-10 ms late on a loaded machine, so the QEMU runs,
bare and under sprig, pass late_us=0 (lateness reported, not judged: a timer
must still fire, never early, as often as programmed). Bochs runs on virtual
time: there the guest judges its 100 us limit, which holds only because
sprig arms a one-shot for the guest's deadline (its own tick is 1 ms)."""
import os
import re

from bare import run_bare, run_bare_bochs
from machine import GUESTS_DIR, scenario_main, PROMPT, BochsConsole, Machine, guest_lines, make_iso, stat

SCENARIOS = ["apic_bare", "apic_sprig_svm", "apic_sprig_vmx", "apic_sprig_bochs_svm"]

QEMU_ARGS = "late_us=0"
BOCHS_ARGS = ""
BOCHS_MODEL = "corei7_skylake_x"

NO_X2APIC = "no x2APIC (CPUID.1:ECX[21])"
X2APIC_CHECKS = ["x2apic-msr-in-xapic-gp", "x2apic-enable", "x2apic-self-ipi",
                 "x2apic-to-xapic-gp", "x2apic-disable-reenable", "x2apic-disabled-to-x2apic-gp"]

MMIO_FORMS = [
    "mmio-mov-load", "mmio-mov-load-rex", "mmio-mov-store", "mmio-mov-store-rex",
    "mmio-mov-store-imm", "mmio-mov-sib", "mmio-mov-prefixes", "mmio-movzx-byte",
    "mmio-movzx-word", "mmio-movsx-byte", "mmio-movsx-word", "mmio-movsxd",
    "mmio-add-mem-reg", "mmio-or-mem-reg", "mmio-and-mem-reg", "mmio-xor-mem-reg",
    "mmio-sub-mem-reg", "mmio-add-reg-mem", "mmio-or-reg-mem", "mmio-and-reg-mem",
    "mmio-xor-reg-mem", "mmio-sub-reg-mem", "mmio-add-imm8", "mmio-or-imm8", "mmio-and-imm8",
    "mmio-xor-imm8", "mmio-sub-imm8", "mmio-add-imm32", "mmio-or-imm32", "mmio-and-imm32",
    "mmio-xor-imm32", "mmio-sub-imm32", "mmio-cmp-mem-reg", "mmio-cmp-reg-mem",
    "mmio-cmp-imm8", "mmio-cmp-imm32", "mmio-test-mem-reg", "mmio-test-imm32", "mmio-xchg",
    "mmio-movsd-to-apic", "mmio-rep-movsd", "mmio-movsd-from-apic", "mmio-rep-stosd",
    "mmio-stosd-backwards", "mmio-lodsd", "mmio-mov-moffs", "mmio-tpr-width",
]

# Every check the guest prints, in its order.
ALL_CHECKS = [
    "apic-base", "apic-version", "apic-relocate",
    "timer-oneshot", "timer-periodic", "timer-deadline",
    "self-ipi", "self-ipi-dest", "irq-fresh-stack",
    "eoi-isr-nesting", "tpr-masking", "tpr-cr8", "nmi", "nmi-nested", "single-step-emulated",
    "irq-window-sti", "irq-window-sti-hlt", "irq-window-sti-exit", "irq-window-sti-mmio",
    "irq-window-popf", "irq-window-movss",
] + MMIO_FORMS + [
    "mmio-paging-none", "mmio-paging-32bit", "mmio-paging-pae", "mmio-paging-4level",
    "mmio-paging-5level",
    "unclaimed-mmio",
] + X2APIC_CHECKS

# What each bare machine skips, and why: nothing else may be skipped.
# QEMU 7.2's -cpu max under TCG has neither x2APIC nor the TSC-deadline
# mode, and its APIC page stays at 0xfee00000 whatever IA32_APIC_BASE says.
# Bochs has no LA57 on this model, and ignores IA32_APIC_BASE writes once the
# APIC is globally disabled (P6 behaviour), so the transitions out of the
# disabled state cannot be seen there.
BARE_SKIPS = {
    "qemu": dict([("apic-relocate", "the APIC page does not move on this machine"),
                  ("timer-deadline", "no TSC-deadline mode (CPUID.1:ECX[24])")] +
                 [(c, NO_X2APIC) for c in X2APIC_CHECKS]),
    "bochs": {
        "mmio-paging-5level": "no 5-level paging (CPUID.7:ECX[16])",
        "x2apic-disable-reenable": "IA32_APIC_BASE writes ignored once globally disabled",
        "x2apic-disabled-to-x2apic-gp": "IA32_APIC_BASE writes ignored once globally disabled",
    },
}

LINE = re.compile(r"^(PASS|FAIL|SKIP): (\S+)(?: \((.*)\))?$")
SUMMARY = re.compile(r"^apic: (\d+) passed, (\d+) failed, (\d+) skipped$", re.M)


def results(lines):
    """{check name: (PASS|FAIL|SKIP, detail)} from the guest's lines."""
    if isinstance(lines, str):
        lines = lines.splitlines()
    out = {}
    for line in lines:
        m = LINE.match(line.strip())
        if m:
            out[m.group(2)] = (m.group(1), m.group(3) or "")
    return out


def summary_status(text):
    """0 or 1 as the guest's exit status from its summary line; None without one."""
    m = SUMMARY.search(text)
    if not m:
        return None
    return 0 if int(m.group(2)) == 0 else 1


_bare_cache = {}


def bare_runs():
    """{'qemu': (status, output), 'bochs': (status, output)}, run once per
    process (Bochs bare runs before any BochsConsole takes the Bochs lock)."""
    if "qemu" not in _bare_cache:
        _bare_cache["qemu"] = run_bare("apic", QEMU_ARGS, timeout=120)
    if "bochs" not in _bare_cache:
        out = run_bare_bochs("apic", BOCHS_ARGS, model=BOCHS_MODEL, timeout=300)
        _bare_cache["bochs"] = (summary_status(out), out)
    return _bare_cache


def apic_bare(check):
    runs = bare_runs()
    for machine in ("qemu", "bochs"):
        status, out = runs[machine]
        res = results(out)
        pre = "apic/bare-%s" % machine
        check(pre + "-status", status == 0, "status %r\n%s" % (status, out[-3000:]))
        fails = {n: d for n, (s, d) in res.items() if s == "FAIL"}
        check(pre + "-no-fail", not fails and "FAIL" not in out, out[-3000:])
        missing = [n for n in ALL_CHECKS if n not in res]
        check(pre + "-all-checks-reported", not missing, "missing %s\n%s" % (missing, out[-3000:]))
        skips = {n: d for n, (s, d) in res.items() if s == "SKIP"}
        check(pre + "-skips", skips == BARE_SKIPS[machine],
              "skipped %r, expected %r" % (skips, BARE_SKIPS[machine]))
        check(pre + "-timer-info", re.search(r"^info: timer-oneshot late max -?\d+ us$", out, re.M)
              is not None, out[-3000:])


# Checks of a host CPU feature that sprig passes through rather than
# emulates: under sprig they skip where the machine sprig runs on lacks it.
HOST_FEATURE_CHECKS = {"mmio-paging-5level"}


def compare_with_bare(check, prefix, out, host, vm="apic", skipped=()):
    """sprig's run of the guest against both bare runs: a check that passed
    bare anywhere must pass (but for a host feature that the machine sprig
    runs on, `host`, lacks: the same skip as bare there; and the checks in
    `skipped`, which the run was told not to make); nothing may fail; the
    exit status is 0."""
    runs = bare_runs()
    under = results(guest_lines(out, vm))
    check(prefix + "/apic-exit-status-0", "vm %s exited: status 0" % vm in out, out[-3000:])
    check(prefix + "/apic-all-checks-reported", all(n in under for n in ALL_CHECKS),
          "missing %s\n%s" % ([n for n in ALL_CHECKS if n not in under], out[-3000:]))
    fails = {n: d for n, (s, d) in under.items() if s == "FAIL"}
    check(prefix + "/apic-no-fail", not fails, "%r" % fails)
    for name in ALL_CHECKS:
        passed_bare = [m for m in ("qemu", "bochs") if results(runs[m][1]).get(name, ("",))[0] == "PASS"]
        if name in skipped:
            check("%s/apic-%s-skipped-as-asked" % (prefix, name),
                  under.get(name, ("missing",))[0] == "SKIP", str(under.get(name)))
            continue
        if passed_bare:
            got = under.get(name, ("missing", ""))
            host_skip = results(runs[host][1]).get(name)
            if name in HOST_FEATURE_CHECKS and host_skip and host_skip[0] == "SKIP":
                check("%s/apic-%s-skipped-as-bare" % (prefix, name), got == host_skip,
                      "bare on %s: %r; under sprig: %r" % (host, host_skip, got))
                continue
            check("%s/apic-%s" % (prefix, name), got[0] == "PASS",
                  "passes bare under %s; under sprig: %s %s" % ("+".join(passed_bare), got[0], got[1]))


def check_stats(check, prefix, out):
    """The counters of the guest's run: every kind of event it caused was
    counted, and nothing failed to decode. irq-fresh-stack's delivery onto
    an untouched (lazily backed) page is interrupted by a nested fault and
    delivered again: events_requeued."""
    for name in ["irq_injected", "nmi_injected", "irq_window_exits", "timer_fires",
                 "mmio_exits", "mmio_unclaimed", "events_requeued"]:
        check("%s/apic-stat-%s" % (prefix, name), (stat(out, name) or 0) >= 1, out)
    check(prefix + "/apic-stat-decode_failures", stat(out, "decode_failures") == 0, out)


# nmi-nested alone: its handler runs 10 ms with interrupts on while the
# second NMI waits for its IRET. The IRET is intercepted and stepped over,
# a few window exits in all; a virtual interrupt request waiting for the
# NMI exits before every instruction of the handler (110 times under QEMU
# TCG here, each exit slow; far more on hardware).
NMI_NESTED_WINDOW_EXITS_MAX = 20


def check_nmi_window(check, prefix, m, timeout):
    """The nested-NMI check run alone in a VM of its own: it passes, and the
    window exits stay few."""
    m.command("vm destroy apic", timeout=timeout)
    m.command("vm create nmi apic -- only=nmi-nested late_us=0", timeout=timeout)
    out = m.command("vm run nmi timeout=120", timeout=timeout + 120)
    check(prefix + "/nmi-nested-alone", "[nmi] PASS: nmi-nested" in out and
          "vm nmi exited: status 0" in out, out[-3000:])
    out = m.command("stats nmi", timeout=timeout)
    exits = stat(out, "irq_window_exits")
    check(prefix + "/nmi-nested-window-exits", exits is not None and
          exits < NMI_NESTED_WINDOW_EXITS_MAX,
          "irq_window_exits %r, expected fewer than %d\n%s" %
          (exits, NMI_NESTED_WINDOW_EXITS_MAX, out))


def check_nmi_snapshot(check, prefix, m, timeout):
    """nmi-nested stopped inside the first NMI's handler with the second
    pending (argument snapshot=1), snapshotted, destroyed and restored: the
    restored vCPU still blocks NMIs until the handler's IRET, and the second
    comes right then (the blocking is saved with the vCPU)."""
    m.command("vm destroy nmi", timeout=timeout)
    m.command("vm create nmis apic -- only=nmi-nested late_us=0 snapshot=1", timeout=timeout)
    out = m.command("vm run nmis timeout=120", timeout=timeout + 120)
    check(prefix + "/nmi-nested-paused-in-handler", "vm nmis stopped: snapshot point" in out,
          out[-3000:])
    out = m.command("vm snapshot nmis inh", timeout=timeout)
    check(prefix + "/nmi-nested-snapshot", "vm nmis snapshot: image 'inh'" in out, out)
    m.command("vm destroy nmis", timeout=timeout)
    out = m.command("vm create nmis restore=inh", timeout=timeout)
    out = m.command("vm run nmis timeout=120", timeout=timeout + 120)
    check(prefix + "/nmi-nested-through-snapshot", "[nmis] PASS: nmi-nested" in out and
          "vm nmis exited: status 0" in out, out[-3000:])
    m.command("vm destroy nmis", timeout=timeout)
    m.command("vm image-free inh", timeout=timeout)


def apic_sprig_svm(check):
    bare_runs()
    m = Machine(make_iso("apic-svm", "", [os.path.join(GUESTS_DIR, "apic.elf")]))
    try:
        m.expect(PROMPT, timeout=60)
        out = m.command("vm create apic apic -- " + QEMU_ARGS)
        check("svm/apic-created", "vm apic created" in out, out)
        out = m.command("vm run apic timeout=120", timeout=300)
        compare_with_bare(check, "svm", out, "qemu")
        check_stats(check, "svm", m.command("stats apic"))
        check_nmi_window(check, "svm", m, 60)
        check_nmi_snapshot(check, "svm", m, 60)
    finally:
        m.close()


# Bochs's SVM lets the single-step trap of a guest instruction that exits
# reach sprig (docs/design-notes.md): the ryzen run leaves single-step and
# the snapshot inside an NMI handler (whose stepped IRET may fault) to QEMU.
BOCHS_SVM_ARGS = "no_step=1"
BOCHS_SVM_SKIPPED = ("single-step-emulated",)


def sprig_under_bochs(check, prefix, model):
    svm = model == "ryzen"
    args = " ".join(a for a in (BOCHS_ARGS, BOCHS_SVM_ARGS if svm else "") if a)
    bare_runs()  # before BochsConsole takes the one-Bochs lock
    m = BochsConsole(make_iso("apic-" + prefix, "", [os.path.join(GUESTS_DIR, "apic.elf")]),
                     model=model)
    try:
        m.expect(PROMPT, timeout=240)
        out = m.command("vm create apic apic" + (" -- " + args if args else ""), timeout=60)
        check(prefix + "/apic-created", "vm apic created" in out, out)
        out = m.command("vm run apic timeout=300", timeout=420)
        compare_with_bare(check, prefix, out, "bochs", skipped=BOCHS_SVM_SKIPPED if svm else ())
        check_stats(check, prefix, m.command("stats apic", timeout=60))
        check_nmi_window(check, prefix, m, 60)
        if not svm:
            check_nmi_snapshot(check, prefix, m, 60)
    finally:
        m.close()


def apic_sprig_vmx(check):
    sprig_under_bochs(check, "vmx", BOCHS_MODEL)


def apic_sprig_bochs_svm(check):
    """SVM on Bochs' ryzen model: Bochs' timing (virtual time) on SVM."""
    sprig_under_bochs(check, "bochs-svm", "ryzen")


if __name__ == "__main__":
    scenario_main(globals(), "apic_bare")
