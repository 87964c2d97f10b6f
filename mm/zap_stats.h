/* Per-VM zap counters: how many zaps ran, how much of the tables they read, what
 * the leaf-empty hint saved them, and how long they took, in TSC cycles, with a
 * latency histogram for medians and tail percentiles. Zaps run under the write
 * lock, so one writer at a time updates these; readers (the console) may race
 * and see a zap half-counted, never a torn counter. */
#pragma once
#include "mm/latency.h"
#include <stdbool.h>
#include <stdint.h>

struct zap_stats {
	uint64_t zaps;               /* leaf zaps: ranges, discards (not slot removal) */
	uint64_t zap_spte_visits;    /* entries read by those zaps, every level */
	uint64_t zap_leaf_visits;    /* ... of which in 4 KiB leaf tables */
	uint64_t zap_hint_checks;    /* leaf tables a zap covered whole and looked at */
	uint64_t tdp_zap_skip_child; /* ... that it did not descend into: hint set */
	uint64_t zap_hints_set;      /* leaf tables a zap left empty and marked */
	uint64_t zap_cycles;         /* TSC cycles inside those zaps, yields included */
	struct latency_hist zap_latency; /* latency_clock: two reads per zap */
	/* How long each mmu_zap held mmu_lock for write: from acquiring it to
	 * releasing it, the TLB flush included and the yields' handovers left
	 * out; what a fault that arrives behind the zap may wait. mmu_zap's
	 * zaps only: a discard holds the lock for its backing work too. */
	struct latency_hist zap_hold;
};

/* What one zap did, added to the counters when it ends. */
struct zap_work {
	uint64_t start_cycles;
	uint64_t hint_checks;
	uint64_t skips;
	uint64_t hints_set;
};

/* Under the MMU's write lock. */
void zap_stats_record(struct zap_stats *zs, const struct zap_work *w, uint64_t spte_visits,
		      uint64_t leaf_visits);
/* The latency below which `permille` of the recorded zaps fall (500: the
 * median, 999: p99.9), in cycles, read from the histogram; 0 if none. */
uint64_t zap_latency_percentile(const struct zap_stats *zs, unsigned permille);
/* The counters and median / p99.9 latency on the console. */
void zap_stats_print(const struct zap_stats *zs);
