/* Memslots: the guest-physical ranges a VM has memory in, each with its flags
 * and its backing. A VM's slots sit in one array sorted by base gfn, so a lookup
 * is a binary search. The array is protected by the VM's slots_lock (see mmu.h):
 * faults and guest-memory copies read it, slot add and remove write it. */
#pragma once
#include "mm/backing.h"
#include "mm/dirty_log.h"
#include "mm/spte.h"

#define MEMSLOTS_MAX 32

/* memslot.flags */
#define MEMSLOT_READONLY 0x1u /* guest writes fault with TDP_PERMISSION */
#define MEMSLOT_NO_HUGE 0x2u  /* map at 4 KiB whatever the backing allows */
#define MEMSLOT_DIRTY_LOG 0x4u /* writes are logged: only a guest write makes a page writable */

struct memslot {
	uint64_t base_gfn;
	uint64_t npages;
	uint32_t flags;
	struct backing backing;
	struct dirty_log dirty_log; /* with MEMSLOT_DIRTY_LOG */
};

struct memslots {
	unsigned count;
	struct memslot slot[MEMSLOTS_MAX];
};

/* The slot holding gfn, or NULL. */
struct memslot *memslot_find(struct memslots *s, uint64_t gfn);
/* Index at which a slot [base, base + npages) goes, or -1 if it overlaps one. */
int memslot_insert_pos(const struct memslots *s, uint64_t base_gfn, uint64_t npages);
/* Insert a copy of m where it goes; its position, or -1 if it overlaps a slot
 * or the array is full. */
int memslot_insert(struct memslots *s, const struct memslot *m);
/* The slot starting at base_gfn, or NULL. */
struct memslot *memslot_at(struct memslots *s, uint64_t base_gfn);

static inline unsigned memslot_rights(const struct memslot *m)
{
	return (m->flags & MEMSLOT_READONLY) ? TDP_ACC_ALL & ~TDP_ACC_WRITE : TDP_ACC_ALL;
}

/* The largest mapping level for a gfn of the slot. */
static inline int memslot_max_level(const struct memslot *m, uint64_t gfn)
{
	return (m->flags & MEMSLOT_NO_HUGE) ? 1 : backing_max_level(&m->backing, gfn - m->base_gfn);
}

static inline uint64_t memslot_end(const struct memslot *m)
{
	return m->base_gfn + m->npages;
}
