/* Frame allocator tests: layouts checked page by page against a model of what
 * is usable, and long seeded random sequences of allocations and frees. */
#include "check.h"
#include "mm/frame.h"
#include "tests/rng.h"
#include "tests/unit/host_mem.h"
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define GiB (1ull << 30)
#define MiB (1ull << 20)
#define KiB (1ull << 10)
#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

struct layout {
	size_t span;
	const struct mem_range *usable, *reserved;
	size_t n_usable, n_reserved;
};

struct live_block {
	paddr_t pa;
	unsigned order;
};

/* What the allocator may hand out, page by page, and what it has handed out. */
struct model {
	paddr_t base;
	size_t n_pages;
	uint8_t *allowed;
	uint8_t *live;
	uint64_t allowed_bytes, live_bytes;
	struct live_block *blocks;
	size_t n_blocks, cap;
	bool untagged; /* do not write tags into blocks (keeps draining tests cheap) */
};

static void model_mark(struct model *m, uint64_t start, uint64_t end, uint8_t v, bool outwards)
{
	uint64_t first = outwards ? start / PAGE_SIZE : (start + PAGE_SIZE - 1) / PAGE_SIZE;
	uint64_t last = outwards ? (end + PAGE_SIZE - 1) / PAGE_SIZE : end / PAGE_SIZE;

	if (start >= end)
		return;
	for (uint64_t p = first; p < last && p < m->n_pages; p++)
		m->allowed[p] = v;
}

/* Set up host memory for the layout and a model of it; false if frame_init refused. */
static bool model_init(struct model *m, const struct layout *l)
{
	bool ok = host_mem_init_ranges(l->span, l->usable, l->n_usable, l->reserved, l->n_reserved);
	uint64_t lowest = UINT64_MAX;

	memset(m, 0, sizeof(*m));
	m->base = host_mem_base();
	m->n_pages = l->span / PAGE_SIZE;
	m->allowed = calloc(m->n_pages, 1);
	m->live = calloc(m->n_pages, 1);
	m->cap = 1024;
	m->blocks = calloc(m->cap, sizeof(*m->blocks));
	for (size_t i = 0; i < l->n_usable; i++) {
		uint64_t s = (l->usable[i].start + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1);

		model_mark(m, l->usable[i].start, l->usable[i].end, 1, false);
		if (s < (l->usable[i].end & ~(PAGE_SIZE - 1)) && s < lowest)
			lowest = s;
	}
	for (size_t i = 0; i < l->n_reserved; i++)
		model_mark(m, l->reserved[i].start, l->reserved[i].end, 0, true);
	if (ok) {
		/* The metadata array starts with the lowest usable frame's entry. */
		struct frame_stats st;
		uint64_t meta = va_to_pa(frame_of(m->base + lowest)) - m->base;

		frame_get_stats(&st);
		for (uint64_t p = meta / PAGE_SIZE; p < (meta + st.meta_bytes) / PAGE_SIZE; p++) {
			CHECK(m->allowed[p]);
			m->allowed[p] = 0;
		}
	}
	for (size_t p = 0; p < m->n_pages; p++)
		m->allowed_bytes += m->allowed[p] ? PAGE_SIZE : 0;
	return ok;
}

static void model_free_arrays(struct model *m)
{
	free(m->allowed);
	free(m->live);
	free(m->blocks);
}

static uint64_t block_tag(paddr_t pa, unsigned order)
{
	return pa ^ (0x5bd1e995ull << 8) ^ order;
}

