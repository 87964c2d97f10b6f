/* The benchmark scenarios' Linux guest (bench/linux_guest.h). */
#include "lib/print.h"
#include "lib/string.h"
#include "bench/linux_guest.h"
#include "virt/bench_port.h"
#include "boot/boot_info.h"

#define RUN_TIMEOUT_MS (600 * 1000)

void linux_run_add_word(struct linux_run *r, uint32_t word)
{
	if (r->nwords < LINUX_WORDS_MAX)
		r->words[r->nwords++] = word;
}

static void keep_word(struct vm *vm, uint32_t word, void *ctx)
{
	(void)vm;
	linux_run_add_word(ctx, word);
}

static const struct vm_observer words_observer = { .on_bench_word = keep_word };

bool linux_run_create(struct linux_run *r, unsigned vcpus, uint64_t mem, enum backing_kind backing,
		      unsigned flags, const char *workload)
{
	static char cmdline[256];
	const struct boot_module *kernel = boot_module_find("vmlinuz");
	const struct boot_module *initrd = boot_module_find("initrd");
	char err[128];

	if (!kernel || !initrd) {
		kprintf("bench: no modules 'vmlinuz' and 'initrd' (build/sprig-linux.iso carries "
			"them: make run-linux)\n");
		return false;
	}
	ksnprintf(cmdline, sizeof(cmdline),
		  "console=ttyS0 quiet sprig.run=\"sprig-bench %s\"", workload);
	struct vm_create_args a = {
		.name = "linux-bench", .image = (const void *)(uintptr_t)kernel->start,
		.image_size = kernel->end - kernel->start,
		.initrd = (const void *)(uintptr_t)initrd->start,
		.initrd_size = initrd->end - initrd->start, .args = cmdline,
		.mem_bytes = mem, .backing = backing, .chunk_pages = 1, .vcpus = vcpus,
		.balloon = flags & LINUX_RUN_BALLOON, .no_kvm_pv = flags & LINUX_RUN_NO_KVM_PV,
	};
	*r = (struct linux_run){ .ok = true };
	if (!(r->vm = vm_create(&a, err, sizeof(err)))) {
		kprintf("bench: cannot create the Linux guest: %s\n", err);
		return false;
	}
	linux_run_keep_words(r);
	return true;
}

void linux_run_keep_words(struct linux_run *r)
{
	vm_observe(r->vm, &words_observer, r);
}

bool linux_run_until(struct linux_run *r, uint32_t cmd)
{
	struct vm *vm = r->vm;

	r->nwords = 0;
	vm_run(vm, RUN_TIMEOUT_MS);
	if (vm->state == VM_PAUSED && strcmp(vm->pause_reason, VM_PAUSE_BENCH_POINT) == 0 &&
	    vm->bench_port.cmd == cmd)
		return true;
	kprintf("bench: the Linux guest did not reach its bench point %u\n", cmd);
	r->ok = false;
	return false;
}

uint64_t linux_word64(const struct linux_run *r, unsigned i)
{
	if (i + 1 >= r->nwords)
		return 0;
	return r->words[i] | (uint64_t)r->words[i + 1] << 32;
}

bool linux_run_finish(struct linux_run *r, const char *bench)
{
	struct mmu_audit_report audit;

	if (!mmu_audit(&r->vm->mmu, &audit)) {
		mmu_audit_print(&audit);
		r->ok = false;
	}
	vm_destroy(r->vm);
	if (!r->ok)
		kprintf("bench %s: the Linux run failed\n", bench);
	return r->ok;
}
