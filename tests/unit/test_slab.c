/* Slab cache tests: random sequences checked against a model of the live
 * objects, alignment, misuse, exhaustion and memory going back to the frame
 * allocator. Every live object is filled with its own pattern, so an overlap
 * between two of them shows up when the first is checked. */
#include "check.h"
#include "mm/frame.h"
#include "mm/slab.h"
#include "tests/rng.h"
#include "tests/unit/host_mem.h"
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MiB (1ull << 20)
#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static void fill_pattern(void *obj, size_t size, uint64_t id)
{
	for (size_t i = 0; i < size; i += sizeof(id))
		memcpy((char *)obj + i, &id, size - i < sizeof(id) ? size - i : sizeof(id));
}

static bool check_pattern(const void *obj, size_t size, uint64_t id)
{
	for (size_t i = 0; i < size; i += sizeof(id))
		if (memcmp((const char *)obj + i, &id, size - i < sizeof(id) ? size - i : sizeof(id)))
			return false;
	return true;
}

static size_t expected_align(size_t size)
{
	return size >= 64 ? 64 : 16;
}

static uint64_t frame_free_bytes(void)
{
	struct frame_stats st;

	frame_get_stats(&st);
	return st.free_bytes;
}

static const size_t test_sizes[] = { 1, 8, 16, 17, 48, 63, 64, 65, 100, 256, 500, 1000, 1500, 2048 };
static struct slab_cache test_caches[ARRAY_LEN(test_sizes)];

TEST(slab_sizes_and_alignment)
{
	host_mem_init(64 * MiB);
	for (size_t i = 0; i < ARRAY_LEN(test_sizes); i++) {
		struct slab_cache *c = &test_caches[i];
		size_t align = expected_align(test_sizes[i]);
		struct slab_stats st;
		void *objs[40];

		slab_init(c, "sizes", test_sizes[i]);
		CHECK(c->obj_size >= test_sizes[i] && c->obj_size % align == 0);
		CHECK(c->obj_size < test_sizes[i] + align);
		CHECK(c->objs_per_slab >= 1);
		/* A slab wastes at most an eighth of itself. */
		CHECK((PAGE_SIZE << c->slab_order) - 64 - c->objs_per_slab * c->obj_size <=
		      (PAGE_SIZE << c->slab_order) / 8);
		for (size_t j = 0; j < ARRAY_LEN(objs); j++) {
			objs[j] = slab_alloc(c);
			REQUIRE(objs[j]);
			CHECK_EQ_U64((uintptr_t)objs[j] % align, 0);
			fill_pattern(objs[j], test_sizes[i], j);
		}
		slab_get_stats(c, &st);
		CHECK_EQ_U64(st.objs_in_use, ARRAY_LEN(objs));
		CHECK_EQ_U64(st.slabs, (ARRAY_LEN(objs) + c->objs_per_slab - 1) / c->objs_per_slab);
		CHECK_EQ_U64(st.bytes, st.slabs * (PAGE_SIZE << c->slab_order));
		for (size_t j = 0; j < ARRAY_LEN(objs); j++) {
			CHECK(check_pattern(objs[j], test_sizes[i], j));
			slab_free(c, objs[j]);
		}
	}
	slab_print_all();
}

TEST(slab_too_large)
{
	static struct slab_cache big;

	host_mem_init(16 * MiB);
	slab_init(&big, "too-large", SLAB_MAX_OBJ_SIZE + 1);
	CHECK(!slab_alloc(&big));
	CHECK(!slab_zalloc(&big));
}

struct live_obj {
	struct slab_cache *cache;
	void *obj;
	uint64_t id;
};

