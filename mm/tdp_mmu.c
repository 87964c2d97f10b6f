/* The TDP MMU's walks: the fault path, zaps, and the software translation. */
#include "mm/leaf_hint.h"
#include "mm/mmu_config.h"
#include "mm/mmu_internal.h"
#include "mm/split.h"
#include "mm/tdp_mmu.h"

/* Invalidation check under the read lock (protocol in mmu.h). */
static bool invalidation_raced(struct mmu *mmu, uint64_t seq)
{
	return __atomic_load_n(&mmu->invalidate_in_progress, __ATOMIC_RELAXED) ||
	       __atomic_load_n(&mmu->invalidate_seq, __ATOMIC_RELAXED) != seq;
}

/* What a fault maps: the frame, the slot, the access, and the largest level. */
struct tdp_fault {
	uint64_t gfn;
	paddr_t pa;
	struct memslot *slot;
	unsigned access;
	int goal;
};

/* The leaf a fault installs for its frame at level (pa: the leaf's first
 * frame). Huge leaves are non-executable under the NX-huge-page policy. On a
 * dirty-logged slot a 4 KiB leaf is writable only for a write, which marks the
 * page, or, with dirty-bit logging, writable with D clear so that the CPU's
 * first write sets it. A frame shared with a clone is mapped read-only: its
 * first write faults and copies it (mmu_cow_break). */
static uint64_t fault_leaf(const struct spte_format *f, const struct tdp_fault *fault, paddr_t pa,
			   int level)
{
	unsigned rights = backing_frame_rights(pa, memslot_rights(fault->slot));

	if (level > 1 && nx_huge_pages_active())
		rights &= ~TDP_ACC_EXEC;
	if ((fault->slot->flags & MEMSLOT_DIRTY_LOG) && !(fault->access & TDP_ACC_WRITE)) {
		if (dirty_log_by_dirty_bit(f))
			return spte_make_leaf(f, pa, level, rights) & ~f->dirty;
		rights &= ~TDP_ACC_WRITE;
	}
	return spte_make_leaf(f, pa, level, rights);
}

/* A huge leaf at it lacks the access and the fault wants a smaller mapping:
 * split it into equivalent children (split.h), or, with split_on_fault=off,
 * zap it and flush, so that the walk links a table in its place and every
 * other page of the region refaults (the behaviour before splitting).
 * TDP_SET_RACED when the entry changed meanwhile (retry), TDP_SET_NO_MEMORY
 * when a child's rmap entry found no memory (nothing changed). */
static enum tdp_set_result replace_huge_leaf(struct mmu *mmu, struct tdp_table_cache *cache,
					     struct tdp_iter *it, const struct tdp_fault *fault)
{
	const struct spte_format *f = mmu->root.fmt;
	enum tdp_set_result set;
	paddr_t table;

	if (!mmu_config.split_on_fault) {
		set = tdp_set_spte_atomic(mmu, it, SPTE_NONE);
		if (set != TDP_SET_DONE)
			return set;
		stat_add(&mmu->stats.remote_tlb_flush_requests, 1);
		tdp_flush_tlb(mmu);
		return TDP_SET_DONE;
	}
	table = tdp_table_take(mmu, cache, it->level - 1, it->gfn);
	if (!table)
		return TDP_SET_RACED; /* as before: the fault retries */
	set = tdp_split_huge_spte_atomic(mmu, it, table,
					 split_child_rights(f, it->old_spte, it->level, fault->slot));
	if (set != TDP_SET_DONE)
		return set;
	stat_add(&mmu->stats.huge_page_splits_fault, 1);
	if (fault->access & TDP_ACC_EXEC)
		stat_add(&mmu->stats.nx_lpage_splits, 1);
	return TDP_SET_DONE;
}

/* The fault's result for a setter's that did not install. */
static enum tdp_fault_result set_failed(enum tdp_set_result set)
{
	return set == TDP_SET_NO_MEMORY ? TDP_NO_MEMORY : TDP_RETRY;
}

/* Walk to the goal level, linking missing tables, and install the leaf. Where a
 * table already sits at the goal level (the range was mapped small before), the
 * leaf goes below it: a huge leaf never replaces a table under the read lock.
 * A huge leaf above the goal that lacks the access gives way (replace_huge_leaf).
 * A present leaf that lacks the access (write-protected for dirty logging,
 * prefetched without write) gets its rights in place: same frame, more rights,
 * so no flush. A new 4 KiB leaf reports its table in *leaf_table (else NULL),
 * for prefetch. */
