/* Reverse-map tests: random add / remove / count / walk sequences on many
 * heads, checked after every step against a model (the set of SPTEs each head
 * should hold), for every descriptor layout, with removal by back-reference and
 * by scan; layouts switched while chains live; and heads shared by threads that
 * stand for VMs faulting at once (also under ThreadSanitizer). */
#include "check.h"
#include "mm/mmu_config.h"
#include "mm/rmap.h"
#include "tests/rng.h"
#include "tests/unit/host_mem.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define MiB (1ull << 20)
#define TABLE_WORDS (2 * RMAP_BACKREF_DISTANCE) /* entries, then back-references */

/* SPTE storage laid out as the MMU lays out leaf tables. */
static uint64_t *tables_alloc(unsigned tables)
{
	uint64_t *t = aligned_alloc(8192, (size_t)tables * TABLE_WORDS * sizeof(uint64_t));

	memset(t, 0, (size_t)tables * TABLE_WORDS * sizeof(uint64_t));
	return t;
}

static uint64_t *spte_at(uint64_t *tables, unsigned i)
{
	return &tables[(i / RMAP_BACKREF_DISTANCE) * TABLE_WORDS + i % RMAP_BACKREF_DISTANCE];
}

/* host_mem_init sets up the descriptor caches too. */
static void rmap_env(void)
{
	host_mem_init(64 * MiB);
}

#define HEADS 12
#define SPTES 3000

struct model {
	uint64_t head[HEADS];
	int owner[SPTES]; /* head holding SPTE i, or -1 */
	unsigned size[HEADS];
	uint64_t *tables;
};

struct walk_check {
	struct model *m;
	int head;
	unsigned bad, calls;
};

static void check_member(uint64_t *sptep, void *ctx)
{
	struct walk_check *w = ctx;
	uintptr_t base = (uintptr_t)w->m->tables;
	uintptr_t word = ((uintptr_t)sptep - base) / sizeof(uint64_t);
	unsigned i = (unsigned)((word / TABLE_WORDS) * RMAP_BACKREF_DISTANCE + word % TABLE_WORDS);

	w->calls++;
	if (word % TABLE_WORDS >= RMAP_BACKREF_DISTANCE || i >= SPTES || w->m->owner[i] != w->head)
		w->bad++;
}

static void check_head(struct model *m, int h)
{
	struct walk_check w = { .m = m, .head = h };
	uint64_t *first = rmap_first(&m->head[h]);

	CHECK_EQ_U64(rmap_count(&m->head[h]), m->size[h]);
	CHECK_EQ_U64(rmap_for_each(&m->head[h], check_member, &w), m->size[h]);
	CHECK_EQ_U64(w.calls, m->size[h]);
	CHECK_EQ_U64(w.bad, 0);
	CHECK(m->size[h] ? first != NULL : first == NULL);
	CHECK(!(m->head[h] & RMAP_LOCKED));
}

/* Random operations on HEADS heads; every few hundred steps the layout of new
 * chains changes when `switch_layouts`. */
