/* Latencies in TSC cycles and their log-linear histograms: the zaps' times
 * (mm/zap_stats.h) and the waits for mmu_lock (mm/mmu_stats.h). Recorders may
 * run concurrently (faults record their lock waits under the read lock): every
 * update is a relaxed atomic, and a reader that races sees a record half
 * counted, never a torn counter. */
#pragma once
#include <stdint.h>

/* The TSC, in the hypervisor and on the (x86) host that runs the unit tests
 * and benchmarks alike. mm/ has no frequency: callers convert (mmu_config.tsc_khz). */
static inline uint64_t latency_clock(void)
{
	return __builtin_ia32_rdtsc();
}

/* Buckets: each power of two of cycles is split into LATENCY_SUB equal parts,
 * so a percentile read from the histogram is off by less than 1/LATENCY_SUB of
 * its value. Bucket 0 also holds every latency below LATENCY_SUB cycles (the
 * zeros of uncontended locks). */
#define LATENCY_SUB_BITS 3
#define LATENCY_SUB (1u << LATENCY_SUB_BITS)
#define LATENCY_OCTAVES 44 /* up to 2^47 cycles: hours */
#define LATENCY_BUCKETS (LATENCY_OCTAVES * LATENCY_SUB)

struct latency_hist {
	uint64_t count;
	uint64_t max;
	uint64_t bucket[LATENCY_BUCKETS];
};

void latency_record(struct latency_hist *h, uint64_t cycles);
/* The latency below which `permille` of the records fall (500: the median,
 * 990: p99, 999: p99.9), in cycles, read from the histogram; 0 if none. */
uint64_t latency_percentile(const struct latency_hist *h, unsigned permille);
/* Forget every record. Records made meanwhile may be lost in part. */
void latency_reset(struct latency_hist *h);
