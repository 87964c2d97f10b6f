/* Every long walk under the write lock yields through tdp_cond_yield: a
 * reader that asks for mmu_lock while the walk runs gets it within
 * YIELD_BOUND SPTE visits of the walk (counted through mmu->walk_visits,
 * which the walk publishes at each entry). One test per walk: a zap, dirty
 * logging's write protection (enable and get), eager splitting, and a
 * clone's write protection of its parent. conc_: also run under
 * ThreadSanitizer. */
#define _GNU_SOURCE /* RUSAGE_THREAD */
#include "check.h"
#include "mm/mmu_config.h"
#include "mm/mmu_internal.h"
#include "mm/tdp_mmu.h"
#include "mm/cow.h"
#include "svm/npt.h"
#include "tests/unit/host_mem.h"
#include "tests/unit/mmu_check.h"
#include <pthread.h>
#include <stdlib.h>
#include <sys/resource.h>

#define MiB (1ull << 20)
#define SLOT_SIZE (512 * MiB)
#define YIELD_BOUND 4096

static void no_flush(void *ctx)
{
	(void)ctx;
}

struct latency {
	struct mmu *mmu;
	uint32_t running;   /* the reader has started */
	uint32_t done;      /* the walk returned */
	uint64_t grants;    /* read locks granted while the walk held the lock */
	uint64_t max_visits; /* the most walk visits between a request and its grant */
	uint64_t preempted; /* grants not measured: the reader lost its CPU */
	uint64_t first_grant; /* the walk's published visits at the earliest grant */
};

/* The reader's context switches so far. */
static long switches(void)
{
	struct rusage r;

	getrusage(RUSAGE_THREAD, &r);
	return r.ru_nvcsw + r.ru_nivcsw;
}

static void *reader(void *arg)
{
	struct latency *l = arg;
	struct mmu *mmu = l->mmu;

	__atomic_store_n(&l->running, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&l->done, __ATOMIC_ACQUIRE)) {
		uint64_t v0, v1;
		long sw;

		/* Ask only while the walk holds the lock. */
		if (!rwlock_held_write(&mmu->lock) ||
		    !__atomic_load_n(&mmu->walk_visits, __ATOMIC_RELAXED)) {
			cpu_relax();
			continue;
		}
		sw = switches();
		v0 = __atomic_load_n(&mmu->walk_visits, __ATOMIC_RELAXED);
		read_lock(&mmu->lock);
		v1 = __atomic_load_n(&mmu->walk_visits, __ATOMIC_RELAXED);
		read_unlock(&mmu->lock);
		if (!l->grants++ || v1 < l->first_grant)
			l->first_grant = v1;
		/* Descheduled between reading v0 and asking, the reader would
		 * count visits the walk made while nobody asked: the host's
		 * scheduler, not the walk's yielding. */
		if (switches() != sw)
			l->preempted++;
		else if (v1 > v0 && v1 - v0 > l->max_visits)
			l->max_visits = v1 - v0;
		/* Let the walk go on a little before asking again. */
		for (int i = 0; i < 200; i++)
			cpu_relax();
	}
	return NULL;
}

static struct latency *start(struct mmu *mmu, pthread_t *t)
{
	static struct latency l;

	l = (struct latency){ .mmu = mmu };
	__atomic_store_n(&mmu->walk_visits, 0, __ATOMIC_RELAXED);
	pthread_create(t, NULL, reader, &l);
	while (!__atomic_load_n(&l.running, __ATOMIC_ACQUIRE))
		cpu_relax();
	return &l;
}

static struct mmu_config saved;

