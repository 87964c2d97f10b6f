/* Latency histograms (see latency.h). */
#include "mm/latency.h"
#include <stdbool.h>

static unsigned bucket_of(uint64_t cycles)
{
	unsigned octave, bucket;

	if (cycles < LATENCY_SUB)
		return 0;
	octave = 63 - (unsigned)__builtin_clzll(cycles); /* >= LATENCY_SUB_BITS */
	bucket = (octave - LATENCY_SUB_BITS) * LATENCY_SUB +
		 (unsigned)(cycles >> (octave - LATENCY_SUB_BITS)) - LATENCY_SUB;
	return bucket < LATENCY_BUCKETS ? bucket : LATENCY_BUCKETS - 1;
}

/* The middle of the bucket's range: the inverse of bucket_of. */
static uint64_t bucket_value(unsigned bucket)
{
	unsigned octave = bucket / LATENCY_SUB + LATENCY_SUB_BITS;
	uint64_t step = 1ull << (octave - LATENCY_SUB_BITS);

	return (uint64_t)(bucket % LATENCY_SUB + LATENCY_SUB) * step + step / 2;
}

void latency_record(struct latency_hist *h, uint64_t cycles)
{
	uint64_t max = __atomic_load_n(&h->max, __ATOMIC_RELAXED);

	__atomic_fetch_add(&h->count, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&h->bucket[bucket_of(cycles)], 1, __ATOMIC_RELAXED);
	while (cycles > max && !__atomic_compare_exchange_n(&h->max, &max, cycles, true,
							    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

uint64_t latency_percentile(const struct latency_hist *h, unsigned permille)
{
	uint64_t total = 0, seen = 0, rank;

	for (unsigned b = 0; b < LATENCY_BUCKETS; b++)
		total += __atomic_load_n(&h->bucket[b], __ATOMIC_RELAXED);
	if (!total)
		return 0;
	/* The smallest latency with at least permille/1000 of the records at or below. */
	rank = (total * permille + 999) / 1000;
	for (unsigned b = 0; b < LATENCY_BUCKETS; b++) {
		seen += __atomic_load_n(&h->bucket[b], __ATOMIC_RELAXED);
		if (seen >= rank)
			return bucket_value(b);
	}
	return bucket_value(LATENCY_BUCKETS - 1);
}

void latency_reset(struct latency_hist *h)
{
	for (unsigned b = 0; b < LATENCY_BUCKETS; b++)
		__atomic_store_n(&h->bucket[b], 0, __ATOMIC_RELAXED);
	__atomic_store_n(&h->count, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&h->max, 0, __ATOMIC_RELAXED);
}
