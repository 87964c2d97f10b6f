/* Interrupts and NMIs into an SVM guest (APM vol. 2 15.20 and 15.21):
 * whether the guest can take one now, injecting it through EVENTINJ, the
 * virtual interrupt request and the single step that wait for its window,
 * and the IRET intercept that stands in for NMI blocking. Also the guest's mode for
 * instruction emulation, and what an emulated segment load changes (the
 * segment, MOV SS's interrupt shadow). vmx/event.c has the Intel side. */
#include "svm/event.h"
#include "arch/x86/regs.h"

/* An STI or MOV SS shadow covers only the instruction after it: gone once
 * virt/ skipped the exiting instruction. */
static bool in_shadow(struct vcpu *v)
{
	struct svm_vcpu *sv = v->arch;

	return (sv->vmcb->control.int_state & INT_STATE_SHADOW) && v->regs.rip == sv->exit_rip;
}

/* DR6 (SDM vol. 3B 17.2.3): B0-B3, a breakpoint matched; BS, a single step. */
#define DR6_B0_B3 0xfull
#define DR6_BS (1ull << 14)

static bool event_queued(const struct vmcb *vmcb)
{
	return vmcb->control.event_inject & EVENT_INJECT_VALID;
}

void svm_prepare_events(struct vcpu *v)
{
	struct svm_vcpu *sv = v->arch;
	struct vmcb *vmcb = sv->vmcb;

	if (!in_shadow(v))
		vmcb->control.int_state &= ~INT_STATE_SHADOW;
	sv->stepping = sv->step_wanted;
	if (!sv->stepping) {
		vmcb->control.intercept_exceptions &= ~(1u << X86_VEC_DB);
		return;
	}
	/* The trap after one instruction (TF as it starts counts), caught
	 * before the guest sees it. */
	sv->step_guest_tf = v->regs.rflags & RFLAGS_TF;
	sv->step_dr6 = vmcb->save.dr6;
	vmcb->save.rflags |= RFLAGS_TF;
	vmcb->control.intercept_exceptions |= 1u << X86_VEC_DB;
}

/* The intercepted IRET ran once RIP moved on: NMIs are unblocked. Nothing
 * else moves RIP while it is pending: no event is injected in front of it
 * (svm_irq_allowed). */
void svm_complete_events(struct vcpu *v)
{
	struct svm_vcpu *sv = v->arch;
	bool iret_ran = sv->iret_pending && v->regs.rip != sv->iret_rip;

	if (iret_ran)
		sv->iret_pending = false;
	/* The TF the step set, unless the guest had it or the stepped IRET
	 * loaded the guest's RFLAGS over it. */
	if (sv->stepping && !sv->step_guest_tf && !iret_ran)
		v->regs.rflags &= ~RFLAGS_TF;
}

/* The guest's IRET, intercepted while an NMI it took blocks the next: the
 * IRET has not run yet, so NMIs stay blocked until RIP moves on. */
void svm_iret_exit(struct svm_vcpu *sv)
{
	sv->nmi_blocked = false;
	sv->iret_pending = true;
	sv->iret_rip = sv->vmcb->save.rip;
	sv->vmcb->control.intercept_misc1 &= ~INTERCEPT_IRET;
}

/* The #DB that ends a single step (intercepted only then): the window the
 * step waited for. DR6 loses the BS bit the step set; the guest's own step
 * (its TF was set) or a breakpoint of its own that matched on the way is
 * delivered to it. */
void svm_step_trap(struct vcpu *v)
{
	struct svm_vcpu *sv = v->arch;
	struct vmcb *vmcb = sv->vmcb;
	bool guest_breakpoint = vmcb->save.dr6 & ~sv->step_dr6 & DR6_B0_B3;

	if (!sv->step_guest_tf && !(sv->step_dr6 & DR6_BS))
		vmcb->save.dr6 &= ~DR6_BS;
	if (sv->step_guest_tf || guest_breakpoint)
		vmcb->control.event_inject = X86_VEC_DB | EVENT_INJECT_EXCEPTION |
					     EVENT_INJECT_VALID;
}

/* SVM has no pending-debug-exceptions field: DR6 as the trap leaves it (as
 * KVM's #DB payload: B0-B3 cleared, BS set), and the #DB injected. */
