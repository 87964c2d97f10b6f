/* The clone workload on the MMU alone, per rmap descriptor layout (and, for
 * counted descriptors, with the back-reference on and off, so that the count
 * alone is measured apart from it): a parent
 * maps 256 frames (1 MiB), N clones are made and each maps all of them for
 * reading (so the frames' rmaps grow to N + 1 SPTEs), then every VM is torn
 * down. The time is the whole workload's; medians of RUNS interleaved runs
 * (every layout once before any twice), with the spread (max - min) / median.
 * Beside the times, the instructions of one run of each variant at the largest
 * count, clones and their maps apart from the teardown (callgrind: counts do
 * not depend on the load of a shared machine). */
#include "mm/mmu.h"
#include "mm/mmu_config.h"
#include "mm/rmap.h"
#include "mm/tdp_mmu.h"
#include "svm/npt.h"
#include "tests/bench/bench.h"
#include "tests/bench/rmap_fork.h"
#include "tests/targets.h"
#include "tests/unit/host_mem.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MiB (1ull << 20)
#define PAGES 256
#define RUNS 9
#define SMOKE_RUNS 3

static const unsigned clone_counts[] = { 10, 100, 500 };
#define N_COUNTS (sizeof(clone_counts) / sizeof(clone_counts[0]))

enum { V_EXT3, V_EXT14, V_COUNTED_SCAN, V_COUNTED };
enum { PH_CLONE_MAP, PH_TEARDOWN, PHASES };
static const char *const phase_names[PHASES] = { "clone_map", "teardown" };

static void no_flush(void *ctx)
{
	(void)ctx;
}

static void vm_init(struct mmu *mmu, uint32_t id)
{
	if (mmu_init(mmu, &npt_format, no_flush, NULL))
		abort();
	mmu->share.id = id;
}

/* One run: ns for the whole workload. `counting` brackets the phases for
 * callgrind. */
static uint64_t run_fork(struct mmu *vms, unsigned clones, unsigned pages, bool counting)
{
	struct memslot_config slot = { .gpa = 0, .size = pages * 4096ull,
				       .backing = { .kind = BACKING_LAZY } };
	uint64_t t;

	vm_init(&vms[0], 0);
	if (mmu_slot_add(&vms[0], &slot))
		abort();
	for (unsigned p = 0; p < pages; p++)
		if (tdp_map(&vms[0], p * 4096ull, TDP_ACC_WRITE) != TDP_FIXED)
			abort();
	t = bench_now_ns();
	if (counting)
		bench_count_begin();
	for (unsigned c = 1; c <= clones; c++) {
		vm_init(&vms[c], c);
		if (mmu_clone(&vms[0], &vms[c]))
			abort();
		for (unsigned p = 0; p < pages; p++)
			if (tdp_map(&vms[c], p * 4096ull, TDP_ACC_READ) > TDP_SPURIOUS)
				abort();
	}
	if (counting) {
		bench_count_end(phase_names[PH_CLONE_MAP]);
		bench_count_begin();
	}
	for (unsigned c = 0; c <= clones; c++)
		mmu_destroy(&vms[c]);
	if (counting)
		bench_count_end(phase_names[PH_TEARDOWN]);
	return bench_now_ns() - t;
}

static void use_variant(unsigned k)
{
	mmu_config.rmap_desc = rmap_fork_variants[k].layout;
	mmu_config.rmap_backref = rmap_fork_variants[k].backref;
}

static struct mmu *vms_alloc(unsigned clones)
{
	struct mmu *vms = calloc(clones + 1, sizeof(*vms));

	if (!vms) {
		fprintf(stderr, "rmap_fork: no memory for %u VMs\n", clones + 1);
		exit(1);
	}
	host_mem_init(1024 * MiB);
	/* Each clone faults every page itself: an rmap add per fault. */
	mmu_config.prefetch = PREFETCH_OFF;
	return vms;
}

void rmap_fork_measure(const unsigned *clones, unsigned counts, unsigned pages, unsigned runs,
		       unsigned max_runs, uint64_t (*samples)[RMAP_FORK_VARIANTS][max_runs])
{
	struct mmu_config saved = mmu_config;
	struct mmu *vms = vms_alloc(clones[counts - 1]);

	for (unsigned r = 0; r < runs; r++)
		for (unsigned c = 0; c < counts; c++)
			for (unsigned k = 0; k < RMAP_FORK_VARIANTS; k++) {
				use_variant(k);
				samples[c][k][r] = run_fork(vms, clones[c], pages, false);
			}
	mmu_config = saved;
	free(vms);
}

static double spread_pct(const struct bench_spread *s)
{
	return s->median ? 100.0 * (double)(s->max - s->min) / (double)s->median : 0;
}

/* The child of bench_count_instructions: one counted run of variant
 * "rmap_fork:K" at the largest clone count. */
static void count_child(void)
{
	unsigned k = (unsigned)strtoul(strchr(bench_child_arg, ':') + 1, NULL, 10);
	struct mmu *vms = vms_alloc(clone_counts[N_COUNTS - 1]);

	use_variant(k);
	run_fork(vms, clone_counts[N_COUNTS - 1], PAGES, true);
	exit(0);
}

