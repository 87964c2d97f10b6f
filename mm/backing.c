/* Guest-memory backings (see backing.h). */
#include "mm/backing.h"
#include "lib/string.h"

static unsigned floor_log2(uint64_t v)
{
	return 63 - (unsigned)__builtin_clzll(v);
}

static unsigned order_for_bytes(uint64_t bytes)
{
	uint64_t pages = (bytes + PAGE_SIZE - 1) >> PAGE_SHIFT;

	return pages <= 1 ? 0 : floor_log2(pages - 1) + 1;
}

static void set_word(struct backing *b, uint64_t index, uint64_t word)
{
	__atomic_store_n(&b->frames[index], word, __ATOMIC_RELEASE);
}

/* Eager: carve the slot into the largest gfn-aligned blocks that fit, taking
 * smaller blocks where the allocator has no large one. */
static int eager_fill(struct backing *b)
{
	uint64_t i = 0;

	while (i < b->npages) {
		uint64_t gfn = b->base_gfn + i;
		unsigned order = gfn ? (unsigned)__builtin_ctzll(gfn) : FRAME_MAX_ORDER;
		unsigned fit = floor_log2(b->npages - i);
		paddr_t pa = 0;

		if (order > fit)
			order = fit;
		if (order > FRAME_MAX_ORDER)
			order = FRAME_MAX_ORDER;
		for (;; order--) {
			pa = b->cfg.no_zero ? frame_alloc(order) : frame_alloc_zeroed(order);
			if (pa || order == 0)
				break;
		}
		if (!pa)
			return -1;
		for (uint64_t p = 0; p < (1ull << order); p++)
			set_word(b, i + p, (pa + (p << PAGE_SHIFT)) | order);
		i += 1ull << order;
	}
	b->resident = b->npages;
	return 0;
}

int backing_create(struct backing *b, uint64_t base_gfn, uint64_t npages,
		   const struct backing_config *cfg)
{
	memset(b, 0, sizeof(*b));
	b->cfg = *cfg;
	if (b->cfg.kind == BACKING_RESTORE && !b->cfg.chunk_pages)
		b->cfg.chunk_pages = 1;
	if (b->cfg.chunk_pages & (b->cfg.chunk_pages - 1))
		return -1;
	b->base_gfn = base_gfn;
	b->npages = npages;
	b->frames_order = order_for_bytes(npages * sizeof(uint64_t));
	b->frames_pa = frame_alloc_zeroed(b->frames_order);
	if (!b->frames_pa)
		return -1;
	b->frames = pa_to_va(b->frames_pa);
	if (b->cfg.kind == BACKING_EAGER && eager_fill(b)) {
		backing_destroy(b);
		return -1;
	}
	return 0;
}

/* Drop one reference to a single frame (a block split by frame_split, or a
 * lazy or restore page): the last one frees it. */
static void put_frame(paddr_t pa)
{
	if (__atomic_sub_fetch(&frame_of(pa)->refcount, 1, __ATOMIC_ACQ_REL) == 0)
		frame_free(pa, 0);
}

void backing_destroy(struct backing *b)
{
	if (b->alias) {
		b->frames = NULL;
		return;
	}
	if (b->cfg.kind == BACKING_EAGER) {
		for (uint64_t i = 0; i < b->npages;) {
			uint64_t w = b->frames[i];
			unsigned order = w & BACKING_ORDER_MASK;

			if (!w)
				break; /* creation stopped here */
			if (order)
				frame_free(w & ~BACKING_ORDER_MASK, order); /* never shared */
			else
				put_frame(w);
			i += 1ull << order;
		}
	} else {
		backing_drop(b, 0, b->npages);
	}
	frame_free(b->frames_pa, b->frames_order);
	b->frames = NULL;
	b->resident = 0;
}

void backing_alias(struct backing *alias, const struct backing *target, uint64_t first,
		   uint64_t npages, uint64_t base_gfn)
{
	*alias = (struct backing){ .cfg = target->cfg, .base_gfn = base_gfn, .npages = npages,
				   .frames = target->frames + first, .alias = true };
}

/* Every block of an eager backing becomes single frames, its words order 0. */
static void split_blocks(struct backing *b)
{
	for (uint64_t i = 0; i < b->npages;) {
		uint64_t w = b->frames[i];
		unsigned order = w & BACKING_ORDER_MASK;

		if (order) {
			frame_split(w & ~BACKING_ORDER_MASK, order);
			for (uint64_t p = 0; p < (1ull << order); p++)
				set_word(b, i + p, b->frames[i + p] & ~BACKING_ORDER_MASK);
		}
		i += 1ull << order;
	}
}

int backing_share(struct backing *dst, struct backing *src)
{
	struct backing_config cfg = src->cfg;

	/* Created empty (lazy words start unbacked), then given src's frames. */
	cfg.kind = BACKING_LAZY;
	if (backing_create(dst, src->base_gfn, src->npages, &cfg))
		return -1;
	dst->cfg.kind = src->cfg.kind;
	if (src->cfg.kind == BACKING_EAGER)
		split_blocks(src);
	for (uint64_t i = 0; i < src->npages; i++) {
		paddr_t pa = backing_peek(src, i);

		if (!pa)
			continue;
		__atomic_fetch_add(&frame_of(pa)->refcount, 1, __ATOMIC_ACQ_REL);
		set_word(dst, i, pa);
		dst->resident++;
	}
	return 0;
}

