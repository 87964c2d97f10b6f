/* The mmu_lock wait statistics: the log-linear histogram's percentiles, max
 * and reset; every acquisition counted (faults twice: in the read waits and
 * in their own histogram); and a wait behind a writer measured as long as
 * the writer held the lock. conc_: also run under ThreadSanitizer. */
#include "check.h"
#include "mm/mmu_config.h"
#include "mm/mmu_internal.h"
#include "mm/tdp_mmu.h"
#include "svm/npt.h"
#include "tests/unit/host_mem.h"
#include <pthread.h>
#include <string.h>

#define MiB (1ull << 20)
#define HOLD_CYCLES 2000000ull

static void no_flush(void *ctx)
{
	(void)ctx;
}

TEST(latency_hist_percentiles)
{
	static struct latency_hist h;

	memset(&h, 0, sizeof(h));
	CHECK_EQ_U64(latency_percentile(&h, 500), 0);
	/* 1000 records of 100, 200, ... 100000 cycles. */
	for (uint64_t i = 1; i <= 1000; i++)
		latency_record(&h, i * 100);
	CHECK_EQ_U64(h.count, 1000);
	CHECK_EQ_U64(h.max, 100000);
	/* Within a bucket's width (1/LATENCY_SUB) of the true value. */
	CHECK(latency_percentile(&h, 500) >= 50000 - 50000 / LATENCY_SUB &&
	      latency_percentile(&h, 500) <= 50000 + 50000 / LATENCY_SUB);
	CHECK(latency_percentile(&h, 990) >= 99000 - 99000 / LATENCY_SUB &&
	      latency_percentile(&h, 990) <= 99000 + 99000 / LATENCY_SUB);
	CHECK(latency_percentile(&h, 999) >= latency_percentile(&h, 990));
	/* Zeros count: they pull the median down to the first bucket. */
	for (int i = 0; i < 2000; i++)
		latency_record(&h, 0);
	CHECK(latency_percentile(&h, 500) < LATENCY_SUB * 2);
	latency_reset(&h);
	CHECK_EQ_U64(h.count, 0);
	CHECK_EQ_U64(h.max, 0);
	CHECK_EQ_U64(latency_percentile(&h, 999), 0);
}

TEST(lock_wait_every_acquisition)
{
	struct memslot_config slot = { .gpa = 0, .size = 4 * MiB,
				       .flags = MEMSLOT_NO_HUGE,
				       .backing = { .kind = BACKING_LAZY } };
	struct mmu_config saved = mmu_config;
	uint64_t reads, writes;
	struct mmu mmu;

	mmu_config.prefetch = PREFETCH_OFF;
	host_mem_init(64 * MiB);
	REQUIRE(mmu_init(&mmu, &npt_format, no_flush, NULL) == 0);
	REQUIRE(mmu_slot_add(&mmu, &slot) == 0);
	reads = mmu.stats.lock_read_wait.count;
	writes = mmu.stats.lock_write_wait.count;
	for (uint64_t gpa = 0; gpa < slot.size; gpa += 4096)
		REQUIRE(tdp_map(&mmu, gpa, TDP_ACC_READ) == TDP_FIXED);
	/* A fault outside every slot takes no mmu_lock and records nothing. */
	CHECK(tdp_map(&mmu, 64 * MiB, TDP_ACC_READ) == TDP_NO_SLOT);
	CHECK_EQ_U64(mmu.stats.fault_wait.count, slot.size / 4096);
	CHECK_EQ_U64(mmu.stats.lock_read_wait.count - reads, slot.size / 4096);
	mmu_zap(&mmu, 0, slot.size);
	CHECK_EQ_U64(mmu.stats.lock_write_wait.count - writes, 1);
	mmu_fault_waits_reset(&mmu);
	CHECK_EQ_U64(mmu_fault_waits(&mmu)->count, 0);
	CHECK_EQ_U64(mmu.stats.lock_read_wait.count - reads, slot.size / 4096);
	mmu_destroy(&mmu);
	mmu_config = saved;
}