static void print_instructions(void)
{
	uint64_t instr[RMAP_FORK_VARIANTS][PHASES], total[RMAP_FORK_VARIANTS];

	for (unsigned k = 0; k < RMAP_FORK_VARIANTS; k++) {
		char arg[32];

		snprintf(arg, sizeof arg, "rmap_fork:%u", k);
		bench_count_instructions(arg, PHASES, instr[k]);
		total[k] = instr[k][PH_CLONE_MAP] + instr[k][PH_TEARDOWN];
	}
	if (!total[V_COUNTED_SCAN])
		return; /* no valgrind */
	printf("instructions, one run of %u clones (callgrind): clones and maps, teardown, total\n",
	       clone_counts[N_COUNTS - 1]);
	for (unsigned k = 0; k < RMAP_FORK_VARIANTS; k++) {
		const struct rmap_variant *v = &rmap_fork_variants[k];

		printf("%-8s %-7s %12llu %12llu %12llu\n", rmap_desc_names[v->layout],
		       v->backref ? "on" : "off", (unsigned long long)instr[k][PH_CLONE_MAP],
		       (unsigned long long)instr[k][PH_TEARDOWN], (unsigned long long)total[k]);
		printf("@bench bench=rmap_fork_instructions rmap_desc=%s rmap_backref=%s clones=%u "
		       "clone_map=%llu teardown=%llu total=%llu\n",
		       rmap_desc_names[v->layout], v->backref ? "on" : "off",
		       clone_counts[N_COUNTS - 1], (unsigned long long)instr[k][PH_CLONE_MAP],
		       (unsigned long long)instr[k][PH_TEARDOWN], (unsigned long long)total[k]);
	}
	printf("instructions: ext3/ext14 %.2fx, ext14/counted without back-reference %.2fx, "
	       "back-reference on: a further %.2fx\n",
	       (double)total[V_EXT3] / (double)total[V_EXT14],
	       (double)total[V_EXT14] / (double)total[V_COUNTED_SCAN],
	       (double)total[V_COUNTED_SCAN] / (double)total[V_COUNTED]);
}

/* The proposal's two steps at the largest clone count, against
 * docs/targets.md. */
static void print_verdicts(const struct bench_spread s[RMAP_FORK_VARIANTS], unsigned clones)
{
	const struct target *ext14 = bench_target("rmap_fork_ext14_speedup");
	const struct target *count = bench_target("rmap_fork_count_speedup");
	double r14 = (double)s[V_EXT3].median / (double)s[V_EXT14].median;
	double rc = (double)s[V_EXT14].median / (double)s[V_COUNTED_SCAN].median;
	double rb = (double)s[V_COUNTED_SCAN].median / (double)s[V_COUNTED].median;

	printf("target %u clones: ext3/ext14 %.2fx (%s %.2f: %s); ext14/counted without "
	       "back-reference %.2fx (%s %.2f: %s); back-reference on: a further %.2fx\n", clones,
	       r14, ext14->test, ext14->figure, target_verdict(ext14, r14), rc, count->test,
	       count->figure, target_verdict(count, rc), rb);
}

BENCH(rmap_fork)
{
	unsigned runs = smoke ? SMOKE_RUNS : RUNS, counts = smoke ? 1 : N_COUNTS;
	static uint64_t samples[N_COUNTS][RMAP_FORK_VARIANTS][RUNS];
	struct bench_spread s[RMAP_FORK_VARIANTS];

	if (bench_child_arg)
		count_child();
	rmap_fork_measure(clone_counts, counts, PAGES, runs, RUNS, samples);

	printf("Rmap fork: a parent maps %u frames, N clones map them all for reading, all are "
	       "torn down; %u interleaved runs, ms (median, spread)\n", PAGES, runs);
	printf("%-8s %-7s %7s %12s %8s\n", "layout", "backref", "clones", "time", "spread");
	for (unsigned c = 0; c < counts; c++) {
		for (unsigned k = 0; k < RMAP_FORK_VARIANTS; k++) {
			const struct rmap_variant *v = &rmap_fork_variants[k];

			s[k] = bench_spread(samples[c][k], runs);
			printf("%-8s %-7s %7u %9.3f ms %7.0f%%\n", rmap_desc_names[v->layout],
			       v->backref ? "on" : "off", clone_counts[c], s[k].median / 1e6,
			       spread_pct(&s[k]));
			printf("@bench bench=rmap_fork rmap_desc=%s rmap_backref=%s clones=%u "
			       "time_ns=%llu ns_min=%llu ns_max=%llu spread_pct=%.0f runs=%u\n",
			       rmap_desc_names[v->layout], v->backref ? "on" : "off", clone_counts[c],
			       (unsigned long long)s[k].median, (unsigned long long)s[k].min,
			       (unsigned long long)s[k].max, spread_pct(&s[k]), runs);
		}
		if (c == counts - 1)
			print_verdicts(s, clone_counts[c]);
	}
	if (!smoke)
		print_instructions();
}
