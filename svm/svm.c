/* The AMD SVM backend: EFER.SVME and the host save area, one VMCB per vCPU
 * (set up in vmcb.c), and the ops that register it; run.c enters the guest
 * (svm_entry.S) and decodes the exits into vendor-neutral events; what SVM
 * must offer is in caps.c, ASIDs and TLB_CONTROL in tlb.c. vmx/vmx.c is its
 * Intel mirror. */
#include "svm/svm.h"
#include "arch/x86/cpu.h"
#include "arch/x86/cpuinfo.h"
#include "arch/x86/msr.h"
#include "arch/x86/percpu.h"
#include "arch/x86/regs.h"
#include "lib/print.h"
#include "lib/string.h"
#include "mm/frame.h"
#include "svm/caps.h"
#include "svm/event.h"
#include "svm/npt.h"
#include "svm/run.h"
#include "svm/svm_vcpu.h"
#include "svm/vmcb.h"

#define IOPM_ORDER 2  /* 12 KiB used */
#define MSRPM_ORDER 1 /* 8 KiB */

_Static_assert(sizeof(struct svm_cpu) <= PAGE_SIZE, "svm_cpu fits its frame");

/* Shared by every CPU's VMCBs: allocated once. */
static paddr_t iopm_pa, msrpm_pa;

struct svm_cpu *svm_this_cpu(void)
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

void svm_inject_exception(struct vcpu *v, unsigned vector, uint32_t error_code)
{
	struct vmcb *vmcb = ((struct svm_vcpu *)v->arch)->vmcb;
	uint64_t inject = vector | EVENT_INJECT_EXCEPTION | EVENT_INJECT_VALID;

	/* Real mode pushes no error code (as vmx_inject_exception, and KVM). */
	if ((vmcb->save.cr0 & CR0_PE) && x86_vector_has_error_code(vector))
		inject |= EVENT_INJECT_ERROR_VALID | (uint64_t)error_code << 32;
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
	.single_step_trap = svm_single_step_trap,
	.guest_cpl = svm_guest_cpl,
	.guest_mode = svm_guest_mode,
	.set_segment = svm_set_segment,
	.interrupt_shadow = svm_interrupt_shadow,
	.irq_allowed = svm_irq_allowed,
	.inject_irq = svm_inject_irq,
	.nmi_allowed = svm_nmi_allowed,
	.nmi_masked = svm_nmi_masked,
	.inject_nmi = svm_inject_nmi,
	.event_window = svm_event_window,
	.guest_cr0 = svm_guest_cr0,
	.guest_cr4 = svm_guest_cr4,
	.dr6_cr2_in_control_block = true,
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
