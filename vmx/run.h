/* Entering a VMX guest and its exits (vmx/run.c). The mirror of svm/run.h. */
#pragma once
#include "virt/backend.h"

/* The backend's run and finish_exit. */
void vmx_run(struct vcpu *v, struct vexit *e);
void vmx_finish_exit(struct vcpu *v, struct vexit *e);
