/* Leaf-empty hint benchmark: a 1 GiB VM mapped at 4 KiB, zapped again and again
 * in the patterns of the KVM proposal (docs/mmu.md, "Leaf-empty hint"), with
 * the hint off and on, interleaved, on the same seeded refault schedule.
 *
 *   same16, same4   zap the same 16 / 4 MiB; between two zaps the guest
 *                   refaults 8 random pages in `refault` percent of the range's
 *                   2 MiB regions (rounded up to whole regions);
 *   sweep16 .. 1    rolling zaps of 16/4/2/1 MiB chunks across the GiB, two
 *                   passes; behind the sweep the guest refaults 8 pages in
 *                   every 2 MiB region it has passed (printed as refault=100).
 *
 * Per row: the median over the repetitions of each repetition's median zap
 * time (TSC around lock, zap, flush and unlock, converted to ns), its spread
 * over the repetitions ((max - min) / median), and, summed over the row's zaps, the entries the zaps read (all
 * levels, and in 4 KiB tables), skipped tables, hint checks, and the leaf
 * tables that held a mapping when each zap began (from the benchmark's own
 * model of what it mapped). Sweep rows also count the zaps' instructions under
 * callgrind, where time differences drown in noise. */
#include "mm/leaf_hint.h"
#include "mm/mmu_internal.h"
#include "mm/tdp_mmu.h"
#include "svm/npt.h"
#include "tests/bench/bench.h"
#include "tests/targets.h"
#include "tests/rng.h"
#include "tests/unit/host_mem.h"
#include "bench/zap_patterns.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define COUNT_TOGGLE() CALLGRIND_TOGGLE_COLLECT
#else
#define COUNT_TOGGLE() ((void)0)
#endif

#define MiB (1ull << 20)
#define GiB (1ull << 30)
#define REGION (2 * MiB)
#define REFAULT_PAGES 8
#define SLOT_GPA (1 * GiB)
#define RUNS 9
#define SMOKE_RUNS 3
#define SAME_ZAPS 1000
#define SMOKE_SAME_ZAPS 40
#define SWEEP_PASSES 3 /* the median zap is a steady-state one */
#define MAX_ZAPS (SWEEP_PASSES * GiB / MiB)
#define CHILD_ARG "zap:sweeps"

/* Requested refault percentages; a row is labelled with what it runs, the
 * share of the range's 2 MiB regions refaulted (same4 has 2 regions: 12%
 * rounds up to 1 region, 50%, and that row is not run twice). */
static const unsigned same_refaults[] = { 0, 12, 50 };
#define N_SAME_REFAULTS (sizeof(same_refaults) / sizeof(same_refaults[0]))
#define SWEEP_REFAULT 100

struct row {
	const struct zap_pattern *p;
	unsigned refault;      /* percent of regions refaulted, as run (floor) */
	uint64_t hit, regions; /* same: regions refaulted between zaps, of */
};

/* What one run of a row did. */
struct sample {
	uint64_t zaps, median_cycles;
	uint64_t spte_visits, leaf_visits, skips, checks, nonempty;
};

/* The VM and the benchmark's model of it: which pages are mapped, and how
 * many per 2 MiB region. */
static struct {
	struct mmu mmu;
	uint64_t size;
	uint8_t *mapped;
	uint32_t *region_mapped;
	uint64_t zap_cycles[MAX_ZAPS]; /* of the run in progress */
} vm;

static void no_flush(void *ctx)
{
	(void)ctx;
}

static void fault(uint64_t page)
{
	if (vm.mapped[page])
		return;
	if (tdp_map(&vm.mmu, SLOT_GPA + (page << 12), TDP_ACC_WRITE) != TDP_FIXED) {
		fprintf(stderr, "zap bench: fault at page %llu failed\n", (unsigned long long)page);
		exit(1);
	}
	vm.mapped[page] = 1;
	vm.region_mapped[page / 512]++;
}

static void vm_create(uint64_t size)
{
	struct memslot_config cfg = { .gpa = SLOT_GPA, .size = size, .flags = MEMSLOT_NO_HUGE,
				      .backing = { .kind = BACKING_EAGER, .no_zero = true } };

	host_mem_init(2 * GiB);
	vm.size = size;
	vm.mapped = calloc(size >> 12, 1);
	vm.region_mapped = calloc(size / REGION, sizeof(*vm.region_mapped));
	if (!vm.mapped || !vm.region_mapped || mmu_init(&vm.mmu, &npt_format, no_flush, NULL) ||
	    mmu_slot_add(&vm.mmu, &cfg)) {
		fprintf(stderr, "zap bench: no memory for the VM\n");
		exit(1);
	}
}

static void vm_destroy(void)
{
	mmu_destroy(&vm.mmu);
	free(vm.mapped);
	free(vm.region_mapped);
}

