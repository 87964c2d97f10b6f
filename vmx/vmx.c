/* The Intel VMX backend: VMXON per CPU, one VMCS per vCPU, the entry loop
 * (vmx_entry.S) and exit decoding into vendor-neutral events. svm/svm.c is its
 * AMD mirror; beside it, caps.c adjusts the controls to the capability MSRs,
 * tlb.c hands out VPIDs and says what each entry must flush, vmcs.c fills
 * the VMCS, cr.c emulates the control registers and ept.c is the EPT format.
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
#include "arch/x86/mce.h"
#include "arch/x86/percpu.h"
#include "arch/x86/regs.h"
#include "arch/x86/tsc.h"
#include "lib/print.h"
#include "lib/string.h"
#include "mm/frame.h"
#include "vmx/caps.h"
#include "vmx/cr.h"
#include "vmx/ept.h"
#include "vmx/event.h"
#include "vmx/vmx_errors.h"

_Static_assert(offsetof(struct vcpu_regs, rax) == VCPU_REGS_RAX, "vcpu_regs layout");
_Static_assert(offsetof(struct vcpu_regs, rbx) == VCPU_REGS_RBX, "vcpu_regs layout");
_Static_assert(offsetof(struct vcpu_regs, rcx) == VCPU_REGS_RCX, "vcpu_regs layout");
_Static_assert(offsetof(struct vcpu_regs, rdx) == VCPU_REGS_RDX, "vcpu_regs layout");
_Static_assert(offsetof(struct vcpu_regs, rsi) == VCPU_REGS_RSI, "vcpu_regs layout");
_Static_assert(offsetof(struct vcpu_regs, rdi) == VCPU_REGS_RDI, "vcpu_regs layout");
_Static_assert(offsetof(struct vcpu_regs, rbp) == VCPU_REGS_RBP, "vcpu_regs layout");
_Static_assert(offsetof(struct vcpu_regs, r8) == VCPU_REGS_R8, "vcpu_regs layout");
_Static_assert(offsetof(struct vcpu_regs, r9) == VCPU_REGS_R9, "vcpu_regs layout");
_Static_assert(offsetof(struct vcpu_regs, r10) == VCPU_REGS_R10, "vcpu_regs layout");
_Static_assert(offsetof(struct vcpu_regs, r11) == VCPU_REGS_R11, "vcpu_regs layout");
_Static_assert(offsetof(struct vcpu_regs, r12) == VCPU_REGS_R12, "vcpu_regs layout");
_Static_assert(offsetof(struct vcpu_regs, r13) == VCPU_REGS_R13, "vcpu_regs layout");
_Static_assert(offsetof(struct vcpu_regs, r14) == VCPU_REGS_R14, "vcpu_regs layout");
_Static_assert(offsetof(struct vcpu_regs, r15) == VCPU_REGS_R15, "vcpu_regs layout");

int vmx_enter(struct vcpu_regs *regs, int launched);

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
static uint64_t preemption_budget_tsc;
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

/* sprig may change its own CR0/CR3/CR4 (the FPU code sets CR4 bits): exits
 * must restore them as they are at the entry. */
static void refresh_host_control_registers(struct vmx_vcpu *a)
{
	uint64_t cr0 = read_cr0(), cr3 = read_cr3(), cr4 = read_cr4();

	if (cr0 != a->host_cr0)
		vmcs_write(VMCS_HOST_CR0, a->host_cr0 = cr0);
	if (cr3 != a->host_cr3)
		vmcs_write(VMCS_HOST_CR3, a->host_cr3 = cr3);
	if (cr4 != a->host_cr4)
		vmcs_write(VMCS_HOST_CR4, a->host_cr4 = cr4);
}

