/* Entering an SVM guest (svm_entry.S) and decoding its exits into
 * vendor-neutral events; the exits left for after the entry window. The
 * mirror of vmx/run.c. */
#include "svm/run.h"
#include "arch/x86/cpuinfo.h"
#include "arch/x86/mce.h"
#include "arch/x86/regs.h"
#include "lib/print.h"
#include "lib/string.h"
#include "svm/cr.h"
#include "svm/event.h"
#include "svm/npt.h"
#include "svm/svm.h"
#include "svm/svm_vcpu.h"

void svm_enter(uint64_t vmcb_pa, struct vcpu_regs *regs, uint64_t host_vmcb_pa);

/* Exits on PAUSE while the vCPU shares its CPU (struct vcpu's spin_exits):
 * after a loop of them where the CPU has a pause filter, with KVM's count
 * (and threshold: TSC cycles between two PAUSEs of a loop), else at each. */
static void set_spin_exits(struct vcpu *v, struct vmcb *vmcb)
{
	struct vmcb_control *c = &vmcb->control;

	if (!v->spin_exits) {
		c->intercept_misc1 &= ~INTERCEPT_PAUSE;
		return;
	}
	c->intercept_misc1 |= INTERCEPT_PAUSE;
	if (cpuinfo.svm.features & SVM_FEAT_PAUSE_FILTER)
		c->pause_filter_count = 3000;
	if (cpuinfo.svm.features & SVM_FEAT_PAUSE_FILTER_THRESHOLD)
		c->pause_filter_threshold = 128;
}

