/* VM-level MMU operations: life cycle, memslots, invalidations, TLB flushes and
 * guest-memory copies. The locking protocol is described in mmu.h. */
#include "mm/dirty_log.h"
#include "mm/mmu_internal.h"
#include "mm/tdp_mmu.h"
#include "lib/string.h"

int mmu_init(struct mmu *mmu, const struct spte_format *fmt, void (*flush_tlb)(void *ctx),
	     void *flush_ctx)
{
	memset(mmu, 0, sizeof(*mmu));
	mmu->lock.class = LOCK_MMU;
	mmu->slots_lock.class = LOCK_SLOTS;
	mmu->root.fmt = fmt;
	mmu->flush_tlb = flush_tlb;
	mmu->flush_ctx = flush_ctx;
	mmu->max_leaf_level = 3;
	mmu->root.table = tdp_table_alloc(mmu, TDP_ROOT_LEVEL, 0);
	return mmu->root.table ? 0 : -1;
}

void tdp_flush_tlb(struct mmu *mmu)
{
	stat_add(&mmu->stats.remote_tlb_flush, 1);
	mmu->flush_tlb(mmu->flush_ctx);
}

void mmu_flush_tlb(struct mmu *mmu)
{
	tdp_flush_tlb(mmu);
	tdp_free_flushed_tables(mmu);
}

void mmu_zap(struct mmu *mmu, uint64_t gpa, uint64_t len)
{
	uint64_t held, yielded;

	mmu_write_lock(mmu);
	held = latency_clock();
	yielded = mmu->write_yield_cycles;
	if (tdp_zap_range(mmu, gpa >> PAGE_SHIFT, (gpa + len + PAGE_SIZE - 1) >> PAGE_SHIFT))
		mmu_flush_tlb(mmu);
	latency_record(&mmu->zap_stats.zap_hold,
		       latency_clock() - held - (mmu->write_yield_cycles - yielded));
	write_unlock(&mmu->lock);
}

/* Bracket an invalidation (protocol in mmu.h). Both run under the write lock. */
void invalidate_begin(struct mmu *mmu)
{
	__atomic_store_n(&mmu->invalidate_in_progress, mmu->invalidate_in_progress + 1,
			 __ATOMIC_RELAXED);
}

void invalidate_end(struct mmu *mmu)
{
	__atomic_store_n(&mmu->invalidate_seq, mmu->invalidate_seq + 1, __ATOMIC_RELEASE);
	__atomic_store_n(&mmu->invalidate_in_progress, mmu->invalidate_in_progress - 1,
			 __ATOMIC_RELAXED);
}

/* Zap (tables too, when asked), flush, and hand the caller the range with no
 * mapping and no TLB entry left, all inside one invalidation. The caller then
 * drops backing and ends the invalidation, still under the write lock. */
static void invalidate_range(struct mmu *mmu, uint64_t start, uint64_t end, bool free_tables)
{
	mmu_write_lock(mmu);
	invalidate_begin(mmu);
	if (tdp_zap(mmu, start, end, free_tables, true))
		mmu_flush_tlb(mmu);
}

void mmu_zap_all(struct mmu *mmu)
{
	invalidate_range(mmu, 0, TDP_GFN_LIMIT, true);
	invalidate_end(mmu);
	write_unlock(&mmu->lock);
}

void mmu_destroy(struct mmu *mmu)
{
	write_lock(&mmu->slots_lock);
	mmu_zap_all(mmu);
	for (unsigned i = 0; i < mmu->slots.count; i++) {
		backing_destroy(&mmu->slots.slot[i].backing);
		dirty_log_free(&mmu->slots.slot[i].dirty_log);
	}
	mmu->slots.count = 0;
	tdp_table_free_unlinked(mmu, mmu->root.table);
	mmu->root.table = 0;
	write_unlock(&mmu->slots_lock);
	mmu_family_leave(mmu);
}