TEST(slab_random_model)
{
	enum { STEPS = 30000, MAX_LIVE = 3000 };
	struct live_obj *live = calloc(MAX_LIVE, sizeof(*live));
	uint64_t in_use[ARRAY_LEN(test_sizes)] = { 0 };
	struct rng rng = rng_seeded(99);
	uint64_t next_id = 1, initial_free;
	size_t n = 0;

	host_mem_init(64 * MiB);
	initial_free = frame_free_bytes();
	for (size_t i = 0; i < ARRAY_LEN(test_sizes); i++)
		slab_init(&test_caches[i], "random", test_sizes[i]);
	for (int step = 0; step < STEPS; step++) {
		/* Grow for the first half, shrink for the second, so that slabs fill up
		 * and empty out again. */
		unsigned bias = step < STEPS / 2 ? 60 : 40;
		size_t c = rng_below(&rng, ARRAY_LEN(test_sizes));

		if (n < MAX_LIVE && (n == 0 || rng_below(&rng, 100) < bias)) {
			struct slab_cache *cache = &test_caches[c];
			void *obj = (rng_next(&rng) & 1) ? slab_alloc(cache) : slab_zalloc(cache);

			REQUIRE(obj);
			CHECK_EQ_U64((uintptr_t)obj % expected_align(test_sizes[c]), 0);
			live[n++] = (struct live_obj){ cache, obj, next_id };
			fill_pattern(obj, test_sizes[c], next_id++);
			in_use[c]++;
		} else {
			size_t i = rng_below(&rng, n);
			struct slab_cache *cache = live[i].cache;

			CHECK(check_pattern(live[i].obj, test_sizes[cache - test_caches], live[i].id));
			slab_free(cache, live[i].obj);
			in_use[cache - test_caches]--;
			live[i] = live[--n];
		}
		{
			struct slab_stats st;
			uint64_t held = 0;

			for (size_t i = 0; i < ARRAY_LEN(test_sizes); i++) {
				slab_get_stats(&test_caches[i], &st);
				CHECK_EQ_U64(st.objs_in_use, in_use[i]);
				held += st.bytes;
			}
			CHECK_EQ_U64(frame_free_bytes() + held, initial_free);
		}
		if (unit_failures_in_current) {
			printf("  step %d\n", step);
			break;
		}
	}
	while (n) {
		struct slab_cache *cache = live[n - 1].cache;

		CHECK(check_pattern(live[n - 1].obj, test_sizes[cache - test_caches], live[n - 1].id));
		slab_free(cache, live[--n].obj);
	}
	for (size_t i = 0; i < ARRAY_LEN(test_sizes); i++) {
		struct slab_stats st;

		slab_get_stats(&test_caches[i], &st);
		CHECK(st.slabs <= 1); /* the spare */
		slab_shrink(&test_caches[i]);
		slab_get_stats(&test_caches[i], &st);
		CHECK_EQ_U64(st.slabs, 0);
		CHECK_EQ_U64(st.objs_in_use, 0);
	}
	CHECK_EQ_U64(frame_free_bytes(), initial_free);
	free(live);
}

TEST(slab_keeps_one_spare)
{
	static struct slab_cache c;
	void *objs[3 * 252];
	struct slab_stats st;
	uint64_t initial_free;

	host_mem_init(16 * MiB);
	initial_free = frame_free_bytes();
	slab_init(&c, "spare", 16);
	CHECK_EQ_U64(c.objs_per_slab, 252);
	for (size_t i = 0; i < ARRAY_LEN(objs); i++)
		REQUIRE((objs[i] = slab_alloc(&c)));
	slab_get_stats(&c, &st);
	CHECK_EQ_U64(st.slabs, 3);
	CHECK_EQ_U64(frame_free_bytes(), initial_free - 3 * PAGE_SIZE);
	for (size_t i = 0; i < ARRAY_LEN(objs); i++)
		slab_free(&c, objs[i]);
	slab_get_stats(&c, &st);
	CHECK_EQ_U64(st.slabs, 1);
	CHECK_EQ_U64(frame_free_bytes(), initial_free - PAGE_SIZE);
	/* The spare is used before a new frame is taken. */
	REQUIRE((objs[0] = slab_alloc(&c)));
	CHECK_EQ_U64(frame_free_bytes(), initial_free - PAGE_SIZE);
	slab_free(&c, objs[0]);
	slab_shrink(&c);
	CHECK_EQ_U64(frame_free_bytes(), initial_free);
}

TEST(slab_exhaustion)
{
	static struct slab_cache c;
	size_t n = 0, cap = 1 << 16;
	void **objs = calloc(cap, sizeof(*objs));
	uint64_t initial_free;

	host_mem_init(2 * MiB);
	initial_free = frame_free_bytes();
	slab_init(&c, "exhaust", 512);
	while (n < cap && (objs[n] = slab_alloc(&c)))
		n++;
	CHECK(n < cap);
	CHECK_EQ_U64(frame_free_bytes(), 0);
	CHECK_EQ_U64(n, initial_free / (PAGE_SIZE << c.slab_order) * c.objs_per_slab);
	CHECK(!slab_alloc(&c));
	while (n)
		slab_free(&c, objs[--n]);
	slab_shrink(&c);
	CHECK_EQ_U64(frame_free_bytes(), initial_free);
	free(objs);
}