void svm_single_step_trap(struct vcpu *v)
{
	struct vmcb *vmcb = ((struct svm_vcpu *)v->arch)->vmcb;

	vmcb->save.dr6 = (vmcb->save.dr6 & ~DR6_B0_B3) | DR6_BS;
	vmcb->control.event_inject = X86_VEC_DB | EVENT_INJECT_EXCEPTION | EVENT_INJECT_VALID;
}

/* An event the exit interrupted on its way into the guest (a nested page
 * fault on the guest's IDT or stack, say) is delivered again at the next
 * entry. A software interrupt, INT3 or INTO is not: RIP still points at the
 * instruction, which runs again (without next-RIP saving its length is
 * unknown anyway). */
void svm_requeue_interrupted_event(struct vmcb_control *c, struct vexit *e)
{
	uint64_t info = c->exit_int_info, type = info & EVENT_INJECT_TYPE_MASK;
	uint64_t vector = info & EVENT_INJECT_VECTOR_MASK;

	e->vectoring = info & EVENT_INJECT_VALID;
	e->vector = (uint8_t)vector;
	e->requeued = false;
	if (!e->vectoring || type == EVENT_INJECT_SOFT_INT)
		return;
	if (type == EVENT_INJECT_EXCEPTION && (vector == X86_VEC_BP || vector == X86_VEC_OF))
		return;
	c->event_inject = info;
	e->requeued = true;
}

/* An intercepted IRET not yet run leaves NMIs blocked: saved as blocked, it
 * is intercepted again after the load. The shadow holds while RIP stays at
 * the saved one, as it does across an exit (svm_state_load sets exit_rip). */
void svm_events_save(struct vcpu *v, struct svm_saved_state *st)
{
	struct svm_vcpu *sv = v->arch;

	st->event_inject = sv->vmcb->control.event_inject;
	st->int_state = sv->vmcb->control.int_state & INT_STATE_SHADOW;
	st->nmi_masked = sv->nmi_blocked || sv->iret_pending;
}

void svm_events_load(struct vcpu *v, const struct svm_saved_state *st)
{
	struct svm_vcpu *sv = v->arch;
	struct vmcb_control *c = &sv->vmcb->control;

	c->event_inject = st->event_inject;
	c->int_state = (c->int_state & ~INT_STATE_SHADOW) | st->int_state;
	sv->nmi_blocked = st->nmi_masked;
	sv->iret_pending = sv->step_wanted = false;
	if (sv->nmi_blocked)
		c->intercept_misc1 |= INTERCEPT_IRET;
	else
		c->intercept_misc1 &= ~INTERCEPT_IRET;
}

/* Packed segment attributes (APM 15.5.1): L is bit 9, D/B bit 10. */
#define ATTRIB_L (1u << 9)
#define ATTRIB_DB (1u << 10)
#define ATTRIB_P (1u << 7)

void svm_guest_mode(struct vcpu *v, struct guest_mode *m)
{
	struct vmcb_save *s = &((struct svm_vcpu *)v->arch)->vmcb->save;
	const struct vmcb_segment *seg[SEG_COUNT] = { &s->es, &s->cs, &s->ss, &s->ds, &s->fs, &s->gs };

	m->cr0 = s->cr0;
	m->cr3 = s->cr3;
	m->cr4 = s->cr4;
	m->efer = s->efer & ~(uint64_t)EFER_SVME;
	m->cpl = s->cpl;
	m->code_bits = (s->efer & EFER_LMA) && (s->cs.attrib & ATTRIB_L) ? 64
		       : (s->cr0 & CR0_PE) && (s->cs.attrib & ATTRIB_DB) ? 32 : 16;
	m->stack_bits = m->code_bits == 64 ? 64 : s->ss.attrib & ATTRIB_DB ? 32 : 16;
	for (int i = 0; i < SEG_COUNT; i++) {
		m->seg_sel[i] = seg[i]->selector;
		m->seg_base[i] = seg[i]->base;
	}
	m->gdt_base = s->gdtr.base;
	m->gdt_limit = s->gdtr.limit;
	m->ldt_base = s->ldtr.base;
	m->ldt_limit = s->ldtr.limit;
	m->ldt_usable = s->ldtr.attrib & ATTRIB_P;
}