/* Allocate one block and check it against the model; returns its address or 0. */
static paddr_t model_alloc(struct model *m, unsigned order)
{
	paddr_t pa = frame_alloc(order);
	uint64_t pages = 1ull << order, first;

	if (!pa) {
		struct frame_stats st;

		frame_get_stats(&st);
		for (unsigned o = order; o <= FRAME_MAX_ORDER; o++)
			CHECK_EQ_U64(st.free_blocks[o], 0);
		return 0;
	}
	CHECK_EQ_U64(pa & ((PAGE_SIZE << order) - 1), 0);
	CHECK(pa >= m->base && pa + (PAGE_SIZE << order) <= m->base + m->n_pages * PAGE_SIZE);
	if (pa < m->base || pa + (PAGE_SIZE << order) > m->base + m->n_pages * PAGE_SIZE)
		return 0;
	first = (pa - m->base) / PAGE_SIZE;
	for (uint64_t p = first; p < first + pages; p++) {
		if (!m->allowed[p] || m->live[p]) {
			CHECK(m->allowed[p]);
			CHECK(!m->live[p]);
			break;
		}
		m->live[p] = 1;
	}
	CHECK_EQ_U64(frame_of(pa)->refcount, 1);
	if (!m->untagged)
		*(volatile uint64_t *)pa_to_va(pa) = block_tag(pa, order);
	m->live_bytes += PAGE_SIZE << order;
	if (m->n_blocks == m->cap) {
		m->cap *= 2;
		m->blocks = realloc(m->blocks, m->cap * sizeof(*m->blocks));
	}
	m->blocks[m->n_blocks++] = (struct live_block){ pa, order };
	return pa;
}

static void model_free(struct model *m, size_t i)
{
	struct live_block b = m->blocks[i];
	uint64_t first = (b.pa - m->base) / PAGE_SIZE;

	if (!m->untagged)
		CHECK_EQ_U64(*(volatile uint64_t *)pa_to_va(b.pa), block_tag(b.pa, b.order));
	for (uint64_t p = first; p < first + (1ull << b.order); p++)
		m->live[p] = 0;
	m->live_bytes -= PAGE_SIZE << b.order;
	m->blocks[i] = m->blocks[--m->n_blocks];
	frame_free(b.pa, b.order);
}

static void check_free_bytes(struct model *m)
{
	struct frame_stats st;

	frame_get_stats(&st);
	CHECK_EQ_U64(st.free_bytes, st.total_bytes - m->live_bytes);
}

static bool stats_equal(const struct frame_stats *a, const struct frame_stats *b)
{
	return memcmp(a, b, sizeof(*a)) == 0;
}

/* Small orders mostly, so that many blocks are live; every order now and then. */
static unsigned random_order(struct rng *rng)
{
	uint64_t r = rng_next(rng);

	return r % 100 < 75 ? (r >> 8) % 5 : (r >> 8) % (FRAME_MAX_ORDER + 1);
}

static void run_random(const struct layout *l, uint64_t seed, int steps)
{
	struct model m;
	struct frame_stats initial, now;
	struct rng rng = rng_seeded(seed);
	int failures_before = unit_failures_in_current;

	if (!model_init(&m, l)) {
		CHECK(!"frame_init refused the layout");
		model_free_arrays(&m);
		return;
	}
	frame_get_stats(&initial);
	CHECK_EQ_U64(initial.total_bytes, m.allowed_bytes);
	CHECK_EQ_U64(initial.free_bytes, initial.total_bytes);
	for (int round = 0; round < 2; round++) {
		for (int step = 0; step < steps; step++) {
			bool grow = m.n_blocks < 8 || rng_below(&rng, 100) < 52;

			if (grow || !m.n_blocks)
				model_alloc(&m, random_order(&rng));
			else
				model_free(&m, rng_below(&rng, m.n_blocks));
			check_free_bytes(&m);
			if (unit_failures_in_current != failures_before) {
				printf("  seed %llu step %d\n", (unsigned long long)seed, step);
				goto out;
			}
		}
		while (m.n_blocks)
			model_free(&m, rng_below(&rng, m.n_blocks));
		frame_get_stats(&now);
		CHECK(stats_equal(&now, &initial));
	}
out:
	model_free_arrays(&m);
}

/* Holes, an unaligned start, overlapping usable ranges, and reserved ranges
 * that overlap, are unsorted, unaligned, empty or reversed. [2 GiB, 3 GiB)
 * stays whole, so a 1 GiB block exists. */
