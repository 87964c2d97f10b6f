/* The Intel VMX backend: VMXON per CPU, one VMCS per vCPU, and the ops that
 * register it. svm/svm.c is its AMD mirror; beside it, run.c enters the guest
 * (vmx_entry.S) and decodes the exits into vendor-neutral events, caps.c
 * adjusts the controls to the capability MSRs, tlb.c hands out VPIDs and says
 * what each entry must flush, vmcs.c fills the VMCS, cr.c emulates the
 * control registers and ept.c is the EPT format.
 *
 * Every control is adjusted to what the capability MSRs allow (SDM vol. 3C
 * appendix A); what sprig cannot do without (EPT with 4-level write-back
 * tables, INVEPT, unrestricted guest, the EFER load/save controls) is refused
 * when virtualization is enabled, with the reason. Guests start as multiboot
 * requires, in 32-bit protected mode with paging off, and switch themselves
 * to long mode: with unrestricted guest the CPU does that in VMX non-root
 * operation, and the backend keeps the IA-32e-mode-guest entry control equal
 * to EFER.LMA. Only the CR0/CR4 bits that VMX forces (the fixed-bit MSRs) are
 * owned by the host, behind read shadows. */
#include "vmx/vmx.h"
#include "arch/x86/apic.h"
#include "arch/x86/cpu.h"
#include "arch/x86/cpuinfo.h"
#include "arch/x86/percpu.h"
#include "arch/x86/regs.h"
#include "arch/x86/tsc.h"
#include "lib/print.h"
#include "mm/frame.h"
#include "vmx/caps.h"
#include "vmx/cr.h"
#include "vmx/ept.h"
#include "vmx/event.h"
#include "vmx/run.h"

/* MSRs that VMX neither saves nor loads and that sprig itself never uses (no
 * SYSCALL, no SWAPGS): each entry loads the guest's values from a VM-entry
 * MSR-load list and each exit stores them back into the same list, so that
 * they need no exit and nothing restores the host's. */
static const uint32_t switched_msrs[] = {
	MSR_KERNEL_GS_BASE, MSR_STAR, MSR_LSTAR, MSR_CSTAR, MSR_SFMASK,
};
#define SWITCHED_MSRS (sizeof(switched_msrs) / sizeof(switched_msrs[0]))
_Static_assert(VMX_SWITCHED_MSRS == SWITCHED_MSRS, "switched MSR list");

struct vmx_caps vmx_caps;
uint64_t preemption_budget_tsc;
static paddr_t msr_bitmap;
static struct vpid_pool vpids;
static bool probed;

/* A zeroed frame that VMX may reference (below 4 GiB when BASIC says so). */
static paddr_t vmx_frame_alloc(void)
{
	paddr_t pa = frame_alloc_zeroed(0);

	if (pa && vmx_caps.regions_below_4g && pa + PAGE_SIZE > (1ull << 32)) {
		frame_free(pa, 0);
		return 0;
	}
	return pa;
}

/* The capability MSRs, each read only where the SDM says it exists. */
static void read_cap_msrs(struct vmx_cap_msrs *m)
{
	bool true_ctls = cpuinfo.vmx.true_ctls;

	m->basic = rdmsr(MSR_VMX_BASIC);
	m->pin = rdmsr(true_ctls ? MSR_VMX_TRUE_PINBASED_CTLS : MSR_VMX_PINBASED_CTLS);
	m->proc = rdmsr(true_ctls ? MSR_VMX_TRUE_PROCBASED_CTLS : MSR_VMX_PROCBASED_CTLS);
	m->proc2 = cpuinfo.vmx.secondary_ctls ? rdmsr(MSR_VMX_PROCBASED_CTLS2) : 0;
	m->exit = rdmsr(true_ctls ? MSR_VMX_TRUE_EXIT_CTLS : MSR_VMX_EXIT_CTLS);
	m->entry = rdmsr(true_ctls ? MSR_VMX_TRUE_ENTRY_CTLS : MSR_VMX_ENTRY_CTLS);
	m->misc = rdmsr(MSR_VMX_MISC);
	m->cr0_fixed0 = rdmsr(MSR_VMX_CR0_FIXED0);
	m->cr0_fixed1 = rdmsr(MSR_VMX_CR0_FIXED1);
	m->cr4_fixed0 = rdmsr(MSR_VMX_CR4_FIXED0);
	m->cr4_fixed1 = rdmsr(MSR_VMX_CR4_FIXED1);
	m->ept_vpid_cap = cpuinfo.vmx.ept_vpid_cap;
}

