/* `bench rmap guest=linux [N...] [mib=M]`: the counted-rmap proposal's fork
 * experiment on a real kernel's memory. One Linux guest (bench/
 * linux_guest.h) boots in 256 MiB of lazily backed memory, so that only what
 * it touched is resident, and its sprig-bench writes M MiB (exec, one round)
 * and pauses at the round's END with that memory still its own. For each
 * rmap variant (ext3, ext14, counted, counted with the back-reference) and
 * each N, the parent's mappings are zapped and made again (so that every
 * chain is born with the variant's layout), then N clones are made and each
 * maps every resident page for reading, as a forked child reading all its
 * memory: one rmap add a page and clone, prefetch off as in the host's
 * rmap_fork; then all N are destroyed. Timed (host TSC) per phase; counted:
 * pages mapped, the descriptors the clones' leaves took at the peak, the
 * largest rmap, the first clone's rmap histogram, and the memory that did not
 * come back once the clones and the parent's leaves had gone. */
#include "arch/x86/cpu.h"
#include "arch/x86/tsc.h"
#include "lib/print.h"
#include "mm/frame.h"
#include "mm/memslot.h"
#include "mm/mmu_config.h"
#include "mm/rmap.h"
#include "mm/tdp_mmu.h"
#include "bench/linux_guest.h"
#include "bench/linux_split.h"
#include "bench/rmap.h"
#include "virt/bench_port.h"

#define DEFAULT_MIB 64
static const uint64_t default_counts[] = { 10, 100 };


struct fork_row {
	uint64_t clones, pages, clone_ns, map_ns, destroy_ns;
	uint64_t max_rmap, rmap_descs;
	int64_t kept_bytes; /* free memory lost over the round (negative: gained) */
	bool ok; /* every page mapped in every clone, audits clean, descriptors back */
};

static struct vm *clones[VM_MAX];

/* Map every resident page of the paused vm for reading; false if one would
 * not map. Its slots change only by this console's commands, so they are
 * read without the lock (tdp_map takes it). */
static bool map_resident(struct vm *vm, uint64_t *pages)
{
	struct mmu *mmu = &vm->mmu;

	*pages = 0;
	for (unsigned i = 0; i < mmu->slots.count; i++) {
		const struct memslot *s = &mmu->slots.slot[i];

		for (uint64_t p = 0; p < s->npages; p++) {
			if (!backing_peek(&s->backing, p))
				continue;
			if (tdp_map(mmu, (s->base_gfn + p) << PAGE_SHIFT, TDP_ACC_READ) > TDP_SPURIOUS)
				return false;
			(*pages)++;
		}
	}
	return true;
}

static uint64_t free_bytes(void)
{
	struct frame_stats st;

	frame_get_stats(&st);
	return st.free_bytes;
}

static bool audit(struct vm *vm)
{
	struct mmu_audit_report report;

	if (mmu_audit(&vm->mmu, &report))
		return true;
	mmu_audit_print(&report);
	return false;
}

/* One variant and count: false if the clones could not be made. */
static bool fork_round(struct vm *parent, uint64_t n, struct fork_row *row,
		       struct rmap_histogram *hist)
{
	uint64_t descs_before, free_before, t, pages;

	*row = (struct fork_row){ .clones = n, .ok = true };
	mmu_zap_all(&parent->mmu);
	descs_before = rmap_descs_in_use();
	free_before = free_bytes();
	row->ok &= map_resident(parent, &row->pages);
	t = rdtsc();
	if (!rmap_make_clones(parent, clones, n, "fork", "rmap"))
		return false;
	row->clone_ns = tsc_to_ns(rdtsc() - t);
	t = rdtsc();
	for (uint64_t i = 0; i < n; i++) {
		row->ok &= map_resident(clones[i], &pages);
		row->ok &= pages == row->pages;
	}
	row->map_ns = tsc_to_ns(rdtsc() - t);
	row->max_rmap = rmap_family_max(parent, clones, n);
	row->rmap_descs = rmap_descs_in_use() - descs_before;
	if (hist)
		mmu_rmap_histogram(&clones[0]->mmu, hist);
	row->ok &= audit(parent);
	t = rdtsc();
	rmap_destroy_clones(clones, n);
	row->destroy_ns = tsc_to_ns(rdtsc() - t);
	row->ok &= audit(parent);
	/* The parent's leaves go too: its chains hold descriptors now. */
	mmu_zap_all(&parent->mmu);
	row->ok &= rmap_descs_in_use() == descs_before;
	row->kept_bytes = (int64_t)(free_before - free_bytes());
	return true;
}