static const struct mem_range messy_usable[] = {
	{ 0xd0000000, 0x100000000 },
	{ 0x100123, 0x3fff0777 },
	{ 0x40000000, 0xc0000000 },
	{ 0xbff00000, 0xc0800000 },
	{ 0x5000, 0x5000 },
	{ 0x9000, 0x8000 },
};
static const struct mem_range messy_reserved[] = {
	{ 0x60200000, 0x60600000 },
	{ 0x50000000, 0x50000001 },
	{ 0x60000000, 0x60400000 },
	{ 0x2000, 0x1000 },
	{ 0x7000, 0x7000 },
	{ 0x3ffff001, 0x40001fff },
	{ 0xe0000800, 0xe0000900 },
	{ 0xcfff0000, 0xd0010000 },
};
static const struct layout messy = {
	4 * GiB, messy_usable, messy_reserved, ARRAY_LEN(messy_usable), ARRAY_LEN(messy_reserved)
};

TEST(frame_layout_matches_model)
{
	struct model m;
	struct frame_stats st;
	uint64_t pages = 0;

	REQUIRE(model_init(&m, &messy));
	m.untagged = true;
	frame_get_stats(&st);
	CHECK_EQ_U64(st.total_bytes, m.allowed_bytes);
	CHECK_EQ_U64(st.free_bytes, m.allowed_bytes);
	CHECK(st.free_blocks[ORDER_1G] >= 1);
	/* One entry per frame from the lowest usable frame (0x101000) up. */
	CHECK_EQ_U64(st.meta_bytes, ((4 * GiB - 0x101000) / PAGE_SIZE * sizeof(struct frame) +
				     PAGE_SIZE - 1) & ~(PAGE_SIZE - 1));
	/* Everything the model forbids is reserved in the metadata. */
	for (size_t p = 0; p < m.n_pages; p++) {
		struct frame *f = frame_of(m.base + p * PAGE_SIZE);

		if (!m.allowed[p] && f && !(f->flags & FRAME_RESERVED)) {
			CHECK(!"forbidden frame not reserved");
			break;
		}
	}
	/* Draining it one frame at a time yields exactly the allowed pages. */
	while (model_alloc(&m, 0))
		pages++;
	CHECK_EQ_U64(pages * PAGE_SIZE, m.allowed_bytes);
	while (m.n_blocks)
		model_free(&m, m.n_blocks - 1);
	frame_get_stats(&st);
	CHECK_EQ_U64(st.free_bytes, m.allowed_bytes);
	model_free_arrays(&m);
}

TEST(frame_random_messy_layout)
{
	run_random(&messy, 1, 6000);
	run_random(&messy, 0x9e3779b97f4a7c15ull, 6000);
}

TEST(frame_random_small_memory)
{
	/* 3 MiB + 4 KiB at an odd place: exhaustion is frequent. */
	static const struct mem_range usable[] = { { 0x1ff000, 0x500000 } };
	static const struct layout small = { 8 * MiB, usable, NULL, 1, 0 };

	run_random(&small, 7, 6000);
	run_random(&small, 12345, 6000);
}

TEST(frame_random_single_range)
{
	static const struct mem_range usable[] = { { 0, 3 * GiB } };
	static const struct layout one = { 3 * GiB, usable, NULL, 1, 0 };

	run_random(&one, 42, 8000);
}

TEST(frame_empty_map)
{
	static const struct mem_range sub_page[] = { { 0x1001, 0x1fff }, { 0x3000, 0x3000 },
						     { 0x5000, 0x4000 } };
	static const struct mem_range one[] = { { 0, 16 * MiB } };
	static const struct mem_range all[] = { { 0, 16 * MiB } };
	struct frame_stats st;

	CHECK(!host_mem_init_ranges(16 * MiB, NULL, 0, NULL, 0));
	CHECK_EQ_U64(frame_alloc(0), 0);
	CHECK(!frame_of(host_mem_base()));
	CHECK(!host_mem_init_ranges(16 * MiB, sub_page, ARRAY_LEN(sub_page), NULL, 0));
	CHECK(!host_mem_init_ranges(16 * MiB, one, 1, all, 1));
	CHECK_EQ_U64(frame_alloc(0), 0);
	frame_get_stats(&st);
	CHECK_EQ_U64(st.total_bytes, 0);
	CHECK_EQ_U64(st.free_bytes, 0);
	/* A usable range that only fits its own metadata is refused too. */
	CHECK(!host_mem_init_ranges(16 * MiB, (struct mem_range[]){ { 0, PAGE_SIZE } }, 1, NULL, 0));
}

