/* Guest memory as a snapshot sees it (mmu_save_memory in mmu.h). */
#include "mm/mmu_internal.h"

int mmu_save_memory(struct mmu *mmu, uint64_t gpa, void *buf, uint64_t len)
{
	int ret = 0;

	/* The read locks keep a discard from freeing a frame mid-copy. */
	read_lock(&mmu->slots_lock);
	mmu_read_lock(mmu);
	for (uint64_t off = 0; off < len; off += PAGE_SIZE) {
		uint64_t gfn = (gpa + off) >> PAGE_SHIFT;
		struct memslot *s = memslot_find(&mmu->slots, gfn);

		if (!s) {
			ret = -1;
			break;
		}
		backing_read_page(&s->backing, gfn - s->base_gfn, (char *)buf + off);
	}
	read_unlock(&mmu->lock);
	read_unlock(&mmu->slots_lock);
	return ret;
}