/* Zap [off, off + len) of the slot and account it in s. */
static void zap(uint64_t off, uint64_t len, struct sample *s, bool counting)
{
	uint64_t first = off >> 12, n = len >> 12;
	struct zap_stats before = vm.mmu.zap_stats;

	for (uint64_t r = off / REGION; r < (off + len + REGION - 1) / REGION; r++)
		s->nonempty += vm.region_mapped[r] != 0;
	if (counting)
		COUNT_TOGGLE();
	write_lock(&vm.mmu.lock);
	if (tdp_zap_range(&vm.mmu, (SLOT_GPA >> 12) + first, (SLOT_GPA >> 12) + first + n))
		mmu_flush_tlb(&vm.mmu);
	write_unlock(&vm.mmu.lock);
	/* The zap's time as the MMU itself clocks it (zap_cycles, the counter
	 * `stats` shows): the walk, not the lock round trip both variants share. */
	vm.zap_cycles[s->zaps] = vm.mmu.zap_stats.zap_cycles - before.zap_cycles;
	if (counting)
		COUNT_TOGGLE();
	s->zaps++;
	s->spte_visits += vm.mmu.zap_stats.zap_spte_visits - before.zap_spte_visits;
	s->leaf_visits += vm.mmu.zap_stats.zap_leaf_visits - before.zap_leaf_visits;
	s->skips += vm.mmu.zap_stats.tdp_zap_skip_child - before.tdp_zap_skip_child;
	s->checks += vm.mmu.zap_stats.zap_hint_checks - before.zap_hint_checks;
	for (uint64_t p = first; p < first + n; p++)
		if (vm.mapped[p]) {
			vm.mapped[p] = 0;
			vm.region_mapped[p / 512]--;
		}
}

/* The guest touches REFAULT_PAGES distinct random pages of region r. */
static void refault_region(uint64_t r, struct rng *seed)
{
	uint64_t picked[REFAULT_PAGES];

	for (unsigned i = 0; i < REFAULT_PAGES; i++) {
		uint64_t page;
		bool again;

		do {
			page = r * 512 + rng_below(seed, 512);
			again = false;
			for (unsigned j = 0; j < i; j++)
				again |= picked[j] == page;
		} while (again);
		picked[i] = page;
		fault(page);
	}
}

static void map_range(uint64_t off, uint64_t len)
{
	for (uint64_t p = off >> 12; p < (off + len) >> 12; p++)
		fault(p);
}

static void run_same(const struct row *row, unsigned zaps, struct sample *s, struct rng *seed,
		     bool counting)
{
	uint64_t regions = row->regions, hit = row->hit;

	map_range(0, row->p->chunk);
	for (unsigned z = 0; z < zaps; z++) {
		bool chosen[64] = { false };

		zap(0, row->p->chunk, s, counting);
		for (uint64_t i = 0; i < hit; i++) {
			uint64_t r;

			do
				r = rng_below(seed, regions);
			while (chosen[r]);
			chosen[r] = true;
			refault_region(r, seed);
		}
	}
}

static void run_sweep(const struct row *row, struct sample *s, struct rng *seed, bool counting)
{
	map_range(0, vm.size);
	for (unsigned pass = 0; pass < SWEEP_PASSES; pass++) {
		uint64_t refaulted = 0; /* regions behind the sweep already refaulted */

		for (uint64_t off = 0; off < vm.size; off += row->p->chunk) {
			zap(off, row->p->chunk, s, counting);
			for (; refaulted < (off + row->p->chunk) / REGION; refaulted++)
				refault_region(refaulted, seed);
		}
	}
}

static struct sample run_row(const struct row *row, bool hint, unsigned same_zaps, bool counting)
{
	struct sample s = { 0 };
	/* The same schedule for hint off and on. */
	struct rng seed = rng_seeded(0x9e3779b97f4a7c15ull ^
				     (uint64_t)(row->p - zap_patterns) << 8 ^ row->refault);

	mmu_config.leaf_hint = hint;
	if (row->p->sweep)
		run_sweep(row, &s, &seed, counting);
	else
		run_same(row, same_zaps, &s, &seed, counting);
	s.median_cycles = bench_spread(vm.zap_cycles, (unsigned)s.zaps).median;
	return s;
}

static unsigned build_rows(struct row *rows)
{
	unsigned n = 0;

	for (unsigned p = 0; p < N_ZAP_PATTERNS; p++) {
		if (zap_patterns[p].sweep) {
			rows[n++] = (struct row){ &zap_patterns[p], SWEEP_REFAULT, 0, 0 };
			continue;
		}
		for (unsigned r = 0; r < N_SAME_REFAULTS; r++) {
			uint64_t regions = zap_patterns[p].chunk / REGION;
			uint64_t hit = (regions * same_refaults[r] + 99) / 100;
			struct row row = { &zap_patterns[p], (unsigned)(hit * 100 / regions), hit,
					   regions };

			if (r && rows[n - 1].hit == hit)
				continue; /* rounds to the row before: the same run */
			rows[n++] = row;
		}
	}
	return n;
}

