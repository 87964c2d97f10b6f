"""sprig on every CPU (docs/smp.md): bring-up under QEMU with SeaBIOS (-smp 2
and 4) and OVMF (-smp 2), maxcpus=, and Bochs (VMX, 2 CPUs). `cpus` lists
each CPU with its state; every online AP must also run a function handed to
it with smp_call and answer a kick, which `cpus` times, so a CPU listed
online that does not run shows as failed. A VM runs after the bring-up, and
after an AP stopped on an exception."""
import os
import re
import time

from e2e_smp_guest import check_sprig_run
from machine import (GUESTS_DIR, Machine, PROMPT, make_iso, run_bochs, scenario_main,
                     split_run_output)

SCENARIOS = ["qemu_bios_smp4", "qemu_bios_smp2", "qemu_bios_maxcpus", "qemu_uefi_smp4",
             "bochs_smp2"]

HELLO = os.path.join(GUESTS_DIR, "hello.elf")
CPU_LINE = re.compile(r"^cpu (\d+) apic (\d+) (online|offline|failed)(.*)$", re.M)


def cpu_table(out):
    """`cpus` output: [(id, apic, state, rest)] and the closing 'N online' count."""
    rows = [(int(i), int(a), s, rest) for i, a, s, rest in CPU_LINE.findall(out)]
    m = re.search(r"^(\d+) online$", out, re.M)
    return rows, int(m.group(1)) if m else None


def check_all_online(check, name, out, n):
    """n CPUs, ids 0..n-1, all online with distinct APIC IDs; each AP ran an
    smp_call function and took a kick."""
    rows, online = cpu_table(out)
    check(name + "/cpu-lines", [r[0] for r in rows] == list(range(n)), out)
    check(name + "/all-online", all(r[2] == "online" for r in rows) and online == n, out)
    check(name + "/distinct-apic-ids", len({r[1] for r in rows}) == n, out)
    check(name + "/aps-answer", all(re.fullmatch(r" call \d+ ns kick \d+ ns", r[3])
                                    for r in rows[1:]) and len(rows) == n, out)


def check_vm_runs(check, name, m, vm):
    out = m.command("vm create %s hello" % vm)
    check(name + "/vm-created-" + vm, "vm %s created" % vm in out, out)
    out = m.command("vm run %s timeout=60" % vm, timeout=120)
    check(name + "/vm-runs-" + vm, "[%s] hello from a multiboot guest" % vm in out and
          "vm %s exited: status 0" % vm in out, out)


def boot_qemu(iso, smp, firmware="bios"):
    m = Machine(iso, firmware=firmware, smp=smp)
    boot = m.expect(PROMPT, timeout=120)
    return m, boot


def qemu_bios_smp4(check):
    """-smp 4: all up; a VM runs; an exception on an AP is reported with that
    CPU, the console goes on, `cpus` shows the AP failed, and VMs still run."""
    m, boot = boot_qemu(make_iso("smp4", "", [HELLO]), 4)
    try:
        check("smp4/boot-line", re.search(r"^smp: 4 CPUs online \((x2apic|xapic)\)$", boot, re.M)
              is not None, boot)
        check_all_online(check, "smp4", m.command("cpus"), 4)
        check_vm_runs(check, "smp4", m, "h")
        out = m.command("panic-test ud cpu=3")
        check("smp4/panic-on-ap", "panic-test: ud raised on cpu 3" in out, out)
        if "*** CPU stopped." not in out:  # the AP's report may come after the prompt
            m.expect("*** CPU stopped.", timeout=30)
        report = m.log[m.log.rfind("*** sprig: CPU exception"):]
        check("smp4/ap-report-names-cpu",
              re.search(r"CPU exception 6 \(invalid opcode\), error code 0x0, cpu 3 apic \d+",
                        report) is not None and "RIP=" in report, report)
        out = m.command("cpus")
        rows, online = cpu_table(out)
        check("smp4/stopped-ap-failed", len(rows) == 4 and rows[3][2] == "failed" and
              "no answer to a kick" in rows[3][3] and online == 3 and
              all(r[2] == "online" for r in rows[:3]), out)
        check_vm_runs(check, "smp4", m, "h2")
    finally:
        m.close()


def qemu_bios_smp2(check):
    m, boot = boot_qemu(make_iso("smp2", "", [HELLO]), 2)
    try:
        check("smp2/boot-line", re.search(r"^smp: 2 CPUs online", boot, re.M) is not None, boot)
        out = m.command("cpus")
        check_all_online(check, "smp2", out, 2)
        check("smp2/names-hypervisor", 'hypervisor: "TCGTCGTCGTCG"' in out, out)
        check_vm_runs(check, "smp2", m, "h")
        out = m.command("panic-test ud cpu=0x9")
        check("smp2/panic-test-no-such-cpu", "not an idle online CPU" in out, out)
    finally:
        m.close()


