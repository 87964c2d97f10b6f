/* Prefetch on 4 KiB faults: after a fault installs a 4 KiB leaf, map the run
 * of backed, unmapped neighbours in the same leaf table at once, so that memory
 * a restore fills in large chunks costs one fault per chunk, not one per page.
 * docs/mmu.md ("Prefetch") has the rules and the reasons. */
#pragma once
#include "mm/spte.h"

struct memslot;
struct mmu;

/* Adaptive back-off, one per VM (in struct mmu). Updated with relaxed atomics
 * by concurrent faults: a lost update only shifts the next probe a little. */
struct prefetch_backoff {
	uint32_t empty_attempts; /* consecutive attempts that mapped nothing */
	uint32_t skip_len;       /* the current back-off, in faults; 0 when trying */
	uint32_t skip_left;      /* faults still to let pass before the next probe */
};

/* After a fault installed the 4 KiB leaf for gfn in leaf_table. Caller holds
 * slots_lock and mmu_lock for reading, and had no invalidation race. */
void tdp_prefetch(struct mmu *mmu, struct memslot *slot, uint64_t gfn, uint64_t *leaf_table);

/* Whether a leaf is one the MMU may have installed for frame pa in slot: the
 * slot's rights, less write (prefetch or dirty logging withheld it) or, on a
 * huge leaf, less execute (NX huge pages). The accessed and dirty bits are
 * ignored: the walker sets them under the MMU's feet (prefetched leaves,
 * dirty-bit logging). */
bool leaf_matches_slot(const struct spte_format *f, uint64_t spte, paddr_t pa, int level,
		       const struct memslot *slot);
