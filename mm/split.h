/* Splitting huge SPTEs into tables of equivalent entries, and the page-table
 * frames each vCPU keeps at hand so that a fault never allocates under
 * mmu_lock. docs/mmu.md ("Split on fault") gives the rules and why no TLB
 * flush is needed for an equivalent translation. */
#pragma once
#include "mm/tdp_iter.h"

struct memslot;
struct mmu;

/* A fault links or splits at most one table per level below the root. */
#define TDP_TABLE_CACHE_MIN (TDP_ROOT_LEVEL - 1)

/* Zeroed frames, not yet tables (not counted in mmu_tables). One per vCPU:
 * only its own faults take from it, so it needs no lock. */
struct tdp_table_cache {
	unsigned count;
	paddr_t frames[TDP_TABLE_CACHE_MIN];
};

/* Before mmu_lock: fill the cache to TDP_TABLE_CACHE_MIN. 0, or -1 when memory
 * ran out (the fault then fails before it takes any lock). */
int tdp_table_cache_topup(struct tdp_table_cache *cache);
/* Give every frame back (vCPU teardown). */
void tdp_table_cache_release(struct tdp_table_cache *cache);
/* Under mmu_lock: a table at level and base_gfn, from the cache (cannot fail
 * once topped up) or, without a cache (host callers of tdp_map), allocated
 * here (0 when memory ran out). */
paddr_t tdp_table_take(struct mmu *mmu, struct tdp_table_cache *cache, int level,
		       uint64_t base_gfn);

/* The rights the children of a huge leaf at level get (children at level - 1):
 * the leaf's own, plus execute when they are 4 KiB and the slot allows it (the
 * NX-huge-page policy forbids only executable huge pages), minus write on a
 * dirty-logged slot (only a logged write makes a page writable). */
unsigned split_child_rights(const struct spte_format *f, uint64_t huge, int level,
			    const struct memslot *slot);
/* Child i of the huge leaf at level: the same frames, accessed state and memory
 * type, with rights. */
uint64_t split_child_spte(const struct spte_format *f, uint64_t huge, int level, unsigned i,
			  unsigned rights);

/* Replace the huge leaf at it (it->old_spte) by `table` (from tdp_table_take)
 * filled with its 512 children, so that the walk descends into them next.
 * When a child's rmap entry finds no memory, nothing changes, the table is
 * freed and the result is TDP_SET_NO_MEMORY.
 *  - Under the read lock (fault path): one compare-exchange. TDP_SET_RACED
 *    when the entry changed meanwhile; the table is then freed and the caller
 *    retries.
 *  - Under the write lock (eager split): an exchange. Sets *flush when a flush
 *    is needed: only when the children have fewer rights than the leaf had. */
enum tdp_set_result tdp_split_huge_spte_atomic(struct mmu *mmu, struct tdp_iter *it,
					       paddr_t table, unsigned rights);
enum tdp_set_result tdp_split_huge_spte(struct mmu *mmu, struct tdp_iter *it, paddr_t table,
					unsigned rights, bool *flush);
