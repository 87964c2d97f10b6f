/* VM clones (clone.h). */
#include "virt/clone.h"
#include "lib/print.h"
#include "lib/string.h"
#include "virt/vcpu_state.h"

static unsigned order_for(size_t bytes)
{
	unsigned order = 0;

	while ((PAGE_SIZE << order) < bytes)
		order++;
	return order;
}

/* The vCPU whose HC_CLONE_POINT paused the parent, or -1 if it paused
 * otherwise: that call returns the clone's number in the parent, 0 in the
 * clone. Every other vCPU resumes where it was, in both. */
static int clone_point_caller(const struct vm *parent)
{
	if (!parent->pause_reason || strcmp(parent->pause_reason, VM_PAUSE_CLONE_POINT) != 0)
		return -1;
	return parent->stopped_by;
}

struct vm *vm_clone(struct vm *parent, const char *name, char *err, size_t errlen)
{
	uint32_t bytes = vm_state_bytes(parent);
	unsigned order = order_for(bytes);
	struct vm_create_args a = {
		.name = name,
		.mem_bytes = parent->mem_bytes,
		.args = parent->args,
		.vcpus = parent->nr_vcpus,
		.clone_of = parent,
		.no_testdev = !parent->platform.testdev.iomem,
	};
	int caller = clone_point_caller(parent);
	struct vm *clone = NULL;
	paddr_t pa;

	if (parent->state != VM_PAUSED) {
		ksnprintf(err, errlen, "'%s' is not paused (run it with timeout=S, or let it reach "
			  "HC_CLONE_POINT)", parent->name);
		return NULL;
	}
	if (!(pa = frame_alloc(order))) {
		ksnprintf(err, errlen, "out of memory for the state of %u vCPUs", parent->nr_vcpus);
		return NULL;
	}
	a.state = pa_to_va(pa);
	if (vm_state_save(parent, pa_to_va(pa), bytes, &a.state_bytes, err, errlen))
		clone = vm_create(&a, err, errlen);
	frame_free(pa, order);
	if (!clone)
		return NULL;
	/* At a clone point a clone's call returns 0, whatever an earlier clone
	 * made the parent's return. */
	if (caller >= 0)
		clone->vcpus[caller]->regs.rax = 0;
	clone->restored_from = parent->restored_from;
	if (caller >= 0)
		parent->vcpus[caller]->regs.rax = vm_clone_number(clone);
	return clone;
}
