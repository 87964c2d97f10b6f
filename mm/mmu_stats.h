/* Per-VM MMU counters. Names follow KVM's kvm_stat where KVM has one. Every
 * counter is a relaxed atomic add (faults update them concurrently under the read
 * lock), and walks add their work once per operation, not once per entry, so
 * that the counters stay on in production. */
#pragma once
#include "mm/latency.h"
#include <stdint.h>

struct mmu_stats {
	/* Faults (tdp_map) by outcome. */
	uint64_t pf_taken;
	uint64_t pf_fixed;
	uint64_t pf_spurious;
	uint64_t pf_retry;       /* raced an invalidation or another fault */
	uint64_t pf_no_slot;
	uint64_t pf_permission;
	uint64_t pf_no_memory;
	/* Prefetch (mm/prefetch.c): attempts, backed empty neighbours found,
	 * neighbours mapped, and prefetched leaves removed never accessed. */
	uint64_t pf_prefetch_called;
	uint64_t pf_prefetch_pages;
	uint64_t pf_prefetch_mapped;
	uint64_t pf_prefetch_unused;
	/* Huge leaves split: by eager splitting at dirty-log enable, in a fault's
	 * way (write-protected by dirty logging, or non-executable by the NX-huge
	 * policy), and the latter for execute faults alone (KVM's name). */
	uint64_t huge_page_splits_eager;
	uint64_t huge_page_splits_fault;
	uint64_t nx_lpage_splits;
	/* Pages newly set in a dirty-log bitmap. */
	uint64_t dirty_pages_logged;
	/* Present leaves by size: pages[level - 1]. */
	union {
		struct {
			uint64_t pages_4k;
			uint64_t pages_2m;
			uint64_t pages_1g;
		};
		uint64_t pages[3];
	};
	/* Work done by walks. */
	uint64_t spte_visited;
	uint64_t tables_descended;
	uint64_t leaves_installed;
	uint64_t leaves_zapped;
	uint64_t zap_yields;
	/* TLB flushes: asked for by MMU operations, and carried out. */
	uint64_t remote_tlb_flush_requests;
	uint64_t remote_tlb_flush;
	/* Memory the MMU holds. */
	uint64_t mmu_tables;      /* page-table frames, the root included */
	uint64_t tables_allocated;
	uint64_t tables_freed;
	/* Reverse maps (mm/rmap.h): the largest rmap a leaf install of this VM
	 * produced, as KVM's max_mmu_rmap_size; adds that found no memory for a
	 * descriptor and removals that did not find their SPTE (both 0 unless
	 * something is broken: the audit then names the leaf). */
	uint64_t max_mmu_rmap_size;
	uint64_t rmap_failures;
	/* Waits for mmu_lock, from the request to the acquisition, in TSC
	 * cycles: every acquisition by read_lock or write_lock through
	 * mmu_read_lock / mmu_write_lock, zeros included (a walk's retake at a
	 * yield point is not a new request and is not counted). fault_wait
	 * holds the faults' read waits again, alone, for bench zap. */
	struct latency_hist lock_read_wait;
	struct latency_hist lock_write_wait;
	struct latency_hist fault_wait;
};

static inline void stat_add(uint64_t *counter, int64_t n)
{
	__atomic_fetch_add(counter, (uint64_t)n, __ATOMIC_RELAXED);
}

static inline void stat_max(uint64_t *counter, uint64_t value)
{
	uint64_t cur = __atomic_load_n(counter, __ATOMIC_RELAXED);

	while (value > cur && !__atomic_compare_exchange_n(counter, &cur, value, true,
							   __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

static inline uint64_t stat_read(const uint64_t *counter)
{
	return __atomic_load_n(counter, __ATOMIC_RELAXED);
}

struct mmu;
/* Counters and held memory, on the console. */
void mmu_stats_print(struct mmu *mmu);
