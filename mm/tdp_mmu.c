/* The TDP MMU's walks: the fault path, zaps, and the software translation. */
#include "mm/mmu_internal.h"

/* Invalidation check under the read lock (protocol in mmu.h). */
static bool invalidation_raced(struct mmu *mmu, uint64_t seq)
{
	return __atomic_load_n(&mmu->invalidate_in_progress, __ATOMIC_RELAXED) ||
	       __atomic_load_n(&mmu->invalidate_seq, __ATOMIC_RELAXED) != seq;
}

/* Walk to the goal level, linking missing tables, and install the leaf. Where a
 * table already sits at the goal level (the range was mapped small before), the
 * leaf goes below it: a huge leaf never replaces a table under the read lock. */
static enum tdp_fault_result map_locked(struct mmu *mmu, uint64_t gfn, paddr_t pa, int goal,
					unsigned rights, unsigned access)
{
	const struct spte_format *f = mmu->root.fmt;
	enum tdp_fault_result res = TDP_RETRY;
	struct tdp_iter it;

	for_each_tdp_pte_min_level(it, &mmu->root, goal, gfn, gfn + 1) {
		if (spte_present(f, it.old_spte) && spte_is_leaf(f, it.old_spte, it.level)) {
			res = (spte_rights(f, it.old_spte) & access) == access ? TDP_SPURIOUS
									       : TDP_PERMISSION;
			break;
		}
		if (it.level == goal && spte_present(f, it.old_spte)) {
			it.min_level = --goal;
			continue;
		}
		if (it.level == goal) {
			paddr_t base = pa - ((gfn - tdp_level_base(gfn, goal)) << PAGE_SHIFT);

			res = tdp_set_spte_atomic(mmu, &it, spte_make_leaf(f, base, goal, rights))
				      ? TDP_FIXED
				      : TDP_RETRY;
			break;
		}
		if (!spte_present(f, it.old_spte)) {
			paddr_t child = tdp_table_alloc(mmu, it.level - 1, it.gfn);

			if (!child) {
				res = TDP_NO_MEMORY;
				break;
			}
			if (!tdp_set_spte_atomic(mmu, &it, spte_make_table(f, child))) {
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

enum tdp_fault_result tdp_map(struct mmu *mmu, uint64_t gpa, unsigned access)
{
	uint64_t gfn = gpa >> PAGE_SHIFT;
	enum tdp_fault_result res;
	struct memslot *slot;
	uint64_t seq;
	paddr_t pa;
	int level;

	stat_add(&mmu->stats.pf_taken, 1);
	/* Read before the backing: an invalidation that starts later moves it. */
	seq = __atomic_load_n(&mmu->invalidate_seq, __ATOMIC_ACQUIRE);
	read_lock(&mmu->slots_lock);
	slot = memslot_find(&mmu->slots, gfn);
	if (!slot) {
		res = TDP_NO_SLOT;
	} else if (access & ~memslot_rights(slot)) {
		res = TDP_PERMISSION;
	} else if (!(pa = backing_get(&slot->backing, gfn - slot->base_gfn))) {
		res = TDP_NO_MEMORY;
	} else {
		level = memslot_max_level(slot, gfn);
		read_lock(&mmu->lock);
		if (invalidation_raced(mmu, seq))
			res = TDP_RETRY;
		else
			res = map_locked(mmu, gfn, pa, level, memslot_rights(slot), access);
		read_unlock(&mmu->lock);
	}
	read_unlock(&mmu->slots_lock);
	count_fault(mmu, res);
	return res;
}

/* At a yield point: let waiters in. A pending flush goes first, since after
 * the unlock others see the zapped entries as gone. */
static void zap_yield(struct mmu *mmu, struct tdp_iter *it, bool *flush)
{
	if (*flush) {
		stat_add(&mmu->stats.remote_tlb_flush_requests, 1);
		mmu_flush_tlb(mmu);
	}
	*flush = false;
	stat_add(&mmu->stats.zap_yields, 1);
	write_unlock(&mmu->lock);
	cpu_relax();
	write_lock(&mmu->lock);
	tdp_iter_restart(it);
}

bool tdp_zap(struct mmu *mmu, uint64_t start, uint64_t end, bool free_tables, bool can_yield)
{
	const struct spte_format *f = mmu->root.fmt;
	bool flush = false;
	struct tdp_iter it;

	for_each_tdp_pte(it, &mmu->root, start, end) {
		if (can_yield && tdp_iter_may_yield(&it) && rwlock_contended(&mmu->lock)) {
			zap_yield(mmu, &it, &flush);
			if (!it.valid)
				break;
		}
		if (!spte_present(f, it.old_spte))
			continue;
		if (spte_is_leaf(f, it.old_spte, it.level) ||
		    (free_tables && it.gfn >= start &&
		     it.gfn + tdp_level_pages(it.level) <= end)) {
			tdp_set_spte(mmu, &it, SPTE_NONE);
			flush = true;
		}
	}
	tdp_iter_account(mmu, &it);
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
