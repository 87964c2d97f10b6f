/* Buddy allocator over the usable physical ranges.
 *
 * One struct frame per 4 KiB frame covers the whole span from the lowest to the
 * highest usable frame; holes, reserved ranges and the metadata array itself are
 * FRAME_RESERVED there. Free lists are linked through the metadata by frame
 * index (frame number minus the lowest managed frame), so free memory is never
 * written. Blocks are aligned on absolute frame numbers, which is what makes a
 * 2 MiB or 1 GiB block usable as a huge mapping.
 *
 * Only block heads carry an order: a frame inside a block, or one absorbed by
 * a merge, has ORDER_NONE. That is what lets frame_free tell a valid block from
 * a double free, a wrong order or a pointer into the middle of a block. */
#include "mm/frame.h"
#include "arch/x86/lock.h"
#include "lib/print.h"
#include "lib/string.h"

#define NO_FRAME UINT32_MAX /* end of a free list */
#define ORDER_NONE 0xff     /* frame is not the head of a block */
#define PAGE_MASK (PAGE_SIZE - 1)
#define SIZE_2M (1ull << (PAGE_SHIFT + ORDER_2M))
#define SIZE_1G (1ull << (PAGE_SHIFT + ORDER_1G))

static struct spinlock frame_lock = { .class = LOCK_FRAME };
static struct frame *frames; /* indexed by pfn - base_pfn */
static uint64_t base_pfn;
static uint64_t n_frames; /* span covered by frames[], at most NO_FRAME */
static uint32_t free_head[FRAME_MAX_ORDER + 1];
static uint64_t free_blocks[FRAME_MAX_ORDER + 1];
static uint64_t free_frames;
static uint64_t total_frames;
static uint64_t meta_bytes;
static uint64_t bad_frees;

static paddr_t page_down(paddr_t a)
{
	return a & ~PAGE_MASK;
}

/* Saturates instead of wrapping, so a range reaching the top of the address
 * space still ends above everything else. */
static paddr_t page_up(paddr_t a)
{
	return a > UINT64_MAX - PAGE_MASK ? page_down(UINT64_MAX) : page_down(a + PAGE_MASK);
}

static bool reserved_covers(const struct mem_range *r, paddr_t pa)
{
	paddr_t s = page_down(r->start), e = page_up(r->end);

	return r->start < r->end && s <= pa && pa < e;
}

/* The first stretch of [pa, end) outside every reserved range (rounded
 * outwards to pages). Reserved ranges are few and unsorted: a quadratic scan
 * beats sorting them into storage we do not have yet. */
static bool next_piece(paddr_t pa, paddr_t end, const struct mem_range *res,
		       size_t n_res, paddr_t *piece_start, paddr_t *piece_end)
{
	bool moved = true;

	while (moved && pa < end) {
		moved = false;
		for (size_t i = 0; i < n_res; i++) {
			if (reserved_covers(&res[i], pa)) {
				pa = page_up(res[i].end);
				moved = true;
			}
		}
	}
	if (pa >= end)
		return false;
	*piece_start = pa;
	*piece_end = end;
	for (size_t i = 0; i < n_res; i++) {
		paddr_t s = page_down(res[i].start);

		if (res[i].start < res[i].end && s > pa && s < *piece_end)
			*piece_end = s;
	}
	return true;
}

/* Usable range i trimmed inwards to pages; false if nothing is left. */
static bool usable_range(const struct mem_range *r, paddr_t *s, paddr_t *e)
{
	*s = page_up(r->start);
	*e = page_down(r->end);
	return r->start < r->end && *s < *e;
}

/* Number of size-aligned blocks of `size` bytes that fit in [s, e). */
static uint64_t aligned_blocks(paddr_t s, paddr_t e, uint64_t size)
{
	uint64_t first = s / size + (s % size != 0), last = e / size;

	return last > first ? last - first : 0;
}

struct meta_spot {
	paddr_t pa;
	uint64_t lost_1g, lost_2m;
	bool found;
};

