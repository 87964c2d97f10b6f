/* Sorting small arrays (calibration samples, medians): insertion sort, which
 * is the fastest for a handful of values and needs no memory. */
#pragma once
#include <stddef.h>
#include <stdint.h>

void sort_u64(uint64_t *v, size_t n);
