/* Entering a VMX guest (vmx_entry.S) and decoding its exits into
 * vendor-neutral events; the exits left for after the entry window. The
 * mirror of svm/run.c. */
#include "vmx/run.h"
#include "arch/x86/cpu.h"
#include "arch/x86/cpuinfo.h"
#include "arch/x86/mce.h"
#include "arch/x86/percpu.h"
#include "arch/x86/regs.h"
#include "lib/print.h"
#include "lib/string.h"
#include "vmx/caps.h"
#include "vmx/cr.h"
#include "vmx/ept.h"
#include "vmx/event.h"
#include "vmx/vmx.h"
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

/* Exits on PAUSE while the vCPU shares its CPU (struct vcpu's spin_exits):
 * PAUSE-loop exiting where the CPU has it, with KVM's gap and window (TSC
 * cycles between two PAUSEs of a loop, and the loop's length), else PAUSE
 * exiting; the controls are written only when that changes. */
static void set_spin_exits(struct vcpu *v, struct vmx_vcpu *a)
{
	bool on = v->spin_exits && (vmx_caps.pause_loop_exit || vmx_caps.pause_exit);

	if (on == a->spin_exits)
		return;
	if (vmx_caps.pause_loop_exit) {
		vmcs_write(VMCS_PLE_GAP, 128);
		vmcs_write(VMCS_PLE_WINDOW, 4096);
		vmcs_write(VMCS_PROC2_CONTROLS, (vmcs_read(VMCS_PROC2_CONTROLS) &
						 ~(uint64_t)PROC2_PAUSE_LOOP_EXITING) |
							(on ? PROC2_PAUSE_LOOP_EXITING : 0));
	} else {
		vmcs_write(VMCS_PROC_CONTROLS, (vmcs_read(VMCS_PROC_CONTROLS) &
						~(uint64_t)PROC_PAUSE_EXITING) |
						       (on ? PROC_PAUSE_EXITING : 0));
	}
	a->spin_exits = on;
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
	case EXIT_PAUSE:
		e->kind = VEXIT_PAUSE;
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

void vmx_run(struct vcpu *v, struct vexit *e)
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
	set_spin_exits(v, a);
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
 * guests written for AMD (svm/run.c's VMCALL the other way round); any other
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
	vmx_inject_exception(v, X86_VEC_UD, 0);
}

/* The exits decode_exit left for after the entry window (VEXIT_BACKEND). */
void vmx_finish_exit(struct vcpu *v, struct vexit *e)
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