static void consider_spot(struct meta_spot *best, paddr_t s, paddr_t e,
			  paddr_t m, uint64_t size)
{
	uint64_t lost_1g = aligned_blocks(s, e, SIZE_1G) - aligned_blocks(s, m, SIZE_1G) -
			   aligned_blocks(m + size, e, SIZE_1G);
	uint64_t lost_2m = aligned_blocks(s, e, SIZE_2M) - aligned_blocks(s, m, SIZE_2M) -
			   aligned_blocks(m + size, e, SIZE_2M);

	if (best->found &&
	    (lost_1g > best->lost_1g ||
	     (lost_1g == best->lost_1g &&
	      (lost_2m > best->lost_2m || (lost_2m == best->lost_2m && m >= best->pa)))))
		return;
	*best = (struct meta_spot){ m, lost_1g, lost_2m, true };
}

/* Place the metadata at the start or the end of some free piece, wherever it
 * breaks the fewest 1 GiB and then 2 MiB blocks (the lowest spot on a tie). */
static bool choose_meta_spot(const struct mem_range *usable, size_t n_usable,
			     const struct mem_range *res, size_t n_res,
			     paddr_t lo, paddr_t hi, uint64_t size, paddr_t *spot)
{
	struct meta_spot best = { 0 };

	for (size_t i = 0; i < n_usable; i++) {
		paddr_t s, e, ps, pe;

		if (!usable_range(&usable[i], &s, &e))
			continue;
		s = s < lo ? lo : s;
		e = e > hi ? hi : e;
		for (paddr_t pa = s; pa < e && next_piece(pa, e, res, n_res, &ps, &pe); pa = pe) {
			if (pe - ps < size)
				continue;
			consider_spot(&best, ps, pe, ps, size);
			consider_spot(&best, ps, pe, pe - size, size);
		}
	}
	*spot = best.pa;
	return best.found;
}

static void mark_frames(paddr_t s, paddr_t e, uint16_t flags)
{
	for (uint64_t i = (s >> PAGE_SHIFT) - base_pfn; i < (e >> PAGE_SHIFT) - base_pfn; i++)
		frames[i].flags = flags;
}

/* Caller holds frame_lock (or is frame_init). */
static void free_list_add(uint32_t idx, unsigned order)
{
	struct frame *f = &frames[idx];

	f->refcount = 0;
	f->flags = FRAME_FREE;
	f->order = order;
	f->free.prev = NO_FRAME;
	f->free.next = free_head[order];
	if (free_head[order] != NO_FRAME)
		frames[free_head[order]].free.prev = idx;
	free_head[order] = idx;
	free_blocks[order]++;
}

static void free_list_del(uint32_t idx, unsigned order)
{
	struct frame *f = &frames[idx];

	if (f->free.prev != NO_FRAME)
		frames[f->free.prev].free.next = f->free.next;
	else
		free_head[order] = f->free.next;
	if (f->free.next != NO_FRAME)
		frames[f->free.next].free.prev = f->free.prev;
	f->flags &= ~FRAME_FREE;
	free_blocks[order]--;
}

/* Free the run [idx, end) of frames as maximal naturally aligned blocks. */
static void free_run(uint64_t idx, uint64_t end)
{
	while (idx < end) {
		uint64_t pfn = base_pfn + idx;
		unsigned order = FRAME_MAX_ORDER;

		while ((pfn & ((1ull << order) - 1)) || idx + (1ull << order) > end)
			order--;
		free_list_add(idx, order);
		free_frames += 1ull << order;
		idx += 1ull << order;
	}
}

static void reset_state(void)
{
	frames = NULL;
	base_pfn = n_frames = 0;
	free_frames = total_frames = meta_bytes = bad_frees = 0;
	for (unsigned o = 0; o <= FRAME_MAX_ORDER; o++) {
		free_head[o] = NO_FRAME;
		free_blocks[o] = 0;
	}
	frame_lock = (struct spinlock){ .class = LOCK_FRAME };
}

