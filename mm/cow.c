/* Guest memory shared between address spaces (cow.h): clones, copy on write,
 * aliases, and the discard that reclaims shared frames from every SPTE that
 * maps them.
 *
 * Who may map a frame: the MMUs whose backings hold it, and, for an alias, the
 * MMU of both slots. Clones join their parent's family, which is therefore the
 * set of MMUs that can hold an SPTE of any frame one of them holds.
 *
 * Lock rule across VMs. An operation that changes SPTEs of several MMUs (a
 * discard that reclaims shared frames, a clone) takes, in this order:
 *   1. share_lock (family membership; global, so that a family cannot appear
 *      or change under an operation that has decided whom to lock);
 *   2. the slots_lock of each MMU it touches, for reading, in increasing id;
 *   3. their mmu_locks, for writing, in increasing id, raising each one's
 *      invalidate_in_progress at once, so that no fault of any of them installs
 *      a frame it resolved before the operation (the fault retries).
 * It releases in the opposite order after the flushes. Single-VM paths take
 * one slots_lock and one mmu_lock and never share_lock, so they cannot close a
 * cycle with it; share_lock is never taken with an mmu_lock held. Under the
 * mmu_locks, rmap heads take their bit locks (mm/rmap.h) one at a time. */
#include "mm/cow.h"
#include "mm/mmu_internal.h"
#include "mm/rmap.h"
#include "lib/string.h"

struct mmu_family {
	struct mmu *first; /* members by increasing id */
	struct mmu *last;  /* the highest id: a new clone's goes after it */
	unsigned members;
};

static struct spinlock share_lock = { .class = LOCK_COW_SHARE };

/* Families are few: a frame each. */
static struct mmu_family *family_new(struct mmu *first)
{
	paddr_t pa = frame_alloc_zeroed(0);
	struct mmu_family *fam = pa_to_va(pa);

	if (!pa)
		return NULL;
	fam->first = fam->last = first;
	fam->members = 1;
	first->share.family = fam;
	return fam;
}

/* In id order. A clone's VM is usually the newest, its id the highest: then
 * it goes last at once, and making N clones stays linear in N. */
static void family_add(struct mmu_family *fam, struct mmu *mmu)
{
	struct mmu **link = &fam->first;

	if (fam->last->share.id < mmu->share.id)
		link = &fam->last->share.next;
	while (*link && (*link)->share.id < mmu->share.id)
		link = &(*link)->share.next;
	mmu->share.next = *link;
	*link = mmu;
	if (!mmu->share.next)
		fam->last = mmu;
	mmu->share.family = fam;
	fam->members++;
}

void mmu_family_leave(struct mmu *mmu)
{
	struct mmu_family *fam = mmu->share.family;
	struct mmu **link, *prev = NULL;

	if (!fam)
		return;
	spin_lock(&share_lock);
	for (link = &fam->first; *link != mmu; link = &(*link)->share.next)
		prev = *link;
	*link = mmu->share.next;
	if (fam->last == mmu)
		fam->last = prev;
	mmu->share = (struct mmu_share){ .id = mmu->share.id };
	/* Alone, the last member shares nothing: it needs no family. */
	if (--fam->members == 1) {
		fam->first->share.family = NULL;
		fam->first->share.next = NULL;
		frame_free(va_to_pa(fam), 0);
	}
	spin_unlock(&share_lock);
}

unsigned mmu_family_size(struct mmu *mmu)
{
	unsigned n;

	spin_lock(&share_lock);
	n = mmu->share.family ? mmu->share.family->members : 1;
	spin_unlock(&share_lock);
	return n;
}

/* Every MMU that may map a frame of `mmu`: its family, or itself alone. */
static struct mmu *first_sharer(struct mmu *mmu)
{
	return mmu->share.family ? mmu->share.family->first : mmu;
}

static struct mmu *next_sharer(struct mmu *mmu, struct mmu *m)
{
	return mmu->share.family ? m->share.next : NULL;
}