static void run_model(int layout, bool by_backref, bool switch_layouts, uint64_t seed)
{
	struct model *m = calloc(1, sizeof *m);
	struct rng rng = rng_seeded(seed);

	mmu_config.rmap_desc = layout;
	mmu_config.rmap_backref = by_backref;
	m->tables = tables_alloc((SPTES + RMAP_BACKREF_DISTANCE - 1) / RMAP_BACKREF_DISTANCE);
	for (unsigned i = 0; i < SPTES; i++)
		m->owner[i] = -1;
	for (int step = 0; step < 40000; step++) {
		unsigned i = (unsigned)rng_below(&rng, SPTES);
		int h = (int)rng_below(&rng, HEADS);
		uint64_t *sptep = spte_at(m->tables, i);

		if (switch_layouts && step % 500 == 0)
			mmu_config.rmap_desc = (int)rng_below(&rng, RMAP_DESC_KINDS);
		if (m->owner[i] < 0) {
			/* Heads 0-3 grow long (hundreds), the others stay short. */
			if (h >= 4 && m->size[h] >= 1 + rng_below(&rng, 6))
				continue;
			CHECK_EQ_U64(rmap_add(&m->head[h], sptep), m->size[h] + 1);
			m->owner[i] = h;
			m->size[h]++;
		} else {
			h = m->owner[i];
			/* A foreign SPTE is refused by a head that does not hold it (by
			 * scan; a back-reference assumes membership). */
			if (!by_backref) {
				int other = (h + 1) % HEADS;

				CHECK(!rmap_remove(&m->head[other], sptep));
			}
			CHECK(rmap_remove(&m->head[h], sptep));
			m->owner[i] = -1;
			m->size[h]--;
		}
		check_head(m, h);
	}
	for (int h = 0; h < HEADS; h++)
		check_head(m, h);
	/* Drain, then nothing may be left allocated. */
	for (unsigned i = 0; i < SPTES; i++)
		if (m->owner[i] >= 0) {
			CHECK(rmap_remove(&m->head[m->owner[i]], spte_at(m->tables, i)));
			m->size[m->owner[i]]--;
			m->owner[i] = -1;
		}
	for (int h = 0; h < HEADS; h++)
		CHECK_EQ_U64(m->head[h], 0);
	CHECK_EQ_U64(rmap_descs_in_use(), 0);
	free(m->tables);
	free(m);
	mmu_config.rmap_desc = RMAP_DESC_COUNTED;
	mmu_config.rmap_backref = true;
}

TEST(rmap_model_ext3)
{
	rmap_env();
	run_model(RMAP_DESC_EXT3, false, false, 1);
}

TEST(rmap_model_ext14)
{
	rmap_env();
	run_model(RMAP_DESC_EXT14, false, false, 2);
}

TEST(rmap_model_counted_backref)
{
	rmap_env();
	run_model(RMAP_DESC_COUNTED, true, false, 3);
}

TEST(rmap_model_counted_scan)
{
	rmap_env();
	run_model(RMAP_DESC_COUNTED, false, false, 4);
}

TEST(rmap_model_layout_switched_while_chains_live)
{
	rmap_env();
	run_model(RMAP_DESC_EXT3, true, true, 5);
}

/* The shapes the layouts promise, seen from outside: a single SPTE sits in the
 * head; a counted chain shrinks back into the head; a plain chain keeps its
 * descriptor until empty (KVM's behaviour); descriptor sizes. */
TEST(rmap_head_encoding)
{
	uint64_t *t = tables_alloc(1);

	rmap_env();
	for (int k = 0; k < RMAP_DESC_KINDS; k++) {
		uint64_t head = 0;

		mmu_config.rmap_desc = k;
		CHECK_EQ_U64(rmap_add(&head, spte_at(t, 0)), 1);
		CHECK_EQ_U64(head, (uintptr_t)spte_at(t, 0));
		CHECK_EQ_U64(rmap_add(&head, spte_at(t, 1)), 2);
		CHECK(head & RMAP_MANY);
		CHECK_EQ_U64((head & RMAP_KIND_MASK) >> RMAP_KIND_SHIFT, (uint64_t)k);
		CHECK_EQ_U64(rmap_descs_in_use(), 1);
		CHECK(rmap_remove(&head, spte_at(t, 0)));
		if (k == RMAP_DESC_COUNTED) {
			CHECK_EQ_U64(head, (uintptr_t)spte_at(t, 1));
			CHECK_EQ_U64(rmap_descs_in_use(), 0);
		} else {
			CHECK(head & RMAP_MANY);
		}
		CHECK(!rmap_remove(&head, spte_at(t, 0)));
		CHECK(rmap_remove(&head, spte_at(t, 1)));
		CHECK_EQ_U64(head, 0);
		CHECK_EQ_U64(rmap_descs_in_use(), 0);
	}
	CHECK_EQ_U64(rmap_desc_bytes(RMAP_DESC_EXT3), 32);
	CHECK_EQ_U64(rmap_desc_bytes(RMAP_DESC_EXT14), 128);
	CHECK_EQ_U64(rmap_desc_bytes(RMAP_DESC_COUNTED), 128);
	mmu_config.rmap_desc = RMAP_DESC_COUNTED;
	free(t);
}

