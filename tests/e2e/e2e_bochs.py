"""Guests under sprig in Bochs: Intel VMX with EPT (corei7_skylake_x) and AMD
SVM with NPT (ryzen, stricter than QEMU, with next-RIP saving). The test guests
must print and exit as they do bare under QEMU, the counters must make sense,
and every failure path is reported while sprig goes on. One boot of Bochs per
CPU model runs the whole suite from the kernel's run= argument."""
import os
import re

from bare import run_bare
from e2e_input import make_images
from machine import GUESTS_DIR, guest_lines, make_iso, run_bochs, split_run_output, stat

SCENARIOS = ["bochs_vmx_guests", "bochs_svm_guests"]

# (VM name, guest, guest args, sprig-only vm create options). Sizes are kept
# small: Bochs takes about 15 us per EPT violation.
MATCHING = [
    ("hello", "hello", "one two", ""),
    ("touch", "touch", "mib=16", ""),
    ("exec", "exec", "mib=8", ""),
    ("fpu", "fpu", "loops=300000", ""),
    ("io", "misbehave", "io", ""),
    ("outside", "misbehave", "outside", ""),
]

# (VM name, misbehave mode, run options, what sprig must report). Bochs 2.7
# with SVM panics on a triple fault in the guest instead of making the
# SHUTDOWN exit, and never makes the INTR exit for a guest spinning with
# interrupts off (QEMU and the VMX model do both), so the ryzen run leaves
# "triple" and "spin" to QEMU.
FAILING = [
    ("triple", "triple", "", "vm triple stopped: triple fault"),
    ("badcall", "badcall", "", "vm badcall stopped: unknown hypercall 0x53507777"),
    ("spin", "spin", "timeout=1", "vm spin stopped: timeout"),
]


# Snapshot images given as modules to the VMX run (tests/e2e/mksnap.c): a
# whole one that restores and exits 42, and broken ones each refused with its
# reason. Their FPU area must match the vCPU's here: corei7_skylake_x has
# AVX-512, 2688 bytes (`cpus`, vcpu-fpu).
BOCHS_FPU_AREA = 2688
VMX_IMAGES = [
    ("apic_base", "APIC base 0xfee00b00 sets reserved bits"),
    ("uart_len", "UART line length 100000 beyond its 160-byte buffer"),
    ("xcr0_zero", "XCR0 0x0 is not one XSETBV accepts"),
    ("xstate_bv", "XSTATE_BV 0x4000000000000000 names components outside XCR0"),
    ("cr0_high", "CR0 against the VMX fixed bits"),
    ("efer", "EFER bits a guest may not set"),
    ("fs_base", "FS base out of range"),
    ("pat", "IA32_PAT holds a reserved memory type"),
    ("rflags", "reserved RFLAGS bits"),
]


def command(*words):
    return " ".join(w for w in words if w)


def bochs_vmx_guests(check):
    bochs_guests(check, "corei7_skylake_x", "vmx", FAILING)


def bochs_svm_guests(check):
    bochs_guests(check, "ryzen", "bochs-svm", [f for f in FAILING if f[0] not in ("triple", "spin")])