#define for_each_sharer(m, mmu) for (m = first_sharer(mmu); m; m = next_sharer(mmu, m))

static void lock_sharers(struct mmu *mmu)
{
	struct mmu *m;

	spin_lock(&share_lock);
	for_each_sharer(m, mmu)
		read_lock(&m->slots_lock);
	for_each_sharer(m, mmu) {
		mmu_write_lock(m);
		invalidate_begin(m);
	}
}

/* Flush every MMU that lost an SPTE. */
static void flush_sharers(struct mmu *mmu)
{
	struct mmu *m;

	for_each_sharer(m, mmu) {
		if (m->share.flush_needed)
			mmu_flush_tlb(m);
		m->share.flush_needed = false;
	}
}

static void unlock_sharers(struct mmu *mmu)
{
	struct mmu *m;

	for_each_sharer(m, mmu) {
		invalidate_end(m);
		write_unlock(&m->lock);
	}
	for_each_sharer(m, mmu)
		read_unlock(&m->slots_lock);
	spin_unlock(&share_lock);
}

/* Zap one leaf found through an rmap, in the MMU that owns it (whose write
 * lock is held). Its owner, gfn and level come from the table it sits in. */
static void zap_rmap_entry(uint64_t *sptep)
{
	struct mmu *owner = sptep_owner(sptep);

	tdp_set_spte_at(owner, sptep, tdp_iter_read(sptep), SPTE_NONE, sptep_gfn(sptep),
			sptep_level(sptep));
	owner->share.flush_needed = true;
}

/* Reclaim: the frame leaves every page table at once, in every VM, as a host
 * takes a page from every process that maps it. The other holders refault the
 * frame they keep; the last one maps it writable again without a copy. */
static void reclaim_frame(paddr_t pa)
{
	uint64_t *head = &frame_of(pa)->rmap, *sptep;

	while ((sptep = rmap_first(head)))
		zap_rmap_entry(sptep);
}

/* The yield point of discard's per-page loops: each member whose mmu_lock
 * another CPU waits for hands it over, flushing first if it lost an SPTE.
 * Their faults retry meanwhile (the invalidations stay raised), and whoever
 * takes a lock takes no other, as in the zap. */
static void yield_sharers(struct mmu *mmu)
{
	struct mmu *m;

	for_each_sharer(m, mmu)
		mmu_cond_yield(m, &m->share.flush_needed);
}

/* The part of [start, end) in slot s: false if none. */
static bool slot_part(const struct memslot *s, uint64_t start, uint64_t end, uint64_t *first,
		      uint64_t *count)
{
	uint64_t a = s->base_gfn > start ? s->base_gfn : start;
	uint64_t b = memslot_end(s) < end ? memslot_end(s) : end;

	*first = a - s->base_gfn;
	*count = b - a;
	return a < b;
}

void mmu_discard(struct mmu *mmu, uint64_t gpa, uint64_t len)
{
	uint64_t start = gpa >> PAGE_SHIFT;
	uint64_t end = (gpa + len + PAGE_SIZE - 1) >> PAGE_SHIFT;
	uint64_t first, count;

	lock_sharers(mmu);
	/* The zap may yield this MMU's lock: its faults retry meanwhile (the
	 * invalidation), and whoever takes the lock takes no other (the lock
	 * rule above), so the locks still held cannot close a cycle. */
	if (tdp_zap(mmu, start, end, false, true))
		mmu->share.flush_needed = true;
	/* Aliases and clones map these frames elsewhere too: the rmaps say where. */
	for (unsigned i = 0; i < mmu->slots.count; i++) {
		struct memslot *s = &mmu->slots.slot[i];

		if (!slot_part(s, start, end, &first, &count))
			continue;
		for (uint64_t p = first; p < first + count; p++) {
			paddr_t pa = backing_peek(&s->backing, p);

			if (pa)
				reclaim_frame(pa);
			yield_sharers(mmu);
		}
	}
	/* No TLB may reach a frame that goes. */
	flush_sharers(mmu);
	for (unsigned i = 0; i < mmu->slots.count; i++) {
		struct memslot *s = &mmu->slots.slot[i];

		if (!slot_part(s, start, end, &first, &count))
			continue;
		for (uint64_t p = first; p < first + count; p++) {
			backing_drop(&s->backing, p, 1);
			yield_sharers(mmu);
		}
	}
	unlock_sharers(mmu);
}

