/* Interfaces between the MMU's own files; virt/ uses mm/mmu.h only. */
#pragma once
#include "mm/mmu.h"

/* mmu_lock, taken with its wait recorded (struct mmu_stats): every
 * read_lock and write_lock of it in mm/ goes through these. Return the wait
 * in cycles. */
static inline uint64_t mmu_read_lock(struct mmu *mmu)
{
	uint64_t start = latency_clock(), wait;

	read_lock(&mmu->lock);
	wait = latency_clock() - start;
	latency_record(&mmu->stats.lock_read_wait, wait);
	return wait;
}

static inline uint64_t mmu_write_lock(struct mmu *mmu)
{
	uint64_t start = latency_clock(), wait;

	write_lock(&mmu->lock);
	wait = latency_clock() - start;
	latency_record(&mmu->stats.lock_write_wait, wait);
	return wait;
}

/* Page-table frames (mm/spte.c). A new table is zeroed and accounted; one that
 * was never linked goes straight back; one unlinked from a live table waits for
 * the next TLB flush (a walker or paging-structure cache may still use it). */
paddr_t tdp_table_alloc(struct mmu *mmu, int level, uint64_t base_gfn);
/* A vCPU's table cache holds zeroed frames of the size a table below the root
 * takes; tdp_table_init makes one a table at level and base_gfn. */
paddr_t tdp_table_frame_alloc(void);
void tdp_table_frame_free(paddr_t pa);
void tdp_table_init(struct mmu *mmu, paddr_t pa, int level, uint64_t base_gfn);
void tdp_table_free_unlinked(struct mmu *mmu, paddr_t table);
void tdp_free_flushed_tables(struct mmu *mmu);

/* The table an SPTE sits in (KVM's sptep_to_sp): its frame's metadata, the
 * gfn and level the entry maps, and, for tables that can hold leaves, the MMU
 * that owns it (tdp_table_init records it in the page after the entries). */
static inline struct frame *sptep_to_table(const uint64_t *sptep)
{
	return frame_of(va_to_pa(sptep) & ~(PAGE_SIZE - 1));
}

static inline int sptep_level(const uint64_t *sptep)
{
	return sptep_to_table(sptep)->pt.level;
}

static inline uint64_t sptep_gfn(const uint64_t *sptep)
{
	const struct frame *t = sptep_to_table(sptep);
	uint64_t index = (va_to_pa(sptep) & (PAGE_SIZE - 1)) / sizeof(uint64_t);

	return ((uint64_t)t->pt.base_gfn_hi << 9) + index * tdp_level_pages(t->pt.level);
}

static inline struct mmu *sptep_owner(const uint64_t *sptep)
{
	return frame_of((va_to_pa(sptep) & ~(PAGE_SIZE - 1)) + PAGE_SIZE)->owner;
}

/* An MMU invariant broke: report where, the level, gfn and the old and new
 * values, and go on (the caller decides the safe way out). Evaluates to the
 * condition. mmu_warnings counts the reports (the host tests want none). */
extern uint64_t mmu_warnings;
void mmu_warn(const char *file, int line, const char *cond, int level, uint64_t gfn,
	      uint64_t old_spte, uint64_t new_spte);
#define MMU_WARN_ON(cond, level, gfn, old_spte, new_spte)                                   \
	({                                                                                  \
		bool warn_ = (cond);                                                        \
		if (__builtin_expect(warn_, 0))                                             \
			mmu_warn(__FILE__, __LINE__, #cond, (level), (gfn), (old_spte),     \
				 (new_spte));                                               \
		warn_;                                                                      \
	})

/* The only ways an SPTE changes (mm/spte.c). All end in the choke point,
 * handle_changed_spte, which keeps the counts, frees removed subtrees and is
 * where reverse maps and dirty tracking hook in. A leaf that enters an rmap
 * is published and added to the rmap as one step (rmap_add_publish): when no
 * rmap descriptor can be had, nothing is written and the setter returns
 * TDP_SET_NO_MEMORY (the fault reports TDP_NO_MEMORY), so that no leaf is
 * ever missing from its frame's rmap, where reclaim looks for it. */
/* enum tdp_set_result: mm/tdp_iter.h. */

/* Under the read lock: compare-exchange against *old_spte. On TDP_SET_RACED
 * *old_spte holds the current value and the caller retries or gives up; on
 * TDP_SET_DONE it holds new_spte. */