/* A counted chain's descriptors are full but for the newest and the oldest
 * (each holding one entry at least): n entries take ceil(n / EXT) to
 * (n - 2) / EXT + 2 of them; growing only, ceil((n - 2) / EXT) + 1. */
static void check_counted_descs(unsigned n)
{
	uint64_t descs = rmap_descs_in_use();

	if (n < 2) {
		CHECK_EQ_U64(descs, 0);
		return;
	}
	CHECK(descs >= (n + RMAP_COUNTED_EXT - 1) / RMAP_COUNTED_EXT);
	CHECK(descs <= (n - 2) / RMAP_COUNTED_EXT + 2);
}

TEST(rmap_counted_descriptors_stay_full)
{
	uint64_t *t = tables_alloc(2);
	uint64_t head = 0;
	struct rng rng = rng_seeded(9);

	rmap_env();
	for (unsigned i = 0; i < 1000; i++) {
		rmap_add(&head, spte_at(t, i));
		CHECK_EQ_U64(rmap_descs_in_use(), i ? (i + RMAP_COUNTED_EXT) / RMAP_COUNTED_EXT : 0);
	}
	for (unsigned n = 1000; n > 0; n--) {
		/* Remove a random member: find one by the walk order. */
		unsigned skip = (unsigned)rng_below(&rng, n);
		uint64_t *victim = NULL;

		for (unsigned i = 0; i < 1000 && !victim; i++) {
			uint64_t *s = spte_at(t, i);

			if (*rmap_backref(s) && **rmap_backref(s) == s && skip-- == 0)
				victim = s;
		}
		if (!victim) /* the last one lives in the head, no back-reference */
			victim = rmap_first(&head);
		CHECK(rmap_remove(&head, victim));
		*rmap_backref(victim) = NULL;
		CHECK_EQ_U64(rmap_count(&head), n - 1);
		check_counted_descs(n - 1);
	}
	CHECK_EQ_U64(head, 0);
	free(t);
}

struct walk_order {
	uint64_t *seen[RMAP_COUNTED_EXT];
	unsigned n;
};

static void note_first_entries(uint64_t *sptep, void *ctx)
{
	struct walk_order *w = ctx;

	if (w->n < RMAP_COUNTED_EXT)
		w->seen[w->n++] = sptep;
}

/* A counted chain is walked (and, with the back-reference off, scanned) from
 * its oldest entries: removing SPTEs in the order they came, as clones torn
 * down oldest first do, finds each in the first descriptor scanned. */
TEST(rmap_counted_scan_starts_at_oldest)
{
	uint64_t *t = tables_alloc(1);
	uint64_t head = 0;
	const unsigned n = 100;

	rmap_env();
	mmu_config.rmap_backref = false;
	for (unsigned i = 0; i < n; i++)
		rmap_add(&head, spte_at(t, i));
	for (unsigned i = 0; i + 1 < n; i++) {
		struct walk_order w = { .n = 0 };
		bool next_seen = false;

		rmap_for_each(&head, note_first_entries, &w);
		for (unsigned k = 0; k < w.n; k++)
			next_seen |= w.seen[k] == spte_at(t, i);
		CHECK(next_seen);
		CHECK(rmap_remove(&head, spte_at(t, i)));
		check_counted_descs(n - 1 - i);
	}
	CHECK(rmap_remove(&head, spte_at(t, n - 1)));
	CHECK_EQ_U64(head, 0);
	mmu_config.rmap_backref = true;
	free(t);
}