static void decode_exit(struct vcpu *v, struct vmx_vcpu *a, struct vexit *e)
{
	uint32_t basic = a->exit_reason & EXIT_REASON_BASIC_MASK;
	uint64_t qual = a->exit_qualification;

	e->code = a->exit_reason;
	e->info1 = qual;
	if (a->exit_reason & EXIT_REASON_ENTRY_FAILURE) {
		if (basic == EXIT_MACHINE_CHECK)
			mce_report();
		e->kind = VEXIT_FAILED;
		vmx_entry_failure_describe(a->exit_reason, qual, e->text, sizeof(e->text));
		return;
	}
	switch (basic) {
	case EXIT_EXCEPTION_NMI:
		e->info2 = vmcs_read(VMCS_EXIT_INTR_INFO);
		if (((e->info2 & INTR_INFO_TYPE_MASK) >> INTR_INFO_TYPE_SHIFT) == INTR_TYPE_NMI) {
			/* A host NMI: sprig's own handler takes it, as if it
			 * had arrived outside the guest. */
			__asm__ volatile("int $2");
			e->kind = VEXIT_INTR;
			return;
		}
		if ((e->info2 & INTR_INFO_VECTOR_MASK) == VEC_MACHINE_CHECK) {
			/* The exception bitmap's bit 18: the host reports it. */
			mce_report();
			e->kind = VEXIT_FAILED;
			ksnprintf(e->text, sizeof(e->text), "machine check (#MC) while the guest ran");
			return;
		}
		if ((e->info2 & INTR_INFO_VECTOR_MASK) == X86_VEC_UD) {
			e->kind = VEXIT_BACKEND; /* vmx_finish_exit: reads guest memory */
			return;
		}
		e->kind = VEXIT_UNKNOWN;
		ksnprintf(e->text, sizeof(e->text), "exception %u in the guest",
			  (unsigned)(e->info2 & INTR_INFO_VECTOR_MASK));
		return;
	case EXIT_EXTERNAL_INTERRUPT:
	case EXIT_PREEMPTION_TIMER:
		e->kind = VEXIT_INTR;
		return;
	case EXIT_INTERRUPT_WINDOW:
	case EXIT_NMI_WINDOW:
		vmx_event_window(v, false, false);
		e->kind = VEXIT_WINDOW;
		return;
	case EXIT_TRIPLE_FAULT:
		e->kind = VEXIT_SHUTDOWN;
		return;
	case EXIT_CR_ACCESS:
		e->kind = VEXIT_BACKEND; /* vmx_finish_exit: may read guest memory */
		return;
	case EXIT_EPT_VIOLATION:
		e->kind = VEXIT_NPF;
		e->info2 = e->npf.gpa = vmcs_read(VMCS_GUEST_PHYSICAL_ADDRESS);
		e->npf.access = (qual & EPT_QUAL_READ ? TDP_ACC_READ : 0) |
				(qual & EPT_QUAL_WRITE ? TDP_ACC_WRITE : 0) |
				(qual & EPT_QUAL_FETCH ? TDP_ACC_EXEC : 0);
		if (!e->npf.access)
			e->npf.access = TDP_ACC_READ;
		e->npf.present = qual & EPT_QUAL_PRESENT;
		return;
	case EXIT_EPT_MISCONFIG:
		e->kind = VEXIT_BACKEND; /* vmx_finish_exit: walks under the MMU lock */
		e->info2 = vmcs_read(VMCS_GUEST_PHYSICAL_ADDRESS);
		return;
	case EXIT_IO:
		e->kind = VEXIT_IO;
		e->io.port = IO_QUAL_PORT(qual);
		e->io.size = (uint8_t)IO_QUAL_SIZE(qual);
		e->io.in = qual & IO_QUAL_IN;
		e->io.string = qual & IO_QUAL_STRING;
		break;
	case EXIT_CPUID:
		e->kind = VEXIT_CPUID;
		break;
	case EXIT_RDMSR:
		e->kind = VEXIT_RDMSR;
		break;
	case EXIT_WRMSR:
		e->kind = VEXIT_WRMSR;
		break;
	case EXIT_VMCALL:
		e->kind = VEXIT_HYPERCALL;
		break;
	case EXIT_HLT:
		e->kind = VEXIT_HLT;
		break;
	case EXIT_XSETBV:
		e->kind = VEXIT_XSETBV;
		break;
	case EXIT_INVD:
		vexit_insn(e, VEXIT_INSN_INVD);
		break;
	case EXIT_RDPMC:
		vexit_insn(e, VEXIT_INSN_RDPMC);
		break;
	case EXIT_MONITOR:
	case EXIT_MWAIT:
		vexit_insn(e, VEXIT_INSN_MONITOR_MWAIT);
		break;
	case EXIT_GETSEC:
	case EXIT_VMCLEAR ... EXIT_VMXON: /* VMCLEAR through VMXON, VMCALL aside */
	case EXIT_INVEPT:
	case EXIT_INVVPID:
	case EXIT_VMFUNC:
		vexit_insn(e, VEXIT_INSN_VIRT);
		break;
	default:
		e->kind = VEXIT_UNKNOWN;
		ksnprintf(e->text, sizeof(e->text), "VMX exit reason %u (%s)", basic,
			  vmx_exit_reason_name(basic));
		return;
	}
	/* An instruction exit: virt/ skips it once emulated. */
	e->insn_len = (unsigned)vmcs_read(VMCS_EXIT_INSTRUCTION_LEN);
}

