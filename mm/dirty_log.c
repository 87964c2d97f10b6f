/* Dirty logging (see dirty_log.h): the bitmap, the fault-side marking, and
 * enable / disable / get-and-clear under the locks. */
#include "mm/dirty_log.h"
#include "mm/mmu_config.h"
#include "mm/mmu_internal.h"
#include "mm/split.h"
#include "lib/string.h"

int dirty_log_alloc(struct dirty_log *log, uint64_t npages)
{
	uint64_t bytes = dirty_log_words(npages) * 8;
	unsigned order = 0;

	while ((PAGE_SIZE << order) < bytes)
		order++;
	log->pa = frame_alloc_zeroed(order);
	if (!log->pa)
		return -1;
	log->order = order;
	log->bits = pa_to_va(log->pa);
	return 0;
}

void dirty_log_free(struct dirty_log *log)
{
	if (log->bits)
		frame_free(log->pa, log->order);
	*log = (struct dirty_log){ 0 };
}

bool dirty_log_mark(struct dirty_log *log, uint64_t index)
{
	uint64_t bit = 1ull << (index % 64);

	if (__atomic_load_n(&log->bits[index / 64], __ATOMIC_RELAXED) & bit)
		return false;
	return !(__atomic_fetch_or(&log->bits[index / 64], bit, __ATOMIC_RELAXED) & bit);
}

uint64_t dirty_log_take(struct dirty_log *log, uint64_t npages, uint64_t *out)
{
	uint64_t n = 0;

	for (uint64_t w = 0; w < dirty_log_words(npages); w++) {
		out[w] = __atomic_exchange_n(&log->bits[w], 0, __ATOMIC_RELAXED);
		n += (uint64_t)__builtin_popcountll(out[w]);
	}
	return n;
}

bool dirty_log_by_dirty_bit(const struct spte_format *f)
{
	return f->dirty != 0;
}

/* Whether the CPU may write through the leaf without faulting and without
 * setting a dirty bit first: then the page counts as written. */
static bool leaf_written(const struct spte_format *f, uint64_t spte)
{
	return (spte & f->writable) && (!dirty_log_by_dirty_bit(f) || (spte & f->dirty));
}

static void mark(struct mmu *mmu, struct memslot *slot, uint64_t gfn)
{
	if (dirty_log_mark(&slot->dirty_log, gfn - slot->base_gfn))
		stat_add(&mmu->stats.dirty_pages_logged, 1);
}

void dirty_log_leaf_installed(struct mmu *mmu, struct memslot *slot, uint64_t gfn,
			      uint64_t spte)
{
	if ((slot->flags & MEMSLOT_DIRTY_LOG) && leaf_written(mmu->root.fmt, spte))
		mark(mmu, slot, gfn);
}

void dirty_log_sprig_write(struct mmu *mmu, struct memslot *slot, uint64_t gfn)
{
	if (slot->flags & MEMSLOT_DIRTY_LOG)
		mark(mmu, slot, gfn);
}

void dirty_log_write_ended(struct mmu *mmu, uint64_t gfn, uint64_t spte, int level)
{
	const struct spte_format *f = mmu->root.fmt;
	struct memslot *slot;

	/* Huge leaves of a logged slot are never writable, and a split that
	 * removes a writable huge leaf before logging starts must not log it. */
	if (!__atomic_load_n(&mmu->dirty_log_slots, __ATOMIC_RELAXED) || level != 1 ||
	    !leaf_written(f, spte))
		return;
	slot = memslot_find(&mmu->slots, gfn);
	if (slot && (slot->flags & MEMSLOT_DIRTY_LOG))
		mark(mmu, slot, gfn);
}

const char *dirty_log_audit_leaf(const struct spte_format *f, struct memslot *slot,
				 uint64_t gfn, uint64_t spte, int level)
{
	if (!(slot->flags & MEMSLOT_DIRTY_LOG) || !(spte & f->writable))
		return NULL;
	if (level > 1)
		return "writable huge leaf on a dirty-logged slot";
	/* Without dirty bits, a writable leaf is one a logged write made so. */
	if (!dirty_log_by_dirty_bit(f) &&
	    !(slot->dirty_log.bits[(gfn - slot->base_gfn) / 64] & (1ull << ((gfn - slot->base_gfn) % 64))))
		return "writable leaf on a dirty-logged slot, page not in the log";
	return NULL;
}

