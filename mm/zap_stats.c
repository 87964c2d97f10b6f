/* Zap counters and the latency histogram (see zap_stats.h). */
#include "mm/zap_stats.h"
#include "lib/print.h"

/* A single writer (the write-lock holder): a relaxed store keeps readers from
 * tearing the value without the cost of a locked add. */
static void bump(uint64_t *counter, uint64_t n)
{
	__atomic_store_n(counter, __atomic_load_n(counter, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}

static uint64_t load(const uint64_t *counter)
{
	return __atomic_load_n(counter, __ATOMIC_RELAXED);
}

static unsigned bucket_of(uint64_t cycles)
{
	unsigned octave, bucket;

	if (cycles < ZAP_HIST_SUB)
		return 0;
	octave = 63 - (unsigned)__builtin_clzll(cycles); /* >= ZAP_HIST_SUB_BITS */
	bucket = (octave - ZAP_HIST_SUB_BITS) * ZAP_HIST_SUB +
		 (unsigned)(cycles >> (octave - ZAP_HIST_SUB_BITS)) - ZAP_HIST_SUB;
	return bucket < ZAP_HIST_BUCKETS ? bucket : ZAP_HIST_BUCKETS - 1;
}

/* The middle of the bucket's range: the inverse of bucket_of. */
static uint64_t bucket_value(unsigned bucket)
{
	unsigned octave = bucket / ZAP_HIST_SUB + ZAP_HIST_SUB_BITS;
	uint64_t step = 1ull << (octave - ZAP_HIST_SUB_BITS);

	return (uint64_t)(bucket % ZAP_HIST_SUB + ZAP_HIST_SUB) * step + step / 2;
}

void zap_stats_record(struct zap_stats *zs, const struct zap_work *w, uint64_t spte_visits,
		      uint64_t leaf_visits)
{
	uint64_t cycles = zap_clock() - w->start_cycles;

	bump(&zs->zaps, 1);
	bump(&zs->zap_spte_visits, spte_visits);
	bump(&zs->zap_leaf_visits, leaf_visits);
	bump(&zs->zap_hint_checks, w->hint_checks);
	bump(&zs->tdp_zap_skip_child, w->skips);
	bump(&zs->zap_hints_set, w->hints_set);
	bump(&zs->zap_cycles, cycles);
	bump(&zs->zap_latency[bucket_of(cycles)], 1);
}

uint64_t zap_latency_percentile(const struct zap_stats *zs, unsigned permille)
{
	uint64_t total = 0, seen = 0, rank;

	for (unsigned b = 0; b < ZAP_HIST_BUCKETS; b++)
		total += load(&zs->zap_latency[b]);
	if (!total)
		return 0;
	/* The smallest latency with at least permille/1000 of the zaps at or below. */
	rank = (total * permille + 999) / 1000;
	for (unsigned b = 0; b < ZAP_HIST_BUCKETS; b++) {
		seen += load(&zs->zap_latency[b]);
		if (seen >= rank)
			return bucket_value(b);
	}
	return bucket_value(ZAP_HIST_BUCKETS - 1);
}

static void print_row(const char *name, uint64_t value)
{
	kprintf("  %-26s %llu\n", name, (unsigned long long)value);
}

void zap_stats_print(const struct zap_stats *zs)
{
	print_row("zaps", load(&zs->zaps));
	print_row("zap_spte_visits", load(&zs->zap_spte_visits));
	print_row("zap_leaf_visits", load(&zs->zap_leaf_visits));
	print_row("zap_hint_checks", load(&zs->zap_hint_checks));
	print_row("tdp_zap_skip_child", load(&zs->tdp_zap_skip_child));
	print_row("zap_hints_set", load(&zs->zap_hints_set));
	print_row("zap_cycles", load(&zs->zap_cycles));
	print_row("zap_cycles_median", zap_latency_percentile(zs, 500));
	print_row("zap_cycles_p999", zap_latency_percentile(zs, 999));
}