static enum tdp_fault_result map_locked(struct mmu *mmu, struct tdp_table_cache *cache,
					struct tdp_fault *fault, uint64_t **leaf_table)
{
	const struct spte_format *f = mmu->root.fmt;
	enum tdp_fault_result res = TDP_RETRY;
	uint64_t gfn = fault->gfn;
	bool replaced = false;
	enum tdp_set_result set;
	struct tdp_iter it;

	rwlock_assert_held_read(&mmu->lock);
	for_each_tdp_pte_min_level(it, &mmu->root, fault->goal, gfn, gfn + 1) {
		if (spte_present(f, it.old_spte) && spte_is_leaf(f, it.old_spte, it.level)) {
			uint64_t leaf;

			if ((spte_rights(f, it.old_spte) & fault->access) == fault->access) {
				res = replaced ? TDP_FIXED : TDP_SPURIOUS;
				break;
			}
			if (it.level > fault->goal) {
				set = replace_huge_leaf(mmu, cache, &it, fault);
				if (set != TDP_SET_DONE) {
					res = set_failed(set);
					break;
				}
				replaced = true;
				if (spte_present(f, it.old_spte))
					continue; /* split: the walk descends into the children */
			} else {
				leaf = fault_leaf(f, fault, spte_addr(f, it.old_spte), it.level);
				set = tdp_set_spte_atomic(mmu, &it, leaf);
				if (set == TDP_SET_DONE) {
					dirty_log_leaf_installed(mmu, fault->slot, it.gfn, leaf);
					res = TDP_FIXED;
				} else {
					res = set_failed(set);
				}
				break;
			}
		}
		if (it.level == fault->goal && spte_present(f, it.old_spte)) {
			it.min_level = --fault->goal;
			continue;
		}
		if (it.level == fault->goal) {
			paddr_t base = fault->pa - ((gfn - tdp_level_base(gfn, it.level)) << PAGE_SHIFT);
			uint64_t leaf = fault_leaf(f, fault, base, it.level);

			set = tdp_set_spte_atomic(mmu, &it, leaf);
			if (set == TDP_SET_DONE) {
				dirty_log_leaf_installed(mmu, fault->slot, it.gfn, leaf);
				res = TDP_FIXED;
				if (it.level == 1)
					*leaf_table = it.tables[1];
			} else {
				res = set_failed(set);
			}
			break;
		}
		if (!spte_present(f, it.old_spte)) {
			paddr_t child = tdp_table_take(mmu, cache, it.level - 1, it.gfn);

			if (!child) {
				res = TDP_NO_MEMORY;
				break;
			}
			if (tdp_set_spte_atomic(mmu, &it, spte_make_table(f, child)) != TDP_SET_DONE) {
				tdp_table_free_unlinked(mmu, child);
				break;
			}
		}
	}
	tdp_iter_account(mmu, &it);
	return res;
}

static void count_fault(struct mmu *mmu, enum tdp_fault_result res)
{
	static const size_t counter[] = {
		[TDP_FIXED] = offsetof(struct mmu_stats, pf_fixed),
		[TDP_SPURIOUS] = offsetof(struct mmu_stats, pf_spurious),
		[TDP_RETRY] = offsetof(struct mmu_stats, pf_retry),
		[TDP_NO_SLOT] = offsetof(struct mmu_stats, pf_no_slot),
		[TDP_PERMISSION] = offsetof(struct mmu_stats, pf_permission),
		[TDP_NO_MEMORY] = offsetof(struct mmu_stats, pf_no_memory),
	};

	stat_add((uint64_t *)((char *)&mmu->stats + counter[res]), 1);
}

/* The largest level a fault may map: dirty logging maps new pages at 4 KiB,
 * and so does an execute fault while huge leaves must be non-executable;
 * never above what the CPU's tables take. */
static int fault_goal(const struct mmu *mmu, const struct memslot *slot, uint64_t gfn,
		      unsigned access)
{
	int level;

	if ((slot->flags & MEMSLOT_DIRTY_LOG) ||
	    ((access & TDP_ACC_EXEC) && nx_huge_pages_active()))
		return 1;
	level = memslot_max_level(slot, gfn);
	return level < mmu->max_leaf_level ? level : mmu->max_leaf_level;
}

enum tdp_fault_result tdp_map(struct mmu *mmu, uint64_t gpa, unsigned access)
{
	return tdp_map_cached(mmu, NULL, gpa, access);
}

