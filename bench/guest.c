/* A multiboot test guest for a benchmark scenario (bench/guest.h). */
#include "boot/boot_info.h"
#include "lib/print.h"
#include "lib/string.h"
#include "bench/guest.h"

struct vm *bench_guest_create(const char *scenario, const char *vm_name, const char *module,
			      const char *args, uint64_t mem, unsigned vcpus,
			      enum backing_kind backing)
{
	static char cmdline[128];
	const struct boot_module *mod = boot_module_find(module);
	char err[128];
	struct vm *vm;

	if (!mod) {
		kprintf("bench %s: no module '%s' (the ISO carries it)\n", scenario, module);
		return NULL;
	}
	ksnprintf(cmdline, sizeof(cmdline), "%s %s", module, args);
	struct vm_create_args a = {
		.name = vm_name, .image = (const void *)(uintptr_t)mod->start,
		.image_size = mod->end - mod->start, .cmdline = cmdline, .args = args,
		.mem_bytes = mem, .backing = backing, .chunk_pages = 1, .vcpus = vcpus,
	};
	if (!(vm = vm_create(&a, err, sizeof(err))))
		kprintf("bench %s: cannot create the guest: %s\n", scenario, err);
	return vm;
}

bool bench_guest_at_point(const struct vm *vm)
{
	return vm->state == VM_PAUSED && strcmp(vm->pause_reason, "snapshot point") == 0;
}

uint64_t bench_vm_exits(const struct vm *vm)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < vm->nr_vcpus; i++)
		n += vm->vcpus[i]->stats.exits;
	return n;
}