/* Zap the mappings of one backing word in this MMU: the slot it belongs to
 * and its aliases each map it at their own gfn. Returns whether to flush. */
static bool zap_word_mappings(struct mmu *mmu, const uint64_t *word)
{
	bool flush = false;

	for (unsigned i = 0; i < mmu->slots.count; i++) {
		struct memslot *s = &mmu->slots.slot[i];

		if (word >= s->backing.frames && word < s->backing.frames + s->npages) {
			uint64_t gfn = s->base_gfn + (uint64_t)(word - s->backing.frames);

			flush |= tdp_zap(mmu, gfn, gfn + 1, false, false);
		}
	}
	return flush;
}

int mmu_cow_break(struct mmu *mmu, struct memslot *slot, uint64_t gfn)
{
	uint64_t index = gfn - slot->base_gfn;
	int res = TDP_RETRY;
	paddr_t shared;

	mmu_write_lock(mmu);
	invalidate_begin(mmu);
	/* Looked at again under the lock: another fault may have copied it, or
	 * the other holders may have gone. */
	shared = backing_peek(&slot->backing, index);
	if (shared && backing_frame_shared(shared)) {
		if (zap_word_mappings(mmu, &slot->backing.frames[index]))
			mmu_flush_tlb(mmu);
		if (backing_cow(&slot->backing, index, shared))
			mmu->share.cow_copies++;
		else
			res = TDP_NO_MEMORY;
	}
	invalidate_end(mmu);
	write_unlock(&mmu->lock);
	return res;
}

/* Under the write lock: the parent's leaves may not write shared frames any
 * more, and huge leaves go (clones share and map at 4 KiB). A parent cloned
 * again with nothing writable or huge since (the fork workload's N clones)
 * is not walked again: that walk was O(tables) a clone for nothing. */
static bool write_protect_all(struct mmu *mmu)
{
	const struct spte_format *f = mmu->root.fmt;
	bool flush = false;
	struct tdp_iter it;

	rwlock_assert_held_write(&mmu->lock);
	if (__atomic_load_n(&mmu->share.write_protected, __ATOMIC_RELAXED))
		return false;
	/* Set before the walk: a leaf installed while it yields clears it. */
	__atomic_store_n(&mmu->share.write_protected, true, __ATOMIC_RELAXED);
	for_each_tdp_pte(it, &mmu->root, 0, TDP_GFN_LIMIT) {
		/* Faults that get in meanwhile retry (the invalidation). */
		if (tdp_cond_yield(mmu, &it, &flush))
			continue;
		if (!spte_present(f, it.old_spte) || !spte_is_leaf(f, it.old_spte, it.level))
			continue;
		if (it.level > 1) {
			tdp_set_spte(mmu, &it, SPTE_NONE);
			flush = true;
		} else if (it.old_spte & f->writable) {
			/* A write the log has not harvested yet must not go with
			 * the write right (or the dirty bit beside it). */
			dirty_log_write_ended(mmu, it.gfn, tdp_clear_spte_bits(mmu, &it, f->writable), 1);
			flush = true;
		}
	}
	tdp_iter_account(mmu, &it);
	return flush;
}

/* The slot whose words an alias slot uses. */
static unsigned alias_target(const struct memslots *slots, const struct memslot *alias)
{
	unsigned t = 0;

	for (unsigned i = 0; i < slots->count; i++) {
		const struct backing *b = &slots->slot[i].backing;

		if (!b->alias && alias->backing.frames >= b->frames &&
		    alias->backing.frames < b->frames + b->npages)
			t = i;
	}
	return t;
}