TEST(frame_1g_blocks)
{
	/* Starts just above the first MiB, as the kernel sees RAM: the metadata
	 * goes where it breaks no 1 GiB block. */
	static const struct mem_range usable[] = { { MiB, 4 * GiB + 5 * MiB } };
	struct frame_stats st;
	paddr_t b[3];

	REQUIRE(host_mem_init_ranges(5 * GiB, usable, 1, NULL, 0));
	frame_get_stats(&st);
	CHECK_EQ_U64(st.free_blocks[ORDER_1G], 3);
	for (int i = 0; i < 3; i++) {
		b[i] = frame_alloc(ORDER_1G);
		CHECK(b[i] != 0);
		CHECK_EQ_U64(b[i] & (GiB - 1), 0);
	}
	CHECK_EQ_U64(frame_alloc(ORDER_1G), 0);
	CHECK(frame_alloc(ORDER_2M) != 0);
	for (int i = 0; i < 3; i++)
		frame_free(b[i], ORDER_1G);
	frame_get_stats(&st);
	CHECK_EQ_U64(st.free_blocks[ORDER_1G], 3);

	host_mem_init(2 * GiB);
	CHECK(frame_alloc(ORDER_1G) != 0);
	CHECK_EQ_U64(frame_alloc(ORDER_1G), 0);
}

TEST(frame_exhaustion)
{
	struct frame_stats initial, st;
	paddr_t *blocks = calloc(64 * MiB / PAGE_SIZE, sizeof(*blocks));
	size_t n = 0;

	host_mem_init(64 * MiB);
	frame_get_stats(&initial);
	CHECK_EQ_U64(initial.meta_bytes, 256 * KiB);
	CHECK_EQ_U64(initial.total_bytes, 64 * MiB - 256 * KiB);
	while ((blocks[n] = frame_alloc(0)))
		n++;
	CHECK_EQ_U64(n, initial.total_bytes / PAGE_SIZE);
	for (unsigned o = 0; o <= FRAME_MAX_ORDER; o++)
		CHECK_EQ_U64(frame_alloc(o), 0);
	CHECK_EQ_U64(frame_alloc(FRAME_MAX_ORDER + 1), 0);
	frame_get_stats(&st);
	CHECK_EQ_U64(st.free_bytes, 0);
	/* Free in an order that makes merges happen late. */
	for (size_t i = 0; i < n; i += 2)
		frame_free(blocks[i], 0);
	for (size_t i = 1; i < n; i += 2)
		frame_free(blocks[i], 0);
	frame_get_stats(&st);
	CHECK(stats_equal(&st, &initial));
	free(blocks);
}

TEST(frame_misuse_is_refused)
{
	struct frame_stats initial, st;
	paddr_t a, b, big, meta;

	host_mem_init(64 * MiB);
	frame_get_stats(&initial);
	a = frame_alloc(0);
	b = frame_alloc(0);
	REQUIRE(a && b && (a ^ b) == PAGE_SIZE); /* buddies */
	big = frame_alloc(3);
	REQUIRE(big);

	frame_free(a, 0);
	frame_get_stats(&st);
	frame_free(a, 0); /* double free, block still separate */
	frame_free(big, 2); /* wrong order */
	frame_free(big, 4); /* wrong order, misaligned */
	frame_free(big + PAGE_SIZE, 0); /* middle of a block */
	frame_free(big + 1, 0); /* not page aligned */
	frame_free(host_mem_base() - PAGE_SIZE, 0); /* outside */
	meta = va_to_pa(frame_of(host_mem_base()));
	frame_free(meta, 0); /* the metadata is reserved */
	frame_free(a, FRAME_MAX_ORDER + 1);
	{
		struct frame_stats after;

		frame_get_stats(&after);
		CHECK_EQ_U64(after.bad_frees, st.bad_frees + 8);
		after.bad_frees = st.bad_frees;
		CHECK(stats_equal(&after, &st));
	}
	frame_free(b, 0); /* merges with a */
	frame_get_stats(&st);
	frame_free(a, 0); /* double free of an absorbed half */
	frame_free(b, 0);
	frame_free(a, 1); /* the merged block was never allocated as order 1 */
	{
		struct frame_stats after;

		frame_get_stats(&after);
		CHECK_EQ_U64(after.bad_frees, st.bad_frees + 3);
	}
	frame_free(big, 3);
	frame_get_stats(&st);
	st.bad_frees = initial.bad_frees;
	CHECK(stats_equal(&st, &initial));
	/* Still consistent: drain and refill. */
	run_random(&(struct layout){ 64 * MiB, (struct mem_range[]){ { 0, 64 * MiB } }, NULL, 1, 0 },
		   3, 2000);
}

