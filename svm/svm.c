/* The AMD SVM backend: EFER.SVME and the host save area, one VMCB per vCPU
 * (set up in vmcb.c), the VMRUN loop (svm_entry.S) and exit decoding into
 * vendor-neutral events; what SVM must offer is in caps.c, ASIDs and
 * TLB_CONTROL in tlb.c. vmx/vmx.c is its Intel mirror. */
#include "arch/x86/cpu.h"
#include "arch/x86/cpuinfo.h"
#include "arch/x86/mce.h"
#include "arch/x86/msr.h"
#include "arch/x86/percpu.h"
#include "arch/x86/regs.h"
#include "lib/print.h"
#include "lib/string.h"
#include "mm/frame.h"
#include "svm/caps.h"
#include "svm/cr.h"
#include "svm/event.h"
#include "svm/npt.h"
#include "svm/svm_vcpu.h"
#include "svm/vmcb.h"

#define IOPM_ORDER 2  /* 12 KiB used */
#define MSRPM_ORDER 1 /* 8 KiB */

/* Per physical CPU, in a frame of its own that this_cpu()->virt points to. */
struct svm_cpu {
	paddr_t hsave_pa;     /* VM_HSAVE_PA: where VMRUN keeps the host's state */
	paddr_t host_vmcb_pa; /* VMSAVE/VMLOAD area for the host's hidden state */
	struct svm_asid_space asids;
};

_Static_assert(sizeof(struct svm_cpu) <= PAGE_SIZE, "svm_cpu fits its frame");

/* Shared by every CPU's VMCBs: allocated once. */
static paddr_t iopm_pa, msrpm_pa;

void svm_enter(uint64_t vmcb_pa, struct vcpu_regs *regs, uint64_t host_vmcb_pa);

static struct svm_cpu *svm_this_cpu(void)
{
	return this_cpu()->virt;
}

static bool svm_permission_maps(void)
{
	if (iopm_pa)
		return true;
	iopm_pa = frame_alloc(IOPM_ORDER);
	msrpm_pa = frame_alloc(MSRPM_ORDER);
	if (!iopm_pa || !msrpm_pa) {
		if (iopm_pa)
			frame_free(iopm_pa, IOPM_ORDER);
		if (msrpm_pa)
			frame_free(msrpm_pa, MSRPM_ORDER);
		iopm_pa = msrpm_pa = 0;
		return false;
	}
	/* Every port and every MSR exits: virt/ decides what each one does. */
	memset(pa_to_va(iopm_pa), 0xff, PAGE_SIZE << IOPM_ORDER);
	memset(pa_to_va(msrpm_pa), 0xff, PAGE_SIZE << MSRPM_ORDER);
	return true;
}

static bool svm_cpu_enable(char *err, size_t len)
{
	paddr_t state, hsave, host_vmcb;
	struct svm_cpu *cpu;

	if (!svm_caps_check(cpuinfo.svm.supported, cpuinfo.svm.disabled_by_bios,
			    cpuinfo.svm.features, cpuinfo.svm.asids, err, len))
		return false;
	if (svm_this_cpu())
		return true;
	state = frame_alloc_zeroed(0);
	hsave = frame_alloc_zeroed(0);
	host_vmcb = frame_alloc_zeroed(0);
	if (!state || !hsave || !host_vmcb || !svm_permission_maps()) {
		if (state)
			frame_free(state, 0);
		if (hsave)
			frame_free(hsave, 0);
		if (host_vmcb)
			frame_free(host_vmcb, 0);
		ksnprintf(err, len, "out of memory for the SVM areas");
		return false;
	}
	cpu = pa_to_va(state);
	cpu->hsave_pa = hsave;
	cpu->host_vmcb_pa = host_vmcb;
	svm_asid_space_init(&cpu->asids, cpuinfo.svm.asids, this_cpu()->id);
	wrmsr(MSR_EFER, rdmsr(MSR_EFER) | EFER_SVME);
	wrmsr(MSR_VM_HSAVE_PA, hsave);
	this_cpu()->virt = cpu;
	return true;
}

_Static_assert(sizeof(struct svm_vcpu) <= PAGE_SIZE, "svm_vcpu fits its frame");

static void svm_vcpu_free(struct svm_vcpu *sv)
{
	if (sv->vmcb_pa)
		frame_free(sv->vmcb_pa, 0);
	frame_free(va_to_pa(sv), 0);
}

/* A vCPU's SVM state in a frame of its own (as VMX keeps its own), the VMCB
 * in another. */
static int svm_vcpu_create(struct vcpu *v)
{
	paddr_t state = frame_alloc_zeroed(0);
	struct svm_vcpu *sv;

	if (!state)
		return -1;
	sv = pa_to_va(state);
	sv->vmcb_pa = frame_alloc_zeroed(0);
	if (!sv->vmcb_pa) {
		svm_vcpu_free(sv);
		return -1;
	}
	sv->vmcb = pa_to_va(sv->vmcb_pa);
	svm_vmcb_setup(v, sv->vmcb, iopm_pa, msrpm_pa);
	v->arch = sv;
	return 0;
}

static void svm_vcpu_destroy(struct vcpu *v)
{
	if (v->arch)
		svm_vcpu_free(v->arch);
	v->arch = NULL;
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

static void svm_inject_exception(struct vcpu *v, unsigned vector);

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
	svm_inject_exception(v, X86_VEC_UD);
}

/* The exits decode_exit leaves for after the entry window (VEXIT_BACKEND):
 * a MOV to CR4, and a reserved-bit NPF (sprig's own tables are at fault and
 * refaulting would loop; the walk names the entry). */
