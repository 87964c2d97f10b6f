/* Page migration (mmu_migrate_page in mmu.h). Break before make: the old leaf
 * goes and every TLB is flushed before the copy is made, so that a vCPU
 * writing the page meanwhile faults and waits (its fault retries: the
 * invalidation) instead of writing a frame already copied; the new leaf is
 * installed where none is (no flush), and the old frame is freed only after
 * the flush, when no CPU can reach it. */
#include "mm/dirty_log.h"
#include "mm/mmu_internal.h"
#include "mm/migrate.h"
#include "lib/string.h"

/* Remove gfn's leaf, if any: its value, or SPTE_NONE. */
static uint64_t unmap_page(struct mmu *mmu, uint64_t gfn)
{
	const struct spte_format *f = mmu->root.fmt;
	uint64_t old = SPTE_NONE;
	struct tdp_iter it;

	for_each_tdp_pte(it, &mmu->root, gfn, gfn + 1) {
		if (!spte_present(f, it.old_spte) || !spte_is_leaf(f, it.old_spte, it.level))
			continue;
		/* Backed by a single frame, so never mapped huge. */
		if (MMU_WARN_ON(it.level != 1, it.level, it.gfn, it.old_spte, SPTE_NONE))
			break;
		old = it.old_spte;
		tdp_set_spte(mmu, &it, SPTE_NONE);
	}
	tdp_iter_account(mmu, &it);
	return old;
}

/* Install the copy's leaf where the old one was (its rights and A/D bits).
 * Without an rmap descriptor the page stays unmapped and refaults. */
static void map_copy(struct mmu *mmu, uint64_t gfn, uint64_t old_leaf, paddr_t copy)
{
	const struct spte_format *f = mmu->root.fmt;
	struct tdp_iter it;

	for_each_tdp_pte(it, &mmu->root, gfn, gfn + 1)
		if (it.level == 1 && !spte_present(f, it.old_spte))
			tdp_set_spte(mmu, &it, (old_leaf & ~f->addr) | (copy & f->addr));
	tdp_iter_account(mmu, &it);
}

static enum mmu_migrate_result refusal(struct mmu *mmu, struct memslot *s, uint64_t gfn)
{
	uint64_t word;

	if (!s)
		return MIGRATE_NO_SLOT;
	word = __atomic_load_n(&s->backing.frames[gfn - s->base_gfn], __ATOMIC_ACQUIRE);
	if (!(word & ~BACKING_ORDER_MASK))
		return MIGRATE_NOT_BACKED;
	if (mmu_slot_aliased(mmu, s))
		return MIGRATE_SHARED;
	if (word & BACKING_ORDER_MASK)
		return MIGRATE_BLOCK;
	if (backing_frame_shared(word))
		return MIGRATE_SHARED;
	return MIGRATE_DONE;
}

enum mmu_migrate_result mmu_migrate_page(struct mmu *mmu, uint64_t gpa,
					 const struct mmu_page_patch *patch)
{
	uint64_t gfn = gpa >> PAGE_SHIFT, old_leaf;
	enum mmu_migrate_result res;
	paddr_t copy = 0, old;
	struct memslot *s;

	read_lock(&mmu->slots_lock);
	mmu_write_lock(mmu);
	s = memslot_find(&mmu->slots, gfn);
	res = refusal(mmu, s, gfn);
	if (res == MIGRATE_DONE && !(copy = frame_alloc(0)))
		res = MIGRATE_NO_MEMORY;
	if (res != MIGRATE_DONE) {
		write_unlock(&mmu->lock);
		read_unlock(&mmu->slots_lock);
		return res;
	}
	/* Faults that looked up the old frame retry. */
	invalidate_begin(mmu);
	old_leaf = unmap_page(mmu, gfn);
	if (old_leaf != SPTE_NONE) {
		stat_add(&mmu->stats.remote_tlb_flush_requests, 1);
		mmu_flush_tlb(mmu);
	}
	old = backing_peek(&s->backing, gfn - s->base_gfn);
	memcpy(pa_to_va(copy), pa_to_va(old), PAGE_SIZE);
	if (patch) {
		/* sprig's own write into the page: logged as mmu_write_guest's. */
		*(uint64_t *)((char *)pa_to_va(copy) + (patch->offset & (PAGE_SIZE - 8))) =
			patch->value;
		dirty_log_sprig_write(mmu, s, gfn);
	}
	backing_replace(&s->backing, gfn - s->base_gfn, copy);
	if (old_leaf != SPTE_NONE)
		map_copy(mmu, gfn, old_leaf, copy);
	frame_free(old, 0);
	invalidate_end(mmu);
	write_unlock(&mmu->lock);
	read_unlock(&mmu->slots_lock);
	return MIGRATE_DONE;
}