/* A slot of SLOT_SIZE at 0, every page mapped (at 4 KiB unless huge). */
static void setup(struct mmu *mmu, bool huge)
{
	struct memslot_config slot = { .gpa = 0, .size = SLOT_SIZE,
				       .flags = huge ? 0 : MEMSLOT_NO_HUGE,
				       .backing = { .kind = BACKING_EAGER } };

	saved = mmu_config;
	mmu_config.prefetch = PREFETCH_FORWARD;
	mmu_config.prefetch_adaptive = false;
	mmu_config.nx_huge_pages = NX_HUGE_OFF;
	host_mem_init(1024 * MiB);
	if (mmu_init(mmu, &npt_format, no_flush, NULL) || mmu_slot_add(mmu, &slot))
		abort();
	for (uint64_t gpa = 0; gpa < SLOT_SIZE; gpa += huge ? 2 * MiB : 4096) {
		int res = tdp_map(mmu, gpa, TDP_ACC_READ | TDP_ACC_WRITE);

		if (res != TDP_FIXED && res != TDP_SPURIOUS) /* prefetched */
			abort();
	}
}

static void teardown(struct mmu *mmu)
{
	CHECK(mmu_audit_passes(mmu));
	mmu_destroy(mmu);
	mmu_config = saved;
}

/* One walk under test: prepare (not measured) and walk run on a fresh
 * setup(); walk checks what the walk did; cleanup, after the reader left,
 * frees what the walk made. */
struct yield_walk {
	const char *name;
	bool huge;
	void (*prepare)(struct mmu *mmu);
	void (*walk)(struct mmu *mmu);
	void (*cleanup)(void);
};

/* A short walk on a loaded host can lose the reader its CPU at every grant:
 * the walk then runs again, on a fresh set-up, until a grant is measured.
 * Whatever the load, a grant before the walk's last published visit shows
 * that the walk yielded; a walk that never yields grants only at its end. */
#define WALK_ATTEMPTS 20

static void measure_walk(const struct yield_walk *w)
{
	uint64_t grants = 0, preempted = 0, max_visits = 0, mid_walk = 0;
	int attempt;

	for (attempt = 0; attempt < WALK_ATTEMPTS && grants == preempted; attempt++) {
		struct latency *l;
		struct mmu mmu;
		pthread_t t;

		setup(&mmu, w->huge);
		if (w->prepare)
			w->prepare(&mmu);
		l = start(&mmu, &t);
		w->walk(&mmu);
		__atomic_store_n(&l->done, 1, __ATOMIC_RELEASE);
		pthread_join(t, NULL);
		if (w->cleanup)
			w->cleanup();
		if (l->grants && l->first_grant < __atomic_load_n(&mmu.walk_visits, __ATOMIC_RELAXED))
			mid_walk++;
		grants += l->grants;
		preempted += l->preempted;
		if (l->max_visits > max_visits)
			max_visits = l->max_visits;
		teardown(&mmu);
	}
	printf("  %s: %llu grants during the walk in %d runs (%llu with the reader descheduled, "
	       "not measured; %llu runs granted before the walk's end), at most %llu visits "
	       "from request to grant%s\n", w->name, (unsigned long long)grants, attempt,
	       (unsigned long long)preempted, (unsigned long long)mid_walk,
	       (unsigned long long)max_visits,
	       grants > preempted ? "" : " (none measured: the host is too busy)");
	CHECK(mid_walk > 0);
	CHECK(max_visits <= YIELD_BOUND);
}

static void zap_walk(struct mmu *mmu)
{
	write_lock(&mmu->lock);
	if (tdp_zap_range(mmu, 0, SLOT_SIZE >> 12))
		mmu_flush_tlb(mmu);
	write_unlock(&mmu->lock);
	CHECK_EQ_U64(mmu->stats.pages_4k, 0);
}

TEST(conc_yield_zap)
{
	measure_walk(&(struct yield_walk){ .name = "zap", .walk = zap_walk });
}

static void dirty_log_enable(struct mmu *mmu)
{
	mmu_config.eager_page_split = false;
	CHECK(mmu_dirty_log_enable(mmu, 0, true) == 0);
}

static void dirty_log_enable_and_dirty(struct mmu *mmu)
{
	dirty_log_enable(mmu);
	for (uint64_t gpa = 0; gpa < SLOT_SIZE; gpa += 4096)
		mmu_cpu_sets_dirty(mmu, gpa);
}