struct holder {
	struct mmu *mmu;
	uint32_t locked;
};

/* Takes the write lock, and once a reader waits, keeps it HOLD_CYCLES more. */
static void *hold_write(void *arg)
{
	struct holder *h = arg;
	uint64_t start;

	write_lock(&h->mmu->lock);
	__atomic_store_n(&h->locked, 1, __ATOMIC_RELEASE);
	while (!rwlock_contended(&h->mmu->lock))
		cpu_relax();
	start = latency_clock();
	while (latency_clock() - start < HOLD_CYCLES)
		cpu_relax();
	write_unlock(&h->mmu->lock);
	return NULL;
}

TEST(conc_lock_wait_behind_writer)
{
	struct memslot_config slot = { .gpa = 0, .size = 2 * MiB,
				       .backing = { .kind = BACKING_LAZY } };
	struct mmu mmu;
	struct holder h = { &mmu, 0 };
	const struct latency_hist *w = mmu_fault_waits(&mmu);
	pthread_t t;

	host_mem_init(64 * MiB);
	REQUIRE(mmu_init(&mmu, &npt_format, no_flush, NULL) == 0);
	REQUIRE(mmu_slot_add(&mmu, &slot) == 0);
	pthread_create(&t, NULL, hold_write, &h);
	while (!__atomic_load_n(&h.locked, __ATOMIC_ACQUIRE))
		cpu_relax();
	CHECK(tdp_map(&mmu, 0, TDP_ACC_READ) == TDP_FIXED);
	pthread_join(t, NULL);
	printf("  fault waited %llu cycles behind a writer holding %llu after it asked\n",
	       (unsigned long long)w->max, HOLD_CYCLES);
	CHECK_EQ_U64(w->count, 1);
	CHECK(w->max >= HOLD_CYCLES);
	CHECK(latency_percentile(w, 999) >= HOLD_CYCLES - HOLD_CYCLES / LATENCY_SUB);
	CHECK(latency_percentile(&mmu.stats.lock_read_wait, 999) >= HOLD_CYCLES - HOLD_CYCLES / LATENCY_SUB);
	mmu_destroy(&mmu);
}

/* A TLB flush that takes HOLD_CYCLES: the zap waits for it under the lock. */
static void slow_flush(void *ctx)
{
	uint64_t start = latency_clock();

	(void)ctx;
	while (latency_clock() - start < HOLD_CYCLES)
		cpu_relax();
}

/* mmu_zap's hold: one record a zap, its TLB flush inside (the walk's own
 * time, zap_latency, ends before the flush). */
TEST(zap_hold_includes_flush)
{
	struct memslot_config slot = { .gpa = 0, .size = 4 * MiB,
				       .flags = MEMSLOT_NO_HUGE,
				       .backing = { .kind = BACKING_LAZY } };
	const struct latency_hist *hold;
	struct mmu mmu;

	host_mem_init(64 * MiB);
	REQUIRE(mmu_init(&mmu, &npt_format, slow_flush, NULL) == 0);
	REQUIRE(mmu_slot_add(&mmu, &slot) == 0);
	hold = &mmu.zap_stats.zap_hold;
	REQUIRE(tdp_map(&mmu, 0, TDP_ACC_READ) == TDP_FIXED);
	mmu_zap(&mmu, 0, slot.size);
	CHECK_EQ_U64(hold->count, 1);
	CHECK(hold->max >= HOLD_CYCLES);
	CHECK(mmu.zap_stats.zap_latency.max < HOLD_CYCLES);
	/* Nothing mapped: no flush, a short hold, still counted. */
	mmu_zap(&mmu, 0, slot.size);
	CHECK_EQ_U64(hold->count, 2);
	CHECK(latency_percentile(hold, 500) < HOLD_CYCLES / 2);
	mmu_destroy(&mmu);
}