int mmu_slot_add(struct mmu *mmu, const struct memslot_config *cfg)
{
	uint64_t base = cfg->gpa >> PAGE_SHIFT, npages = cfg->size >> PAGE_SHIFT;
	struct backing backing;
	int pos;

	if ((cfg->gpa | cfg->size) & (PAGE_SIZE - 1))
		return -1;
	/* Built before taking the lock: an eager backing may take long to zero. */
	if (!npages || backing_create(&backing, base, npages, &cfg->backing))
		return -1;
	write_lock(&mmu->slots_lock);
	pos = memslot_insert(&mmu->slots,
			     &(struct memslot){ .base_gfn = base, .npages = npages,
						.flags = cfg->flags & ~MEMSLOT_DIRTY_LOG,
						.backing = backing });
	write_unlock(&mmu->slots_lock);
	if (pos < 0) {
		backing_destroy(&backing);
		return -1;
	}
	/* Created logged: the same path as enabling later, bitmap included. */
	if ((cfg->flags & MEMSLOT_DIRTY_LOG) && mmu_dirty_log_enable(mmu, cfg->gpa, true)) {
		mmu_slot_remove(mmu, cfg->gpa);
		return -1;
	}
	return 0;
}

int mmu_slot_remove(struct mmu *mmu, uint64_t gpa)
{
	struct memslot *s;
	unsigned i;

	write_lock(&mmu->slots_lock);
	s = memslot_at(&mmu->slots, gpa >> PAGE_SHIFT);
	if (!s || mmu_slot_aliased(mmu, s)) {
		write_unlock(&mmu->slots_lock);
		return -1;
	}
	/* Tables wholly inside the slot go too: nothing else can map there. */
	invalidate_range(mmu, s->base_gfn, memslot_end(s), true);
	invalidate_end(mmu);
	if (s->flags & MEMSLOT_DIRTY_LOG)
		mmu->dirty_log_slots--;
	write_unlock(&mmu->lock);
	backing_destroy(&s->backing);
	dirty_log_free(&s->dirty_log);
	i = (unsigned)(s - mmu->slots.slot);
	memmove(s, s + 1, (mmu->slots.count - i - 1) * sizeof(*s));
	mmu->slots.count--;
	write_unlock(&mmu->slots_lock);
	return 0;
}

/* An aligned 8-byte piece moves in one access, as the CPU's own aligned
 * accesses are atomic (SDM vol. 3A, "Guaranteed Atomic Operations"): a guest
 * polling that word on another CPU never sees it half written. */
static void copy_piece(void *dst, const void *src, uint64_t n)
{
	if (n == 8 && !(((uintptr_t)dst | (uintptr_t)src) & 7))
		__atomic_store_n((uint64_t *)dst, __atomic_load_n((const uint64_t *)src, __ATOMIC_RELAXED),
				 __ATOMIC_RELAXED);
	else
		memcpy(dst, src, n);
}

/* [gpa, gpa + len), len > 0, lies wholly in memslots (adjacent ones may
 * share it), without wrapping. Under slots_lock. */
static bool range_in_slots(struct memslots *slots, uint64_t gpa, uint64_t len)
{
	uint64_t gfn = gpa >> PAGE_SHIFT, last;

	if (len - 1 > UINT64_MAX - gpa)
		return false;
	last = (gpa + len - 1) >> PAGE_SHIFT;
	for (;;) {
		struct memslot *s = memslot_find(slots, gfn);

		if (!s)
			return false;
		if (last < memslot_end(s))
			return true;
		gfn = memslot_end(s);
	}
}

/* Back every page of a write's range and give each shared one a copy of its
 * own, so that the copy after it cannot fail half way. A copy on write drops
 * the read lock (a discard or a clone may get in), so the pages are looked at
 * again until a pass finds all of them ready: it returns with the read lock
 * held since that pass began. 0, or -1 when memory ran out. */