TEST(slab_misuse_is_refused)
{
	static struct slab_cache a, b;
	struct slab_stats before, after;
	void *x, *y, *z;

	host_mem_init(16 * MiB);
	slab_init(&a, "a", 32);
	slab_init(&b, "b", 32);
	x = slab_alloc(&a);
	y = slab_alloc(&a);
	z = slab_alloc(&b);
	REQUIRE(x && y && z);
	slab_free(&a, x);
	slab_get_stats(&a, &before);
	slab_free(&a, x);                 /* double free */
	slab_free(&a, z);                 /* another cache's object */
	slab_free(&a, (char *)y + 8);     /* inside an object */
	slab_free(&a, (void *)((uintptr_t)y & ~(uintptr_t)(PAGE_SIZE - 1))); /* the header */
	slab_free(&a, NULL);
	slab_get_stats(&a, &after);
	CHECK(memcmp(&before, &after, sizeof(before)) == 0);
	slab_free(&a, y);
	slab_free(&b, z);
	slab_get_stats(&a, &after);
	CHECK_EQ_U64(after.objs_in_use, 0);
	/* A slab that went back to the frame allocator no longer accepts frees. */
	slab_shrink(&a);
	slab_free(&a, y);
	slab_get_stats(&a, &after);
	CHECK_EQ_U64(after.slabs, 0);
	CHECK_EQ_U64(after.objs_in_use, 0);
}

TEST(slab_zalloc_zeroes)
{
	static struct slab_cache c;
	uint8_t *p;

	host_mem_init(16 * MiB);
	slab_init(&c, "zero", 200);
	p = slab_alloc(&c);
	REQUIRE(p);
	memset(p, 0xff, 200);
	slab_free(&c, p);
	p = slab_zalloc(&c);
	REQUIRE(p);
	for (size_t i = 0; i < c.obj_size; i++)
		CHECK_EQ_U64(p[i], 0);
	slab_free(&c, p);
}

struct conc_slab_worker {
	struct slab_cache *cache;
	uint64_t seed;
	int errors;
};

static void *conc_slab_worker(void *arg)
{
	enum { LIVE = 200, STEPS = 20000 };
	struct conc_slab_worker *w = arg;
	void *live[LIVE];
	uint64_t ids[LIVE];
	struct rng rng = rng_seeded(w->seed); /* this thread's own */
	size_t n = 0;

	for (int step = 0; step < STEPS || n; step++) {
		if (step < STEPS && n < LIVE && (n == 0 || rng_below(&rng, 2))) {
			void *obj = slab_alloc(w->cache);

			if (!obj) {
				w->errors++;
				continue;
			}
			ids[n] = w->seed << 32 | step;
			fill_pattern(obj, 48, ids[n]);
			live[n++] = obj;
		} else {
			size_t i = rng_below(&rng, n);

			if (!check_pattern(live[i], 48, ids[i]))
				w->errors++;
			slab_free(w->cache, live[i]);
			live[i] = live[n - 1];
			ids[i] = ids[--n];
		}
	}
	return NULL;
}

TEST(conc_slab_threads)
{
	enum { THREADS = 4 };
	static struct slab_cache c;
	struct conc_slab_worker w[THREADS];
	pthread_t t[THREADS];
	struct slab_stats st;
	uint64_t initial_free;

	host_mem_init(64 * MiB);
	initial_free = frame_free_bytes();
	slab_init(&c, "conc", 48);
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct conc_slab_worker){ &c, 100 + i, 0 };
		REQUIRE(pthread_create(&t[i], NULL, conc_slab_worker, &w[i]) == 0);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		CHECK_EQ_U64(w[i].errors, 0);
	}
	slab_get_stats(&c, &st);
	CHECK_EQ_U64(st.objs_in_use, 0);
	slab_shrink(&c);
	CHECK_EQ_U64(frame_free_bytes(), initial_free);
}