static bool vmx_probe(char *err, size_t len)
{
	struct vmx_cap_msrs m;

	read_cap_msrs(&m);
	if (!vmx_caps_init(&vmx_caps, &m, err, len))
		return false;
	preemption_budget_tsc = vmx_preemption_budget_tsc(tsc_khz());
	if (!(msr_bitmap = vmx_frame_alloc())) {
		ksnprintf(err, len, "out of memory for the MSR bitmap");
		return false;
	}
	vmx_msr_bitmap_init(pa_to_va(msr_bitmap));
	probed = true;
	return true;
}

/* This CPU in VMX operation, in a frame of its own; NULL before VMXON. */
static struct vmx_cpu *vmx_this_cpu(void)
{
	return this_cpu()->virt;
}

_Static_assert(sizeof(struct vmx_cpu) <= PAGE_SIZE, "vmx_cpu fits its frame");

static bool vmx_cpu_enable(char *err, size_t len)
{
	uint64_t fc;
	paddr_t region, state;

	if (!cpuinfo.vmx.supported) {
		ksnprintf(err, len, "the CPU has no VMX (CPUID.1:ECX bit 5)");
		return false;
	}
	if (cpuinfo.vmx.disabled_by_bios) {
		ksnprintf(err, len, "VMX is disabled by the firmware (IA32_FEATURE_CONTROL 0x%llx)",
			  (unsigned long long)cpuinfo.vmx.feature_control);
		return false;
	}
	if (!probed && !vmx_probe(err, len))
		return false;
	if (vmx_this_cpu())
		return true;

	/* Unlocked, the control is sprig's to set: allow VMXON outside SMX and
	 * lock it, as firmware would. */
	fc = rdmsr(MSR_FEATURE_CONTROL);
	if (!(fc & FEATURE_CONTROL_LOCK)) {
		wrmsr(MSR_FEATURE_CONTROL, fc | FEATURE_CONTROL_VMX_OUTSIDE_SMX | FEATURE_CONTROL_LOCK);
		fc = rdmsr(MSR_FEATURE_CONTROL);
	}
	if (!(fc & FEATURE_CONTROL_VMX_OUTSIDE_SMX)) {
		ksnprintf(err, len, "IA32_FEATURE_CONTROL 0x%llx forbids VMXON outside SMX",
			  (unsigned long long)fc);
		return false;
	}

	if (!(state = frame_alloc_zeroed(0))) {
		ksnprintf(err, len, "out of memory for the VMX state");
		return false;
	}
	if (!(region = vmx_frame_alloc())) {
		frame_free(state, 0);
		ksnprintf(err, len, "out of memory for the VMXON region");
		return false;
	}
	*(uint32_t *)pa_to_va(region) = cpuinfo.vmx.revision_id;
	write_cr0((read_cr0() | vmx_caps.cr0_fixed0) & vmx_caps.cr0_fixed1);
	write_cr4((read_cr4() | vmx_caps.cr4_fixed0 | CR4_VMXE) & vmx_caps.cr4_fixed1);
	if (!vmxon(region)) {
		frame_free(region, 0);
		frame_free(state, 0);
		ksnprintf(err, len, "VMXON failed (CR0 0x%llx CR4 0x%llx)",
			  (unsigned long long)read_cr0(), (unsigned long long)read_cr4());
		return false;
	}
	*(struct vmx_cpu *)pa_to_va(state) = (struct vmx_cpu){ .apic_id = apic_id(),
							       .vmxon_region = region };
	this_cpu()->virt = pa_to_va(state);
	return true;
}