static void dirty_log_get(struct mmu *mmu)
{
	uint64_t *bits = calloc(SLOT_SIZE >> 18, 8);

	CHECK(mmu_dirty_log_get(mmu, 0, bits) >= 0);
	free(bits);
}

TEST(conc_yield_dirty_log)
{
	measure_walk(&(struct yield_walk){ .name = "dirty log enable", .walk = dirty_log_enable });
	measure_walk(&(struct yield_walk){ .name = "dirty log get",
					   .prepare = dirty_log_enable_and_dirty,
					   .walk = dirty_log_get });
}

static void eager_split(struct mmu *mmu)
{
	REQUIRE(mmu->stats.pages_2m == SLOT_SIZE / (2 * MiB));
	mmu_config.eager_page_split = true;
	CHECK(mmu_dirty_log_enable(mmu, 0, true) == 0);
	CHECK_EQ_U64(mmu->stats.pages_2m, 0);
	CHECK_EQ_U64(mmu->stats.huge_page_splits_eager, SLOT_SIZE / (2 * MiB));
}

TEST(conc_yield_eager_split)
{
	measure_walk(&(struct yield_walk){ .name = "eager split", .huge = true, .walk = eager_split });
}

static struct mmu clone_child;

static void clone_walk(struct mmu *parent)
{
	parent->share.id = 1;
	REQUIRE(mmu_init(&clone_child, &npt_format, no_flush, NULL) == 0);
	clone_child.share.id = 2;
	CHECK(mmu_clone(parent, &clone_child) == 0);
}

static void clone_destroy(void)
{
	CHECK(mmu_audit_passes(&clone_child));
	mmu_destroy(&clone_child);
}

TEST(conc_yield_clone)
{
	measure_walk(&(struct yield_walk){ .name = "clone write protection",
					   .walk = clone_walk, .cleanup = clone_destroy });
}

/* The flushes of a walk that yields at every chance (a waiter that never
 * leaves): each comes just before a yield, so the visits published between
 * two of them bound the work a real waiter could wait through. */
static uint64_t last_flush_visits, max_flush_gap;

static void gap_flush(void *ctx)
{
	struct mmu *mmu = ctx;
	uint64_t v = __atomic_load_n(&mmu->walk_visits, __ATOMIC_RELAXED);

	if (last_flush_visits && v - last_flush_visits > max_flush_gap)
		max_flush_gap = v - last_flush_visits;
	last_flush_visits = v;
}

/* Freeing tables: a slot covering a whole 1 GiB region, a page mapped in
 * each 2 MiB of it, goes. Removed at once, its level-3 entry would take 512
 * leaf tables with it in one step (262,656 visits); bottom up, each step
 * removes one table. */
TEST(yield_free_tables_bottom_up)
{
	struct memslot_config slot = { .gpa = 1024 * MiB, .size = 1024 * MiB,
				       .flags = MEMSLOT_NO_HUGE,
				       .backing = { .kind = BACKING_LAZY } };
	struct mmu mmu;

	saved = mmu_config;
	mmu_config.prefetch = PREFETCH_OFF;
	host_mem_init(64 * MiB);
	REQUIRE(mmu_init(&mmu, &npt_format, gap_flush, &mmu) == 0);
	REQUIRE(mmu_slot_add(&mmu, &slot) == 0);
	for (uint64_t gpa = slot.gpa; gpa < slot.gpa + slot.size; gpa += 2 * MiB)
		REQUIRE(tdp_map(&mmu, gpa, TDP_ACC_READ) == TDP_FIXED);
	REQUIRE(mmu.stats.pages_4k == 512);
	last_flush_visits = max_flush_gap = 0;
	mmu.lock.waiters = 1;
	CHECK(mmu_slot_remove(&mmu, slot.gpa) == 0);
	mmu.lock.waiters = 0;
	printf("  slot removal: at most %llu visits between two yields\n",
	       (unsigned long long)max_flush_gap);
	CHECK(max_flush_gap > 0 && max_flush_gap <= YIELD_BOUND);
	CHECK_EQ_U64(mmu.stats.pages_4k, 0);
	CHECK_EQ_U64(mmu.stats.mmu_tables, 2); /* the root, and the level-3 table of [0, 512G) */
	teardown(&mmu);
}

