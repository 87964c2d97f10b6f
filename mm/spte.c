/* SPTE changes and page-table frames.
 *
 * Every change of an SPTE goes through handle_changed_spte(), after the entry
 * has been written. It is the one place that knows what a change means:
 *  - the present count of the table holding the entry (struct frame pt.present),
 *  - the per-level leaf counts (pages_4k, pages_2m, pages_1g) and the
 *    leaves_installed / leaves_zapped work counters,
 *  - a present table entry that goes away: the subtree below is emptied through
 *    this same function, entry by entry, and its tables are freed after the next
 *    flush;
 *  - the hooks leaf_mapped() / leaf_unmapped(), where reverse maps (add/remove
 *    the SPTE for the backing frame), dirty tracking (a writable leaf that goes
 *    away marks its page dirty) and the leaf-empty hint (cleared when a leaf is
 *    installed in a 4 KiB table) attach. */
#include "mm/dirty_log.h"
#include "mm/leaf_hint.h"
#include "mm/mmu_internal.h"
#include "mm/rmap.h"
#include "lib/print.h"
#include "lib/string.h"

uint64_t mmu_warnings;

void mmu_warn(const char *file, int line, const char *cond, int level, uint64_t gfn,
	      uint64_t old_spte, uint64_t new_spte)
{
	__atomic_fetch_add(&mmu_warnings, 1, __ATOMIC_RELAXED);
	kprintf("mmu: WARNING %s:%d: %s: level %d gfn %#llx old %#llx new %#llx\n", file, line,
		cond, level, (unsigned long long)gfn, (unsigned long long)old_spte,
		(unsigned long long)new_spte);
}

#ifdef HOST_TEST
void (*spte_write_recorder)(uint64_t *sptep, uint64_t old_spte, uint64_t new_spte);
#endif

/* How spte_write stores. */
enum spte_write_mode {
	SPTE_CMPXCHG,    /* read lock: against the value the caller read */
	SPTE_XCHG,       /* write lock: the CPU may still set A/D bits */
	SPTE_CLEAR_BITS, /* write lock: atomic and; a D bit set meanwhile shows in the old value */
	SPTE_STORE,      /* a table no walker can reach */
};

struct spte_write {
	uint64_t *sptep;
	uint64_t *old_spte; /* in: expected (compare-exchange); out: the value replaced */
	uint64_t value;     /* the new entry; for SPTE_CLEAR_BITS, the bits to clear */
	enum spte_write_mode mode;
};

/* The only store to SPTE memory in the MMU (reads: tdp_iter_read), so that the
 * host tests can record every store and replay the intermediate states a
 * concurrent walker could see (tests/unit/test_replay.c). False only when a
 * compare-exchange fails; then nothing is stored. */