static int prepare_write(struct mmu *mmu, uint64_t gpa, uint64_t len)
{
	uint64_t first = gpa >> PAGE_SHIFT, last = (gpa + len - 1) >> PAGE_SHIFT;
	bool dropped;

	do {
		dropped = false;
		for (uint64_t gfn = first; gfn <= last; gfn++) {
			struct memslot *s = memslot_find(&mmu->slots, gfn);
			paddr_t pa = backing_get(&s->backing, gfn - s->base_gfn);
			int res;

			if (!pa)
				return -1;
			if (!backing_frame_shared(pa))
				continue;
			/* The hypervisor's writes copy a shared frame as the guest's do. */
			read_unlock(&mmu->lock);
			res = mmu_cow_break(mmu, s, gfn);
			mmu_read_lock(mmu);
			if (res == TDP_NO_MEMORY)
				return -1;
			dropped = true;
		}
	} while (dropped);
	return 0;
}

/* Every copy between sprig and guest memory. The range is checked whole
 * first: one that leaves guest memory anywhere is refused with nothing
 * copied. Copies hold the read locks so that a discard cannot free a frame
 * while it is being copied, nor a harvest of the dirty log run between a
 * write and its mark. A write's pages are marked in a logged slot's dirty
 * log as a guest write's are: the log must list every page whose contents
 * changed, whoever wrote them. (A restore backing's fill from its image is
 * not a write: the page holds what the image says, as a userfaultfd fill
 * under KVM is not logged.) */
static int guest_copy(struct mmu *mmu, uint64_t gpa, void *buf, uint64_t len, bool to_guest)
{
	int ret = 0;

	if (!len)
		return 0;
	read_lock(&mmu->slots_lock);
	mmu_read_lock(mmu);
	if (!range_in_slots(&mmu->slots, gpa, len) || (to_guest && prepare_write(mmu, gpa, len)))
		ret = -1;
	while (!ret && len) {
		uint64_t gfn = gpa >> PAGE_SHIFT, off = gpa & (PAGE_SIZE - 1);
		uint64_t n = PAGE_SIZE - off < len ? PAGE_SIZE - off : len;
		struct memslot *s = memslot_find(&mmu->slots, gfn);
		paddr_t pa = backing_get(&s->backing, gfn - s->base_gfn);

		if (!pa) {
			ret = -1; /* a read ran out of memory */
			break;
		}
		if (to_guest) {
			copy_piece((char *)pa_to_va(pa) + off, buf, n);
			dirty_log_sprig_write(mmu, s, gfn);
		} else {
			copy_piece(buf, (char *)pa_to_va(pa) + off, n);
		}
		buf = (char *)buf + n;
		gpa += n;
		len -= n;
	}
	read_unlock(&mmu->lock);
	read_unlock(&mmu->slots_lock);
	return ret;
}

int mmu_xchg_guest_u8(struct mmu *mmu, uint64_t gpa, uint8_t *val)
{
	int ret = -1;

	read_lock(&mmu->slots_lock);
	mmu_read_lock(mmu);
	if (range_in_slots(&mmu->slots, gpa, 1) && !prepare_write(mmu, gpa, 1)) {
		uint64_t gfn = gpa >> PAGE_SHIFT;
		struct memslot *s = memslot_find(&mmu->slots, gfn);
		paddr_t pa = backing_get(&s->backing, gfn - s->base_gfn);
		uint8_t *byte = (uint8_t *)pa_to_va(pa) + (gpa & (PAGE_SIZE - 1));

		*val = __atomic_exchange_n(byte, *val, __ATOMIC_SEQ_CST);
		dirty_log_sprig_write(mmu, s, gfn);
		ret = 0;
	}
	read_unlock(&mmu->lock);
	read_unlock(&mmu->slots_lock);
	return ret;
}

int mmu_read_guest(struct mmu *mmu, uint64_t gpa, void *buf, uint64_t len)
{
	return guest_copy(mmu, gpa, buf, len, false);
}

int mmu_write_guest(struct mmu *mmu, uint64_t gpa, const void *buf, uint64_t len)
{
	return guest_copy(mmu, gpa, (void *)(uintptr_t)buf, len, true);
}

uint64_t mmu_backed_pages(struct mmu *mmu)
{
	uint64_t n = 0;

	read_lock(&mmu->slots_lock);
	for (unsigned i = 0; i < mmu->slots.count; i++)
		n += __atomic_load_n(&mmu->slots.slot[i].backing.resident, __ATOMIC_RELAXED);
	read_unlock(&mmu->slots_lock);
	return n;
}
