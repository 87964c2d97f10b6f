/* Sorting small arrays (calibration samples, medians): insertion sort, which
 * is the fastest for a handful of values and needs no memory. */
#pragma once
#include <stddef.h>
#include <stdint.h>

void sort_u64(uint64_t *v, size_t n);

/* Values over a benchmark's runs: median (of an even count, the mean of the
 * middle two), min and max. */
struct spread {
	uint64_t median, min, max;
};

#define SPREAD_MAX 32
/* The spread of n values (1..SPREAD_MAX; more are left out). */
struct spread spread_of(const uint64_t *values, size_t n);