static void print_rows(const struct fork_row rows[][RMAP_FORK_VARIANTS], unsigned n_counts,
		       uint64_t mib, uint64_t pages)
{
	kprintf("bench rmap guest=linux: a Linux guest of %llu MiB whose workload wrote %llu MiB; "
		"each clone maps its %llu resident pages for reading; prefetch=off\n",
		(unsigned long long)(LINUX_SPLIT_MEM_MIN >> 20), (unsigned long long)mib,
		(unsigned long long)pages);
	kprintf("%-8s %7s %6s %9s %9s %10s %10s %8s %8s %7s %4s\n", "variant", "backref", "clones",
		"clone ms", "map ms", "destroy ms", "total ms", "max_rmap", "descs", "kept K",
		"ok");
	for (unsigned c = 0; c < n_counts; c++)
		for (unsigned k = 0; k < RMAP_FORK_VARIANTS; k++) {
			const struct fork_row *r = &rows[c][k];
			const struct rmap_variant *v = &rmap_fork_variants[k];

			kprintf("%-8s %7s %6llu %9llu %9llu %10llu %10llu %8llu %8llu %7lld %4s\n",
				rmap_desc_names[v->layout], v->backref ? "on" : "off",
				(unsigned long long)r->clones,
				(unsigned long long)(r->clone_ns / 1000000),
				(unsigned long long)(r->map_ns / 1000000),
				(unsigned long long)(r->destroy_ns / 1000000),
				(unsigned long long)((r->clone_ns + r->map_ns + r->destroy_ns) / 1000000),
				(unsigned long long)r->max_rmap, (unsigned long long)r->rmap_descs,
				(long long)(r->kept_bytes / 1024), r->ok ? "ok" : "BAD");
		}
	for (unsigned c = 0; c < n_counts; c++)
		for (unsigned k = 0; k < RMAP_FORK_VARIANTS; k++) {
			const struct fork_row *r = &rows[c][k];
			const struct rmap_variant *v = &rmap_fork_variants[k];

			kprintf("@bench bench=rmap_fork in=linux rmap_desc=%s rmap_backref=%s "
				"clones=%llu pages=%llu time_ns=%llu clone_ns=%llu map_ns=%llu "
				"destroy_ns=%llu max_rmap=%llu rmap_descs=%llu desc_bytes=%llu "
				"kept_bytes=%lld mib=%llu ok=%s\n",
				rmap_desc_names[v->layout], v->backref ? "on" : "off",
				(unsigned long long)r->clones, (unsigned long long)r->pages,
				(unsigned long long)(r->clone_ns + r->map_ns + r->destroy_ns),
				(unsigned long long)r->clone_ns, (unsigned long long)r->map_ns,
				(unsigned long long)r->destroy_ns, (unsigned long long)r->max_rmap,
				(unsigned long long)r->rmap_descs,
				(unsigned long long)(r->rmap_descs * rmap_desc_bytes(v->layout)),
				(long long)r->kept_bytes, (unsigned long long)mib,
				r->ok ? "yes" : "no");
		}
}

int rmap_linux(const uint64_t *counts, unsigned n_counts, uint64_t mib)
{
	static struct fork_row rows[RMAP_MAX_COUNTS][RMAP_FORK_VARIANTS];
	static struct rmap_histogram hist[RMAP_MAX_COUNTS];
	struct mmu_config saved = mmu_config;
	struct linux_run r;
	char workload[64];
	bool ok = true, made = true;

	if (!n_counts) {
		counts = default_counts;
		n_counts = sizeof(default_counts) / sizeof(default_counts[0]);
	}
	if (!mib)
		mib = DEFAULT_MIB;
	ksnprintf(workload, sizeof(workload), "exec mib=%llu rounds=1", (unsigned long long)mib);
	if (!linux_run_create(&r, 1, LINUX_SPLIT_MEM_MIN, BACKING_LAZY, 0, workload))
		return 1;
	/* The workload's memory is written by the end of its round. */
	if (linux_run_until(&r, BENCH_CMD_BEGIN) && linux_run_until(&r, BENCH_CMD_MARK) &&
	    linux_run_until(&r, BENCH_CMD_END)) {
		r.ok &= r.nwords == 5 && r.words[4] == 0;
		/* Each clone maps every page itself: an rmap add a page. */
		mmu_config.prefetch = PREFETCH_OFF;
		for (unsigned c = 0; c < n_counts && made; c++)
			for (unsigned k = 0; k < RMAP_FORK_VARIANTS && made; k++) {
				mmu_config.rmap_desc = rmap_fork_variants[k].layout;
				mmu_config.rmap_backref = rmap_fork_variants[k].backref;
				made = fork_round(r.vm, counts[c], &rows[c][k], k ? NULL : &hist[c]);
				ok &= made && rows[c][k].ok;
			}
		mmu_config = saved;
	}
	r.ok &= made;
	if (!linux_run_finish(&r, "rmap"))
		return 1;
	print_rows(rows, n_counts, mib, rows[0][0].pages);
	for (unsigned c = 0; c < n_counts; c++) {
		kprintf("rmaps of the first of %llu clones:\n", (unsigned long long)counts[c]);
		rmap_hist_print(&hist[c]);
	}
	return ok ? 0 : 1;
}
