/* Cost curve of the fork workload against its clones: rmap_fork_bench.c's
 * workload (a parent maps PAGES frames, N clones each map them all for reading,
 * all are torn down) for N from 10 to 5000, per rmap variant (ext3, ext14,
 * counted, counted with the back-reference), interleaved, RUNS runs: the
 * median time with its min and max. Each variant's slope k, time ~ N^k on
 * log-log, is judged against docs/targets.md: linear or better. PAGES is
 * rmap_fork's 256 scaled down to 16 (64 KiB a clone) so that the curve, whose
 * 5000 clones of ext3 cost O(N) per rmap add and removal, runs in about two
 * minutes: at 64 one ext3 run of 5000 clones took 25 s, the curve 8 min. */
#include "mm/rmap.h"
#include "tests/bench/bench.h"
#include "tests/bench/rmap_fork.h"
#include "tests/targets.h"
#include <stdio.h>
#include <stdlib.h>

#define PAGES 16
#define RUNS 9
#define SMOKE_RUNS 3

static const unsigned clone_counts[] = { 10, 50, 100, 500, 1000, 5000 };
#define COUNTS (sizeof(clone_counts) / sizeof(clone_counts[0]))
#define SMOKE_COUNTS 3

static const char *variant_name(unsigned k)
{
	return rmap_desc_names[rmap_fork_variants[k].layout];
}

static const char *backref_name(unsigned k)
{
	return rmap_fork_variants[k].backref ? "on" : "off";
}

static void print_curve(unsigned k, const struct bench_spread *s, unsigned counts, unsigned runs)
{
	const struct target *t = bench_target("fork_curve_time_slope");
	double x[COUNTS], y[COUNTS], slope;

	for (unsigned c = 0; c < counts; c++) {
		printf("%-8s %-7s %7u %10.3f (%.3f..%.3f)\n", variant_name(k), backref_name(k),
		       clone_counts[c], s[c].median / 1e6, s[c].min / 1e6, s[c].max / 1e6);
		printf("@bench bench=fork_curve rmap_desc=%s rmap_backref=%s clones=%u pages=%u "
		       "runs=%u time_ns=%llu ns_min=%llu ns_max=%llu\n", variant_name(k),
		       backref_name(k), clone_counts[c], PAGES, runs, (unsigned long long)s[c].median,
		       (unsigned long long)s[c].min, (unsigned long long)s[c].max);
		x[c] = clone_counts[c];
		y[c] = (double)s[c].median;
	}
	slope = bench_loglog_slope(x, y, counts);
	printf("  %s, back-reference %s: slope k (time ~ clones^k) %.3f (%s %.2f: %s)\n",
	       variant_name(k), backref_name(k), slope, t->test, t->figure,
	       target_verdict(t, slope));
	printf("@bench bench=fork_curve fit=loglog rmap_desc=%s rmap_backref=%s points=%u "
	       "pages=%u runs=%u time_k=%.3f time_verdict=%s\n", variant_name(k), backref_name(k),
	       counts, PAGES, runs, slope, target_met(t, slope) ? "met" : "not_met");
}

BENCH(curve_fork)
{
	unsigned runs = smoke ? SMOKE_RUNS : RUNS, counts = smoke ? SMOKE_COUNTS : COUNTS;
	static uint64_t samples[COUNTS][RMAP_FORK_VARIANTS][RUNS];
	struct bench_spread s[RMAP_FORK_VARIANTS][COUNTS];

	rmap_fork_measure(clone_counts, counts, PAGES, runs, RUNS, samples);
	for (unsigned k = 0; k < RMAP_FORK_VARIANTS; k++)
		for (unsigned c = 0; c < counts; c++)
			s[k][c] = bench_spread(samples[c][k], runs);

	printf("Fork cost curve: a parent maps %u frames (%u KiB: rmap_fork's 256 scaled down "
	       "for 5000 clones), N clones map them all for reading, all are torn down; %u "
	       "interleaved runs; ms, median (min..max)\n", PAGES, PAGES * 4, runs);
	printf("%-8s %-7s %7s %10s\n", "layout", "backref", "clones", "time ms");
	for (unsigned k = 0; k < RMAP_FORK_VARIANTS; k++)
		print_curve(k, s[k], counts, runs);
}