bool frame_init(const struct mem_range *usable, size_t n_usable,
		const struct mem_range *reserved, size_t n_reserved)
{
	paddr_t lo = UINT64_MAX, hi = 0, spot;

	reset_state();
	for (size_t i = 0; i < n_usable; i++) {
		paddr_t s, e;

		if (!usable_range(&usable[i], &s, &e))
			continue;
		lo = s < lo ? s : lo;
		hi = e > hi ? e : hi;
	}
	if (lo >= hi) {
		kprintf("frame: no usable memory\n");
		return false;
	}
	/* Frame indices are 32-bit list links. */
	if (((hi - lo) >> PAGE_SHIFT) >= NO_FRAME) {
		hi = lo + ((uint64_t)(NO_FRAME - 1) << PAGE_SHIFT);
		kprintf("frame: ignoring memory above 0x%llx\n", (unsigned long long)hi);
	}
	base_pfn = lo >> PAGE_SHIFT;
	n_frames = (hi - lo) >> PAGE_SHIFT;
	meta_bytes = page_up(n_frames * sizeof(struct frame));
	if (!choose_meta_spot(usable, n_usable, reserved, n_reserved, lo, hi,
			      meta_bytes, &spot)) {
		kprintf("frame: no room for %llu KiB of frame metadata\n",
			(unsigned long long)(meta_bytes >> 10));
		reset_state();
		return false;
	}
	frames = pa_to_va(spot);
	for (uint64_t i = 0; i < n_frames; i++)
		frames[i] = (struct frame){ .flags = FRAME_RESERVED, .order = ORDER_NONE };

	for (size_t i = 0; i < n_usable; i++) {
		paddr_t s, e, ps, pe;

		if (!usable_range(&usable[i], &s, &e))
			continue;
		s = s < lo ? lo : s;
		e = e > hi ? hi : e;
		for (paddr_t pa = s; pa < e && next_piece(pa, e, reserved, n_reserved, &ps, &pe); pa = pe)
			mark_frames(ps, pe, 0);
	}
	mark_frames(spot, spot + meta_bytes, FRAME_RESERVED);

	for (uint64_t i = 0; i < n_frames;) {
		uint64_t run = i;

		while (run < n_frames && !(frames[run].flags & FRAME_RESERVED))
			run++;
		if (run > i) {
			free_run(i, run);
			total_frames += run - i;
			i = run;
		} else {
			i++;
		}
	}
	if (!total_frames) {
		kprintf("frame: no usable memory left beside the metadata\n");
		reset_state();
		return false;
	}
	return true;
}

paddr_t frame_alloc(unsigned order)
{
	unsigned o = order;
	uint32_t idx;

	if (order > FRAME_MAX_ORDER)
		return 0;
	spin_lock(&frame_lock);
	while (o <= FRAME_MAX_ORDER && free_head[o] == NO_FRAME)
		o++;
	if (o > FRAME_MAX_ORDER) {
		spin_unlock(&frame_lock);
		return 0;
	}
	idx = free_head[o];
	free_list_del(idx, o);
	while (o > order) {
		o--;
		free_list_add(idx + (1u << o), o);
	}
	/* The new owner starts from clean metadata, whatever the last one left. */
	for (uint64_t i = 1; i < (1ull << order); i++)
		frames[idx + i] = (struct frame){ .order = ORDER_NONE };
	frames[idx] = (struct frame){ .refcount = 1, .order = order };
	free_frames -= 1ull << order;
	spin_unlock(&frame_lock);
	return (base_pfn + idx) << PAGE_SHIFT;
}

paddr_t frame_alloc_zeroed(unsigned order)
{
	paddr_t pa = frame_alloc(order);

	if (pa)
		memset(pa_to_va(pa), 0, PAGE_SIZE << order);
	return pa;
}

/* Whether frame idx lies inside a free block (a head at some aligned frame
 * below it whose block reaches it). */
static bool inside_free_block(uint64_t idx)
{
	uint64_t pfn = base_pfn + idx;

	for (unsigned o = 0; o <= FRAME_MAX_ORDER; o++) {
		uint64_t head = pfn & ~((1ull << o) - 1);
		struct frame *h;

		if (head < base_pfn)
			break;
		h = &frames[head - base_pfn];
		/* Owners change their frames' flags without frame_lock. */
		if ((__atomic_load_n(&h->flags, __ATOMIC_RELAXED) & FRAME_FREE) &&
		    pfn - head < (1ull << h->order))
			return true;
	}
	return false;
}

/* Why freeing (pa, order) would be wrong, or NULL if it is a live block.
 * Caller holds frame_lock. */
