/* Pre-order iterator over a 4-level TDP page table.
 *
 * The iterator visits every entry whose range intersects [start, end), a table
 * entry before the entries of the table it points to, in increasing gfn order.
 * It descends into a present table entry only when the entry's level is above
 * min_level, and reads each entry once into old_spte; the caller compares or
 * exchanges against that value.
 *
 * Yielding: a walk under the write lock may drop the lock between two entries
 * (tdp_iter_restart after retaking it). The tables may have changed meanwhile,
 * so the walk restarts from the root towards the first gfn it had not finished
 * with: entries before it are never revisited (except the tables above it, which
 * a walk passes through again harmlessly) and none after it is skipped. */
#pragma once
#include "mm/spte.h"

struct tdp_root {
	const struct spte_format *fmt;
	paddr_t table; /* the level-4 table */
};

/* What an SPTE setter did (mm/mmu_internal.h). */
enum tdp_set_result {
	TDP_SET_DONE,
	TDP_SET_RACED,     /* the compare-exchange found another value */
	TDP_SET_NO_MEMORY, /* no rmap descriptor: nothing was written */
};

struct tdp_iter {
	const struct spte_format *fmt;
	uint64_t *tables[TDP_ROOT_LEVEL + 1]; /* the table being walked at each level */
	uint64_t *sptep;                      /* the current entry */
	uint64_t old_spte;                    /* its value when read */
	uint64_t gfn;                         /* first gfn the current entry maps */
	uint64_t start, end;                  /* the range, in gfns */
	uint64_t target;                      /* descents aim at the first gfn >= target */
	uint64_t yielded_gfn;                 /* no yield again before passing it */
	int level;
	int min_level;
	bool valid;
	bool skip_children; /* the next step goes past the current table entry */
	bool yielded;       /* the lock was dropped: the next step restarts from the root */
	uint32_t visited[TDP_ROOT_LEVEL + 1]; /* entries read, per level: work counters */
	uint32_t descended; /* tables entered */
};

void tdp_iter_start(struct tdp_iter *it, const struct tdp_root *root, int min_level,
		    uint64_t start, uint64_t end);
void tdp_iter_next(struct tdp_iter *it);
/* After the lock was dropped and retaken: resume at the current entry's range.
 * tdp_iter_next does it by itself when it->yielded is set (tdp_cond_yield). */
void tdp_iter_restart(struct tdp_iter *it);

/* Do not descend into the table the current entry points to: the next step
 * goes to the entry after it. Applies to the current entry only (a restart
 * forgets it), so a decision taken before a yield is never reused after it. */
static inline void tdp_iter_skip_children(struct tdp_iter *it)
{
	it->skip_children = true;
}

/* Entries read at every level. */
static inline uint64_t tdp_iter_visited(const struct tdp_iter *it)
{
	uint64_t n = 0;

	for (int level = 1; level <= TDP_ROOT_LEVEL; level++)
		n += it->visited[level];
	return n;
}

/* Every read of SPTE memory in the MMU (stores: spte_write in mm/spte.c): one
 * load, never torn or repeated by the compiler while others write the entry. */
static inline uint64_t tdp_iter_read(const uint64_t *sptep)
{
	return __atomic_load_n(sptep, __ATOMIC_ACQUIRE);
}

/* Whether a yield now would make progress: at least one entry has been handled
 * since the walk started or last resumed. */
static inline bool tdp_iter_may_yield(const struct tdp_iter *it)
{
	return it->gfn > it->yielded_gfn;
}

#define for_each_tdp_pte_min_level(it, root, min_level, start, end)            \
	for (tdp_iter_start(&(it), (root), (min_level), (start), (end)); (it).valid; \
	     tdp_iter_next(&(it)))

#define for_each_tdp_pte(it, root, start, end) \
	for_each_tdp_pte_min_level(it, root, 1, start, end)
