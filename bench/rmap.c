/* `bench rmap [N...]`: the rmap descriptor layouts (mm/rmap.h) under clones, in
 * guests; the in-guest form of the host's `bench rmap_fork`. The rmapread
 * guest writes 1 MiB (256 pages) and stops at its clone point; N clones are
 * made from it, each runs and reads all 256 pages (reads keep the frames
 * shared, so every clone's leaves join the parent's frames' rmaps, which grow
 * to N + 1), then all are destroyed (every removal shrinks them again). Timed
 * per phase, for each N and each rmap_desc layout, a new parent each time: a
 * chain keeps the layout it was born with. Exits dominate the run phase under
 * emulation, so the times are informative, not the layouts' costs alone.
 * With guest=linux the parent is a booted Linux guest (rmap_linux.c). */
#include "arch/x86/cpu.h"
#include "arch/x86/tsc.h"
#include "lib/parse.h"
#include "lib/print.h"
#include "lib/string.h"
#include "mm/mmu_config.h"
#include "mm/rmap.h"
#include "virt/clone.h"
#include "boot/boot_info.h"
#include "bench/rmap.h"
#include "bench/scenario.h"
#include "shell/shell.h"

#define MiB (1ull << 20)
#define GUEST_MEM (8 * MiB) /* the 1 MiB region sits at the guest's 4 MiB playground */
#define RUN_TIMEOUT_MS (60 * 1000)
static const uint64_t default_counts[] = { 10, 100, 500 };

struct rmap_run {
	uint64_t clones, create_ns, run_ns, destroy_ns;
	uint64_t max_rmap;   /* the largest rmap any VM of the family produced */
	uint64_t rmap_descs; /* descriptors the clones' leaves added, at the peak */
	bool data_ok, audit_ok;
};

static struct vm *clones[VM_MAX];

/* The rmapread guest, run to its clone point; NULL (reason printed) if not. */
static struct vm *start_parent(const struct boot_module *mod)
{
	struct vm_create_args a = {
		.name = "rmap-parent", .image = (const void *)(uintptr_t)mod->start,
		.image_size = mod->end - mod->start, .cmdline = "rmapread", .args = "",
		.mem_bytes = GUEST_MEM, .backing = BACKING_LAZY, .chunk_pages = 1,
	};
	char err[128];
	struct vm *vm;

	if (!(vm = vm_create(&a, err, sizeof(err)))) {
		kprintf("bench rmap: cannot create the guest: %s\n", err);
		return NULL;
	}
	vm_run(vm, RUN_TIMEOUT_MS);
	if (vm->state != VM_PAUSED || strcmp(vm->pause_reason, VM_PAUSE_CLONE_POINT) != 0) {
		kprintf("bench rmap: the guest did not reach its clone point\n");
		vm_destroy(vm);
		return NULL;
	}
	return vm;
}

void rmap_destroy_clones(struct vm **family, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		vm_destroy(family[i]);
}

bool rmap_make_clones(struct vm *parent, struct vm **family, uint64_t n, const char *prefix,
		      const char *bench)
{
	char name[VM_NAME_MAX], err[128];

	for (uint64_t i = 0; i < n; i++) {
		ksnprintf(name, sizeof(name), "%s-c%llu", prefix, (unsigned long long)i);
		if (!(family[i] = vm_clone(parent, name, err, sizeof(err)))) {
			kprintf("bench %s: cannot clone: %s\n", bench, err);
			rmap_destroy_clones(family, i);
			return false;
		}
	}
	return true;
}

uint64_t rmap_family_max(struct vm *parent, struct vm **family, uint64_t n)
{
	uint64_t max = stat_read(&parent->mmu.stats.max_mmu_rmap_size);

	for (uint64_t i = 0; i < n; i++)
		if (stat_read(&family[i]->mmu.stats.max_mmu_rmap_size) > max)
			max = stat_read(&family[i]->mmu.stats.max_mmu_rmap_size);
	return max;
}

/* One measurement with the current layout; false if a VM could not be made. */
static bool run_clones(const struct boot_module *mod, uint64_t n, struct rmap_run *r)
{
	struct mmu_audit_report audit;
	uint64_t descs_before, t;
	struct vm *parent;

	if (!(parent = start_parent(mod)))
		return false;
	r->clones = n;
	r->data_ok = true;
	descs_before = rmap_descs_in_use();
	t = rdtsc();
	if (!rmap_make_clones(parent, clones, n, "rmap", "rmap")) {
		vm_destroy(parent);
		return false;
	}
	r->create_ns = tsc_to_ns(rdtsc() - t);
	t = rdtsc();
	for (uint64_t i = 0; i < n; i++) {
		vm_run(clones[i], RUN_TIMEOUT_MS);
		r->data_ok &= clones[i]->state == VM_EXITED && clones[i]->exit_status == 0;
	}
	r->run_ns = tsc_to_ns(rdtsc() - t);
	r->max_rmap = rmap_family_max(parent, clones, n);
	r->rmap_descs = rmap_descs_in_use() - descs_before;
	/* Audited with the chains at their longest and again once emptied. */
	r->audit_ok = mmu_audit(&parent->mmu, &audit);
	if (!r->audit_ok)
		mmu_audit_print(&audit);
	t = rdtsc();
	rmap_destroy_clones(clones, n);
	r->destroy_ns = tsc_to_ns(rdtsc() - t);
	if (!mmu_audit(&parent->mmu, &audit)) {
		mmu_audit_print(&audit);
		r->audit_ok = false;
	}
	vm_destroy(parent);
	return true;
}