static const char *free_misuse(paddr_t pa, unsigned order, unsigned *recorded)
{
	uint64_t pfn = pa >> PAGE_SHIFT, idx;
	struct frame *f;

	if (order > FRAME_MAX_ORDER)
		return "no such order";
	if (pa & ((PAGE_SIZE << order) - 1))
		return "misaligned for its order";
	if (pfn < base_pfn || pfn - base_pfn >= n_frames ||
	    n_frames - (pfn - base_pfn) < (1ull << order))
		return "outside managed memory";
	idx = pfn - base_pfn;
	f = &frames[idx];
	if (f->flags & FRAME_RESERVED)
		return "reserved frame";
	if ((f->flags & FRAME_FREE) || inside_free_block(idx))
		return "double free";
	if (f->order == ORDER_NONE)
		return "not the start of an allocated block";
	if (f->order != order) {
		*recorded = f->order;
		return "wrong order";
	}
	return NULL;
}

void frame_split(paddr_t pa, unsigned order)
{
	uint64_t idx = (pa >> PAGE_SHIFT) - base_pfn;

	spin_lock(&frame_lock);
	for (uint64_t i = 0; i < (1ull << order); i++) {
		frames[idx + i].refcount = 1;
		frames[idx + i].order = 0;
	}
	spin_unlock(&frame_lock);
}

void frame_free(paddr_t pa, unsigned order)
{
	unsigned recorded = ORDER_NONE;
	const char *misuse;
	uint64_t pfn = pa >> PAGE_SHIFT;

	spin_lock(&frame_lock);
	misuse = free_misuse(pa, order, &recorded);
	if (misuse) {
		bad_frees++;
		spin_unlock(&frame_lock);
		if (recorded != ORDER_NONE)
			kprintf("frame: refused free of 0x%llx order %u: %s (allocated as %u)\n",
				(unsigned long long)pa, order, misuse, recorded);
		else
			kprintf("frame: refused free of 0x%llx order %u: %s\n",
				(unsigned long long)pa, order, misuse);
		return;
	}
	free_frames += 1ull << order;
	frames[pfn - base_pfn] = (struct frame){ .order = ORDER_NONE };
	while (order < FRAME_MAX_ORDER) {
		uint64_t buddy = pfn ^ (1ull << order);
		struct frame *b;

		if (buddy < base_pfn || buddy - base_pfn >= n_frames)
			break;
		b = &frames[buddy - base_pfn];
		if (!(__atomic_load_n(&b->flags, __ATOMIC_RELAXED) & FRAME_FREE) || b->order != order)
			break;
		free_list_del(buddy - base_pfn, order);
		b->order = ORDER_NONE;
		pfn &= buddy;
		order++;
	}
	free_list_add(pfn - base_pfn, order);
	spin_unlock(&frame_lock);
}

struct frame *frame_of(paddr_t pa)
{
	uint64_t pfn = pa >> PAGE_SHIFT;

	if (pfn < base_pfn || pfn - base_pfn >= n_frames)
		return NULL;
	return &frames[pfn - base_pfn];
}

void frame_get_stats(struct frame_stats *st)
{
	spin_lock(&frame_lock);
	st->total_bytes = total_frames << PAGE_SHIFT;
	st->free_bytes = free_frames << PAGE_SHIFT;
	st->meta_bytes = meta_bytes;
	for (unsigned o = 0; o <= FRAME_MAX_ORDER; o++)
		st->free_blocks[o] = free_blocks[o];
	st->bad_frees = bad_frees;
	spin_unlock(&frame_lock);
}

void frame_print_stats(void)
{
	struct frame_stats st;

	frame_get_stats(&st);
	kprintf("frames: total %llu MiB, free %llu MiB, metadata %llu KiB, refused frees %llu\n",
		(unsigned long long)(st.total_bytes >> 20),
		(unsigned long long)(st.free_bytes >> 20),
		(unsigned long long)(st.meta_bytes >> 10),
		(unsigned long long)st.bad_frees);
	kprintf("free blocks:");
	for (unsigned o = 0; o <= FRAME_MAX_ORDER; o++) {
		uint64_t kib = (PAGE_SIZE << o) >> 10;

		if (kib >= (1 << 20))
			kprintf(" %lluG:%llu", (unsigned long long)(kib >> 20),
				(unsigned long long)st.free_blocks[o]);
		else if (kib >= (1 << 10))
			kprintf(" %lluM:%llu", (unsigned long long)(kib >> 10),
				(unsigned long long)st.free_blocks[o]);
		else
			kprintf(" %lluK:%llu", (unsigned long long)kib,
				(unsigned long long)st.free_blocks[o]);
	}
	kprintf("\n");
}
