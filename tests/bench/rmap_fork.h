/* The clone workload of rmap_fork_bench.c, shared with the fork cost curve
 * (fork_curve_bench.c). */
#pragma once
#include "mm/rmap.h"
#include <stdint.h>

/* The workload: a parent maps PAGES frames, clones[c] clones each map them all
 * for reading, all are torn down. RUNS runs of every variant
 * (rmap_fork_variants) at every count, each once before any twice: the ns of
 * run r of variant k at count c in samples[c][k][r] (r < runs <= max_runs). */
void rmap_fork_measure(const unsigned *clones, unsigned counts, unsigned pages, unsigned runs,
		       unsigned max_runs, uint64_t (*samples)[RMAP_FORK_VARIANTS][max_runs]);