paddr_t backing_cow(struct backing *b, uint64_t index, paddr_t shared)
{
	paddr_t copy = frame_alloc(0);

	if (!copy)
		return 0;
	memcpy(pa_to_va(copy), pa_to_va(shared), PAGE_SIZE);
	set_word(b, index, copy);
	put_frame(shared);
	return copy;
}

void backing_replace(struct backing *b, uint64_t index, paddr_t pa)
{
	set_word(b, index, pa);
}

/* Publish a frame for an unbacked page; a concurrent filler may have won. */
static paddr_t publish(struct backing *b, uint64_t index, paddr_t pa)
{
	uint64_t expected = 0;

	if (__atomic_compare_exchange_n(&b->frames[index], &expected, pa, false,
					__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		__atomic_fetch_add(&b->resident, 1, __ATOMIC_RELAXED);
		return pa;
	}
	frame_free(pa, 0);
	return expected;
}

/* Page `index` of the image into dst (zeros past its end). */
static void fill_from_image(const struct backing *b, uint64_t index, void *dst)
{
	uint64_t off = index << PAGE_SHIFT;
	uint64_t n = 0;

	if (off < b->cfg.image_bytes) {
		n = b->cfg.image_bytes - off;
		if (n > PAGE_SIZE)
			n = PAGE_SIZE;
		memcpy(dst, (const char *)b->cfg.image + off, n);
	}
	if (n < PAGE_SIZE)
		memset((char *)dst + n, 0, PAGE_SIZE - n);
}

/* Restore: fill every unbacked page of the chunk around `index`, as one
 * UFFDIO_COPY of chunk_pages would. Returns the frame this call saw published
 * for `index`: a concurrent discard may already have dropped it again, which
 * the fault's invalidation check catches. */
static paddr_t restore_chunk(struct backing *b, uint64_t index)
{
	uint64_t first = index & ~(uint64_t)(b->cfg.chunk_pages - 1);
	uint64_t end = first + b->cfg.chunk_pages;
	paddr_t wanted = 0;

	if (end > b->npages)
		end = b->npages;
	for (uint64_t i = first; i < end; i++) {
		paddr_t pa = backing_peek(b, i);

		if (!pa) {
			pa = frame_alloc(0);
			if (!pa)
				break;
			fill_from_image(b, i, pa_to_va(pa));
			pa = publish(b, i, pa);
		}
		if (i == index)
			wanted = pa;
	}
	return wanted;
}

paddr_t backing_get(struct backing *b, uint64_t index)
{
	paddr_t pa = backing_peek(b, index);

	if (pa)
		return pa;
	switch (b->cfg.kind) {
	case BACKING_LAZY:
		pa = frame_alloc_zeroed(0);
		return pa ? publish(b, index, pa) : 0;
	case BACKING_RESTORE:
		return restore_chunk(b, index);
	case BACKING_EAGER:
		break;
	}
	return 0;
}

void backing_read_page(const struct backing *b, uint64_t index, void *dst)
{
	paddr_t pa = backing_peek(b, index);

	if (pa)
		memcpy(dst, pa_to_va(pa), PAGE_SIZE);
	else if (b->cfg.kind == BACKING_RESTORE)
		fill_from_image(b, index, dst);
	else
		memset(dst, 0, PAGE_SIZE);
}

int backing_max_level(const struct backing *b, uint64_t index)
{
	unsigned order = __atomic_load_n(&b->frames[index], __ATOMIC_ACQUIRE) & BACKING_ORDER_MASK;

	if (b->cfg.kind != BACKING_EAGER)
		return 1;
	return order >= ORDER_1G ? 3 : order >= ORDER_2M ? 2 : 1;
}

void backing_drop(struct backing *b, uint64_t first, uint64_t count)
{
	for (uint64_t i = first; i < first + count; i++) {
		if (b->cfg.kind == BACKING_EAGER) {
			paddr_t pa = backing_peek(b, i), zeroed;

			/* The other holders keep the contents. Without a frame
			 * to spare, the page keeps them too. */
			if (!backing_frame_shared(pa))
				memset(pa_to_va(pa), 0, PAGE_SIZE);
			else if ((zeroed = frame_alloc_zeroed(0))) {
				set_word(b, i, zeroed);
				put_frame(pa);
			}
			continue;
		}
		uint64_t old = __atomic_exchange_n(&b->frames[i], 0, __ATOMIC_ACQ_REL);
		if (old) {
			put_frame(old);
			__atomic_fetch_sub(&b->resident, 1, __ATOMIC_RELAXED);
		}
	}
}

uint64_t backing_count_resident(const struct backing *b)
{
	uint64_t n = 0;

	if (b->alias)
		return 0;
	if (b->cfg.kind == BACKING_EAGER)
		return b->npages; /* backed from creation to destruction */
	for (uint64_t i = 0; i < b->npages; i++)
		n += backing_peek(b, i) != 0;
	return n;
}
