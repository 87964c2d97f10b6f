/* The leaf-empty hint: a bit in a 4 KiB leaf table's frame metadata
 * (frame.pt.hint) saying "all 512 entries are non-present", so that a zap of
 * the whole 2 MiB region the table maps need not read them. docs/mmu.md
 * ("Leaf-empty hint") has the reasons and the measurements.
 *
 *   set:       by a zap that covers the table's whole 2 MiB region, once the
 *              walk has left the table, if its present count is 0;
 *   cleared:   by handle_changed_spte whenever a leaf is installed in the
 *              table, whatever the switch says;
 *   consulted: by a zap that covers the whole region, at the level-2 entry
 *              pointing to the table: set means do not descend.
 *
 * Why a set hint is never stale: it is set and read only under the write lock.
 * Faults install leaves under the read lock, and a fault's install, its
 * present-count increment and its hint clear all happen inside one read-lock
 * critical section (handle_changed_spte runs before the fault unlocks). So a
 * write-lock holder sees every install complete with its clear: the present
 * count it reads is exact, a table with count 0 is empty when the hint is set,
 * and any leaf installed afterwards has cleared the hint again before the next
 * write-lock holder can read it. A hint left clear on an empty table ("stale
 * false") costs one descent. */
#pragma once
#include "mm/frame.h"
#include "mm/mmu_config.h"
#include "mm/spte.h"

#define PT_HINT_LEAF_EMPTY 0x01 /* in frame.pt.hint of a level-1 table */

/* Whether a leaf zap of [start, end) uses hints: it covers at least one whole
 * 2 MiB region. Decided once per zap, so smaller ranges pay nothing per entry. */
static inline bool leaf_hint_applies(uint64_t start, uint64_t end)
{
	uint64_t region = tdp_level_pages(2);
	uint64_t first_whole = tdp_level_base(start + region - 1, 2);

	return mmu_config.leaf_hint && first_whole + region <= end;
}

static inline bool leaf_hint_is_set(const struct frame *table)
{
	return table->pt.hint & PT_HINT_LEAF_EMPTY;
}

/* A leaf went into the table. Under the read lock, concurrently with other
 * faults: the bit is cleared atomically, and only when set, so that installs
 * into tables without the hint do not write the metadata line. */
static inline void leaf_hint_clear(struct frame *table)
{
	if (__atomic_load_n(&table->pt.hint, __ATOMIC_RELAXED) & PT_HINT_LEAF_EMPTY)
		__atomic_fetch_and(&table->pt.hint, (uint8_t)~PT_HINT_LEAF_EMPTY, __ATOMIC_RELAXED);
}

/* A zap covering the table's whole region has walked it. Under the write lock,
 * where the present count is exact (see above). True if the hint was set. */
static inline bool leaf_hint_set_if_empty(struct frame *table)
{
	if (__atomic_load_n(&table->pt.present, __ATOMIC_RELAXED))
		return false;
	table->pt.hint |= PT_HINT_LEAF_EMPTY;
	return true;
}
