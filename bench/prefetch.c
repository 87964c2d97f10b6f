/* `bench prefetch [mib=N]`: prefetch on snapshot restore, in guests. The
 * restore_touch guest fills its memory and stops at its snapshot point; the
 * scenario snapshots it into an image in memory (so the ISO stays small),
 * then for each chunk size (the userfaultfd handler's copy size), prefetch
 * mode and access order restores a VM from that image and lets the guest read
 * its whole region once, checking every byte against the image. Per run: the
 * nested page faults taken, the run's time, the prefetch counters, the
 * guest's verdict and the audit. prefetch_adaptive stays as set. With
 * `guest=linux`, a Linux guest's snapshot instead (prefetch_linux.c). */
#include "arch/x86/cpu.h"
#include "arch/x86/tsc.h"
#include "lib/parse.h"
#include "lib/print.h"
#include "lib/string.h"
#include "mm/mmu_config.h"
#include "mm/cow.h"
#include "boot/boot_info.h"
#include "bench/prefetch.h"
#include "bench/scenario.h"
#include "shell/shell.h"
#include "virt/snapshot.h"

#define MiB (1ull << 20)
#define GUEST_MEM (128 * MiB)
#define GUEST_BASE_MIB 4 /* the guest's region starts at its GUEST_PLAYGROUND */
#define RUN_TIMEOUT_MS (300 * 1000)
#define IMAGE_NAME "pf-image"

const struct restore_chunk restore_chunks[N_RESTORE_CHUNKS] = {
	{ "4K", 1 }, { "64K", 16 }, { "512K", 128 }, { "2M", 512 },
};
static const char *const mode_names[] = { "off", "forward", "both" };
static const char *const order_names[] = { "forward", "backward", "random" };
#define N_MODES 3
#define N_ORDERS 3

/* Boot the guest to its snapshot point and take the image. */
static const struct snapshot_image *build_image(uint64_t mib)
{
	static char cmdline[64], args[32];
	const struct boot_module *mod = boot_module_find("restore_touch");
	const struct snapshot_image *img;
	char err[128] = "";
	struct vm *vm;

	if (!mod) {
		kprintf("bench prefetch: no module 'restore_touch' (the ISO carries it)\n");
		return NULL;
	}
	ksnprintf(args, sizeof(args), "mib=%llu", (unsigned long long)mib);
	ksnprintf(cmdline, sizeof(cmdline), "restore_touch %s", args);
	struct vm_create_args a = {
		.name = "pf-source", .image = (const void *)(uintptr_t)mod->start,
		.image_size = mod->end - mod->start, .cmdline = cmdline, .args = args,
		.mem_bytes = GUEST_MEM, .backing = BACKING_LAZY, .chunk_pages = 1,
	};
	if (!(vm = vm_create(&a, err, sizeof(err)))) {
		kprintf("bench prefetch: cannot create the guest: %s\n", err);
		return NULL;
	}
	vm_run(vm, RUN_TIMEOUT_MS);
	img = vm->state == VM_PAUSED && strcmp(vm->pause_reason, "snapshot point") == 0
		      ? snapshot_take(vm, IMAGE_NAME, err, sizeof(err))
		      : NULL;
	if (!img)
		kprintf("bench prefetch: no snapshot of the guest%s%s\n", err[0] ? ": " : "", err);
	vm_destroy(vm);
	return img;
}

void prefetch_run_end(struct vm *vm, struct prefetch_run *r)
{
	struct mmu_audit_report audit;

	r->faults = vm->mmu.stats.pf_taken;
	r->called = vm->mmu.stats.pf_prefetch_called;
	r->pages = vm->mmu.stats.pf_prefetch_pages;
	r->mapped = vm->mmu.stats.pf_prefetch_mapped;
	r->audit_ok = mmu_audit(&vm->mmu, &audit);
	if (!r->audit_ok)
		mmu_audit_print(&audit);
	/* Zapped now, prefetched pages the guest never used show as unused. */
	mmu_discard(&vm->mmu, 0, vm->mem_bytes);
	r->unused = vm->mmu.stats.pf_prefetch_unused;
	vm_destroy(vm);
}

static bool restore_and_touch(const struct snapshot_image *img, uint32_t chunk_pages,
			      const char *order, struct prefetch_run *r)
{
	char args[32], err[128];
	struct vm *vm;
	uint64_t t;

	ksnprintf(args, sizeof(args), "order=%s", order);
	if (!(vm = vm_restore("pf-run", img, chunk_pages, args, err, sizeof(err)))) {
		kprintf("bench prefetch: cannot restore: %s\n", err);
		return false;
	}
	t = rdtsc();
	vm_run(vm, RUN_TIMEOUT_MS);
	r->ns = tsc_to_ns(rdtsc() - t);
	r->data_ok = vm->state == VM_EXITED && vm->exit_status == 0;
	prefetch_run_end(vm, r);
	return true;
}

