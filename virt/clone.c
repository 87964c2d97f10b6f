/* VM clones (clone.h). */
#include "virt/clone.h"
#include "lib/print.h"
#include "lib/string.h"
#include "virt/shell.h"
#include "virt/vcpu_state.h"

struct vm *vm_clone(struct vm *parent, const char *name, char *err, size_t errlen)
{
	static struct vcpu_state state; /* too large for the stack */
	struct vm_create_args a = {
		.name = name,
		.mem_bytes = parent->mem_bytes,
		.args = parent->args,
		.vcpu_state = &state,
		.clone_of = parent,
	};
	bool at_clone_point = parent->pause_reason &&
			      strcmp(parent->pause_reason, VM_PAUSE_CLONE_POINT) == 0;
	struct vm *clone;

	if (parent->state != VM_PAUSED) {
		ksnprintf(err, errlen, "'%s' is not paused (run it with timeout=S, or let it reach "
			  "HC_CLONE_POINT)", parent->name);
		return NULL;
	}
	if (!vcpu_state_save(parent, &state, err, errlen))
		return NULL;
	/* At a clone point a clone's call returns 0, whatever an earlier clone
	 * made the parent's return. */
	if (at_clone_point)
		state.regs.rax = 0;
	if (!(clone = vm_create(&a, err, errlen)))
		return NULL;
	clone->restored_from = parent->restored_from;
	if (at_clone_point)
		parent->vcpus[0]->regs.rax = vm_clone_number(clone);
	return clone;
}

int vm_clone_cmd(int argc, char **argv)
{
	char err[128] = "";
	struct vm *parent, *clone;

	if (argc != 4)
		return shell_usage_error("vm", "clone needs a paused VM and a new VM's name");
	if (!(parent = vm_find(argv[2]))) {
		kprintf("vm: no VM named '%s' (see 'vm list')\n", argv[2]);
		return 1;
	}
	if (!(clone = vm_clone(parent, argv[3], err, sizeof(err)))) {
		kprintf("vm: cannot clone '%s': %s\n", parent->name, err);
		return 1;
	}
	kprintf("vm %s cloned from %s: %llu MiB shared copy-on-write, family of %u\n", clone->name,
		parent->name, (unsigned long long)(clone->mem_bytes >> 20),
		mmu_family_size(&clone->mmu));
	return 0;
}
