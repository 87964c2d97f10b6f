/* MOV to CR4 on SVM (svm/cr.c). The mirror of vmx/cr.h. */
#pragma once
#include "virt/backend.h"

/* An intercepted MOV to CR4, after the entry window: false when the write
 * raises #GP (nothing changed); e->kind says the rest. */
bool svm_write_cr4_exit(struct vcpu *v, struct vexit *e);