static bool spte_write(void *ctx)
{
	struct spte_write *w = ctx;
	uint64_t new_spte = w->value;

	switch (w->mode) {
	case SPTE_CMPXCHG:
		if (!__atomic_compare_exchange_n(w->sptep, w->old_spte, new_spte, false,
						 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			return false;
		break;
	case SPTE_XCHG:
		*w->old_spte = __atomic_exchange_n(w->sptep, new_spte, __ATOMIC_ACQ_REL);
		break;
	case SPTE_CLEAR_BITS:
		*w->old_spte = __atomic_fetch_and(w->sptep, ~w->value, __ATOMIC_ACQ_REL);
		new_spte = *w->old_spte & ~w->value;
		break;
	case SPTE_STORE:
		*w->old_spte = tdp_iter_read(w->sptep);
		*w->sptep = new_spte;
		break;
	}
#ifdef HOST_TEST
	if (spte_write_recorder)
		spte_write_recorder(w->sptep, *w->old_spte, new_spte);
#endif
	return true;
}

/* A table that can hold leaves is followed by a page of rmap back-references
 * (mm/rmap.h), so that removing an SPTE from a long rmap costs no scan. */
static unsigned table_order(int level)
{
	return level <= TDP_MAX_HUGE_LEVEL ? 1 : 0;
}

paddr_t tdp_table_frame_alloc(void)
{
	return frame_alloc_zeroed(table_order(TDP_MAX_HUGE_LEVEL));
}

void tdp_table_frame_free(paddr_t pa)
{
	frame_free(pa, table_order(TDP_MAX_HUGE_LEVEL));
}

void tdp_table_init(struct mmu *mmu, paddr_t pa, int level, uint64_t base_gfn)
{
	struct frame *f = frame_of(pa);

	/* Atomic: the allocator reads neighbours' flags when it frees theirs. */
	__atomic_fetch_or(&f->flags, FRAME_PAGETABLE, __ATOMIC_RELAXED);
	f->pt.present = 0;
	f->pt.level = (uint8_t)level;
	f->pt.hint = 0;
	f->pt.base_gfn_hi = (uint32_t)(base_gfn >> 9);
	/* Reclaim reaches leaves through rmaps, which may hold other VMs' SPTEs:
	 * the page after the entries (table_order 1) names their MMU. */
	if (level <= TDP_MAX_HUGE_LEVEL)
		frame_of(pa + PAGE_SIZE)->owner = mmu;
	stat_add(&mmu->stats.mmu_tables, 1);
	stat_add(&mmu->stats.tables_allocated, 1);
}

paddr_t tdp_table_alloc(struct mmu *mmu, int level, uint64_t base_gfn)
{
	paddr_t pa = frame_alloc_zeroed(table_order(level));

	if (pa)
		tdp_table_init(mmu, pa, level, base_gfn);
	return pa;
}

void tdp_table_free_unlinked(struct mmu *mmu, paddr_t table)
{
	struct frame *f = frame_of(table);

	__atomic_fetch_and(&f->flags, (uint16_t)~FRAME_PAGETABLE, __ATOMIC_RELAXED);
	frame_free(table, table_order(f->pt.level));
	stat_add(&mmu->stats.mmu_tables, -1);
	stat_add(&mmu->stats.tables_freed, 1);
}

/* Unlinked tables wait on a list threaded through their first entry: their
 * contents are dead once the subtree has been emptied, and the link, a
 * page-aligned address, is not present to a walker that still caches the
 * table until the flush. */
static void defer_table_free(struct mmu *mmu, paddr_t table)
{
	uint64_t old;

	spte_write(&(struct spte_write){ pa_to_va(table), &old, mmu->tables_to_free, SPTE_STORE });
	mmu->tables_to_free = table;
}

void tdp_free_flushed_tables(struct mmu *mmu)
{
	while (mmu->tables_to_free) {
		paddr_t table = mmu->tables_to_free;

		mmu->tables_to_free = tdp_iter_read(pa_to_va(table));
		tdp_table_free_unlinked(mmu, table);
	}
}

static void handle_changed_spte(struct mmu *mmu, uint64_t *sptep, uint64_t gfn, int level,
				uint64_t old_spte, uint64_t new_spte, bool shared, int rmap_size);

/* Every present leaf is in its frame's rmap: the setter put it there as it
 * published it (rmap_size: the rmap's size then); it leaves only here. */
static void leaf_mapped(struct mmu *mmu, uint64_t *sptep, uint64_t spte, int level, int rmap_size)
{
	if (!MMU_WARN_ON(rmap_size <= 0, level, sptep_gfn(sptep), 0, spte))
		stat_max(&mmu->stats.max_mmu_rmap_size, (uint64_t)rmap_size);
	stat_add(&mmu->stats.pages[level - 1], 1);
	stat_add(&mmu->stats.leaves_installed, 1);
}

static void leaf_unmapped(struct mmu *mmu, uint64_t *sptep, uint64_t spte, int level)
{
	if (!rmap_remove(mmu_rmap_head(mmu->root.fmt, spte), sptep))
		stat_add(&mmu->stats.rmap_failures, 1);
	/* Only prefetch installs leaves without the accessed bit, and the walker
	 * sets it on first use: a leaf leaving without it was prefetched for
	 * nothing. */
	if (mmu->root.fmt->accessed && !(spte & mmu->root.fmt->accessed))
		stat_add(&mmu->stats.pf_prefetch_unused, 1);
	stat_add(&mmu->stats.pages[level - 1], -1);
	stat_add(&mmu->stats.leaves_zapped, 1);
}

/* A table entry was removed: empty the child table through the choke point
 * (so that every leaf below is accounted and unhooked), then queue the table.
 * Only under the write lock: a reader could still be walking the table. */
static void handle_removed_table(struct mmu *mmu, paddr_t table, int level, uint64_t base_gfn)
{
	uint64_t *pt = pa_to_va(table);

	for (unsigned i = 0; i < SPTE_PER_TABLE; i++) {
		uint64_t old = tdp_iter_read(&pt[i]);

		if (old == SPTE_NONE)
			continue;
		spte_write(&(struct spte_write){ &pt[i], &old, SPTE_NONE, SPTE_XCHG });
		handle_changed_spte(mmu, &pt[i], base_gfn + i * tdp_level_pages(level), level, old,
				    SPTE_NONE, false, 0);
	}
	stat_add(&mmu->stats.spte_visited, SPTE_PER_TABLE);
	defer_table_free(mmu, table);
}

/* Whether new_spte is a leaf that enters an rmap: a leaf where there was none
 * or another frame's. */
static bool leaf_enters_rmap(const struct spte_format *f, uint64_t old_spte, uint64_t new_spte,
			     int level)
{
	if (!spte_present(f, new_spte) || !spte_is_leaf(f, new_spte, level))
		return false;
	return !spte_present(f, old_spte) || !spte_is_leaf(f, old_spte, level) ||
	       spte_addr(f, old_spte) != spte_addr(f, new_spte);
}

static void handle_changed_spte(struct mmu *mmu, uint64_t *sptep, uint64_t gfn, int level,
				uint64_t old_spte, uint64_t new_spte, bool shared, int rmap_size)
{
	const struct spte_format *f = mmu->root.fmt;
	bool was_present = spte_present(f, old_spte), is_present = spte_present(f, new_spte);
	bool was_leaf = was_present && spte_is_leaf(f, old_spte, level);
	bool is_leaf = is_present && spte_is_leaf(f, new_spte, level);

	if (old_spte == new_spte)
		return;
	/* The next clone must write-protect this leaf (mm/cow.c). Read first:
	 * the flag is clear in most VMs, and faulting vCPUs should not all
	 * write one line at every writable leaf. */
	if (is_leaf && (level > 1 || (new_spte & f->writable)) &&
	    __atomic_load_n(&mmu->share.write_protected, __ATOMIC_RELAXED))
		__atomic_store_n(&mmu->share.write_protected, false, __ATOMIC_RELAXED);
	if (was_present != is_present)
		__atomic_fetch_add(&sptep_to_table(sptep)->pt.present, is_present ? 1 : -1,
				   __ATOMIC_RELAXED);
	/* Same frame, same kind, same level: only rights or A/D bits changed. */
	if (was_present && is_present && was_leaf == is_leaf &&
	    spte_addr(f, old_spte) == spte_addr(f, new_spte))
		return;
	if (was_leaf) {
		leaf_unmapped(mmu, sptep, old_spte, level);
		dirty_log_write_ended(mmu, gfn, old_spte, level);
	}
	if (is_leaf) {
		leaf_mapped(mmu, sptep, new_spte, level, rmap_size);
		/* Still inside the installer's lock: see leaf_hint.h. */
		if (level == 1)
			leaf_hint_clear(sptep_to_table(sptep));
	}
	if (was_present && !was_leaf) {
		/* Faults never remove tables: a reader may be inside this one.
		 * Should it happen, the subtree leaks rather than be freed under
		 * the reader. */
		if (MMU_WARN_ON(shared, level, gfn, old_spte, new_spte))
			return;
		handle_removed_table(mmu, spte_addr(f, old_spte), level - 1, gfn);
	}
}

/* The one setter behind every form: write the entry (joined to the rmap add
 * when a leaf enters one, so that a failed add writes nothing), then the
 * choke point. */
static enum tdp_set_result set_spte(struct mmu *mmu, uint64_t *sptep, uint64_t *old_spte,
				    uint64_t new_spte, uint64_t gfn, int level,
				    enum spte_write_mode mode)
{
	const struct spte_format *f = mmu->root.fmt;
	struct spte_write w = { sptep, old_spte, new_spte, mode };
	int rmap_size = 0;

	if (mode == SPTE_CMPXCHG)
		rwlock_assert_held_read(&mmu->lock);
	else if (mode == SPTE_XCHG)
		rwlock_assert_held_write(&mmu->lock);
	if (leaf_enters_rmap(f, *old_spte, new_spte, level)) {
		/* A leaf never replaces another frame's leaf in place: the new
		 * one's rmap entry would take the old one's back-reference. */
		MMU_WARN_ON(spte_present(f, *old_spte), level, gfn, *old_spte, new_spte);
		rmap_size = rmap_add_publish(mmu_rmap_head(f, new_spte), sptep, spte_write, &w);
		if (!rmap_size) {
			stat_add(&mmu->stats.rmap_failures, 1);
			return TDP_SET_NO_MEMORY;
		}
		if (rmap_size < 0)
			return TDP_SET_RACED;
	} else if (!spte_write(&w)) {
		return TDP_SET_RACED;
	}
	handle_changed_spte(mmu, sptep, gfn, level, *old_spte, new_spte, mode == SPTE_CMPXCHG,
			    rmap_size);
	*old_spte = new_spte;
	return TDP_SET_DONE;
}

enum tdp_set_result tdp_set_spte_atomic_at(struct mmu *mmu, uint64_t *sptep, uint64_t *old_spte,
					   uint64_t new_spte, uint64_t gfn, int level)
{
	return set_spte(mmu, sptep, old_spte, new_spte, gfn, level, SPTE_CMPXCHG);
}

enum tdp_set_result tdp_set_spte_at(struct mmu *mmu, uint64_t *sptep, uint64_t old_spte,
				    uint64_t new_spte, uint64_t gfn, int level)
{
	return set_spte(mmu, sptep, &old_spte, new_spte, gfn, level, SPTE_XCHG);
}

enum tdp_set_result tdp_set_spte_atomic(struct mmu *mmu, struct tdp_iter *it, uint64_t new_spte)
{
	return set_spte(mmu, it->sptep, &it->old_spte, new_spte, it->gfn, it->level, SPTE_CMPXCHG);
}

enum tdp_set_result tdp_set_spte(struct mmu *mmu, struct tdp_iter *it, uint64_t new_spte)
{
	return set_spte(mmu, it->sptep, &it->old_spte, new_spte, it->gfn, it->level, SPTE_XCHG);
}

enum tdp_set_result tdp_set_unlinked_spte(struct mmu *mmu, uint64_t *sptep, uint64_t gfn,
					  int level, uint64_t new_spte)
{
	uint64_t old = tdp_iter_read(sptep);

	return set_spte(mmu, sptep, &old, new_spte, gfn, level, SPTE_STORE);
}

uint64_t tdp_clear_spte_bits(struct mmu *mmu, struct tdp_iter *it, uint64_t bits)
{
	uint64_t old;

	rwlock_assert_held_write(&mmu->lock);
	spte_write(&(struct spte_write){ it->sptep, &old, bits, SPTE_CLEAR_BITS });
	/* Bits of a leaf only: same frame, so no rmap work. */
	handle_changed_spte(mmu, it->sptep, it->gfn, it->level, old, old & ~bits, false, 0);
	it->old_spte = old & ~bits;
	return old;
}

void tdp_iter_account(struct mmu *mmu, const struct tdp_iter *it)
{
	stat_add(&mmu->stats.spte_visited, tdp_iter_visited(it));
	stat_add(&mmu->stats.tables_descended, it->descended);
}
