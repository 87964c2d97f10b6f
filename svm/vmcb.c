/* The VMCB of a new vCPU (its intercepts and controls, multiboot's machine
 * state for the guest), its state at INIT and SIPI and for a boot protocol's
 * selectors, the VMCB side of snapshots (the save area), and the dump of a
 * stopped guest. The mirror of vmx/vmcs.c. */
#include "svm/vmcb.h"
#include "arch/x86/cpuinfo.h"
#include "arch/x86/mce.h"
#include "arch/x86/msr.h"
#include "arch/x86/regs.h"
#include "lib/print.h"
#include "lib/string.h"
#include "svm/event.h"
#include "svm/saved_state.h"
#include "svm/svm_vcpu.h"

static void set_segment(struct vmcb_segment *s, uint16_t sel, uint16_t attrib, uint32_t limit)
{
	*s = (struct vmcb_segment){ .selector = sel, .attrib = attrib, .limit = limit, .base = 0 };
}

/* DS, ES, SS, FS and GS alike; GDTR, IDTR and LDTR as at reset; TR of type
 * attribute tr_attrib. */
static void set_segments(struct vmcb_save *s, uint16_t data_sel, uint16_t data_attrib,
			 uint32_t data_limit, uint16_t tr_attrib)
{
	set_segment(&s->ds, data_sel, data_attrib, data_limit);
	set_segment(&s->es, data_sel, data_attrib, data_limit);
	set_segment(&s->ss, data_sel, data_attrib, data_limit);
	set_segment(&s->fs, data_sel, data_attrib, data_limit);
	set_segment(&s->gs, data_sel, data_attrib, data_limit);
	set_segment(&s->gdtr, 0, 0, 0xffff);
	set_segment(&s->idtr, 0, 0, 0xffff);
	set_segment(&s->ldtr, 0, 0x082, 0xffff);
	set_segment(&s->tr, 0, tr_attrib, 0xffff);
}

/* Multiboot's machine state: 32-bit protected mode, paging off, flat segments. */
static void init_guest_state(struct vmcb *vmcb)
{
	struct vmcb_save *s = &vmcb->save;

	set_segment(&s->cs, 0x08, 0xc9b, 0xffffffff);
	set_segments(s, 0x10, 0xc93, 0xffffffff, 0x08b);
	s->cpl = 0;
	s->efer = EFER_SVME; /* VMRUN requires it; the guest never sees it */
	s->cr0 = 0x11;       /* PE, ET */
	s->cr4 = 0;
	s->dr6 = 0xffff0ff0;
	s->dr7 = 0x400;
	s->rflags = 0x2;
	s->g_pat = PAT_DEFAULT;
}

/* A new vCPU's VMCB: what exits (physical interrupts, the instructions
 * sprig emulates or refuses, #MC and #UD, MOV to CR4), the shared I/O and MSR
 * permission maps, nested paging on v's MMU, and multiboot's machine state. */
void svm_vmcb_setup(struct vcpu *v, struct vmcb *vmcb, paddr_t iopm_pa, paddr_t msrpm_pa)
{
	struct vmcb_control *c = &vmcb->control;

	c->intercept_misc1 = INTERCEPT_INTR | INTERCEPT_NMI | INTERCEPT_SMI | INTERCEPT_INIT |
			     INTERCEPT_VINTR |
			     INTERCEPT_RDPMC | INTERCEPT_CPUID | INTERCEPT_INVD | INTERCEPT_HLT |
			     INTERCEPT_INVLPGA | INTERCEPT_IOIO | INTERCEPT_MSR | INTERCEPT_SHUTDOWN;
	c->intercept_misc2 = INTERCEPT_VMRUN | INTERCEPT_VMMCALL | INTERCEPT_VMLOAD |
			     INTERCEPT_VMSAVE | INTERCEPT_STGI | INTERCEPT_CLGI |
			     INTERCEPT_SKINIT | INTERCEPT_MONITOR | INTERCEPT_MWAIT |
			     INTERCEPT_MWAIT_CONDITIONAL | INTERCEPT_XSETBV;
	/* A machine check in the guest is the host's to report (APM 15.12). */
	c->intercept_exceptions = 1u << VEC_MACHINE_CHECK;
	/* #UD, for VMCALL: KVM takes Intel's hypercall instruction on AMD too
	 * (svm_finish_exit). */
	c->intercept_exceptions |= 1u << X86_VEC_UD;
	/* CR4 only takes bits the guest's CPUID offers (svm/cr.c). */
	c->intercept_cr = INTERCEPT_CR4_WRITE;
	c->iopm_base_pa = iopm_pa;
	c->msrpm_base_pa = msrpm_pa;
	/* The guest's IF masks only virtual interrupts; physical ones exit. */
	c->int_ctl = INT_CTL_V_INTR_MASKING;
	c->nested_ctl = 1;
	c->nested_cr3 = vcpu_tdp_root(v);
	init_guest_state(vmcb);
}