/* Make the vCPU's VMCS current on this CPU; false if it is active elsewhere
 * (a VMCS moves between CPUs only through VMCLEAR on the old one). */
bool vmcs_make_current(struct vmx_vcpu *a)
{
	if (vmx_this_cpu() != a->cpu)
		return false;
	if (a->cpu->current_vmcs == a->vmcs)
		return true;
	if (!vmptrld(a->vmcs))
		return false;
	a->cpu->current_vmcs = a->vmcs;
	return true;
}

static void vmx_vcpu_free(struct vmx_vcpu *a)
{
	if (a->vmcs) {
		vmclear(a->vmcs);
		if (a->cpu && a->cpu->current_vmcs == a->vmcs)
			a->cpu->current_vmcs = 0;
		frame_free(a->vmcs, 0);
	}
	vpid_free(&vpids, a->tlb.vpid);
	frame_free(va_to_pa(a), 0);
}

static int vmx_vcpu_create(struct vcpu *v)
{
	struct vmx_cpu *cpu = vmx_this_cpu();
	struct vmx_vcpu *a;
	paddr_t pa;

	if (!cpu) {
		kprintf("vmx: VMX is not enabled on this CPU\n");
		return -1;
	}
	if (!(pa = vmx_frame_alloc()))
		return -1;
	a = pa_to_va(pa);
	a->cpu = a->host_cpu = cpu;
	a->pat = PAT_DEFAULT;
	for (unsigned i = 0; i < SWITCHED_MSRS; i++)
		a->msrs[i].index = switched_msrs[i];
	if (vmx_caps.proc2 & PROC2_ENABLE_VPID) {
		if (!(a->tlb.vpid = vpid_alloc(&vpids))) {
			kprintf("vmx: all %d VPIDs are in use\n", VMX_MAX_VPIDS);
			vmx_vcpu_free(a);
			return -1;
		}
		/* The tag may have served an earlier vCPU. */
		a->tlb.vpid_flush = true;
	}
	if (!(a->vmcs = vmx_frame_alloc())) {
		vmx_vcpu_free(a);
		return -1;
	}
	*(uint32_t *)pa_to_va(a->vmcs) = cpuinfo.vmx.revision_id;
	if (!vmclear(a->vmcs) || !vmcs_make_current(a)) {
		kprintf("vmx: VMCLEAR/VMPTRLD of a new VMCS failed\n");
		vmx_vcpu_free(a);
		return -1;
	}
	if (!vmx_vmcs_setup(v, a, msr_bitmap)) {
		vmx_vcpu_free(a);
		return -1;
	}
	v->arch = a;
	/* The EPT root may be a frame an earlier VM used, with translations
	 * still cached under the same EPTP. */
	v->flush_pending = true;
	return 0;
}

static void vmx_vcpu_destroy(struct vcpu *v)
{
	if (v->arch)
		vmx_vcpu_free(v->arch);
	v->arch = NULL;
}

static struct vmx_msr_entry *switched_msr(struct vmx_vcpu *a, uint32_t msr)
{
	for (unsigned i = 0; i < SWITCHED_MSRS; i++)
		if (a->msrs[i].index == msr)
			return &a->msrs[i];
	return NULL;
}

static bool vmx_msr_read(struct vcpu *v, uint32_t msr, uint64_t *val)
{
	struct vmx_vcpu *a = v->arch;
	struct vmx_msr_entry *m;

	if (!vmcs_make_current(a))
		return false;
	switch (msr) {
	case MSR_EFER:
		*val = vmcs_read(VMCS_GUEST_EFER);
		return true;
	case MSR_FS_BASE:
		*val = vmcs_read(VMCS_GUEST_ES_BASE + 2 * VMCS_SEG_FS);
		return true;
	case MSR_GS_BASE:
		*val = vmcs_read(VMCS_GUEST_ES_BASE + 2 * VMCS_SEG_GS);
		return true;
	case MSR_SYSENTER_CS:
		*val = vmcs_read(VMCS_GUEST_SYSENTER_CS);
		return true;
	case MSR_SYSENTER_ESP:
		*val = vmcs_read(VMCS_GUEST_SYSENTER_ESP);
		return true;
	case MSR_SYSENTER_EIP:
		*val = vmcs_read(VMCS_GUEST_SYSENTER_EIP);
		return true;
	case MSR_PAT:
		*val = a->pat;
		return true;
	}
	if (!(m = switched_msr(a, msr)))
		return false;
	*val = m->value;
	return true;
}

