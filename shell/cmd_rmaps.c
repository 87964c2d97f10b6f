/* `rmaps [NAME]`: the log2 histogram of rmap sizes per level of one VM or of
 * every VM, as KVM's mmu_rmaps_stat (docs/mmu.md, "Reverse map"). */
#include "lib/print.h"
#include "mm/rmap.h"
#include "shell/shell.h"
#include "virt/vm.h"

static void print_rmaps(struct vm *vm)
{
	struct rmap_histogram h;

	mmu_rmap_histogram(&vm->mmu, &h);
	kprintf("%s: max_mmu_rmap_size %llu\n", vm->name,
		(unsigned long long)stat_read(&vm->mmu.stats.max_mmu_rmap_size));
	rmap_hist_print(&h);
}

static int cmd_rmaps(int argc, char **argv)
{
	if (argc > 2)
		return shell_usage_error("rmaps", "unexpected argument '%s'", argv[2]);
	if (argc == 2) {
		struct vm *vm = vm_find(argv[1]);

		if (!vm) {
			kprintf("rmaps: no VM named '%s' (see 'vm list')\n", argv[1]);
			return 1;
		}
		print_rmaps(vm);
		return 0;
	}
	if (!vm_next(NULL))
		kprintf("no VMs\n");
	for (struct vm *vm = vm_next(NULL); vm; vm = vm_next(vm))
		print_rmaps(vm);
	return 0;
}
SHELL_COMMAND(rmaps, "rmaps", cmd_rmaps, "[NAME]",
	      "rmap sizes per level (log2 buckets, as KVM's mmu_rmaps_stat) and max_mmu_rmap_size");
