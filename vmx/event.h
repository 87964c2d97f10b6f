/* Interrupts and NMIs into a VMX guest, and the guest's mode (vmx/event.c).
 * The mirror of svm/event.h. */
#pragma once
#include "vmx/vmx_vcpu.h"

/* The backend's ops of those names. */
void vmx_guest_mode(struct vcpu *v, struct guest_mode *m);
void vmx_set_segment(struct vcpu *v, enum guest_seg seg, const struct guest_segment *g);
void vmx_interrupt_shadow(struct vcpu *v);
bool vmx_irq_allowed(struct vcpu *v);
void vmx_inject_irq(struct vcpu *v, uint8_t vector);
bool vmx_nmi_allowed(struct vcpu *v);
bool vmx_nmi_masked(struct vcpu *v);
void vmx_inject_nmi(struct vcpu *v);
void vmx_event_window(struct vcpu *v, bool irq, bool nmi);
void vmx_single_step_trap(struct vcpu *v);
/* After an exit: the event delivery it interrupted (e->vectoring,
 * e->vector), queued again (e->requeued), and the guest's NMI blocking as
 * that delivery or an interrupted IRET left it. */
void vmx_complete_events(struct vmx_vcpu *a, struct vexit *e);
