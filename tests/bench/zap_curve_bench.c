/* Cost curve of a zap against its range: for each range R from 2 MiB to 1 GiB
 * (doubling), a fresh VM mapped at 4 KiB over R (the real MMU on the host's
 * fake memory, as zap_bench.c) is zapped over R twice: the first zap clears
 * every mapping, the repeat finds the range empty (the leaf-empty hint's
 * case). Hint off and on interleaved, the order alternating, RUNS runs; per
 * point the median zap time (the MMU's own zap_cycles) with its min and max,
 * the entries read at every level (zap_spte_visits: the same in every run)
 * and, under callgrind, the zap's instructions. Each curve's slope k, cost ~
 * R^k on log-log, is judged against docs/targets.md: linear or better. */
#include "mm/mmu_config.h"
#include "mm/mmu_internal.h"
#include "mm/tdp_mmu.h"
#include "svm/npt.h"
#include "tests/bench/bench.h"
#include "tests/targets.h"
#include "tests/unit/host_mem.h"
#include <stdio.h>
#include <stdlib.h>

#define MiB (1ull << 20)
#define GiB (1ull << 30)
#define SLOT_GPA (1 * GiB)
#define RANGES 10 /* 2 MiB << 9 = 1 GiB */
#define SMOKE_RANGES 4
#define RUNS 11
#define SMOKE_RUNS 3
#define CHILD_ARG "curve_zap:instructions"

enum { FIRST, REPEAT, ZAPS };
static const char *const zap_names[ZAPS] = { "first", "repeat" };

static uint64_t range_of(unsigned i)
{
	return 2 * MiB << i;
}

static void no_flush(void *ctx)
{
	(void)ctx;
}

/* One point's two zaps, hint as given: cycles and visits of each. Under
 * callgrind (counting), each zap is one phase. */
static void run_point(uint64_t range, bool hint, bool counting, uint64_t cycles[ZAPS],
		      uint64_t visits[ZAPS])
{
	struct memslot_config cfg = { .gpa = SLOT_GPA, .size = range, .flags = MEMSLOT_NO_HUGE,
				      .backing = { .kind = BACKING_EAGER, .no_zero = true } };
	struct mmu mmu;

	mmu_config.leaf_hint = hint;
	if (mmu_init(&mmu, &npt_format, no_flush, NULL) || mmu_slot_add(&mmu, &cfg)) {
		fprintf(stderr, "curve_zap: no memory for a %llu MiB VM\n",
			(unsigned long long)(range >> 20));
		exit(1);
	}
	for (uint64_t gpa = SLOT_GPA; gpa < SLOT_GPA + range; gpa += 4096)
		if (tdp_map(&mmu, gpa, TDP_ACC_WRITE) != TDP_FIXED) {
			fprintf(stderr, "curve_zap: fault at %#llx failed\n", (unsigned long long)gpa);
			exit(1);
		}
	for (int z = 0; z < ZAPS; z++) {
		struct zap_stats before = mmu.zap_stats;

		if (counting)
			bench_count_begin();
		write_lock(&mmu.lock);
		if (tdp_zap_range(&mmu, SLOT_GPA >> 12, (SLOT_GPA + range) >> 12))
			mmu_flush_tlb(&mmu);
		write_unlock(&mmu.lock);
		if (counting)
			bench_count_end(zap_names[z]);
		cycles[z] = mmu.zap_stats.zap_cycles - before.zap_cycles;
		visits[z] = mmu.zap_stats.zap_spte_visits - before.zap_spte_visits;
	}
	mmu_destroy(&mmu);
}

/* What one curve (a hint setting and a zap) measured at each range. */
struct curve {
	uint64_t ns[RANGES][RUNS];
	struct bench_spread time[RANGES];
	uint64_t visits[RANGES], instr[RANGES];
};

/* The slope of a cost against the ranges. */
static double slope(unsigned ranges, const uint64_t *cost)
{
	double x[RANGES], y[RANGES];

	for (unsigned i = 0; i < ranges; i++) {
		x[i] = (double)range_of(i);
		y[i] = (double)cost[i];
	}
	return bench_loglog_slope(x, y, ranges);
}