/* The preemption timer bounds how long the guest runs without an exit, over
 * all its entries together: an exit does not restart the budget. Where the
 * CPU saves the timer's value at exits it counts on by itself, and only an
 * expired budget is reloaded; elsewhere each entry loads what is left. */
static void arm_preemption_timer(struct vmx_vcpu *a)
{
	uint32_t ticks;

	if (!(vmx_caps.pin & PIN_PREEMPTION_TIMER))
		return;
	if (vmx_preemption_arm(rdtsc(), &a->slice_end,
			       (a->exit_reason & EXIT_REASON_BASIC_MASK) == EXIT_PREEMPTION_TIMER,
			       vmx_caps.exit & EXIT_SAVE_PREEMPTION_TIMER, preemption_budget_tsc,
			       vmx_caps.misc, &ticks))
		vmcs_write(VMCS_PREEMPTION_TIMER, ticks);
}

static void vmx_run(struct vcpu *v, struct vexit *e)
{
	struct vmx_vcpu *a = v->arch;
	struct vmx_tlb_flush flush;
	int status;

	memset(e, 0, sizeof(*e));
	if (!vmcs_make_current(a)) {
		e->kind = VEXIT_FAILED;
		ksnprintf(e->text, sizeof(e->text), "the vCPU's VMCS cannot be loaded on this CPU");
		return;
	}
	refresh_host_control_registers(a);
	flush = vmx_tlb_entry_flush(&v->flush_pending, &a->tlb, this_cpu()->id);
	if (flush.invept)
		invept(vmx_caps.invept_type, a->eptp);
	if (flush.invvpid)
		invvpid(vmx_caps.invvpid_type, a->tlb.vpid);
	/* virt/ skipped the exiting instruction: an STI or MOV SS before it no
	 * longer blocks anything. */
	if (v->regs.rip != a->exit_rip)
		vmcs_write(VMCS_GUEST_INTERRUPTIBILITY,
			   vmcs_read(VMCS_GUEST_INTERRUPTIBILITY) &
				   ~(uint64_t)(BLOCKING_BY_STI | BLOCKING_BY_MOV_SS));
	arm_preemption_timer(a);
	vmcs_write(VMCS_TSC_OFFSET, (uint64_t)v->tsc_offset);
	vmcs_write(VMCS_GUEST_RSP, v->regs.rsp);
	vmcs_write(VMCS_GUEST_RIP, v->regs.rip);
	vmcs_write(VMCS_GUEST_RFLAGS, v->regs.rflags | RFLAGS_FIXED);
	if (vmx_caps.entry & ENTRY_LOAD_PKRS)
		vmcs_write(VMCS_GUEST_PKRS, v->pkrs);

	vcpu_load_tsc_aux(v);
	status = vmx_enter(&v->regs, a->launched);
	if (status != VMX_ENTER_EXITED) {
		const char *insn = a->launched ? "VMRESUME" : "VMLAUNCH";

		e->kind = VEXIT_FAILED;
		if (status == VMX_ENTER_FAIL_VALID) {
			e->code = a->entry_error = (uint32_t)vmcs_read(VMCS_INSTRUCTION_ERROR);
			ksnprintf(e->text, sizeof(e->text), "%s failed: %s", insn,
				  vmx_instruction_error_name(a->entry_error));
		} else {
			ksnprintf(e->text, sizeof(e->text), "%s failed: no current VMCS", insn);
		}
		return;
	}

	a->entry_error = 0;
	a->exit_reason = (uint32_t)vmcs_read(VMCS_EXIT_REASON);
	a->exit_qualification = vmcs_read(VMCS_EXIT_QUALIFICATION);
	if (!(a->exit_reason & EXIT_REASON_ENTRY_FAILURE))
		a->launched = true;
	v->regs.rsp = vmcs_read(VMCS_GUEST_RSP);
	v->regs.rip = a->exit_rip = vmcs_read(VMCS_GUEST_RIP);
	v->regs.rflags = vmcs_read(VMCS_GUEST_RFLAGS);
	/* The guest may have entered or left long mode by itself. */
	if (!(vmx_caps.misc & VMX_MISC_STORES_LMA))
		vmx_set_ia32e_mode(vmcs_read(VMCS_GUEST_EFER) & EFER_LMA);
	decode_exit(v, a, e);
	if (!(a->exit_reason & EXIT_REASON_ENTRY_FAILURE))
		vmx_complete_events(a, e);
}

