/* Interfaces between the MMU's own files; virt/ uses mm/mmu.h only. */
#pragma once
#include "mm/mmu.h"

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

/* The only two ways an SPTE changes (mm/spte.c). Both end in the choke point,
 * handle_changed_spte, which keeps the counts, frees removed subtrees and is
 * where reverse maps and dirty tracking hook in.
 *
 * Under the read lock: compare-exchange against it->old_spte. On failure
 * it->old_spte holds the current value and the caller retries or gives up. */
bool tdp_set_spte_atomic(struct mmu *mmu, struct tdp_iter *it, uint64_t new_spte);
/* Under the write lock. An exchange still, because the CPU may set A/D bits. */
void tdp_set_spte(struct mmu *mmu, struct tdp_iter *it, uint64_t new_spte);
/* Under the write lock: clear bits (write, dirty) by an atomic and, so that a
 * dirty bit the CPU sets meanwhile is in the value returned, not lost. */
uint64_t tdp_clear_spte_bits(struct mmu *mmu, struct tdp_iter *it, uint64_t bits);
/* Fill an entry of a table that no walker can reach yet (a split's child
 * table before it is linked, or after losing the race to link it), through
 * the choke point so that its leaves are accounted and hooked like any other. */
void tdp_set_unlinked_spte(struct mmu *mmu, uint64_t *sptep, uint64_t gfn, int level,
			   uint64_t new_spte);
/* Flush the TLBs without freeing tables: for a fault, under the read lock,
 * that took a huge leaf away (split_on_fault=off). */
void tdp_flush_tlb(struct mmu *mmu);

/* Bracket an invalidation (protocol in mmu.h), under the write lock. */
void invalidate_begin(struct mmu *mmu);
void invalidate_end(struct mmu *mmu);

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