static void print_curve(const struct curve *c, int hint, int z, unsigned ranges, unsigned runs)
{
	const struct target *tt = bench_target("zap_curve_time_slope");
	const struct target *vt = bench_target("zap_curve_visit_slope");
	uint64_t median[RANGES];
	double kt, kv, ki = 0;

	for (unsigned i = 0; i < ranges; i++) {
		const struct bench_spread *s = &c->time[i];

		median[i] = s->median;
		printf("%6llu %4s %-6s %12.2f (%.2f..%.2f) %11llu %13llu\n",
		       (unsigned long long)(range_of(i) >> 20), hint ? "on" : "off", zap_names[z],
		       s->median / 1e3, s->min / 1e3, s->max / 1e3,
		       (unsigned long long)c->visits[i], (unsigned long long)c->instr[i]);
		printf("@bench bench=zap_curve range_mib=%llu leaf_hint=%s zap=%s runs=%u "
		       "time_ns=%llu ns_min=%llu ns_max=%llu spte_visits=%llu instructions=%llu\n",
		       (unsigned long long)(range_of(i) >> 20), hint ? "on" : "off", zap_names[z],
		       runs, (unsigned long long)s->median, (unsigned long long)s->min,
		       (unsigned long long)s->max, (unsigned long long)c->visits[i],
		       (unsigned long long)c->instr[i]);
	}
	kt = slope(ranges, median);
	kv = slope(ranges, c->visits);
	if (c->instr[0])
		ki = slope(ranges, c->instr);
	printf("  hint %s, %s zap: slope k (cost ~ range^k) time %.3f (%s %.2f: %s), spte visits "
	       "%.3f (%s %.2f: %s)", hint ? "on" : "off", zap_names[z], kt, tt->test, tt->figure,
	       target_verdict(tt, kt), kv, vt->test, vt->figure, target_verdict(vt, kv));
	if (c->instr[0])
		printf(", instructions %.3f\n", ki);
	else
		printf(", instructions not counted (smoke run, or no valgrind)\n");
	printf("@bench bench=zap_curve fit=loglog leaf_hint=%s zap=%s points=%u runs=%u "
	       "time_k=%.3f spte_visits_k=%.3f time_verdict=%s spte_visits_verdict=%s",
	       hint ? "on" : "off", zap_names[z], ranges, runs, kt, kv,
	       target_met(tt, kt) ? "met" : "not_met", target_met(vt, kv) ? "met" : "not_met");
	if (c->instr[0])
		printf(" instructions_k=%.3f", ki);
	printf("\n");
}

/* Under callgrind (the child): every point once, hint off then on. */
static void count_child(unsigned ranges)
{
	uint64_t cycles[ZAPS], visits[ZAPS];

	for (unsigned i = 0; i < ranges; i++)
		for (int h = 0; h < 2; h++)
			run_point(range_of(i), h, true, cycles, visits);
}

BENCH(curve_zap)
{
	unsigned runs = smoke ? SMOKE_RUNS : RUNS, ranges = smoke ? SMOKE_RANGES : RANGES;
	static struct curve curves[2][ZAPS]; /* [hint][zap] */
	uint64_t instr[RANGES * 2 * ZAPS] = { 0 };
	struct mmu_config saved = mmu_config;
	double per_ns;

	host_mem_init(2 * GiB);
	/* One fault maps one page: the VM is mapped at 4 KiB page by page. */
	mmu_config.prefetch = PREFETCH_OFF;
	if (bench_child_arg) {
		count_child(ranges);
		exit(0);
	}
	per_ns = bench_tsc_per_ns();
	for (unsigned r = 0; r < runs; r++)
		for (unsigned i = 0; i < ranges; i++)
			for (int j = 0; j < 2; j++) {
				int h = (int)(r + i + j) % 2;
				uint64_t cycles[ZAPS], visits[ZAPS];

				run_point(range_of(i), h, false, cycles, visits);
				for (int z = 0; z < ZAPS; z++) {
					curves[h][z].ns[i][r] = (uint64_t)((double)cycles[z] / per_ns);
					curves[h][z].visits[i] = visits[z];
				}
			}
	mmu_config = saved;
	if (!smoke)
		bench_count_instructions(CHILD_ARG, ranges * 2 * ZAPS, instr);
	for (unsigned i = 0; i < ranges; i++)
		for (int h = 0; h < 2; h++)
			for (int z = 0; z < ZAPS; z++) {
				curves[h][z].time[i] = bench_spread(curves[h][z].ns[i], runs);
				curves[h][z].instr[i] = instr[(i * 2 + h) * ZAPS + z];
			}

	printf("Zap cost curve: a VM mapped at 4 KiB over each range, zapped (first) and zapped "
	       "again, empty (repeat); leaf-empty hint off/on, %u interleaved runs; zap time "
	       "median (min..max) by the MMU's zap_cycles\n", runs);
	printf("%6s %4s %-6s %26s %11s %13s\n", "MiB", "hint", "zap", "time us", "spte visits",
	       "instructions");
	for (int h = 0; h < 2; h++)
		for (int z = 0; z < ZAPS; z++)
			print_curve(&curves[h][z], h, z, ranges, runs);
}