static void decode_exit(struct vcpu *v, struct svm_vcpu *sv, struct vmcb *vmcb, struct vexit *e)
{
	struct vmcb_control *c = &vmcb->control;
	uint64_t code = c->exit_code;
	bool nrips = cpuinfo.svm.features & SVM_FEAT_NRIPS;

	e->code = code;
	e->info1 = c->exit_info1;
	e->info2 = c->exit_info2;
	e->insn_len = nrips && c->next_rip ? (unsigned)(c->next_rip - vmcb->save.rip) : 0;
	e->text[0] = 0;

	switch (code) {
	case SVM_EXIT_NPF:
		if (c->exit_info1 & NPF_RSV) {
			/* svm_finish_exit: walks under the MMU lock. */
			e->kind = VEXIT_BACKEND;
			break;
		}
		e->kind = VEXIT_NPF;
		e->npf.gpa = c->exit_info2;
		e->npf.present = c->exit_info1 & NPF_PRESENT;
		e->npf.access = (c->exit_info1 & NPF_FETCH)   ? TDP_ACC_EXEC
				: (c->exit_info1 & NPF_WRITE) ? TDP_ACC_WRITE
							      : TDP_ACC_READ;
		/* Decode assists: the bytes the CPU fetched (APM 15.33.5). */
		e->npf.insn_bytes_len = 0;
		if ((cpuinfo.svm.features & SVM_FEAT_DECODE_ASSISTS) &&
		    c->insn_len <= sizeof(e->npf.insn_bytes)) {
			e->npf.insn_bytes_len = c->insn_len;
			memcpy(e->npf.insn_bytes, c->insn_bytes, c->insn_len);
		}
		break;
	case SVM_EXIT_WRITE_CR4:
		e->kind = VEXIT_BACKEND; /* svm_finish_exit: may fetch the instruction */
		break;
	case SVM_EXIT_VINTR:
		/* The window the virtual interrupt request waited for is open. */
		c->int_ctl &= ~INT_CTL_V_IRQ;
		e->kind = VEXIT_WINDOW;
		break;
	case SVM_EXIT_IRET:
		svm_iret_exit(sv);
		e->kind = VEXIT_HANDLED;
		break;
	case SVM_EXIT_EXCP_BASE + X86_VEC_UD:
		e->kind = VEXIT_BACKEND; /* svm_finish_exit: fetches the instruction */
		break;
	case SVM_EXIT_EXCP_BASE + X86_VEC_DB:
		/* Intercepted only while single-stepping to an event window. */
		svm_step_trap(v);
		e->kind = VEXIT_WINDOW;
		break;
	case SVM_EXIT_IOIO:
		e->kind = VEXIT_IO;
		e->io.port = (uint16_t)(c->exit_info1 >> IOIO_PORT_SHIFT);
		e->io.in = c->exit_info1 & IOIO_IN;
		e->io.string = c->exit_info1 & IOIO_STRING;
		e->io.size = (c->exit_info1 >> IOIO_SIZE_SHIFT) & 1 ? 1
			     : (c->exit_info1 >> IOIO_SIZE_SHIFT) & 2 ? 2 : 4;
		/* EXITINFO2 holds the next RIP for IOIO, with or without NRIPS. */
		e->insn_len = (unsigned)(c->exit_info2 - vmcb->save.rip);
		break;
	case SVM_EXIT_VMMCALL:
		e->kind = VEXIT_HYPERCALL;
		if (!e->insn_len)
			e->insn_len = 3; /* QEMU has no next-RIP saving */
		break;
	case SVM_EXIT_CPUID:
		e->kind = VEXIT_CPUID;
		if (!e->insn_len)
			e->insn_len = 2;
		break;
	case SVM_EXIT_MSR:
		e->kind = c->exit_info1 ? VEXIT_WRMSR : VEXIT_RDMSR;
		if (!e->insn_len)
			e->insn_len = 2;
		break;
	case SVM_EXIT_HLT:
		e->kind = VEXIT_HLT;
		if (!e->insn_len)
			e->insn_len = 1;
		break;
	case SVM_EXIT_XSETBV:
		e->kind = VEXIT_XSETBV;
		if (!e->insn_len)
			e->insn_len = 3;
		break;
	case SVM_EXIT_INVD:
		vexit_insn(e, VEXIT_INSN_INVD);
		if (!e->insn_len)
			e->insn_len = 2;
		break;
	case SVM_EXIT_PAUSE:
		e->kind = VEXIT_PAUSE;
		if (!e->insn_len)
			e->insn_len = 2; /* f3 90 */
		break;
	case SVM_EXIT_RDPMC:
		vexit_insn(e, VEXIT_INSN_RDPMC);
		break;
	case SVM_EXIT_MONITOR:
	case SVM_EXIT_MWAIT:
	case SVM_EXIT_MWAIT_CONDITIONAL:
		vexit_insn(e, VEXIT_INSN_MONITOR_MWAIT);
		break;
	case SVM_EXIT_VMRUN:
	case SVM_EXIT_VMLOAD:
	case SVM_EXIT_VMSAVE:
	case SVM_EXIT_STGI:
	case SVM_EXIT_CLGI:
	case SVM_EXIT_SKINIT:
	case SVM_EXIT_INVLPGA:
		vexit_insn(e, VEXIT_INSN_VIRT);
		break;
	case SVM_EXIT_INTR:
	case SVM_EXIT_NMI:
	case SVM_EXIT_SMI:
		e->kind = VEXIT_INTR;
		break;
	case SVM_EXIT_SHUTDOWN:
		e->kind = VEXIT_SHUTDOWN;
		break;
	case SVM_EXIT_EXCP_BASE + VEC_MACHINE_CHECK:
		mce_report();
		e->kind = VEXIT_FAILED;
		ksnprintf(e->text, sizeof(e->text), "machine check (#MC) while the guest ran");
		break;
	default:
		if ((uint32_t)code == SVM_EXIT_INVALID) {
			e->kind = VEXIT_FAILED;
			ksnprintf(e->text, sizeof(e->text),
				  "VMRUN refused the VMCB (VMEXIT_INVALID): inconsistent guest state");
		} else {
			e->kind = VEXIT_UNKNOWN;
			ksnprintf(e->text, sizeof(e->text), "SVM exit code 0x%llx",
				  (unsigned long long)code);
		}
		break;
	}
}