/* A #UD: VMMCALL (0f 01 d9) is a hypercall, as KVM emulates it on Intel for
 * guests written for AMD (svm.c's VMCALL the other way round); any other
 * instruction gets its #UD. A fault's exit gives no instruction length. */
static void vmx_ud_exit(struct vcpu *v, struct vexit *e)
{
	static const uint8_t vmmcall[] = { 0x0f, 0x01, 0xd9 };
	uint8_t b[sizeof(vmmcall)];
	unsigned code_bits;

	if (vcpu_fetch_at_rip(v, b, sizeof(b), &code_bits) == sizeof(b) &&
	    !memcmp(b, vmmcall, sizeof(b))) {
		e->kind = VEXIT_HYPERCALL;
		e->insn_len = sizeof(vmmcall);
		return;
	}
	e->kind = VEXIT_HANDLED;
	vmx_inject_exception(v, X86_VEC_UD);
}

/* The exits decode_exit left for after the entry window (VEXIT_BACKEND). */
static void vmx_finish_exit(struct vcpu *v, struct vexit *e)
{
	uint64_t sptes[TDP_ROOT_LEVEL + 1];
	int last;

	switch (e->code & EXIT_REASON_BASIC_MASK) {
	case EXIT_CR_ACCESS:
		vmx_handle_cr_access(v, v->arch, e->info1, e);
		return;
	case EXIT_EXCEPTION_NMI:
		vmx_ud_exit(v, e);
		return;
	}
	/* EXIT_EPT_MISCONFIG: sprig's own tables are at fault, refaulting
	 * would loop; the walk names the entry. */
	e->kind = VEXIT_FAILED;
	last = vcpu_tdp_walk(v, e->info2, sptes);
	ept_describe_misconfig(sptes, last, e->info2, cpuinfo.vmx.ept_vpid_cap & 1 /* execute-only */,
			       e->text, sizeof(e->text));
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

void vmx_inject_exception(struct vcpu *v, unsigned vector)
{
	struct vmx_vcpu *a = v->arch;
	uint32_t info = INTR_INFO_VALID | (INTR_TYPE_HW_EXCEPTION << INTR_INFO_TYPE_SHIFT) | vector;

	if (!vmcs_make_current(a))
		return;
	/* Real mode (unrestricted guest with CR0.PE clear) pushes no error code. */
	if ((vmcs_read(VMCS_GUEST_CR0) & CR0_PE) && x86_vector_has_error_code(vector)) {
		info |= INTR_INFO_DELIVER_CODE;
		vmcs_write(VMCS_ENTRY_EXCEPTION_ERROR_CODE, 0);
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
	.guest_cpl = vmx_guest_cpl,
	.guest_mode = vmx_guest_mode,
	.irq_allowed = vmx_irq_allowed,
	.inject_irq = vmx_inject_irq,
	.nmi_allowed = vmx_nmi_allowed,
	.nmi_masked = vmx_nmi_masked,
	.inject_nmi = vmx_inject_nmi,
	.event_window = vmx_event_window,
	.guest_cr0 = vmx_guest_cr0,
	.guest_cr4 = vmx_guest_cr4,
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