void svm_set_segment(struct vcpu *v, enum guest_seg seg, const struct guest_segment *g)
{
	struct vmcb_save *s = &((struct svm_vcpu *)v->arch)->vmcb->save;
	struct vmcb_segment *segs[] = { &s->es, &s->cs, &s->ss, &s->ds, &s->fs, &s->gs, &s->ldtr, &s->tr };

	/* A null selector leaves P clear: the segment is unusable (APM 15.5.1). */
	*segs[seg] = (struct vmcb_segment){ .selector = g->sel,
					    .attrib = g->unusable ? g->attrib & ~ATTRIB_P : g->attrib,
					    .limit = g->limit, .base = g->base };
}

/* The MOV SS or POP SS just emulated holds interrupts off for one more
 * instruction. */
void svm_interrupt_shadow(struct vcpu *v)
{
	struct svm_vcpu *sv = v->arch;

	sv->vmcb->control.int_state |= INT_STATE_SHADOW;
	sv->exit_rip = v->regs.rip;
}

/* Not while the IRET that ends an NMI handler is pending: delivered in
 * front of it, the interrupt would move RIP as if the IRET had run. It
 * waits the one step to after the IRET (svm_event_window). */
bool svm_irq_allowed(struct vcpu *v)
{
	struct svm_vcpu *sv = v->arch;

	return (v->regs.rflags & RFLAGS_IF) && !in_shadow(v) && !event_queued(sv->vmcb) &&
	       !sv->iret_pending;
}

void svm_inject_irq(struct vcpu *v, uint8_t vector)
{
	struct svm_vcpu *sv = v->arch;

	sv->vmcb->control.event_inject = vector | EVENT_INJECT_INTR | EVENT_INJECT_VALID;
}

/* As KVM: an interrupt shadow blocks NMIs too (MOV SS does architecturally;
 * STI may, on some CPUs). */
bool svm_nmi_allowed(struct vcpu *v)
{
	struct svm_vcpu *sv = v->arch;

	return !sv->nmi_blocked && !sv->iret_pending && !in_shadow(v) && !event_queued(sv->vmcb);
}

/* Until the handler's IRET has run (svm_complete_events), or while the
 * NMI waits in EVENTINJ for the entry. */
bool svm_nmi_masked(struct vcpu *v)
{
	struct svm_vcpu *sv = v->arch;
	uint64_t inject = sv->vmcb->control.event_inject;

	return sv->nmi_blocked || sv->iret_pending ||
	       (event_queued(sv->vmcb) && (inject & EVENT_INJECT_TYPE_MASK) == EVENT_INJECT_NMI);
}

void svm_inject_nmi(struct vcpu *v)
{
	struct svm_vcpu *sv = v->arch;

	sv->vmcb->control.event_inject = X86_VEC_NMI | EVENT_INJECT_NMI | EVENT_INJECT_VALID;
	sv->nmi_blocked = true;
	sv->vmcb->control.intercept_misc1 |= INTERCEPT_IRET;
}

/* SVM has no NMI window (without vNMI). An NMI handler's IRET is
 * intercepted (svm_inject_nmi); at that exit it has not run yet, so the
 * guest single-steps it and what waited is delivered at the #DB after it,
 * as before the guest's next instruction (KVM does the same). An STI or
 * MOV SS shadow is stepped over alike. An event queued for the entry is
 * delivered first: a virtual interrupt request (V_IRQ, TPR ignored) exits
 * once the guest takes interrupts after it, as it does for an interrupt.
 * Never a V_IRQ for an NMI the handler blocks: with IF set in the handler
 * it would exit before every instruction up to the IRET. */
void svm_event_window(struct vcpu *v, bool irq, bool nmi)
{
	struct svm_vcpu *sv = v->arch;
	struct vmcb_control *c = &sv->vmcb->control;
	bool queued = event_queued(sv->vmcb);
	bool vintr = false, step = false;

	if (sv->iret_pending) {
		step = (irq || nmi) && !queued;
		vintr = (irq || nmi) && queued;
	} else {
		vintr = irq;
		if (nmi && !sv->nmi_blocked) {
			step = in_shadow(v) && !queued;
			vintr |= !step;
		}
	}
	sv->step_wanted = step;
	if (vintr)
		c->int_ctl |= INT_CTL_V_IRQ | INT_CTL_V_IGN_TPR | (0xfull << INT_CTL_V_INTR_PRIO_SHIFT);
	else
		c->int_ctl &= ~(INT_CTL_V_IRQ | INT_CTL_V_IGN_TPR |
				(0xfull << INT_CTL_V_INTR_PRIO_SHIFT));
}
