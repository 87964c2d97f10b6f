"""Prefetch and snapshot restore under SVM (QEMU -cpu max), in one boot: a
guest fills its memory and stops at its snapshot point; the console snapshots
it and restores it with 4 KiB and 2 MiB chunks, prefetch off and forward. The
guest checks every restored byte against its pattern; the fault counts must
fall at least 256x with 2 MiB chunks and not rise with 4 KiB ones; the audit
must pass after every run. The same snapshot and restore run under Bochs with
Intel VMX and EPT, smaller (Bochs takes about 15 us per EPT violation)."""
import os
import re

from machine import GUESTS_DIR, PROMPT, Machine, make_iso, run_bochs, split_run_output, stat

SCENARIOS = ["qemu_prefetch", "bochs_vmx_snapshot"]

MIB = 124  # the guest's region: 4 MiB up to the end of its 128 MiB


def qemu_prefetch(check):
    m = Machine(make_iso("prefetch", "", [os.path.join(GUESTS_DIR, "restore_touch.elf")]))
    try:
        m.expect(PROMPT, timeout=60)
        m.command("vm create src restore_touch mem=128M -- mib=%d" % MIB)
        out = m.command("vm run src", timeout=120)
        check("prefetch/snapshot-point", "vm src stopped: snapshot point" in out, out)
        out = m.command("vm snapshot src img")
        check("prefetch/snapshot", "vm src snapshot: image 'img', 128 MiB" in out, out)
        m.command("vm destroy src")
        check("prefetch/images", "img" in m.command("vm images"))

        faults = {}
        for chunk in ["4K", "2M"]:
            for mode in ["off", "forward"]:
                name = "r%s%s" % (chunk, mode)
                m.command("mmu prefetch=%s" % mode)
                out = m.command("vm create %s restore=img chunk=%s -- order=forward"
                                % (name, chunk))
                check("prefetch/create-" + name, "vm %s created" % name in out, out)
                out = m.command("vm run %s timeout=120" % name, timeout=180)
                check("prefetch/restored-bytes-" + name,
                      "restore_touch ok" in out and "vm %s exited: status 0" % name in out, out)
                st = m.command("stats " + name)
                faults[(chunk, mode)] = stat(st, "pf_taken")
                if mode == "forward":
                    check("prefetch/counters-" + name,
                          (stat(st, "pf_prefetch_mapped") or 0) > (0 if chunk == "2M" else -1),
                          st)
                out = m.command("vm audit " + name)
                check("prefetch/audit-" + name, "mmu audit: ok" in out, out)
                m.command("vm destroy " + name)
        m.command("mmu prefetch=forward")
        print("  faults: %s" % faults)
        off2m, fwd2m = faults[("2M", "off")], faults[("2M", "forward")]
        check("prefetch/2m-fewer-faults",
              off2m is not None and fwd2m and off2m >= 256 * fwd2m, str(faults))
        check("prefetch/4k-no-more-faults",
              faults[("4K", "forward")] is not None and
              faults[("4K", "forward")] <= faults[("4K", "off")], str(faults))
        out = m.command("vm image-free img")
        check("prefetch/image-free", "image img freed" in out, out)
    finally:
        m.close()


def bochs_vmx_snapshot(check):
    restores = [("r4k", "4K", "off", "backward"), ("r2m", "2M", "both", "random")]
    cmds = ["vm create src restore_touch mem=16M -- mib=8", "vm run src", "vm snapshot src img",
            "vm destroy src"]
    for vm, chunk, mode, order in restores:
        cmds += ["mmu prefetch=" + mode,
                 "vm create %s restore=img chunk=%s -- order=%s" % (vm, chunk, order),
                 "vm run %s timeout=120" % vm, "stats " + vm, "vm audit " + vm,
                 "vm destroy " + vm]
    cmds += ["poweroff"]
    iso = make_iso("vmx-snapshot", 'run="%s"' % "; ".join(cmds),
                   [os.path.join(GUESTS_DIR, "restore_touch.elf")])
    log = run_bochs(iso, timeout=300)
    parts = split_run_output(log)
    check("vmx-snapshot/backend", re.search(r"virt: vmx with ept", log) is not None, log[:3000])
    check("vmx-snapshot/snapshot-point",
          "vm src stopped: snapshot point" in parts.get("vm run src", ""), log[-2000:])
    check("vmx-snapshot/snapshot", "vm src snapshot: image 'img'" in
          parts.get("vm snapshot src img", ""), log[-2000:])
    for vm, chunk, mode, order in restores:
        out = parts.get("vm run %s timeout=120" % vm, "")
        check("vmx-snapshot/restored-bytes-" + vm,
              "restore_touch ok" in out and "vm %s exited: status 0" % vm in out, out or log[-2000:])
        check("vmx-snapshot/audit-" + vm, "mmu audit: ok" in parts.get("vm audit " + vm, ""),
              log[-2000:])
    faults = [stat(parts.get("stats " + vm, ""), "pf_taken") for vm, _, _, _ in restores]
    check("vmx-snapshot/2m-fewer-faults",
          None not in faults and faults[1] * 64 <= faults[0], str(faults))