#define MAX_ROWS (N_ZAP_PATTERNS * N_SAME_REFAULTS)

/* Under callgrind (the child): every sweep row, off then on, one dump each. */
static void count_sweeps_child(const struct row *rows, unsigned n_rows)
{
	for (unsigned i = 0; i < n_rows; i++) {
		if (!rows[i].p->sweep)
			continue;
		for (int hint = 0; hint < 2; hint++) {
			bench_count_begin();
			COUNT_TOGGLE(); /* collect inside zap() only */
			run_row(&rows[i], hint, 0, true);
			COUNT_TOGGLE();
			bench_count_end(rows[i].p->name);
		}
	}
}

struct pair_result {
	struct bench_spread ns[2];
	struct sample s[2];
	uint64_t instr[2];
};

static void print_row(const struct row *row, const struct pair_result *pr, unsigned runs)
{
	for (int h = 0; h < 2; h++) {
		const struct sample *s = &pr->s[h];
		uint64_t spread = pr->ns[h].median
					  ? (pr->ns[h].max - pr->ns[h].min) * 100 / pr->ns[h].median
					  : 0;

		printf("%-8s %7u %4s %6llu %10llu %6llu%% %11llu %11llu %6llu %8llu %7llu %13llu\n",
		       row->p->name, row->refault, h ? "on" : "off", (unsigned long long)s->zaps,
		       (unsigned long long)pr->ns[h].median, (unsigned long long)spread,
		       (unsigned long long)s->spte_visits, (unsigned long long)s->leaf_visits,
		       (unsigned long long)s->skips, (unsigned long long)s->nonempty,
		       (unsigned long long)s->checks, (unsigned long long)pr->instr[h]);
		printf("@bench bench=zap pattern=%s refault=%u leaf_hint=%s zaps=%llu "
		       "zap_median_ns=%llu zap_spread_pct=%llu zap_spte_visits=%llu "
		       "zap_leaf_visits=%llu skips=%llu nonempty_tables=%llu hint_checks=%llu "
		       "runs=%u instructions=%llu refault_regions=%llu regions=%llu\n",
		       row->p->name, row->refault, h ? "on" : "off", (unsigned long long)s->zaps,
		       (unsigned long long)pr->ns[h].median, (unsigned long long)spread,
		       (unsigned long long)s->spte_visits, (unsigned long long)s->leaf_visits,
		       (unsigned long long)s->skips, (unsigned long long)s->nonempty,
		       (unsigned long long)s->checks, runs, (unsigned long long)pr->instr[h],
		       (unsigned long long)row->hit, (unsigned long long)row->regions);
	}
}

/* Every zap of a row's runs, hint off and on, for the distribution. */
static uint64_t pooled[MAX_ROWS][2][RUNS * MAX_ZAPS];
static unsigned n_pooled[MAX_ROWS][2];

/* The distribution of one row's zap times over all its runs, as the ns at
 * every percentile 0..100 and at 99.9: `@bench bench=zap_cdf` (make report
 * plots it). */
static void print_cdf(const struct row *row, unsigned i, double per_ns, unsigned runs)
{
	for (int h = 0; h < 2; h++) {
		uint64_t *v = pooled[i][h];
		unsigned n = n_pooled[i][h];

		if (!n)
			continue;
		bench_spread(v, n); /* sorts */
		printf("@bench bench=zap_cdf pattern=%s refault=%u leaf_hint=%s runs=%u zaps=%u "
		       "p99_9_ns=%.0f pct_ns=", row->p->name, row->refault, h ? "on" : "off", runs, n,
		       (double)v[(uint64_t)(n - 1) * 999 / 1000] / per_ns);
		for (unsigned q = 0; q <= 100; q++)
			printf("%s%.0f", q ? "," : "", (double)v[(uint64_t)(n - 1) * q / 100] / per_ns);
		printf("\n");
	}
}

/* The targets of docs/targets.md for one row, hint off against on. Each
 * criterion is printed once, with its own verdict. */