bool mmu_slot_aliased(struct mmu *mmu, const struct memslot *slot)
{
	if (slot->backing.alias)
		return true;
	for (unsigned i = 0; i < mmu->slots.count; i++)
		if (mmu->slots.slot[i].backing.alias &&
		    &mmu->slots.slot[alias_target(&mmu->slots, &mmu->slots.slot[i])] == slot)
			return true;
	return false;
}

/* The child's slots, in the parent's order: owning backings share the
 * parent's frames, aliases name the child's own words as the parent's do. */
static int share_slots(struct mmu *parent, struct mmu *child)
{
	const struct memslots *ps = &parent->slots;
	struct memslots *cs = &child->slots;

	for (unsigned i = 0; i < ps->count; i++) {
		cs->slot[i] = (struct memslot){ .base_gfn = ps->slot[i].base_gfn,
						.npages = ps->slot[i].npages,
						.flags = ps->slot[i].flags & ~MEMSLOT_DIRTY_LOG };
		if (ps->slot[i].backing.alias)
			continue;
		if (backing_share(&cs->slot[i].backing, &parent->slots.slot[i].backing)) {
			while (i--)
				if (!ps->slot[i].backing.alias)
					backing_destroy(&cs->slot[i].backing);
			return -1;
		}
	}
	for (unsigned i = 0; i < ps->count; i++) {
		const struct backing *pb = &ps->slot[i].backing;
		unsigned t = alias_target(ps, &ps->slot[i]);

		if (pb->alias)
			backing_alias(&cs->slot[i].backing, &cs->slot[t].backing,
				      (uint64_t)(pb->frames - ps->slot[t].backing.frames), pb->npages,
				      pb->base_gfn);
	}
	cs->count = ps->count;
	return 0;
}

/* The child needs no lock: nothing can reach it before it joins the family. */
int mmu_clone(struct mmu *parent, struct mmu *child)
{
	int ret = -1;

	spin_lock(&share_lock);
	if (parent->share.family || family_new(parent)) {
		read_lock(&parent->slots_lock);
		mmu_write_lock(parent);
		invalidate_begin(parent);
		if (write_protect_all(parent))
			mmu_flush_tlb(parent);
		ret = share_slots(parent, child);
		invalidate_end(parent);
		write_unlock(&parent->lock);
		read_unlock(&parent->slots_lock);
		if (!ret)
			family_add(parent->share.family, child);
	}
	spin_unlock(&share_lock);
	return ret;
}

int mmu_alias_add(struct mmu *mmu, uint64_t gpa, uint64_t size, uint64_t target_gpa)
{
	uint64_t base = gpa >> PAGE_SHIFT, npages = size >> PAGE_SHIFT;
	uint64_t target_gfn = target_gpa >> PAGE_SHIFT;
	struct memslot alias = { .base_gfn = base, .npages = npages };
	struct memslot *t;
	int pos = -1;

	if ((gpa | size | target_gpa) & (PAGE_SIZE - 1) || !npages)
		return -1;
	write_lock(&mmu->slots_lock);
	t = memslot_find(&mmu->slots, target_gfn);
	if (t && !t->backing.alias && t->backing.cfg.kind == BACKING_EAGER &&
	    target_gfn + npages <= memslot_end(t)) {
		/* The alias's gfns need not align as the target's blocks do. */
		alias.flags = (t->flags & ~MEMSLOT_DIRTY_LOG) | MEMSLOT_NO_HUGE;
		backing_alias(&alias.backing, &t->backing, target_gfn - t->base_gfn, npages, base);
		pos = memslot_insert(&mmu->slots, &alias);
	}
	write_unlock(&mmu->slots_lock);
	return pos < 0 ? -1 : 0;
}