static void svm_finish_exit(struct vcpu *v, struct vexit *e)
{
	uint64_t sptes[TDP_ROOT_LEVEL + 1];
	int last;

	if (e->code == SVM_EXIT_WRITE_CR4) {
		if (!svm_write_cr4_exit(v, e))
			svm_inject_exception(v, X86_VEC_GP);
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

static void svm_run(struct vcpu *v, struct vexit *e)
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

/* MSRs whose guest values live in the VMCB (EFER aside). */
static uint64_t *vmcb_msr(struct vmcb_save *s, uint32_t msr)
{
	switch (msr) {
	case MSR_STAR: return &s->star;
	case MSR_LSTAR: return &s->lstar;
	case MSR_CSTAR: return &s->cstar;
	case MSR_SFMASK: return &s->sfmask;
	case MSR_FS_BASE: return &s->fs.base;
	case MSR_GS_BASE: return &s->gs.base;
	case MSR_KERNEL_GS_BASE: return &s->kernel_gs_base;
	case MSR_SYSENTER_CS: return &s->sysenter_cs;
	case MSR_SYSENTER_ESP: return &s->sysenter_esp;
	case MSR_SYSENTER_EIP: return &s->sysenter_eip;
	case MSR_PAT: return &s->g_pat;
	default: return NULL;
	}
}

static bool svm_msr_read(struct vcpu *v, uint32_t msr, uint64_t *val)
{
	struct vmcb_save *s = &((struct svm_vcpu *)v->arch)->vmcb->save;
	uint64_t *field;

	if (msr == MSR_EFER) {
		*val = s->efer & ~(uint64_t)EFER_SVME;
		return true;
	}
	if (!(field = vmcb_msr(s, msr)))
		return false;
	*val = *field;
	return true;
}

static bool svm_msr_write(struct vcpu *v, uint32_t msr, uint64_t val)
{
	struct vmcb_save *s = &((struct svm_vcpu *)v->arch)->vmcb->save;
	uint64_t *field;

	if (msr == MSR_EFER) {
		/* The policy kept LMA as it was; SVME stays set underneath, as
		 * VMRUN requires, and is never shown. */
		s->efer = val | EFER_SVME;
		return true;
	}
	if (!(field = vmcb_msr(s, msr)))
		return false;
	*field = val;
	return true;
}

static void svm_inject_exception(struct vcpu *v, unsigned vector)
{
	struct vmcb *vmcb = ((struct svm_vcpu *)v->arch)->vmcb;
	uint64_t inject = vector | EVENT_INJECT_EXCEPTION | EVENT_INJECT_VALID;

	/* Real mode pushes no error code (as vmx_inject_exception, and KVM). */
	if ((vmcb->save.cr0 & CR0_PE) && x86_vector_has_error_code(vector))
		inject |= EVENT_INJECT_ERROR_VALID; /* error code 0 */
	if (x86_vector_is_fault(vector))
		v->regs.rflags |= RFLAGS_RF;
	vmcb->control.event_inject = inject;
}

static unsigned svm_guest_cpl(struct vcpu *v)
{
	return ((struct svm_vcpu *)v->arch)->vmcb->save.cpl;
}

static uint64_t svm_guest_cr0(struct vcpu *v)
{
	return ((struct svm_vcpu *)v->arch)->vmcb->save.cr0;
}

static uint64_t svm_guest_cr4(struct vcpu *v)
{
	return ((struct svm_vcpu *)v->arch)->vmcb->save.cr4;
}

/* The VMCB holds no IA32_PKRS: run() loads the guest's into the CPU. */
static bool svm_pks_switched(void)
{
	return cpuinfo.pks;
}

static int svm_tdp_max_leaf_level(void)
{
	return svm_npt_max_leaf_level(cpuinfo.pages_1g);
}

static const struct virt_backend svm_backend = {
	.name = "svm",
	.tdp = &npt_format,
	.tdp_max_leaf_level = svm_tdp_max_leaf_level,
	.cpu_enable = svm_cpu_enable,
	.vcpu_create = svm_vcpu_create,
	.vcpu_destroy = svm_vcpu_destroy,
	.run = svm_run,
	.finish_exit = svm_finish_exit,
	.msr_read = svm_msr_read,
	.msr_write = svm_msr_write,
	.inject_exception = svm_inject_exception,
	.guest_cpl = svm_guest_cpl,
	.guest_mode = svm_guest_mode,
	.irq_allowed = svm_irq_allowed,
	.inject_irq = svm_inject_irq,
	.nmi_allowed = svm_nmi_allowed,
	.nmi_masked = svm_nmi_masked,
	.inject_nmi = svm_inject_nmi,
	.event_window = svm_event_window,
	.guest_cr0 = svm_guest_cr0,
	.guest_cr4 = svm_guest_cr4,
	.pks_switched = svm_pks_switched,
	.init_state = svm_init_state,
	.sipi = svm_sipi,
	.boot_selectors = svm_boot_selectors,
	.dump = svm_dump,
	.state_save = svm_state_save,
	.state_load = svm_state_load,
	.state_check = svm_state_check,
};

/* SVM with nested paging, enabled on this CPU. */
static bool svm_backend_probe(char *err, size_t len)
{
	if (!cpuinfo_has_npt()) {
		ksnprintf(err, len, "the CPU has no SVM with nested paging");
		return false;
	}
	if (!svm_cpu_enable(err, len))
		return false;
	backend_register(&svm_backend);
	return true;
}
BACKEND_PROBE(svm_backend_probe);
