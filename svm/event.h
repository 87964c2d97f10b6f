/* Interrupts and NMIs into an SVM guest, and the guest's mode (svm/event.c).
 * The mirror of vmx/event.h. */
#pragma once
#include "svm/saved_state.h"
#include "svm/svm_vcpu.h"

/* The backend's ops of those names. */
void svm_guest_mode(struct vcpu *v, struct guest_mode *m);
void svm_set_segment(struct vcpu *v, enum guest_seg seg, const struct guest_segment *g);
void svm_interrupt_shadow(struct vcpu *v);
bool svm_irq_allowed(struct vcpu *v);
void svm_inject_irq(struct vcpu *v, uint8_t vector);
bool svm_nmi_allowed(struct vcpu *v);
bool svm_nmi_masked(struct vcpu *v);
void svm_inject_nmi(struct vcpu *v);
void svm_event_window(struct vcpu *v, bool irq, bool nmi);
/* Before an entry: the STI/MOV SS shadow is gone once virt/ skipped the
 * exiting instruction; the single step svm_event_window asked for. */
void svm_prepare_events(struct vcpu *v);
/* After an exit, before it is decoded: whether the intercepted IRET ran,
 * and the guest's RFLAGS without the step's TF. */
void svm_complete_events(struct vcpu *v);
/* Exits: the IRET intercept, and the single step's #DB. */
void svm_iret_exit(struct svm_vcpu *sv);
void svm_step_trap(struct vcpu *v);
/* The backend's single_step_trap. */
void svm_single_step_trap(struct vcpu *v);
/* The event delivery the exit interrupted (EXITINTINFO): into e->vectoring
 * and e->vector, and queued again (e->requeued) when it is to be. */
void svm_requeue_interrupted_event(struct vmcb_control *c, struct vexit *e);
/* Snapshots: the event state outside the state-save area, out of and into
 * a vCPU that does not run (svm_state_save, svm_state_load). */
void svm_events_save(struct vcpu *v, struct svm_saved_state *st);
void svm_events_load(struct vcpu *v, const struct svm_saved_state *st);