/* INIT (APM vol. 2, table 14-1, as KVM's init_vmcb): real mode at F000:FFF0
 * with CS base FFFF0000, 64 KiB segments, CR0 CD NW ET; EFER keeps only the
 * SVME that VMRUN needs. The MSRs the VMCB holds keep their values. */
void svm_init_state(struct vcpu *v)
{
	struct svm_vcpu *sv = v->arch;
	struct vmcb_save *s = &sv->vmcb->save;

	set_segment(&s->cs, 0xf000, 0x09b, 0xffff);
	s->cs.base = 0xffff0000;
	set_segments(s, 0, 0x093, 0xffff, 0x083);
	s->cpl = 0;
	s->efer = EFER_SVME;
	s->cr0 = CR0_CD | CR0_NW | CR0_ET;
	s->cr2 = s->cr3 = s->cr4 = 0;
	s->dr6 = 0xffff0ff0;
	s->dr7 = 0x400;
	sv->vmcb->control.event_inject = 0;
	sv->vmcb->control.int_state = 0;
	sv->vmcb->control.int_ctl &= ~(uint64_t)INT_CTL_V_IRQ;
	sv->nmi_blocked = sv->iret_pending = sv->step_wanted = false;
}

void svm_sipi(struct vcpu *v, uint8_t vector)
{
	struct vmcb_save *s = &((struct svm_vcpu *)v->arch)->vmcb->save;

	s->cs.selector = (uint16_t)(vector << 8);
	s->cs.base = (uint64_t)vector << 12;
}

void svm_boot_selectors(struct vcpu *v, uint32_t gdt_base, uint16_t gdt_limit, uint16_t cs,
			       uint16_t ds)
{
	struct vmcb_save *s = &((struct svm_vcpu *)v->arch)->vmcb->save;

	s->gdtr.base = gdt_base;
	s->gdtr.limit = gdt_limit;
	s->cs.selector = cs;
	s->ds.selector = s->es.selector = s->ss.selector = ds;
	s->fs.selector = s->gs.selector = ds;
}

void svm_dump(struct vcpu *v)
{
	struct vmcb *vmcb = ((struct svm_vcpu *)v->arch)->vmcb;
	struct vmcb_save *s = &vmcb->save;

	kprintf("  CR0=%llx CR2=%llx CR3=%llx CR4=%llx EFER=%llx\n", (unsigned long long)s->cr0,
		(unsigned long long)s->cr2, (unsigned long long)s->cr3, (unsigned long long)s->cr4,
		(unsigned long long)(s->efer & ~(uint64_t)EFER_SVME));
	kprintf("  CS=%04x/%03x base %llx SS=%04x DS=%04x CPL=%u\n", s->cs.selector,
		s->cs.attrib, (unsigned long long)s->cs.base, s->ss.selector, s->ds.selector,
		s->cpl);
	kprintf("  exit code 0x%llx info1 0x%llx info2 0x%llx intinfo 0x%llx ASID %u\n",
		(unsigned long long)vmcb->control.exit_code,
		(unsigned long long)vmcb->control.exit_info1,
		(unsigned long long)vmcb->control.exit_info2,
		(unsigned long long)vmcb->control.exit_int_info, vmcb->control.asid);
}

_Static_assert(sizeof(struct svm_saved_state) <= VCPU_ARCH_STATE_MAX, "SVM saved state");

size_t svm_state_save(struct vcpu *v, void *buf)
{
	struct svm_saved_state st = { .save = ((struct svm_vcpu *)v->arch)->vmcb->save };

	svm_events_save(v, &st);
	memcpy(buf, &st, sizeof(st));
	return sizeof(st);
}

bool svm_state_check(const void *buf, size_t len, const struct vcpu_regs *regs, char *err,
			    size_t errlen)
{
	const struct svm_state_limits lim = {
		.phys_bits = cpuinfo.phys_bits,
		.cr4_allowed = cpuinfo.cr4_allowed,
		.efer_allowed = efer_guest_bits(cpuinfo.nx),
		.va_bits = cpuinfo.va_bits,
	};
	struct svm_saved_state st;

	if (len != sizeof(st)) {
		ksnprintf(err, errlen, "SVM state of %zu bytes, not %zu", len, sizeof(st));
		return false;
	}
	memcpy(&st, buf, sizeof(st));
	return svm_saved_state_check(&st, regs, &lim, err, errlen);
}

bool svm_state_load(struct vcpu *v, const void *buf, size_t len)
{
	struct svm_vcpu *sv = v->arch;
	struct svm_saved_state st;

	if (len != sizeof(st))
		return false;
	memcpy(&st, buf, sizeof(st));
	/* VMRUN requires SVME; the guest never saw it either way. */
	st.save.efer |= EFER_SVME;
	sv->vmcb->save = st.save;
	/* The saved RIP is where the guest stopped: its shadow holds. */
	sv->exit_rip = st.save.rip;
	svm_events_load(v, &st);
	return true;
}

