/* VM clones: a paused VM's copy, with its vCPU state (registers, control
 * state, FPU, TSC, COM1) and its memory shared copy-on-write (mm/cow.h). */
#pragma once
#include "virt/vm.h"

/* Why a VM paused in HC_CLONE_POINT: its clones get 0 from the hypercall and
 * it gets the clone's number. */
#define VM_PAUSE_CLONE_POINT "clone point"

/* Clone a paused VM into a new one named `name`, ready to run from where the
 * parent stopped. NULL with a reason. */
struct vm *vm_clone(struct vm *parent, const char *name, char *err, size_t errlen);
/* What HC_CLONE_POINT returns in the parent: the clone's number, never 0. */
static inline uint64_t vm_clone_number(const struct vm *clone)
{
	return (uint64_t)clone->id + 1;
}
