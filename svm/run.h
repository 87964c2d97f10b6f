/* Entering an SVM guest and its exits (svm/run.c). The mirror of vmx/run.h. */
#pragma once
#include "virt/backend.h"

/* The backend's run and finish_exit. */
void svm_run(struct vcpu *v, struct vexit *e);
void svm_finish_exit(struct vcpu *v, struct vexit *e);