static void print_results(struct rmap_run runs[][RMAP_DESC_KINDS], unsigned n_counts)
{
	kprintf("bench rmap: 1 MiB (256 pages) shared, read by every clone; rmap_backref=%s\n",
		mmu_config.rmap_backref ? "on" : "off");
	kprintf("%-8s %6s %10s %10s %10s %8s %7s %5s %5s\n", "variant", "clones", "create us",
		"run us", "destroy us", "max_rmap", "descs", "data", "audit");
	for (unsigned c = 0; c < n_counts; c++)
		for (int k = 0; k < RMAP_DESC_KINDS; k++) {
			const struct rmap_run *r = &runs[c][k];

			kprintf("%-8s %6llu %10llu %10llu %10llu %8llu %7llu %5s %5s\n",
				rmap_desc_names[k], (unsigned long long)r->clones,
				(unsigned long long)(r->create_ns / 1000),
				(unsigned long long)(r->run_ns / 1000),
				(unsigned long long)(r->destroy_ns / 1000),
				(unsigned long long)r->max_rmap, (unsigned long long)r->rmap_descs,
				r->data_ok ? "ok" : "BAD", r->audit_ok ? "ok" : "FAILED");
		}
	for (unsigned c = 0; c < n_counts; c++)
		for (int k = 0; k < RMAP_DESC_KINDS; k++) {
			const struct rmap_run *r = &runs[c][k];

			kprintf("@bench bench=rmap_fork in=guest rmap_desc=%s clones=%llu "
				"create_ns=%llu run_ns=%llu destroy_ns=%llu max_rmap=%llu "
				"rmap_descs=%llu data=%s audit=%s\n",
				rmap_desc_names[k], (unsigned long long)r->clones,
				(unsigned long long)r->create_ns, (unsigned long long)r->run_ns,
				(unsigned long long)r->destroy_ns, (unsigned long long)r->max_rmap,
				(unsigned long long)r->rmap_descs, r->data_ok ? "ok" : "BAD",
				r->audit_ok ? "ok" : "FAILED");
		}
}

static int rmap_scenario(int argc, char **argv)
{
	static struct rmap_run runs[RMAP_MAX_COUNTS][RMAP_DESC_KINDS];
	uint64_t counts[RMAP_MAX_COUNTS], mib = 0;
	unsigned n_counts = 0, free_slots = VM_MAX;
	int saved_desc = mmu_config.rmap_desc;
	const struct boot_module *mod;
	bool all_ok = true, in_linux = false;

	/* The parent takes a slot too, as do VMs already on the console. */
	for (struct vm *vm = vm_next(NULL); vm; vm = vm_next(vm))
		free_slots--;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "guest=linux") == 0) {
			in_linux = true;
			continue;
		}
		if (strncmp(argv[i], "mib=", 4) == 0) {
			if (!parse_u64_in(argv[i] + 4, 1, LINUX_FORK_MIB_MAX, &mib))
				return shell_usage_error("bench", "bad mib= '%s' (1..%u)", argv[i] + 4,
							 LINUX_FORK_MIB_MAX);
			continue;
		}
		if (n_counts == RMAP_MAX_COUNTS)
			return shell_usage_error("bench", "rmap takes at most %d clone counts",
						 RMAP_MAX_COUNTS);
		if (!free_slots || !parse_u64_in(argv[i], 1, free_slots - 1, &counts[n_counts]))
			return shell_usage_error("bench", "bad clone count '%s' (1..%u: the VM table "
						 "has %u free slots, one for the parent)",
						 argv[i], free_slots ? free_slots - 1 : 0, free_slots);
		n_counts++;
	}
	if (mib && !in_linux)
		return shell_usage_error("bench", "mib= is for guest=linux");
	if (in_linux)
		return rmap_linux(counts, n_counts, mib);
	if (!n_counts)
		for (; n_counts < sizeof(default_counts) / sizeof(default_counts[0]); n_counts++)
			counts[n_counts] = default_counts[n_counts];
	if (!(mod = boot_module_find("rmapread"))) {
		kprintf("bench rmap: no module 'rmapread' (the ISO carries it)\n");
		return 1;
	}
	for (unsigned c = 0; c < n_counts; c++)
		for (int k = 0; k < RMAP_DESC_KINDS; k++) {
			mmu_config.rmap_desc = k;
			if (!run_clones(mod, counts[c], &runs[c][k])) {
				mmu_config.rmap_desc = saved_desc;
				return 1;
			}
			all_ok &= runs[c][k].data_ok && runs[c][k].audit_ok;
		}
	mmu_config.rmap_desc = saved_desc;
	print_results(runs, n_counts);
	return all_ok ? 0 : 1;
}
SCENARIO(rmap, .name = "rmap", .run = rmap_scenario, .usage = "[N...] [guest=linux [mib=M]]",
	 .help = "N clones (default 10 100 500) read a guest's 1 MiB, rmap_desc ext3/ext14/counted; "
		 "guest=linux: N clones (default 10 100) of a Linux guest map its memory");
