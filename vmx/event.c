/* Interrupts and NMIs into a VMX guest (SDM vol. 3C 26.3.1.5 and 27.6):
 * whether the guest can take one now, injecting it through the VM-entry
 * interruption-information field, and the interrupt- and NMI-window exits
 * that wait for it. Also the guest's mode for instruction emulation, and
 * what an emulated segment load changes (the segment, MOV SS's interrupt
 * shadow). svm/event.c has the AMD side. */
#include "vmx/event.h"
#include "arch/x86/regs.h"
#include "vmx/cr.h"
#include "vmx/vmx.h"

/* The blocking the guest is under at the next entry: an STI or MOV SS shadow
 * covers only the instruction after it, gone once virt/ skipped the exiting
 * instruction (vmx_run clears it then). */
static uint32_t blocking(struct vcpu *v)
{
	struct vmx_vcpu *a = v->arch;
	uint32_t b = (uint32_t)vmcs_read(VMCS_GUEST_INTERRUPTIBILITY);

	if (v->regs.rip != a->exit_rip)
		b &= ~(BLOCKING_BY_STI | BLOCKING_BY_MOV_SS);
	return b;
}

/* An event for the entry, or a single-step trap pending after it (which
 * comes before an interrupt or NMI, as a trap of the previous instruction). */
static bool event_queued(void)
{
	return (vmcs_read(VMCS_ENTRY_INTR_INFO) & INTR_INFO_VALID) ||
	       (vmcs_read(VMCS_GUEST_PENDING_DBG) & PENDING_DBG_BS);
}

bool vmx_irq_allowed(struct vcpu *v)
{
	if (!vmcs_make_current(v->arch))
		return false;
	return (v->regs.rflags & RFLAGS_IF) && !(blocking(v) & (BLOCKING_BY_STI | BLOCKING_BY_MOV_SS)) &&
	       !event_queued();
}

void vmx_inject_irq(struct vcpu *v, uint8_t vector)
{
	if (vmcs_make_current(v->arch))
		vmcs_write(VMCS_ENTRY_INTR_INFO,
			   INTR_INFO_VALID | (INTR_TYPE_EXT_INTR << INTR_INFO_TYPE_SHIFT) | vector);
}

/* Only with virtual NMIs does the CPU keep the guest's NMI blocking (set by
 * the injection, cleared by its IRET). As KVM, an STI shadow blocks too (the
 * SDM allows a CPU to block NMIs after STI). */
bool vmx_nmi_allowed(struct vcpu *v)
{
	if (!(vmx_caps.pin & PIN_VIRTUAL_NMIS) || !vmcs_make_current(v->arch))
		return false;
	return !(blocking(v) & (BLOCKING_BY_STI | BLOCKING_BY_MOV_SS | BLOCKING_BY_NMI)) &&
	       !event_queued();
}

/* Virtual-NMI blocking, or an NMI in the VM-entry interruption field. */
bool vmx_nmi_masked(struct vcpu *v)
{
	uint32_t info;

	if (!vmcs_make_current(v->arch))
		return false;
	info = (uint32_t)vmcs_read(VMCS_ENTRY_INTR_INFO);
	return (blocking(v) & BLOCKING_BY_NMI) ||
	       ((info & INTR_INFO_VALID) &&
		(info & INTR_INFO_TYPE_MASK) >> INTR_INFO_TYPE_SHIFT == INTR_TYPE_NMI);
}

void vmx_inject_nmi(struct vcpu *v)
{
	if (vmcs_make_current(v->arch))
		vmcs_write(VMCS_ENTRY_INTR_INFO, INTR_INFO_VALID |
						 (INTR_TYPE_NMI << INTR_INFO_TYPE_SHIFT) | X86_VEC_NMI);
}

/* The pending-debug-exceptions field's BS: the CPU delivers the trap after
 * the entry, DR6 as a real single step leaves it (SDM vol. 3C 28.7.3). */
void vmx_single_step_trap(struct vcpu *v)
{
	if (vmcs_make_current(v->arch))
		vmcs_write(VMCS_GUEST_PENDING_DBG, vmcs_read(VMCS_GUEST_PENDING_DBG) | PENDING_DBG_BS);
}

/* Called before every entry: the controls are written only when the wanted
 * windows change (a->windows mirrors what the VMCS holds). */
void vmx_event_window(struct vcpu *v, bool irq, bool nmi)
{
	struct vmx_vcpu *a = v->arch;
	uint32_t want = 0;

	if (irq && vmx_caps.irq_window)
		want |= PROC_INTR_WINDOW_EXITING;
	if (nmi && vmx_caps.nmi_window)
		want |= PROC_NMI_WINDOW_EXITING;
	if (want == a->windows || !vmcs_make_current(a))
		return;
	vmcs_write(VMCS_PROC_CONTROLS, (vmcs_read(VMCS_PROC_CONTROLS) &
					~(PROC_INTR_WINDOW_EXITING | PROC_NMI_WINDOW_EXITING)) | want);
	a->windows = want;
}

/* Access rights: L is bit 13, D/B bit 14 (SDM 24.4.1). */
#define AR_L (1u << 13)
#define AR_DB (1u << 14)
_Static_assert((int)SEG_GS == (int)VMCS_SEG_GS, "guest_seg follows the VMCS's order");