def qemu_bios_maxcpus(check):
    """maxcpus=1 on two CPUs: the second is sent INIT and left offline."""
    m, boot = boot_qemu(make_iso("maxcpus", "maxcpus=1", [HELLO]), 2)
    try:
        check("maxcpus/boot-line", re.search(r"^smp: 1 CPUs online \(\w+\), 1 offline \(maxcpus=1\)$",
                                             boot, re.M) is not None, boot)
        out = m.command("cpus")
        rows, online = cpu_table(out)
        check("maxcpus/one-online-one-offline",
              [(r[0], r[2]) for r in rows] == [(0, "online"), (1, "offline")] and online == 1, out)
        out = m.command("panic-test ud cpu=1")
        check("maxcpus/offline-takes-no-call", "not an idle online CPU" in out, out)
        check_vm_runs(check, "maxcpus", m, "h")
    finally:
        m.close()


def qemu_uefi_smp4(check):
    """OVMF: the trampoline's page comes from the EFI memory map; a 3-vCPU
    guest then runs on CPUs 1-3."""
    m, boot = boot_qemu(make_iso("smp-uefi", "", [HELLO, os.path.join(GUESTS_DIR, "smp.elf")]),
                        4, firmware="uefi")
    try:
        check("uefi-smp4/efi-memory-map", "EFI memory map" in boot, boot[-2000:])
        check("uefi-smp4/boot-line", re.search(r"^smp: 4 CPUs online", boot, re.M) is not None,
              boot)
        check_all_online(check, "uefi-smp4", m.command("cpus"), 4)
        check_vm_runs(check, "uefi-smp4", m, "h")
        m.command("vm create s smp vcpus=3 -- cpus=3")
        out = m.command("vm run s timeout=120", timeout=180)
        check_sprig_run(check, "uefi-smp4/vcpus3", out, "s", 3)
    finally:
        m.close()


def bochs_smp2(check):
    """Bochs, VMX with EPT, 2 CPUs: the AP enables VMX itself (VMXON on its
    own region) and answers; a 2-vCPU guest runs across both CPUs (its AP
    started in real mode, IPIs crossing CPUs, the VMCS on the AP's CPU); the
    stale-translation test passes with the remote flush and fails without;
    one boot, under 3 minutes."""
    iso = make_iso("bochs-smp", 'run="cpus; vm create h hello; vm run h; '
                   'vm create s smp vcpus=2 cpus=0,1 -- cpus=2 rounds=20; vm run s timeout=120; '
                   'bench stale rounds=200; mmu remote_flush=off; bench stale rounds=200; '
                   'poweroff"', [HELLO, os.path.join(GUESTS_DIR, "smp.elf"),
                                 os.path.join(GUESTS_DIR, "stale.elf")])
    t = time.time()
    log = run_bochs(iso, cpus=2, timeout=180)
    took = time.time() - t
    parts = split_run_output(log)
    check("bochs-smp2/vmx", re.search(r"virt: vmx with ept", log) is not None, log[:3000])
    check("bochs-smp2/boot-line", re.search(r"^smp: 2 CPUs online", log, re.M) is not None,
          log[:3000])
    check_all_online(check, "bochs-smp2", parts.get("cpus", ""), 2)
    check("bochs-smp2/no-hypervisor-bit", "hypervisor: none in CPUID" in parts.get("cpus", ""),
          parts.get("cpus", ""))
    out = parts.get("vm run h", "")
    check("bochs-smp2/vm-runs", "vm h exited: status 0" in out, log[-2000:])
    check_sprig_run(check, "bochs-smp2/vcpus2", parts.get("vm run s timeout=120", ""), "s", 2)
    # The two stale runs, remote flush on and then off, in their order.
    stale = [re.search(r"^stale: rounds=(\d+) hits=(\d+)", chunk, re.M)
             for chunk in log.split(PROMPT) if chunk.startswith("bench stale")]
    check("bochs-smp2/stale-remote-flush-on", len(stale) == 2 and stale[0] is not None and
          stale[0].group(1) == "200" and stale[0].group(2) == "0", log[-3000:])
    check("bochs-smp2/stale-remote-flush-off", len(stale) == 2 and stale[1] is not None and
          stale[1].group(1) == "200" and int(stale[1].group(2)) > 0, log[-3000:])
    check("bochs-smp2/poweroff", "poweroff" in parts, log[-500:])
    check("bochs-smp2/under-3-minutes", took < 180, "%.0f s" % took)


if __name__ == "__main__":
    scenario_main(globals(), "qemu_bios_smp2")
