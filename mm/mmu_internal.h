/* Interfaces between the MMU's own files; virt/ uses mm/mmu.h only. */
#pragma once
#include "mm/mmu.h"

/* Page-table frames (mm/spte.c). A new table is zeroed and accounted; one that
 * was never linked goes straight back; one unlinked from a live table waits for
 * the next TLB flush (a walker or paging-structure cache may still use it). */
paddr_t tdp_table_alloc(struct mmu *mmu, int level, uint64_t base_gfn);
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

/* Add a walk's work to the counters. */
void tdp_iter_account(struct mmu *mmu, const struct tdp_iter *it);

/* Zap [start, end) under the write lock (mm/tdp_mmu.c); with free_tables, also
 * unlink and free every table whose whole range lies inside (slot removal,
 * teardown). Returns whether a flush is needed. */
bool tdp_zap(struct mmu *mmu, uint64_t start, uint64_t end, bool free_tables, bool can_yield);