/* Values the MSR policy (virt/msr_policy.c) let through: canonical where
 * the VMCS or the MSR-load list needs it, SYSENTER_CS and SFMASK 32 bits. */
static bool vmx_msr_write(struct vcpu *v, uint32_t msr, uint64_t val)
{
	struct vmx_vcpu *a = v->arch;
	struct vmx_msr_entry *m;

	if (!vmcs_make_current(a))
		return false;
	switch (msr) {
	case MSR_EFER:
		vmx_write_efer(a, val);
		return true;
	case MSR_FS_BASE:
	case MSR_GS_BASE:
		vmcs_write(VMCS_GUEST_ES_BASE + 2 * (msr == MSR_FS_BASE ? VMCS_SEG_FS : VMCS_SEG_GS), val);
		return true;
	case MSR_SYSENTER_CS:
		vmcs_write(VMCS_GUEST_SYSENTER_CS, val);
		return true;
	case MSR_SYSENTER_ESP:
		vmcs_write(VMCS_GUEST_SYSENTER_ESP, val);
		return true;
	case MSR_SYSENTER_EIP:
		vmcs_write(VMCS_GUEST_SYSENTER_EIP, val);
		return true;
	case MSR_PAT:
		a->pat = val;
		return true;
	}
	if (!(m = switched_msr(a, msr)))
		return false;
	m->value = val;
	return true;
}

void vmx_inject_exception(struct vcpu *v, unsigned vector, uint32_t error_code)
{
	struct vmx_vcpu *a = v->arch;
	uint32_t info = INTR_INFO_VALID | (INTR_TYPE_HW_EXCEPTION << INTR_INFO_TYPE_SHIFT) | vector;

	if (!vmcs_make_current(a))
		return;
	/* Real mode (unrestricted guest with CR0.PE clear) pushes no error code. */
	if ((vmcs_read(VMCS_GUEST_CR0) & CR0_PE) && x86_vector_has_error_code(vector)) {
		info |= INTR_INFO_DELIVER_CODE;
		vmcs_write(VMCS_ENTRY_EXCEPTION_ERROR_CODE, error_code);
	}
	if (x86_vector_is_fault(vector))
		v->regs.rflags |= RFLAGS_RF;
	vmcs_write(VMCS_ENTRY_INTR_INFO, info);
}

/* CPL is SS.DPL (SDM vol. 3C, 26.3.1.2), as the VMCS keeps it. */
static unsigned vmx_guest_cpl(struct vcpu *v)
{
	if (!vmcs_make_current(v->arch))
		return 0;
	return (vmcs_read(VMCS_GUEST_ES_AR + 2 * VMCS_SEG_SS) >> 5) & 3;
}

/* A VMCS cleared by vmx_vcpu_put on the CPU it left may be made current on
 * any CPU; its launch state is clear, so the next entry is a VMLAUNCH. On a
 * CPU other than the one its host state names, that state is rewritten (the
 * entry flushes what this CPU may hold from an earlier stay: tlb.c). */
static void vmx_vcpu_load(struct vcpu *v)
{
	struct vmx_vcpu *a = v->arch;
	struct vmx_cpu *cpu = vmx_this_cpu();

	if (!cpu || a->cpu == cpu || a->cpu || !vmptrld(a->vmcs))
		return; /* a failed load shows at the entry (vmcs_make_current) */
	a->cpu = cpu;
	cpu->current_vmcs = a->vmcs;
	if (a->host_cpu != cpu && vmx_vmcs_host_state(a))
		a->host_cpu = cpu;
}

/* VMCLEAR on the CPU where the VMCS is active (SDM vol. 3C, 24.11.1): its
 * data reaches memory and another CPU may load it. */