enum tdp_set_result tdp_set_spte_atomic_at(struct mmu *mmu, uint64_t *sptep, uint64_t *old_spte,
					   uint64_t new_spte, uint64_t gfn, int level);
/* Under the write lock. An exchange still, because the CPU may set A/D bits:
 * old_spte is what the caller read (it decides the rmap work; only A/D bits
 * may differ). */
enum tdp_set_result tdp_set_spte_at(struct mmu *mmu, uint64_t *sptep, uint64_t old_spte,
				    uint64_t new_spte, uint64_t gfn, int level);
/* The iterator forms: the entry, its value, gfn and level come from it, and
 * it->old_spte follows the entry. */
enum tdp_set_result tdp_set_spte_atomic(struct mmu *mmu, struct tdp_iter *it, uint64_t new_spte);
enum tdp_set_result tdp_set_spte(struct mmu *mmu, struct tdp_iter *it, uint64_t new_spte);
/* Under the write lock: clear bits (write, dirty) by an atomic and, so that a
 * dirty bit the CPU sets meanwhile is in the value returned, not lost. */
uint64_t tdp_clear_spte_bits(struct mmu *mmu, struct tdp_iter *it, uint64_t bits);
/* Fill an entry of a table that no walker can reach yet (a split's child
 * table before it is linked, or after losing the race to link it), through
 * the choke point so that its leaves are accounted and hooked like any other. */
enum tdp_set_result tdp_set_unlinked_spte(struct mmu *mmu, uint64_t *sptep, uint64_t gfn,
					  int level, uint64_t new_spte);
#ifdef HOST_TEST
/* Called after every store to SPTE memory with the entry and its old and new
 * values, when set (NULL by default): the replay test records the stores. */
extern void (*spte_write_recorder)(uint64_t *sptep, uint64_t old_spte, uint64_t new_spte);
#endif
/* Flush the TLBs without freeing tables: for a fault, under the read lock,
 * that took a huge leaf away (split_on_fault=off). */
void tdp_flush_tlb(struct mmu *mmu);

/* Bracket an invalidation (protocol in mmu.h), under the write lock. */
void invalidate_begin(struct mmu *mmu);
void invalidate_end(struct mmu *mmu);

/* The yield point of every long walk under the write lock (zap, dirty-log
 * write protection and eager split, a clone's write protection), as KVM's
 * tdp_mmu_iter_cond_resched: when another CPU waits for mmu_lock and the walk
 * has made progress since it last yielded, flush if *flush (the entries
 * changed so far must be gone from every TLB before others see the tables),
 * hand the lock over, take it back, and return true. The caller then drops
 * whatever it decided about the current entry and continues: the iterator's
 * next step restarts from the root at that entry (it->yielded). Progress is
 * also published in mmu->walk_visits (SPTE visits of the walk so far), which
 * the host tests read to bound a waiter's latency. */
bool tdp_cond_yield(struct mmu *mmu, struct tdp_iter *it, bool *flush);
/* Its core, for loops under the write lock that have no iterator (discard's
 * per-page reclaim and drop): when another CPU waits, flush if *flush, hand
 * the lock over and take it back; true if it did. The caller has made
 * progress since its last call and holds nothing the lock protects across it. */
bool mmu_cond_yield(struct mmu *mmu, bool *flush);

/* Add a walk's work to the counters. */
void tdp_iter_account(struct mmu *mmu, const struct tdp_iter *it);

/* Zap [start, end) under the write lock (mm/tdp_mmu.c); with free_tables, also
 * unlink and free every table whose whole range lies inside (slot removal,
 * teardown). Returns whether a flush is needed. */
bool tdp_zap(struct mmu *mmu, uint64_t start, uint64_t end, bool free_tables, bool can_yield);

/* Reverse maps, the MMU's side (mm/mmu_rmap.c): the head of the rmap a leaf
 * belongs in (its frame's; a huge leaf's first frame's), and the audit's checks,
 * which return NULL or what is wrong: the leaf at sptep is in that rmap exactly
 * once; every entry of frame pa's rmap is a present leaf mapping pa. */
uint64_t *mmu_rmap_head(const struct spte_format *f, uint64_t leaf_spte);
const char *mmu_rmap_check_leaf(const struct spte_format *f, const uint64_t *sptep,
				uint64_t spte);
const char *mmu_rmap_check_frame(const struct spte_format *f, paddr_t pa);