static void discard_walk(struct mmu *mmu)
{
	mmu_discard(mmu, 0, SLOT_SIZE);
	CHECK_EQ_U64(mmu->stats.pages_4k, 0);
}

TEST(conc_yield_discard)
{
	measure_walk(&(struct yield_walk){ .name = "discard", .walk = discard_walk });
}

/* Discard's per-page loops (reclaim of a clone's mappings through the rmaps,
 * then the drop of the backing) yield too. They publish no SPTE visits, so
 * the waiter measures their own progress: the clone's leaves reclaimed plus
 * the parent's pages dropped between its request and its grant. */
struct page_latency {
	struct mmu *parent, *child;
	uint32_t running, done;
	uint64_t grants, max_pages;
};

static uint64_t pages_left(struct page_latency *l)
{
	return stat_read(&l->child->stats.pages_4k) +
	       __atomic_load_n(&l->parent->slots.slot[0].backing.resident, __ATOMIC_RELAXED);
}

static void *page_reader(void *arg)
{
	struct page_latency *l = arg;

	__atomic_store_n(&l->running, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&l->done, __ATOMIC_ACQUIRE)) {
		uint64_t p0, p1;

		if (!rwlock_held_write(&l->parent->lock)) {
			cpu_relax();
			continue;
		}
		p0 = pages_left(l);
		read_lock(&l->parent->lock);
		p1 = pages_left(l);
		read_unlock(&l->parent->lock);
		l->grants++;
		if (p0 > p1 && p0 - p1 > l->max_pages)
			l->max_pages = p0 - p1;
		for (int i = 0; i < 200; i++)
			cpu_relax();
	}
	return NULL;
}

TEST(conc_yield_discard_reclaim)
{
	struct memslot_config slot = { .gpa = 0, .size = 128 * MiB,
				       .backing = { .kind = BACKING_LAZY } };
	static struct page_latency l;
	struct mmu parent, child;
	pthread_t t;

	saved = mmu_config;
	mmu_config.prefetch = PREFETCH_OFF;
	host_mem_init(1024 * MiB);
	REQUIRE(mmu_init(&parent, &npt_format, no_flush, NULL) == 0);
	REQUIRE(mmu_slot_add(&parent, &slot) == 0);
	parent.share.id = 1;
	for (uint64_t gpa = 0; gpa < slot.size; gpa += 4096)
		REQUIRE(tdp_map(&parent, gpa, TDP_ACC_READ | TDP_ACC_WRITE) == TDP_FIXED);
	REQUIRE(mmu_init(&child, &npt_format, no_flush, NULL) == 0);
	child.share.id = 2;
	REQUIRE(mmu_clone(&parent, &child) == 0);
	for (uint64_t gpa = 0; gpa < slot.size; gpa += 4096)
		REQUIRE(tdp_map(&child, gpa, TDP_ACC_READ) == TDP_FIXED);
	l = (struct page_latency){ .parent = &parent, .child = &child };
	pthread_create(&t, NULL, page_reader, &l);
	while (!__atomic_load_n(&l.running, __ATOMIC_ACQUIRE))
		cpu_relax();
	mmu_discard(&parent, 0, slot.size);
	__atomic_store_n(&l.done, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	printf("  discard's reclaim and drop: %llu grants, at most %llu pages from request to grant\n",
	       (unsigned long long)l.grants, (unsigned long long)l.max_pages);
	CHECK(l.grants > 0);
	CHECK(l.max_pages <= YIELD_BOUND);
	CHECK_EQ_U64(child.stats.pages_4k, 0);
	CHECK(mmu_audit_passes(&child));
	mmu_destroy(&child);
	teardown(&parent);
}