static void vmx_vcpu_put(struct vcpu *v)
{
	struct vmx_vcpu *a = v->arch;

	if (!a->cpu || a->cpu != vmx_this_cpu())
		return;
	vmclear(a->vmcs);
	if (a->cpu->current_vmcs == a->vmcs)
		a->cpu->current_vmcs = 0;
	a->cpu = NULL;
	a->launched = false;
}

static void vmx_init_state(struct vcpu *v)
{
	struct vmx_vcpu *a = v->arch;

	if (!vmcs_make_current(a))
		return;
	vmx_vmcs_init_state();
	/* INIT flushes the TLBs. */
	vmx_tlb_guest_flush(&a->tlb);
}

static void vmx_sipi(struct vcpu *v, uint8_t vector)
{
	if (vmcs_make_current(v->arch))
		vmx_vmcs_sipi(vector);
}

static void vmx_boot_selectors(struct vcpu *v, uint32_t gdt_base, uint16_t gdt_limit, uint16_t cs,
			       uint16_t ds)
{
	if (vmcs_make_current(v->arch))
		vmx_vmcs_boot_selectors(gdt_base, gdt_limit, cs, ds);
}

static int vmx_tdp_max_leaf_level(void)
{
	return vmx_ept_max_leaf_level(cpuinfo.vmx.ept_vpid_cap);
}

/* The guest's IA32_PKRS is loaded at each entry from the VMCS where the CPU
 * has the "load IA32_PKRS" entry control; it stays in the CPU after the exit,
 * where it binds nothing (sprig never sets CR4.PKS). Without the control the
 * guest gets no PKS. */
static bool vmx_pks_switched(void)
{
	return cpuinfo.pks && (vmx_caps.entry & ENTRY_LOAD_PKRS);
}

/* tdp: set at registration, once the capability MSRs are read. */
static const struct virt_backend vmx_backend = {
	.name = "vmx",
	.tdp_max_leaf_level = vmx_tdp_max_leaf_level,
	.cpu_enable = vmx_cpu_enable,
	.vcpu_create = vmx_vcpu_create,
	.vcpu_destroy = vmx_vcpu_destroy,
	.run = vmx_run,
	.finish_exit = vmx_finish_exit,
	.msr_read = vmx_msr_read,
	.msr_write = vmx_msr_write,
	.inject_exception = vmx_inject_exception,
	.single_step_trap = vmx_single_step_trap,
	.guest_cpl = vmx_guest_cpl,
	.guest_mode = vmx_guest_mode,
	.set_segment = vmx_set_segment,
	.interrupt_shadow = vmx_interrupt_shadow,
	.irq_allowed = vmx_irq_allowed,
	.inject_irq = vmx_inject_irq,
	.nmi_allowed = vmx_nmi_allowed,
	.nmi_masked = vmx_nmi_masked,
	.inject_nmi = vmx_inject_nmi,
	.event_window = vmx_event_window,
	.guest_cr0 = vmx_guest_cr0,
	.guest_cr4 = vmx_guest_cr4,
	.dr6_cr2_in_control_block = false,
	.pks_switched = vmx_pks_switched,
	.vcpu_load = vmx_vcpu_load,
	.vcpu_put = vmx_vcpu_put,
	.init_state = vmx_init_state,
	.sipi = vmx_sipi,
	.boot_selectors = vmx_boot_selectors,
	.dump = vmx_dump,
	.state_save = vmx_state_save,
	.state_load = vmx_state_load,
	.state_check = vmx_state_check,
};

/* VMX with EPT, enabled on this CPU; the EPT format (with A/D bits when the
 * CPU has them) is known from then on. */
static bool vmx_backend_probe(char *err, size_t len)
{
	struct virt_backend ops = vmx_backend;

	if (!cpuinfo_has_ept()) {
		ksnprintf(err, len, "the CPU has no VMX with EPT (4-level, write-back)");
		return false;
	}
	if (!vmx_cpu_enable(err, len))
		return false;
	ops.tdp = ept_format(vmx_caps.ept_ad);
	backend_register(&ops);
	return true;
}
BACKEND_PROBE(vmx_backend_probe);
