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

void zap_stats_record(struct zap_stats *zs, const struct zap_work *w, uint64_t spte_visits,
		      uint64_t leaf_visits)
{
	uint64_t cycles = latency_clock() - w->start_cycles;

	bump(&zs->zaps, 1);
	bump(&zs->zap_spte_visits, spte_visits);
	bump(&zs->zap_leaf_visits, leaf_visits);
	bump(&zs->zap_hint_checks, w->hint_checks);
	bump(&zs->tdp_zap_skip_child, w->skips);
	bump(&zs->zap_hints_set, w->hints_set);
	bump(&zs->zap_cycles, cycles);
	latency_record(&zs->zap_latency, cycles);
}

uint64_t zap_latency_percentile(const struct zap_stats *zs, unsigned permille)
{
	return latency_percentile(&zs->zap_latency, permille);
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
	print_row("zap_hold_cycles_median", latency_percentile(&zs->zap_hold, 500));
	print_row("zap_hold_cycles_p999", latency_percentile(&zs->zap_hold, 999));
}