void vmx_guest_mode(struct vcpu *v, struct guest_mode *m)
{
	uint64_t cs_ar;

	if (!vmcs_make_current(v->arch))
		return;
	m->cr0 = vmx_guest_cr0(v);
	m->cr3 = vmcs_read(VMCS_GUEST_CR3);
	m->cr4 = vmx_guest_cr4(v);
	m->efer = vmcs_read(VMCS_GUEST_EFER);
	m->cpl = (vmcs_read(VMCS_GUEST_ES_AR + 2 * VMCS_SEG_SS) >> 5) & 3;
	cs_ar = vmcs_read(VMCS_GUEST_ES_AR + 2 * VMCS_SEG_CS);
	m->code_bits = (m->efer & EFER_LMA) && (cs_ar & AR_L) ? 64
		       : (m->cr0 & CR0_PE) && (cs_ar & AR_DB) ? 32 : 16;
	m->stack_bits = m->code_bits == 64 ? 64
			: vmcs_read(VMCS_GUEST_ES_AR + 2 * VMCS_SEG_SS) & AR_DB ? 32 : 16;
	for (int i = 0; i < SEG_COUNT; i++) {
		m->seg_sel[i] = (uint16_t)vmcs_read(VMCS_GUEST_ES_SEL + 2 * i);
		m->seg_base[i] = vmcs_read(VMCS_GUEST_ES_BASE + 2 * i);
	}
	m->gdt_base = vmcs_read(VMCS_GUEST_GDTR_BASE);
	m->gdt_limit = (uint32_t)vmcs_read(VMCS_GUEST_GDTR_LIMIT);
	m->ldt_base = vmcs_read(VMCS_GUEST_ES_BASE + 2 * VMCS_SEG_LDTR);
	m->ldt_limit = (uint32_t)vmcs_read(VMCS_GUEST_ES_LIMIT + 2 * VMCS_SEG_LDTR);
	m->ldt_usable = !(vmcs_read(VMCS_GUEST_ES_AR + 2 * VMCS_SEG_LDTR) & VMX_AR_UNUSABLE);
}

_Static_assert((int)SEG_TR == (int)VMCS_SEG_TR, "and so do LDTR and TR");

void vmx_set_segment(struct vcpu *v, enum guest_seg seg, const struct guest_segment *g)
{
	/* Access rights: the descriptor's bits 7:0, then AVL L D/B G at 15:12. */
	uint32_t ar = (g->attrib & 0xffu) | (g->attrib & 0xf00u) << 4 | (g->unusable ? VMX_AR_UNUSABLE : 0);

	if (!vmcs_make_current(v->arch))
		return;
	vmcs_write(VMCS_GUEST_ES_SEL + 2 * seg, g->sel);
	vmcs_write(VMCS_GUEST_ES_AR + 2 * seg, ar);
	vmcs_write(VMCS_GUEST_ES_LIMIT + 2 * seg, g->limit);
	vmcs_write(VMCS_GUEST_ES_BASE + 2 * seg, g->base);
}

/* The MOV SS or POP SS just emulated holds interrupts off for one more
 * instruction (and debug traps: SDM vol. 3A 6.8.3). */
void vmx_interrupt_shadow(struct vcpu *v)
{
	struct vmx_vcpu *a = v->arch;

	if (!vmcs_make_current(a))
		return;
	vmcs_write(VMCS_GUEST_INTERRUPTIBILITY,
		   (vmcs_read(VMCS_GUEST_INTERRUPTIBILITY) & ~BLOCKING_BY_STI) | BLOCKING_BY_MOV_SS);
	a->exit_rip = v->regs.rip;
}

/* After an exit (SDM vol. 3C 27.2.3, 27.2.4, 28.7.1.2; KVM does the same):
 * an event the exit interrupted on its way into the guest (an EPT violation
 * on the guest's IDT or stack, say) is delivered again at the next entry. If
 * that was an NMI, the exit left virtual-NMI blocking set, which would make
 * the entry that injects it fail (26.3.1.5): cleared. An IRET that an EPT
 * violation interrupted had unblocked NMIs, but runs again: the blocking it
 * lifted is restored. */
void vmx_complete_events(struct vmx_vcpu *a, struct vexit *e)
{
	uint32_t info = (uint32_t)vmcs_read(VMCS_IDT_VECTORING_INFO);
	uint32_t type = (info & INTR_INFO_TYPE_MASK) >> INTR_INFO_TYPE_SHIFT;
	uint64_t state = vmcs_read(VMCS_GUEST_INTERRUPTIBILITY);

	e->vectoring = info & INTR_INFO_VALID;
	e->vector = (uint8_t)(info & INTR_INFO_VECTOR_MASK);
	if (!e->vectoring) {
		if ((a->exit_reason & EXIT_REASON_BASIC_MASK) == EXIT_EPT_VIOLATION &&
		    (a->exit_qualification & EPT_QUAL_NMI_UNBLOCKED) &&
		    (vmx_caps.pin & PIN_VIRTUAL_NMIS))
			vmcs_write(VMCS_GUEST_INTERRUPTIBILITY, state | BLOCKING_BY_NMI);
		return;
	}
	vmcs_write(VMCS_ENTRY_INTR_INFO, info & (INTR_INFO_VALID | INTR_INFO_DELIVER_CODE |
						  INTR_INFO_TYPE_MASK | INTR_INFO_VECTOR_MASK));
	if (info & INTR_INFO_DELIVER_CODE)
		vmcs_write(VMCS_ENTRY_EXCEPTION_ERROR_CODE,
			   vmcs_read(VMCS_IDT_VECTORING_ERROR_CODE));
	if (type == INTR_TYPE_SW_INTERRUPT || type == INTR_TYPE_PRIV_SW_EXCEPTION ||
	    type == INTR_TYPE_SW_EXCEPTION)
		vmcs_write(VMCS_ENTRY_INSTRUCTION_LEN, vmcs_read(VMCS_EXIT_INSTRUCTION_LEN));
	if (type == INTR_TYPE_NMI)
		vmcs_write(VMCS_GUEST_INTERRUPTIBILITY, state & ~(uint64_t)BLOCKING_BY_NMI);
	e->requeued = true;
}