TEST(rmap_histogram_buckets)
{
	static const unsigned sizes[] = { 0, 1, 2, 3, 4, 7, 8, 511, 512, 1023, 1024, 100000 };
	static const unsigned buckets[] = { 0, 1, 2, 2, 3, 3, 4, 9, 10, 10, 11, 11 };

	for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
		CHECK_EQ_U64(rmap_hist_bucket(sizes[i]), buckets[i]);
}

/* Threads stand for VMs that map the same frames at once (clones): each adds
 * and removes its own SPTEs on shared heads, and counts them, with only the
 * heads' bit locks between them. Every thread checks at the end that each of
 * its SPTEs is where it left it; the totals must add up. */
#define CONC_THREADS 4
#define CONC_HEADS 8
#define CONC_SPTES 600 /* per thread */
#define CONC_OPS 20000

struct conc_rmap {
	uint64_t head[CONC_HEADS];
	uint64_t *tables[CONC_THREADS];
	int owner[CONC_THREADS][CONC_SPTES];
	unsigned failures[CONC_THREADS];
};

struct conc_arg {
	struct conc_rmap *c;
	int id;
};

static void *conc_rmap_thread(void *p)
{
	struct conc_arg *a = p;
	struct conc_rmap *c = a->c;
	struct rng rng = rng_seeded(77 + (uint64_t)a->id); /* this thread's own */
	int *owner = c->owner[a->id];

	for (unsigned i = 0; i < CONC_SPTES; i++)
		owner[i] = -1;
	for (int op = 0; op < CONC_OPS; op++) {
		unsigned i = (unsigned)rng_below(&rng, CONC_SPTES);
		uint64_t *sptep = spte_at(c->tables[a->id], i);
		int h = (int)rng_below(&rng, CONC_HEADS);

		if (owner[i] < 0) {
			if (!rmap_add(&c->head[h], sptep))
				c->failures[a->id]++;
			owner[i] = h;
		} else {
			if (!rmap_remove(&c->head[owner[i]], sptep))
				c->failures[a->id]++;
			owner[i] = -1;
		}
		if (op % 64 == 0 && rmap_count(&c->head[h]) > CONC_THREADS * CONC_SPTES)
			c->failures[a->id]++;
	}
	return NULL;
}

static void conc_run(int layout)
{
	struct conc_rmap *c = calloc(1, sizeof *c);
	pthread_t th[CONC_THREADS];
	struct conc_arg args[CONC_THREADS];
	unsigned expected[CONC_HEADS] = { 0 };

	rmap_env();
	mmu_config.rmap_desc = layout;
	for (int t = 0; t < CONC_THREADS; t++) {
		c->tables[t] = tables_alloc(2);
		args[t] = (struct conc_arg){ c, t };
		pthread_create(&th[t], NULL, conc_rmap_thread, &args[t]);
	}
	for (int t = 0; t < CONC_THREADS; t++)
		pthread_join(th[t], NULL);
	for (int t = 0; t < CONC_THREADS; t++) {
		CHECK_EQ_U64(c->failures[t], 0);
		for (unsigned i = 0; i < CONC_SPTES; i++)
			if (c->owner[t][i] >= 0)
				expected[c->owner[t][i]]++;
	}
	for (int h = 0; h < CONC_HEADS; h++)
		CHECK_EQ_U64(rmap_count(&c->head[h]), expected[h]);
	for (int t = 0; t < CONC_THREADS; t++) {
		for (unsigned i = 0; i < CONC_SPTES; i++)
			if (c->owner[t][i] >= 0)
				CHECK(rmap_remove(&c->head[c->owner[t][i]], spte_at(c->tables[t], i)));
		free(c->tables[t]);
	}
	CHECK_EQ_U64(rmap_descs_in_use(), 0);
	free(c);
	mmu_config.rmap_desc = RMAP_DESC_COUNTED;
}

TEST(conc_rmap_shared_heads_counted)
{
	conc_run(RMAP_DESC_COUNTED);
}

TEST(conc_rmap_shared_heads_ext3)
{
	conc_run(RMAP_DESC_EXT3);
}
