/* Prefetch on 4 KiB faults (see prefetch.h and docs/mmu.md). */
#include "mm/mmu_config.h"
#include "mm/mmu_internal.h"

/* Adaptive back-off: after this many attempts in a row that mapped nothing,
 * let faults pass without trying, PREFETCH_SKIP_MIN of them at first, twice as
 * many after each probe that maps nothing again, at most PREFETCH_SKIP_MAX.
 * The cap bounds how long a VM keeps paying one fault per page after its
 * restore starts filling larger chunks: at most 64 faults until the next probe. */
#define PREFETCH_EMPTY_BEFORE_SKIP 8
#define PREFETCH_SKIP_MIN 8
#define PREFETCH_SKIP_MAX 64

static uint32_t load_u32(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static void store_u32(uint32_t *p, uint32_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELAXED);
}

/* Whether this fault should try; a fault that does not counts down the skip. */
static bool prefetch_due(struct prefetch_backoff *p)
{
	uint32_t left = load_u32(&p->skip_left);

	if (!left)
		return true;
	store_u32(&p->skip_left, left - 1);
	return false;
}

static void prefetch_learn(struct prefetch_backoff *p, uint64_t mapped)
{
	uint32_t empty, skip;

	if (mapped) {
		store_u32(&p->empty_attempts, 0);
		store_u32(&p->skip_len, 0);
		return;
	}
	empty = load_u32(&p->empty_attempts) + 1;
	if (empty < PREFETCH_EMPTY_BEFORE_SKIP) {
		store_u32(&p->empty_attempts, empty);
		return;
	}
	skip = load_u32(&p->skip_len);
	skip = !skip ? PREFETCH_SKIP_MIN : skip * 2 > PREFETCH_SKIP_MAX ? PREFETCH_SKIP_MAX : skip * 2;
	store_u32(&p->skip_len, skip);
	store_u32(&p->skip_left, skip);
	/* The probe after the skip decides alone whether to back off further. */
	store_u32(&p->empty_attempts, PREFETCH_EMPTY_BEFORE_SKIP - 1);
}

/* A dirty-logged slot gets prefetched pages read-only: only a guest write
 * (which faults and upgrades the leaf) may put a page in the dirty log. */
static unsigned prefetch_rights(const struct memslot *slot)
{
	unsigned rights = memslot_rights(slot);

	return slot->flags & MEMSLOT_DIRTY_LOG ? rights & ~TDP_ACC_WRITE : rights;
}

/* Installed with the accessed bit clear (where the format has one): the walker
 * sets it on first use, so aging, and the pf_prefetch_unused count, can tell
 * a prefetched page the guest never touched from one it did. */
static uint64_t prefetch_leaf(const struct spte_format *f, paddr_t pa, const struct memslot *slot)
{
	return spte_make_leaf(f, pa, 1, backing_frame_rights(pa, prefetch_rights(slot))) &
	       ~f->accessed;
}

bool leaf_matches_slot(const struct spte_format *f, uint64_t spte, paddr_t pa, int level,
		       const struct memslot *slot)
{
	unsigned allowed = memslot_rights(slot), rights = spte_rights(f, spte);
	/* Write may be withheld (prefetch on a logged slot, dirty logging's
	 * write protection, which outlives the logging until the next write),
	 * and execute on a huge leaf (the NX-huge-page policy). */
	unsigned may_lack = TDP_ACC_WRITE | (level > 1 ? TDP_ACC_EXEC : 0);
	uint64_t ad = f->accessed | f->dirty;

	return !(rights & ~allowed) && !(allowed & ~rights & ~may_lack) &&
	       (spte | ad) == (spte_make_leaf(f, pa, level, rights) | ad);
}

/* Install one prefetched leaf into an empty entry; false if the entry is not
 * empty any more (a racing fault won: its leaf is as good) or its rmap entry
 * found no memory (the entry stays empty). */
static bool install(struct mmu *mmu, uint64_t *sptep, uint64_t gfn, uint64_t leaf)
{
	uint64_t old = SPTE_NONE;

	return tdp_set_spte_atomic_at(mmu, sptep, &old, leaf, gfn, 1) == TDP_SET_DONE;
}

struct prefetch_count {
	uint64_t visited; /* entries read */
	uint64_t pages;   /* backed and empty: candidates */
	uint64_t mapped;
};

/* Map the run of backed pages with empty entries that starts at gfn + step and
 * goes in the direction of step (+1 or -1), up to and excluding `limit`;
 * stop at the first entry that is not empty and the first unbacked page. */
static void prefetch_run(struct mmu *mmu, const struct memslot *slot, uint64_t *leaf_table,
			 uint64_t gfn, int step, uint64_t limit, struct prefetch_count *c)
{
	const struct spte_format *f = mmu->root.fmt;

	for (uint64_t g = gfn + step; g != limit; g += step) {
		uint64_t *sptep = &leaf_table[tdp_index(g, 1)];
		paddr_t pa;

		c->visited++;
		if (tdp_iter_read(sptep) != SPTE_NONE)
			break;
		pa = backing_peek(&slot->backing, g - slot->base_gfn);
		if (!pa)
			break;
		c->pages++;
		if (!install(mmu, sptep, g, prefetch_leaf(f, pa, slot)))
			break;
		c->mapped++;
	}
}

void tdp_prefetch(struct mmu *mmu, struct memslot *slot, uint64_t gfn, uint64_t *leaf_table)
{
	int mode = __atomic_load_n(&mmu_config.prefetch, __ATOMIC_RELAXED);
	bool adaptive = __atomic_load_n(&mmu_config.prefetch_adaptive, __ATOMIC_RELAXED);
	uint64_t first = tdp_level_base(gfn, 2), end = first + SPTE_PER_TABLE;
	struct prefetch_count c = { 0 };

	if (mode == PREFETCH_OFF || (adaptive && !prefetch_due(&mmu->prefetch)))
		return;
	/* A range being invalidated keeps its backing until the invalidation
	 * ends, after its zap (which may have yielded half way): its pages still
	 * look backed but must not be mapped. tdp_map's own race check, under
	 * the same read lock, already rules this out for its callers; the rule
	 * is restated here because prefetch reaches pages the fault never
	 * looked up. */
	if (__atomic_load_n(&mmu->invalidate_in_progress, __ATOMIC_RELAXED))
		return;
	if (first < slot->base_gfn)
		first = slot->base_gfn;
	if (end > memslot_end(slot))
		end = memslot_end(slot);
	stat_add(&mmu->stats.pf_prefetch_called, 1);
	prefetch_run(mmu, slot, leaf_table, gfn, 1, end, &c);
	if (mode == PREFETCH_BOTH)
		prefetch_run(mmu, slot, leaf_table, gfn, -1, first - 1, &c);
	stat_add(&mmu->stats.spte_visited, (int64_t)c.visited);
	stat_add(&mmu->stats.pf_prefetch_pages, (int64_t)c.pages);
	stat_add(&mmu->stats.pf_prefetch_mapped, (int64_t)c.mapped);
	if (adaptive)
		prefetch_learn(&mmu->prefetch, c.mapped);
}
