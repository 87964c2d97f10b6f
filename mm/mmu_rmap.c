/* The MMU's side of the reverse maps (mm/rmap.h): which rmap a leaf belongs
 * in, the per-level histogram of rmap sizes, and the audit's two checks.
 *
 * A leaf SPTE lives in the rmap of the frame its address names: a 4 KiB leaf in
 * its page's frame, a 2 MiB or 1 GiB leaf in the first frame of its block. */
#include "mm/mmu_internal.h"
#include "mm/rmap.h"
#include "lib/string.h"

uint64_t *mmu_rmap_head(const struct spte_format *f, uint64_t leaf_spte)
{
	return &frame_of(spte_addr(f, leaf_spte))->rmap;
}

void mmu_rmap_histogram(struct mmu *mmu, struct rmap_histogram *h)
{
	const struct spte_format *f = mmu->root.fmt;
	uint64_t regions[RMAP_HIST_LEVELS] = { 0 }, leaves[RMAP_HIST_LEVELS] = { 0 };
	struct tdp_iter it;

	memset(h, 0, sizeof(*h));
	read_lock(&mmu->slots_lock);
	mmu_read_lock(mmu);
	for_each_tdp_pte(it, &mmu->root, 0, TDP_GFN_LIMIT) {
		if (!spte_present(f, it.old_spte) || !spte_is_leaf(f, it.old_spte, it.level))
			continue;
		leaves[it.level - 1]++;
		h->count[it.level - 1][rmap_hist_bucket(rmap_count(mmu_rmap_head(f, it.old_spte)))]++;
	}
	/* As KVM counts empty heads: every level-sized region of every slot that
	 * no leaf of that level maps. */
	for (unsigned i = 0; i < mmu->slots.count; i++) {
		const struct memslot *s = &mmu->slots.slot[i];

		for (int l = 1; l <= RMAP_HIST_LEVELS; l++) {
			unsigned shift = 9 * (l - 1);

			regions[l - 1] += ((memslot_end(s) - 1) >> shift) - (s->base_gfn >> shift) + 1;
		}
	}
	read_unlock(&mmu->lock);
	read_unlock(&mmu->slots_lock);
	for (int l = 0; l < RMAP_HIST_LEVELS; l++)
		h->count[l][0] = regions[l] > leaves[l] ? regions[l] - leaves[l] : 0;
}

struct occurrences {
	const uint64_t *sptep;
	unsigned n;
};

static void count_occurrence(uint64_t *sptep, void *ctx)
{
	struct occurrences *o = ctx;

	o->n += sptep == o->sptep;
}

const char *mmu_rmap_check_leaf(const struct spte_format *f, const uint64_t *sptep,
				uint64_t spte)
{
	struct occurrences o = { sptep, 0 };

	/* A shared frame's first write must fault to be copied (mm/cow.c). */
	if ((spte & f->writable) && backing_frame_shared(spte_addr(f, spte)))
		return "writable leaf maps a shared frame";
	rmap_for_each(mmu_rmap_head(f, spte), count_occurrence, &o);
	if (o.n == 1)
		return NULL;
	return o.n ? "leaf in its frame's rmap more than once" : "leaf missing from its frame's rmap";
}

struct frame_check {
	const struct spte_format *f;
	paddr_t pa;
	const char *error;
};

static void check_entry(uint64_t *sptep, void *ctx)
{
	struct frame_check *c = ctx;
	struct frame *table = sptep_to_table(sptep);
	uint64_t spte;

	if (!table || !(table->flags & FRAME_PAGETABLE)) {
		c->error = "rmap entry outside a page table";
		return;
	}
	spte = tdp_iter_read(sptep);
	if (!spte_present(c->f, spte) || !spte_is_leaf(c->f, spte, table->pt.level))
		c->error = "rmap entry is not a present leaf";
	else if (spte_addr(c->f, spte) != c->pa)
		c->error = "rmap entry maps another frame";
}

const char *mmu_rmap_check_frame(const struct spte_format *f, paddr_t pa)
{
	struct frame_check c = { f, pa, NULL };
	uint64_t *head = &frame_of(pa)->rmap;

	/* Most backed frames are unmapped: skip them without the head's lock. */
	if (!__atomic_load_n(head, __ATOMIC_ACQUIRE))
		return NULL;
	rmap_for_each(head, check_entry, &c);
	return c.error;
}