/* Under the write lock, over the slot's leaves: huge ones are split (eager) or
 * write-protected; 4 KiB ones have their dirty bit cleared (dirty-bit logging)
 * or are write-protected. With harvest, a leaf found written is logged (reading
 * the log); without, it is not (enabling: writes before that do not count).
 * Returns whether a flush is needed. */
static bool protect_slot(struct mmu *mmu, struct memslot *slot, bool eager, bool harvest)
{
	const struct spte_format *f = mmu->root.fmt;
	bool by_dirty_bit = dirty_log_by_dirty_bit(f);
	bool flush = false;
	struct tdp_iter it;

	rwlock_assert_held_write(&mmu->lock);
	for_each_tdp_pte(it, &mmu->root, slot->base_gfn, memslot_end(slot)) {
		uint64_t old;

		/* Leaves made writable meanwhile are marked as they are (or set
		 * D afresh): they land in this log or the next. */
		if (tdp_cond_yield(mmu, &it, &flush))
			continue;
		if (!spte_present(f, it.old_spte) || !spte_is_leaf(f, it.old_spte, it.level))
			continue;
		if (it.level > 1 && eager) {
			/* Allocation may fail here (no vCPU cache at hand): the
			 * leaf is then write-protected instead, which is correct,
			 * only slower at the first write. */
			paddr_t table = tdp_table_alloc(mmu, it.level - 1, it.gfn);

			if (table && tdp_split_huge_spte(mmu, &it, table,
							 split_child_rights(f, it.old_spte,
									    it.level, slot),
							 &flush) == TDP_SET_DONE) {
				stat_add(&mmu->stats.huge_page_splits_eager, 1);
				continue;
			}
		}
		if (it.level == 1 && by_dirty_bit) {
			if (!(it.old_spte & f->dirty))
				continue;
			old = tdp_clear_spte_bits(mmu, &it, f->dirty);
		} else {
			if (!(it.old_spte & f->writable))
				continue;
			old = tdp_clear_spte_bits(mmu, &it, f->writable);
		}
		flush = true;
		if (harvest && it.level == 1 && leaf_written(f, old))
			mark(mmu, slot, it.gfn);
	}
	tdp_iter_account(mmu, &it);
	if (flush)
		stat_add(&mmu->stats.remote_tlb_flush_requests, 1);
	return flush;
}

int mmu_dirty_log_enable(struct mmu *mmu, uint64_t gpa, bool on)
{
	struct dirty_log log = { 0 };
	struct memslot *slot;
	int ret = 0;

	write_lock(&mmu->slots_lock);
	slot = memslot_at(&mmu->slots, gpa >> PAGE_SHIFT);
	if (!slot || (on && !(slot->flags & MEMSLOT_DIRTY_LOG) &&
		      dirty_log_alloc(&log, slot->npages))) {
		ret = -1;
	} else if (on != !!(slot->flags & MEMSLOT_DIRTY_LOG)) {
		mmu_write_lock(mmu);
		if (on) {
			slot->dirty_log = log;
			slot->flags |= MEMSLOT_DIRTY_LOG;
			mmu->dirty_log_slots++;
			if (protect_slot(mmu, slot, mmu_config.eager_page_split, false))
				mmu_flush_tlb(mmu);
		} else {
			log = slot->dirty_log;
			slot->dirty_log = (struct dirty_log){ 0 };
			slot->flags &= ~MEMSLOT_DIRTY_LOG;
			mmu->dirty_log_slots--;
		}
		write_unlock(&mmu->lock);
		if (!on)
			dirty_log_free(&log);
	}
	write_unlock(&mmu->slots_lock);
	return ret;
}

int64_t mmu_dirty_log_get(struct mmu *mmu, uint64_t gpa, uint64_t *out)
{
	struct memslot *slot;
	int64_t n = -1;

	read_lock(&mmu->slots_lock);
	slot = memslot_at(&mmu->slots, gpa >> PAGE_SHIFT);
	if (slot && (slot->flags & MEMSLOT_DIRTY_LOG)) {
		mmu_write_lock(mmu);
		/* Faults that get in while the walk yields retry: a leaf made
		 * writable behind the walk would have its page marked, then
		 * taken below, and stay writable outside the log. */
		invalidate_begin(mmu);
		if (protect_slot(mmu, slot, false, true))
			mmu_flush_tlb(mmu);
		n = (int64_t)dirty_log_take(&slot->dirty_log, slot->npages, out);
		invalidate_end(mmu);
		write_unlock(&mmu->lock);
	}
	read_unlock(&mmu->slots_lock);
	return n;
}