/* A #UD: VMCALL (0f 01 c1) is a hypercall, as KVM emulates it on AMD for
 * guests written for Intel; any other instruction gets its #UD. */
static void svm_ud_exit(struct vcpu *v, struct vexit *e)
{
	static const uint8_t vmcall[] = { 0x0f, 0x01, 0xc1 };
	uint8_t b[sizeof(vmcall)];
	unsigned code_bits;

	if (vcpu_fetch_at_rip(v, b, sizeof(b), &code_bits) == sizeof(b) &&
	    !memcmp(b, vmcall, sizeof(b))) {
		e->kind = VEXIT_HYPERCALL;
		e->insn_len = sizeof(vmcall);
		return;
	}
	e->kind = VEXIT_HANDLED;
	svm_inject_exception(v, X86_VEC_UD, 0);
}

/* The exits decode_exit leaves for after the entry window (VEXIT_BACKEND):
 * a MOV to CR4, and a reserved-bit NPF (sprig's own tables are at fault and
 * refaulting would loop; the walk names the entry). */
void svm_finish_exit(struct vcpu *v, struct vexit *e)
{
	uint64_t sptes[TDP_ROOT_LEVEL + 1];
	int last;

	if (e->code == SVM_EXIT_WRITE_CR4) {
		if (!svm_write_cr4_exit(v, e))
			svm_inject_exception(v, X86_VEC_GP, 0);
		return;
	}
	if (e->code == SVM_EXIT_EXCP_BASE + X86_VEC_UD) {
		svm_ud_exit(v, e);
		return;
	}
	last = vcpu_tdp_walk(v, e->info2, sptes);
	e->kind = VEXIT_FAILED;
	npt_describe_reserved(sptes, last, e->info2, &cpuinfo, e->text, sizeof(e->text));
}

void svm_run(struct vcpu *v, struct vexit *e)
{
	struct svm_cpu *cpu = svm_this_cpu();
	struct svm_vcpu *sv = v->arch;
	struct vmcb *vmcb = sv->vmcb;
	uint64_t cr8 = vcpu_cr8(v);

	vmcb->control.tlb_control = svm_asid_assign(&cpu->asids, &sv->asid, &v->flush_pending,
						    cpuinfo.svm.features & SVM_FEAT_FLUSH_BY_ASID);
	vmcb->control.asid = sv->asid.asid;
	vmcb->control.tsc_offset = (uint64_t)v->tsc_offset;
	vmcb->save.rax = v->regs.rax;
	vmcb->save.rsp = v->regs.rsp;
	vmcb->save.rip = v->regs.rip;
	vmcb->save.rflags = v->regs.rflags;
	set_spin_exits(v, vmcb);
	svm_prepare_events(v);
	/* MOV to and from CR8 use V_TPR (V_INTR_MASKING): the APIC's TPR. */
	vmcb->control.int_ctl = (vmcb->control.int_ctl & ~0xfull) | cr8;

	vcpu_load_tsc_aux(v);
	vcpu_load_pkrs(v);
	svm_enter(sv->vmcb_pa, &v->regs, cpu->host_vmcb_pa);

	v->regs.rax = vmcb->save.rax;
	v->regs.rsp = vmcb->save.rsp;
	v->regs.rip = sv->exit_rip = vmcb->save.rip;
	v->regs.rflags = vmcb->save.rflags;
	if ((vmcb->control.int_ctl & 0xf) != cr8)
		vcpu_set_cr8(v, vmcb->control.int_ctl & 0xf);
	vmcb->control.event_inject = 0;
	svm_complete_events(v);
	decode_exit(v, sv, vmcb, e);
	svm_requeue_interrupted_event(&vmcb->control, e);
}