def bochs_guests(check, model, prefix, failing):
    # Each VM is destroyed once looked at.
    cmds = ["cpus"]
    for vm, guest, args, opts in MATCHING:
        cmds += [command("vm create", vm, guest, opts, "--", args),
                 "vm run %s timeout=120" % vm, "stats " + vm, "vm audit " + vm,
                 "vm destroy " + vm]
    for vm, mode, run_opts, _ in failing:
        cmds += [command("vm create", vm, "misbehave -- " + mode),
                 command("vm run", vm, run_opts), "vm destroy " + vm]
    cmds += ["vm create eager touch mem=64M backing=eager -- mib=16", "vm run eager",
             "stats eager", "vm audit eager"]
    names = sorted({g for _, g, _, _ in MATCHING} | {"misbehave"})
    modules = [os.path.join(GUESTS_DIR, n + ".elf") for n in names]
    if prefix == "vmx":
        cmds += ["vm create bad restore=%s" % f for f, _ in VMX_IMAGES]
        cmds += ["vm images", "vm create good restore=ok", "vm run good timeout=60",
                 "vm audit good"]
        modules += make_images("vmx", BOCHS_FPU_AREA, [("ok", "none")] +
                               [(f, f) for f, _ in VMX_IMAGES])
    cmds += ["version", "poweroff"]
    iso = make_iso(prefix + "-guests", 'run="%s"' % "; ".join(cmds), modules)
    log = run_bochs(iso, model=model, timeout=600)
    parts = split_run_output(log)

    def part(cmd):
        return parts.get(cmd, "")

    cpus = part("cpus")
    check(prefix + "/boots", "sprig " in log and "cpus" in parts, log[-1500:])
    if prefix == "vmx":
        check(prefix + "/backend-chosen", re.search(r"virt: vmx with ept(-ad)?\b", log) is not None,
              log[:3000])
        check(prefix + "/cpus-vmx", "vmx: yes" in cpus and re.search(r"ept[: ]+yes", cpus) is not None
              and "unrestricted yes" in cpus, cpus)
        check(prefix + "/cpus-tdp-ept", "tdp: ept" in cpus, cpus)
        check(prefix + "/triple-fault-dump", "RIP=" in part("vm run triple") and
              "exit reason 2 (triple fault)" in part("vm run triple"), part("vm run triple"))
    else:
        check(prefix + "/backend-chosen", "virt: svm with npt" in log, log[:3000])
        check(prefix + "/cpus-svm-nrips", re.search(r"svm: yes .*npt yes nrips yes", cpus)
              is not None, cpus)

    for vm, guest, args, opts in MATCHING:
        bare_status, bare_out = run_bare(guest, args)
        out = part("vm run %s timeout=120" % vm)
        check(prefix + "/created-" + vm, "vm %s created" % vm in
              part(command("vm create", vm, guest, opts, "--", args)), log[-1500:])
        check(prefix + "/output-matches-bare-" + vm, guest_lines(out, vm) == bare_out.strip().splitlines(),
              "bare:\n%s\nsprig:\n%s" % (bare_out, out))
        check(prefix + "/status-matches-bare-" + vm, "vm %s exited: status %s" % (vm, bare_status) in out,
              "bare status %r; sprig:\n%s" % (bare_status, out))

    out = part("stats touch")
    npf = stat(out, "pf_taken")
    check(prefix + "/touch-lazy-faults", npf is not None and 4096 <= npf <= 4096 + 128,
          "pf_taken %r\n%s" % (npf, out))
    check(prefix + "/touch-lazy-4k", stat(out, "pages_2m") == 0 and (stat(out, "pages_4k") or 0) >= 4096,
          out)
    out = part("stats io")
    check(prefix + "/io-ports-counted", stat(out, "io_port_0x1234") == 1 and
          stat(out, "io_port_0x5678") == 1, out)
    out = part("stats hello")
    check(prefix + "/hypercall-exits", (stat(out, "exits_hypercall") or 0) >= 1, out)

    for vm, mode, run_opts, expect in failing:
        out = part(command("vm run", vm, run_opts))
        check("%s/%s-reported" % (prefix, vm), expect in out, out)

    out = part("vm run eager")
    check(prefix + "/eager-runs", "vm eager exited: status 0" in out, out)
    out = part("stats eager")
    check(prefix + "/eager-huge-pages", (stat(out, "pages_2m") or 0) >= 8 and
          (stat(out, "pf_taken") or 9999) < 200, out)
    for vm in [m[0] for m in MATCHING] + ["eager"]:
        out = part("vm audit " + vm)
        check(prefix + "/audit-" + vm, "mmu audit: ok" in out, out)
    if prefix == "vmx":
        for fault, reason in VMX_IMAGES:
            out = part("vm create bad restore=" + fault)
            check("vmx/image-refused-" + fault, reason in out and "created" not in out, out)
        check("vmx/image-no-slots-taken", "no images" in part("vm images"), part("vm images"))
        out = part("vm run good timeout=60")
        check("vmx/image-restores", "vm good created" in part("vm create good restore=ok") and
              "vm good exited: status 42" in out, part("vm create good restore=ok") + out)
        check("vmx/image-audit", "mmu audit: ok" in part("vm audit good"), part("vm audit good"))
    check(prefix + "/sprig-goes-on", "sprig " in part("version"), log[-1500:])
    check(prefix + "/poweroff", "poweroff" in parts, log[-500:])