static void print_verdict(const struct row *row, const struct pair_result *pr)
{
	const struct sample *off = &pr->s[0], *on = &pr->s[1];
	double visits = (double)off->spte_visits / (double)(on->spte_visits ? on->spte_visits : 1);
	double time = (double)pr->ns[0].median / (double)(pr->ns[1].median ? pr->ns[1].median : 1);

	if (!row->p->sweep) {
		const struct target *per_table = bench_target("zap_leaf_visits_per_table");
		const struct target *vs = bench_target("zap_time_vs_visits");
		const struct target *fast = bench_target("zap_same_refault0_time_ratio");
		double per = on->nonempty ? (double)on->leaf_visits / (double)on->nonempty : 0;

		printf("  %s refault=%u: leaf visits per nonempty table %.1f (%s %.0f: %s); "
		       "visits off/on %.1fx, time off/on %.1fx, time/visits %.2f (%s %.2f: %s)",
		       row->p->name, row->refault, per, per_table->test, per_table->figure,
		       target_verdict(per_table, per), visits, time, time / visits, vs->test,
		       vs->figure, target_verdict(vs, time / visits));
		if (!row->refault)
			printf("; time %s %.0fx: %s", fast->test, fast->figure,
			       target_verdict(fast, time));
		printf("\n");
		return;
	}
	const struct target *same = bench_target("zap_sweep_visit_ratio");
	double dt = 100.0 * ((double)pr->ns[1].median - (double)pr->ns[0].median) /
		    (double)pr->ns[0].median;
	double di = pr->instr[0] ? 100.0 * ((double)pr->instr[1] - (double)pr->instr[0]) /
					   (double)pr->instr[0]
				 : 0;

	printf("  %s: visits off/on %.3f (%s %.0f: %s); time %+.1f%%; instructions %+.2f%%%s",
	       row->p->name, visits, same->test, same->figure, target_verdict(same, visits), dt, di,
	       pr->instr[0] ? "" : " (no valgrind)");
	if (!strcmp(row->p->name, "sweep1")) {
		const struct target *checks = bench_target("zap_sweep1_hint_checks");

		printf("; hint checks %llu (%s %.0f: %s)", (unsigned long long)on->checks,
		       checks->test, checks->figure, target_verdict(checks, (double)on->checks));
	}
	printf("\n");
}

BENCH(zap)
{
	unsigned runs = smoke ? SMOKE_RUNS : RUNS, same_zaps = smoke ? SMOKE_SAME_ZAPS : SAME_ZAPS;
	static uint64_t ns[MAX_ROWS][2][RUNS];
	static struct pair_result result[MAX_ROWS];
	struct mmu_config saved = mmu_config;
	uint64_t sweep_instr[2 * MAX_ROWS] = { 0 };
	struct row rows[MAX_ROWS];
	unsigned n_rows = build_rows(rows), k = 0;
	double per_ns;

	/* The refault schedule is the guest's: one fault maps one page. */
	mmu_config.prefetch = PREFETCH_OFF;
	vm_create(smoke ? 64 * MiB : 1 * GiB);
	if (bench_child_arg) {
		count_sweeps_child(rows, n_rows);
		exit(0);
	}
	per_ns = bench_tsc_per_ns();
	/* Interleaved, the order alternating: noise hits off and on alike. */
	for (unsigned r = 0; r < runs; r++)
		for (unsigned i = 0; i < n_rows; i++)
			for (int j = 0; j < 2; j++) {
				int h = (int)(r + i + j) % 2;
				struct sample s = run_row(&rows[i], h, same_zaps, false);

				ns[i][h][r] = (uint64_t)((double)s.median_cycles / per_ns);
				result[i].s[h] = s;
				memcpy(&pooled[i][h][n_pooled[i][h]], vm.zap_cycles,
				       s.zaps * sizeof(uint64_t));
				n_pooled[i][h] += (unsigned)s.zaps;
			}
	vm_destroy();
	if (!smoke)
		bench_count_instructions(CHILD_ARG, 2 * 4, sweep_instr);
	for (unsigned i = 0; i < n_rows; i++) {
		for (int h = 0; h < 2; h++)
			result[i].ns[h] = bench_spread(ns[i][h], runs);
		if (rows[i].p->sweep) {
			result[i].instr[0] = sweep_instr[k++];
			result[i].instr[1] = sweep_instr[k++];
		}
	}

	printf("Leaf-empty hint: zaps of a %llu MiB VM mapped at 4 KiB, hint off/on, %u "
	       "interleaved runs (time: median zap, median of the runs; spread: max-min)\n",
	       (unsigned long long)(vm.size >> 20), runs);
	printf("%-8s %7s %4s %6s %10s %7s %11s %11s %6s %8s %7s %13s\n", "pattern", "refault",
	       "hint", "zaps", "median ns", "spread", "spte visits", "leaf visits", "skips",
	       "nonempty", "checks", "instructions");
	for (unsigned i = 0; i < n_rows; i++)
		print_row(&rows[i], &result[i], runs);
	for (unsigned i = 0; i < n_rows; i++)
		print_cdf(&rows[i], i, per_ns, runs);
	for (unsigned i = 0; i < n_rows; i++)
		print_verdict(&rows[i], &result[i]);
	mmu_config = saved;
}
