/* What backs a memslot's guest frames: the analogue of the host memory a
 * userspace VMM would map into a guest.
 *
 *   eager:   every frame allocated when the slot is created, in blocks as large
 *            and as aligned as the allocator gives (hugetlbfs-like), so that
 *            2 MiB and 1 GiB mappings are possible;
 *   lazy:    a zeroed 4 KiB frame on first touch (anonymous memory, no THP);
 *   restore: on first touch, the chunk around the page is filled from a source
 *            image, chunk_pages at a time (userfaultfd doing UFFDIO_COPY).
 *
 * The backing keeps one word per guest page: the frame's physical address,
 * with the order of the eager block holding it in the low bits, or 0 while the
 * page is not backed (lazy and restore only). Words change by atomic exchange,
 * so a fault may read and fill them without the mmu_lock.
 *
 * Frames may be shared: a VM clone's backing starts as a copy of its parent's
 * words, and the frames they name count their backings in struct frame's
 * refcount (eager blocks are split into single frames first, frame_split). A
 * shared frame (refcount > 1) is mapped read-only; the first write copies it
 * (backing_cow). A frame goes back to the allocator with its last reference.
 * An alias backing names part of another backing's words (a slot mapping the
 * same memory at a second guest-physical range): it owns no word and no frame,
 * and its frames' refcounts do not count it. */
#pragma once
#include "mm/frame.h"
#include "mm/spte.h"
#include <stdbool.h>
#include <stdint.h>

enum backing_kind {
	BACKING_EAGER,
	BACKING_LAZY,
	BACKING_RESTORE,
};

struct backing_config {
	enum backing_kind kind;
	/* Eager only: leave the frames' contents as the allocator hands them out.
	 * For benchmarks (on the host, fresh memory is already zero and zeroing
	 * 1 GiB would only cost time and resident memory) and for loaders that
	 * overwrite the whole slot. Otherwise eager frames are zeroed at creation. */
	bool no_zero;
	/* Restore only: the image (slot offset 0 = image byte 0; pages past its end
	 * read as zero) and the fill granularity, a power of two (default 1). */
	const void *image;
	uint64_t image_bytes;
	uint32_t chunk_pages;
};

struct backing {
	struct backing_config cfg;
	uint64_t base_gfn; /* where the slot sits: eager blocks align on guest gfns */
	uint64_t npages;
	uint64_t *frames;  /* one word per page, see above */
	paddr_t frames_pa; /* the block holding `frames` */
	unsigned frames_order;
	uint64_t resident; /* backed 4 KiB pages; 0 for an alias, which owns none */
	bool alias;        /* `frames` belongs to another backing (backing_alias) */
};

#define BACKING_ORDER_MASK 0x1full

/* 0, or -1 when memory runs out (nothing is left allocated then). */
int backing_create(struct backing *b, uint64_t base_gfn, uint64_t npages,
		   const struct backing_config *cfg);
/* Frees every frame (drops its reference to shared ones). No mapping of them
 * may remain. */
void backing_destroy(struct backing *b);

/* An alias of pages [first, first + npages) of an eager backing, for a slot at
 * base_gfn: the same words, so both slots map the same frames. Eager only: an
 * alias names memory that exists, and a lazy alias would need one resident
 * count for two slots. The target must outlive it. */
void backing_alias(struct backing *alias, const struct backing *target, uint64_t first,
		   uint64_t npages, uint64_t base_gfn);
/* For a clone: dst becomes a backing of the same kind whose words name src's
 * frames, one more reference each. src's eager blocks are split first, so that
 * every page is shared, copied and freed alone (both then map at 4 KiB). The
 * caller excludes src's droppers (its mmu_lock, written, with an invalidation
 * raised). 0, or -1 when memory runs out (dst is then empty). */
int backing_share(struct backing *dst, struct backing *src);
/* Copy on write: page `index` holds the shared frame `shared`; give it a copy
 * of its own and drop the reference to `shared`. The caller has zapped the
 * page's mappings in this backing's VM. The new frame, or 0 when memory runs
 * out (the page keeps `shared`). */
paddr_t backing_cow(struct backing *b, uint64_t index, paddr_t shared);
/* Migration: page `index` is backed by frame pa from now on. The caller
 * frees the frame it had (order 0) once no mapping and no TLB can reach it.
 * Only for a page of its own single frame (not shared, not in an eager
 * block: mmu_migrate_page checks). */
void backing_replace(struct backing *b, uint64_t index, paddr_t pa);
/* More than one backing holds the frame: no mapping of it may be writable. */
static inline bool backing_frame_shared(paddr_t pa)
{
	return __atomic_load_n(&frame_of(pa)->refcount, __ATOMIC_ACQUIRE) > 1;
}
/* The rights (TDP_ACC_* bits) a new leaf of frame pa may have out of `rights`.
 * Read under mmu_lock after the fault's invalidation check: a clone, which
 * shares frames, is an invalidation of the parent. */
static inline unsigned backing_frame_rights(paddr_t pa, unsigned rights)
{
	return backing_frame_shared(pa) ? rights & ~TDP_ACC_WRITE : rights;
}

/* The frame backing page `index`, backing it first if needed; 0 if memory ran
 * out. Safe against concurrent callers. */
paddr_t backing_get(struct backing *b, uint64_t index);
/* The frame backing page `index`, or 0: never allocates. */
static inline paddr_t backing_peek(const struct backing *b, uint64_t index)
{
	return __atomic_load_n(&b->frames[index], __ATOMIC_ACQUIRE) & ~BACKING_ORDER_MASK;
}

/* What page `index` holds for the guest, into dst, without backing it: the
 * frame's contents, the image's page for an unfilled restore page, zeros for
 * an untouched lazy page. For snapshots of memory the guest never touched. */
void backing_read_page(const struct backing *b, uint64_t index, void *dst);

/* The largest mapping level (1, 2 or 3) that page `index` may use: the whole
 * aligned 2 MiB or 1 GiB region around it lies in one contiguous, aligned
 * block of this backing. */
int backing_max_level(const struct backing *b, uint64_t index);

/* Drop pages [first, first + count): lazy and restore pages become unbacked
 * (their frames are freed, or their references dropped when shared), eager
 * pages are zeroed (a shared one is replaced by a zeroed frame of its own).
 * No mapping of them may remain and no TLB may still hold one. */
void backing_drop(struct backing *b, uint64_t first, uint64_t count);

/* Recount of backed pages, for the audit. */
uint64_t backing_count_resident(const struct backing *b);