enum tdp_fault_result tdp_map_cached(struct mmu *mmu, struct tdp_table_cache *cache,
				     uint64_t gpa, unsigned access)
{
	struct tdp_fault fault = { .gfn = gpa >> PAGE_SHIFT, .access = access };
	uint64_t gfn = fault.gfn;
	enum tdp_fault_result res;
	uint64_t *leaf_table = NULL;
	struct memslot *slot;
	uint64_t seq;

	stat_add(&mmu->stats.pf_taken, 1);
	/* Nothing under the locks may fail for want of a table. */
	if (cache && tdp_table_cache_topup(cache)) {
		count_fault(mmu, TDP_NO_MEMORY);
		return TDP_NO_MEMORY;
	}
	/* Read before the backing: an invalidation that starts later moves it. */
	seq = __atomic_load_n(&mmu->invalidate_seq, __ATOMIC_ACQUIRE);
	read_lock(&mmu->slots_lock);
	slot = memslot_find(&mmu->slots, gfn);
	if (!slot) {
		res = TDP_NO_SLOT;
	} else if (access & ~memslot_rights(slot)) {
		res = TDP_PERMISSION;
	} else if (!(fault.pa = backing_get(&slot->backing, gfn - slot->base_gfn))) {
		res = TDP_NO_MEMORY;
	} else {
		bool copy_on_write = false;

		fault.slot = slot;
		fault.goal = fault_goal(mmu, slot, gfn, access);
		latency_record(&mmu->stats.fault_wait, mmu_read_lock(mmu));
		/* Past the invalidation check no discard can free the frame, so
		 * only then is its metadata read. */
		if (invalidation_raced(mmu, seq))
			res = TDP_RETRY;
		else if ((access & TDP_ACC_WRITE) && backing_frame_shared(fault.pa))
			copy_on_write = true;
		else
			res = map_locked(mmu, cache, &fault, &leaf_table);
		if (leaf_table)
			tdp_prefetch(mmu, slot, gfn, leaf_table);
		read_unlock(&mmu->lock);
		if (copy_on_write)
			res = mmu_cow_break(mmu, slot, gfn); /* the retry maps the copy */
	}
	read_unlock(&mmu->slots_lock);
	count_fault(mmu, res);
	return res;
}

bool tdp_cond_yield(struct mmu *mmu, struct tdp_iter *it, bool *flush)
{
	/* Published for the host tests' latency check (a relaxed store to a
	 * line only this walk writes): the walk's visits and those of the
	 * tables it removed (spte_visited; it takes the walk's own visits only
	 * when the walk ends, so the sum never goes back). */
	__atomic_store_n(&mmu->walk_visits,
			 tdp_iter_visited(it) +
				 __atomic_load_n(&mmu->stats.spte_visited, __ATOMIC_RELAXED),
			 __ATOMIC_RELAXED);
	if (!tdp_iter_may_yield(it) || !mmu_cond_yield(mmu, flush))
		return false;
	it->yielded = true;
	return true;
}

bool mmu_cond_yield(struct mmu *mmu, bool *flush)
{
	uint64_t handed_over;

	if (!rwlock_contended(&mmu->lock))
		return false;
	/* After the unlock others see the changed entries; a zapped table may
	 * be freed only after the flush. */
	if (*flush) {
		stat_add(&mmu->stats.remote_tlb_flush_requests, 1);
		mmu_flush_tlb(mmu);
		*flush = false;
	}
	handed_over = latency_clock();
	write_unlock_handoff(&mmu->lock);
	mmu->write_yield_cycles += latency_clock() - handed_over;
	return true;
}

/* The walk has left the leaf table it went through whole: mark it if empty. */
static void leaf_hint_leave(struct frame *walked, struct zap_work *work)
{
	if (walked && leaf_hint_set_if_empty(walked))
		work->hints_set++;
}

/* A present level-2 table entry whose 2 MiB region the zap covers whole. The
 * walk has left the previous such table. Returns the table the walk now goes
 * through, or NULL when its hint says there is nothing in it. */
static struct frame *leaf_hint_enter(struct tdp_iter *it, struct frame *walked,
				     struct zap_work *work)
{
	struct frame *table = frame_of(spte_addr(it->fmt, it->old_spte));

	leaf_hint_leave(walked, work);
	work->hint_checks++;
	if (!leaf_hint_is_set(table))
		return table;
	tdp_iter_skip_children(it);
	work->skips++;
	return NULL;
}

/* Whether the entry's whole range lies in [start, end). */
static bool covered(const struct tdp_iter *it, uint64_t start, uint64_t end)
{
	return it->gfn >= start && it->gfn + tdp_level_pages(it->level) <= end;
}