static int prefetch_scenario(int argc, char **argv)
{
	static struct prefetch_run runs[N_RESTORE_CHUNKS][N_MODES][N_ORDERS];
	int saved_mode = mmu_config.prefetch;
	const char *adaptive = mmu_config.prefetch_adaptive ? "on" : "off";
	const struct snapshot_image *img;
	uint64_t mib = GUEST_MEM / MiB - GUEST_BASE_MIB;
	bool all_ok = true;

	if (argc > 1 && strcmp(argv[1], "guest=linux") == 0)
		return prefetch_linux(argc - 1, argv + 1);
	for (int i = 1; i < argc; i++)
		if (strncmp(argv[i], "mib=", 4) != 0 ||
		    !parse_u64_in(argv[i] + 4, 1, GUEST_MEM / MiB - GUEST_BASE_MIB, &mib))
			return shell_usage_error("bench", "bad argument '%s' (mib=1..%llu)", argv[i],
						 (unsigned long long)(GUEST_MEM / MiB - GUEST_BASE_MIB));
	if (!(img = build_image(mib)))
		return 1;
	for (unsigned c = 0; c < N_RESTORE_CHUNKS; c++)
		for (int m = 0; m < N_MODES; m++)
			for (int o = 0; o < N_ORDERS; o++) {
				mmu_config.prefetch = m;
				if (!restore_and_touch(img, restore_chunks[c].pages, order_names[o],
						       &runs[c][m][o])) {
					mmu_config.prefetch = saved_mode;
					snapshot_free(img);
					return 1;
				}
			}
	mmu_config.prefetch = saved_mode;
	snapshot_free(img);

	kprintf("bench prefetch: %llu MiB restored from a snapshot and read once, "
		"prefetch_adaptive=%s\n", (unsigned long long)mib, adaptive);
	kprintf("%-5s %-8s %-8s %8s %8s %7s %7s %7s %7s %5s %5s\n", "chunk", "prefetch", "order",
		"faults", "ms", "called", "pages", "mapped", "unused", "data", "audit");
	for (unsigned c = 0; c < N_RESTORE_CHUNKS; c++)
		for (int m = 0; m < N_MODES; m++)
			for (int o = 0; o < N_ORDERS; o++) {
				const struct prefetch_run *r = &runs[c][m][o];

				all_ok &= r->data_ok && r->audit_ok;
				kprintf("%-5s %-8s %-8s %8llu %8llu %7llu %7llu %7llu %7llu %5s %5s\n",
					restore_chunks[c].name, mode_names[m], order_names[o],
					(unsigned long long)r->faults,
					(unsigned long long)(r->ns / 1000000),
					(unsigned long long)r->called, (unsigned long long)r->pages,
					(unsigned long long)r->mapped, (unsigned long long)r->unused,
					r->data_ok ? "ok" : "BAD",
					r->audit_ok ? "ok" : "BAD");
			}
	for (unsigned c = 0; c < N_RESTORE_CHUNKS; c++)
		for (int m = 0; m < N_MODES; m++)
			for (int o = 0; o < N_ORDERS; o++) {
				const struct prefetch_run *r = &runs[c][m][o];

				kprintf("@bench bench=prefetch in=guest chunk=%s order=%s prefetch=%s "
					"adaptive=%s faults=%llu time_ns=%llu mib=%llu "
					"pf_prefetch_called=%llu pf_prefetch_pages=%llu "
					"pf_prefetch_mapped=%llu pf_prefetch_unused=%llu data=%s "
					"audit=%s\n",
					restore_chunks[c].name, order_names[o], mode_names[m], adaptive,
					(unsigned long long)r->faults, (unsigned long long)r->ns,
					(unsigned long long)mib, (unsigned long long)r->called,
					(unsigned long long)r->pages, (unsigned long long)r->mapped,
					(unsigned long long)r->unused, r->data_ok ? "ok" : "BAD",
					r->audit_ok ? "ok" : "BAD");
			}
	return all_ok ? 0 : 1;
}
SCENARIO(prefetch, .name = "prefetch", .run = prefetch_scenario,
	 .usage = "[mib=N] | guest=linux [mib=N] [mem=SIZE] [chunks=4K,...] [modes=off,...]",
	 .help = "restore a snapshot in 4K..2M chunks, prefetch off/forward/both, 3 orders; "
		 "guest=linux: a Linux guest's, prefetch off/forward/adaptive");