TEST(frame_alloc_zeroed_and_metadata)
{
	paddr_t pa;
	struct frame *f;

	host_mem_init(64 * MiB);
	pa = frame_alloc(2);
	REQUIRE(pa);
	f = frame_of(pa);
	REQUIRE(f);
	CHECK_EQ_U64(f->refcount, 1);
	CHECK_EQ_U64(f->order, 2);
	CHECK(!(f->flags & (FRAME_FREE | FRAME_RESERVED)));
	/* What the owner leaves behind does not leak to the next owner. */
	f->flags |= FRAME_PAGETABLE;
	f->rmap = 0xdeadbeef;
	frame_of(pa + PAGE_SIZE)->refcount = 7;
	memset(pa_to_va(pa), 0xa5, 4 * PAGE_SIZE);
	frame_free(pa, 2);
	CHECK_EQ_U64(frame_alloc_zeroed(2), pa);
	for (size_t i = 0; i < 4 * PAGE_SIZE; i++) {
		if (((uint8_t *)pa_to_va(pa))[i]) {
			CHECK(!"frame_alloc_zeroed left a byte set");
			break;
		}
	}
	CHECK_EQ_U64(f->flags, 0);
	CHECK_EQ_U64(f->rmap, 0);
	CHECK_EQ_U64(frame_of(pa + PAGE_SIZE)->refcount, 0);
	CHECK(!frame_of(host_mem_base() + 64 * MiB));
	CHECK(!frame_of(host_mem_base() - 1));
	frame_print_stats();
}

/* Threads allocate and free random orders; each block carries its owner's tag,
 * so a block handed out twice shows up (and as a data race under TSan). */
struct conc_worker {
	uint64_t seed;
	int steps;
	int errors;
};

static void *conc_frame_worker(void *arg)
{
	struct conc_worker *w = arg;
	struct live_block live[64];
	size_t n = 0;
	struct rng rng = rng_seeded(w->seed); /* this thread's own */

	for (int step = 0; step < w->steps || n; step++) {
		bool grow = step < w->steps && (n == 0 || (n < 64 && rng_below(&rng, 2)));

		if (grow) {
			uint64_t r = rng_next(&rng);
			unsigned order = r % 100 < 90 ? (r >> 8) % 4 : (r >> 8) % 12;
			paddr_t pa = frame_alloc(order);

			if (!pa)
				continue;
			if (pa & ((PAGE_SIZE << order) - 1))
				w->errors++;
			*(uint64_t *)pa_to_va(pa) = block_tag(pa, order) ^ w->seed;
			live[n++] = (struct live_block){ pa, order };
		} else {
			size_t i = rng_below(&rng, n);

			if (*(uint64_t *)pa_to_va(live[i].pa) != (block_tag(live[i].pa, live[i].order) ^ w->seed))
				w->errors++;
			frame_free(live[i].pa, live[i].order);
			live[i] = live[--n];
		}
	}
	return NULL;
}

TEST(conc_frame_threads)
{
	enum { THREADS = 4 };
	struct conc_worker w[THREADS];
	pthread_t t[THREADS];
	struct frame_stats initial, st;

	host_mem_init(256 * MiB);
	frame_get_stats(&initial);
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct conc_worker){ .seed = 1000 + i, .steps = 20000 };
		REQUIRE(pthread_create(&t[i], NULL, conc_frame_worker, &w[i]) == 0);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		CHECK_EQ_U64(w[i].errors, 0);
	}
	frame_get_stats(&st);
	CHECK(stats_equal(&st, &initial));
}