/* Free the tables that level's entries point to where [start, end) covers
 * them whole. The pass below level has emptied them, so each removal reads
 * one table of 512 entries, between two yield points. */
static bool free_tables_at(struct mmu *mmu, uint64_t start, uint64_t end, int level,
			   bool can_yield)
{
	const struct spte_format *f = mmu->root.fmt;
	bool flush = false;
	struct tdp_iter it;

	for_each_tdp_pte_min_level(it, &mmu->root, level, start, end) {
		if (can_yield && tdp_cond_yield(mmu, &it, &flush))
			continue;
		if (it.level == level && spte_present(f, it.old_spte) && covered(&it, start, end)) {
			tdp_set_spte(mmu, &it, SPTE_NONE);
			flush = true;
		}
	}
	tdp_iter_account(mmu, &it);
	return flush;
}

bool tdp_zap(struct mmu *mmu, uint64_t start, uint64_t end, bool free_tables, bool can_yield)
{
	const struct spte_format *f = mmu->root.fmt;
	/* Decided once: zaps below 2 MiB, and those that free tables anyway,
	 * never look at a hint. */
	bool use_hint = !free_tables && leaf_hint_applies(start, end);
	struct zap_work work = { .start_cycles = latency_clock() };
	struct frame *walked = NULL; /* the leaf table being zapped whole */
	bool flush = false;
	struct tdp_iter it;

	rwlock_assert_held_write(&mmu->lock);
	for_each_tdp_pte(it, &mmu->root, start, end) {
		/* Marking needs the write lock (leaf_hint.h): the table is left
		 * before a yield, and the restart passes the level-2 entry again
		 * and decides anew. */
		if (can_yield && tdp_iter_may_yield(&it) && rwlock_contended(&mmu->lock)) {
			leaf_hint_leave(walked, &work);
			walked = NULL;
		}
		if (can_yield && tdp_cond_yield(mmu, &it, &flush)) {
			stat_add(&mmu->stats.zap_yields, 1);
			continue;
		}
		if (!spte_present(f, it.old_spte))
			continue;
		/* Tables go bottom up, each removal a bounded step: leaf
		 * tables here, the levels above in the passes below. */
		if (spte_is_leaf(f, it.old_spte, it.level) ||
		    (free_tables && it.level == 2 && covered(&it, start, end))) {
			tdp_set_spte(mmu, &it, SPTE_NONE);
			flush = true;
		} else if (use_hint && it.level == 2 && covered(&it, start, end)) {
			walked = leaf_hint_enter(&it, walked, &work);
		}
	}
	leaf_hint_leave(walked, &work);
	tdp_iter_account(mmu, &it);
	if (free_tables) {
		for (int level = 3; level <= TDP_ROOT_LEVEL; level++)
			flush |= free_tables_at(mmu, start, end, level, can_yield);
	} else {
		zap_stats_record(&mmu->zap_stats, &work, tdp_iter_visited(&it), it.visited[1]);
	}
	if (flush)
		stat_add(&mmu->stats.remote_tlb_flush_requests, 1);
	return flush;
}

bool tdp_zap_range(struct mmu *mmu, uint64_t start, uint64_t end)
{
	return tdp_zap(mmu, start, end, false, true);
}

bool tdp_translate(struct mmu *mmu, uint64_t gpa, paddr_t *hpa, int *level, unsigned *rights)
{
	const struct spte_format *f = mmu->root.fmt;
	uint64_t gfn = gpa >> PAGE_SHIFT;
	struct tdp_iter it;

	rwlock_assert_held(&mmu->lock);
	for_each_tdp_pte(it, &mmu->root, gfn, gfn + 1) {
		if (!spte_present(f, it.old_spte))
			return false;
		if (spte_is_leaf(f, it.old_spte, it.level)) {
			*hpa = spte_addr(f, it.old_spte) +
			       ((gpa - (tdp_level_base(gfn, it.level) << PAGE_SHIFT)));
			*level = it.level;
			*rights = spte_rights(f, it.old_spte);
			return true;
		}
	}
	return false;
}

int tdp_get_walk(struct mmu *mmu, uint64_t gpa, uint64_t sptes[TDP_ROOT_LEVEL + 1])
{
	uint64_t gfn = gpa >> PAGE_SHIFT;
	struct tdp_iter it;
	int last = TDP_ROOT_LEVEL;

	mmu_read_lock(mmu);
	for_each_tdp_pte(it, &mmu->root, gfn, gfn + 1) {
		last = it.level;
		sptes[last] = it.old_spte;
	}
	read_unlock(&mmu->lock);
	return last;
}
