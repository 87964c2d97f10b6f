/* The count-based targets of docs/targets.md, asserted: figures that do not
 * depend on timing (faults, entries read, hint checks), on small VMs, each
 * compared with the table's figure and test (tests/targets.c), so that a
 * change of the table or of the MMU that breaks a target fails here. The
 * time-based targets are judged by the benchmarks (make bench, make report).
 *
 * Not asserted here: rmap removal independent of chain length in operation
 * counts (mm/rmap.c keeps no operation counter; the benchmark judges it by
 * time, target rmap_remove_chain_growth). */
#include "check.h"
#include "mm/mmu_config.h"
#include "mm/mmu_internal.h"
#include "mm/tdp_mmu.h"
#include "svm/npt.h"
#include "tests/guest_access.h"
#include "tests/rng.h"
#include "tests/targets.h"
#include "tests/unit/host_mem.h"
#include <stdlib.h>

#define MiB (1ull << 20)
#define REGION_PAGES 512ull

static void no_flush(void *ctx)
{
	(void)ctx;
}

static struct zap_stats zap(struct mmu *mmu, uint64_t gpa, uint64_t len)
{
	struct zap_stats before = mmu->zap_stats, d = mmu->zap_stats;

	write_lock(&mmu->lock);
	if (tdp_zap_range(mmu, gpa >> 12, (gpa + len) >> 12))
		mmu_flush_tlb(mmu);
	write_unlock(&mmu->lock);
	d = mmu->zap_stats;
	d.zap_leaf_visits -= before.zap_leaf_visits;
	d.zap_hint_checks -= before.zap_hint_checks;
	return d;
}

/* Hint on: a zap of 16 MiB reads exactly 512 entries per leaf table that held
 * a mapping, and none in tables it emptied before; sweep1 makes no checks. */
TEST(targets_zap_leaf_visits_and_sweep1)
{
	const struct target *per_table = bench_target("zap_leaf_visits_per_table");
	const struct target *checks = bench_target("zap_sweep1_hint_checks");
	struct memslot_config slot = { .gpa = 0, .size = 32 * MiB, .flags = MEMSLOT_NO_HUGE,
				       .backing = { .kind = BACKING_EAGER } };
	struct mmu_config saved = mmu_config;
	static const uint64_t refault_regions[] = { 1, 4, 6 };
	struct zap_stats d;
	struct mmu mmu;

	host_mem_init(256 * MiB);
	mmu_config.prefetch = PREFETCH_OFF;
	mmu_config.leaf_hint = true;
	REQUIRE(!mmu_init(&mmu, &npt_format, no_flush, NULL) && !mmu_slot_add(&mmu, &slot));
	for (uint64_t p = 0; p < (16 * MiB) >> 12; p += 3)
		REQUIRE(tdp_map(&mmu, p << 12, TDP_ACC_WRITE) == TDP_FIXED);
	d = zap(&mmu, 0, 16 * MiB); /* 8 leaf tables held mappings */
	CHECK(target_met(per_table, (double)d.zap_leaf_visits / 8));
	for (unsigned i = 0; i < 3; i++)
		REQUIRE(tdp_map(&mmu, (refault_regions[i] * REGION_PAGES + 7) << 12,
				TDP_ACC_WRITE) == TDP_FIXED);
	d = zap(&mmu, 0, 16 * MiB); /* 3 refaulted, 5 skipped by their hint */
	CHECK(target_met(per_table, (double)d.zap_leaf_visits / 3));
	for (uint64_t p = 0; p < (32 * MiB) >> 12; p += 5)
		REQUIRE(tdp_map(&mmu, p << 12, TDP_ACC_WRITE) <= TDP_SPURIOUS);
	for (uint64_t off = 0; off < 32 * MiB; off += MiB) {
		d = zap(&mmu, off, MiB);
		CHECK(target_met(checks, (double)d.zap_hint_checks));
	}
	mmu_destroy(&mmu);
	mmu_config = saved;
}

/* One access; a fault that fails fails the test. */
static uint64_t touch(struct mmu *mmu, uint64_t gpa, unsigned access)
{
	int r = guest_access(mmu, gpa, access);

	CHECK(r >= 0);
	return r == 1;
}

/* Faults of the execute pass (writes == 0) or of dirty-log iteration 1 over
 * 16 MiB of 2 MiB-mapped memory (tests/bench/split_bench.c, smaller). */
static uint64_t split_faults(unsigned writes, bool split)
{
	struct memslot_config slot = { .gpa = 0, .size = 16 * MiB,
				       .backing = { .kind = BACKING_EAGER, .no_zero = true } };
	uint64_t faults = 0, i = 0;
	struct mmu mmu;

	mmu_config.prefetch = PREFETCH_OFF;
	mmu_config.nx_huge_pages = writes ? NX_HUGE_OFF : NX_HUGE_ON;
	mmu_config.split_on_fault = split;
	mmu_config.eager_page_split = false;
	if (mmu_init(&mmu, &npt_format, no_flush, NULL) || mmu_slot_add(&mmu, &slot)) {
		CHECK(!"no memory for the VM");
		return 0;
	}
	for (uint64_t a = 0; a < 16 * MiB; a += 4096)
		touch(&mmu, a, TDP_ACC_WRITE);
	CHECK(stat_read(&mmu.stats.pages_2m) == 8);
	if (writes)
		CHECK(!mmu_dirty_log_enable(&mmu, 0, true));
	for (uint64_t a = 0; a < 16 * MiB; a += 4096, i++)
		faults += touch(&mmu, a, !writes ? TDP_ACC_EXEC
					 : rng_mix(i + 1) % 100 < writes ? TDP_ACC_WRITE : TDP_ACC_READ);
	mmu_destroy(&mmu);
	return faults;
}

TEST(targets_split_fault_ratios)
{
	struct mmu_config saved = mmu_config;
	uint64_t off, on;

	host_mem_init(256 * MiB);
	off = split_faults(0, false);
	on = split_faults(0, true);
	CHECK(on && target_met(bench_target("split_exec_fault_ratio"), (double)off / (double)on));
	off = split_faults(5, false);
	on = split_faults(5, true);
	CHECK(on && target_met(bench_target("split_dirty5_fault_ratio"), (double)off / (double)on));
	off = split_faults(100, false);
	on = split_faults(100, true);
	CHECK(on &&
	      target_met(bench_target("split_dirty100_fault_ratio"), (double)off / (double)on));
	mmu_config = saved;
}

/* Faults touching 16 MiB restored in chunks, forward order. */
static uint64_t prefetch_faults(const uint8_t *image, uint32_t chunk_pages, int mode)
{
	struct memslot_config cfg = { .gpa = 0, .size = 16 * MiB,
				      .backing = { .kind = BACKING_RESTORE, .image = image,
						   .image_bytes = 16 * MiB,
						   .chunk_pages = chunk_pages } };
	uint64_t faults;
	struct mmu mmu;

	mmu_config.prefetch = mode;
	mmu_config.prefetch_adaptive = true;
	if (mmu_init(&mmu, &npt_format, no_flush, NULL) || mmu_slot_add(&mmu, &cfg)) {
		CHECK(!"no memory for the VM");
		return 0;
	}
	for (uint64_t a = 0; a < 16 * MiB; a += 4096) {
		unsigned rights;
		paddr_t hpa;
		int level;
		bool mapped;

		read_lock(&mmu.lock);
		mapped = tdp_translate(&mmu, a, &hpa, &level, &rights);
		read_unlock(&mmu.lock);
		if (!mapped)
			CHECK(tdp_map(&mmu, a, TDP_ACC_READ) == TDP_FIXED);
	}
	faults = stat_read(&mmu.stats.pf_taken);
	mmu_destroy(&mmu);
	return faults;
}

TEST(targets_prefetch_fault_ratios)
{
	struct mmu_config saved = mmu_config;
	uint8_t *image = calloc(16, MiB);
	uint64_t off, fwd;

	REQUIRE(image);
	host_mem_init(256 * MiB);
	off = prefetch_faults(image, 512, PREFETCH_OFF);
	fwd = prefetch_faults(image, 512, PREFETCH_FORWARD);
	CHECK(fwd && target_met(bench_target("prefetch_2m_fault_ratio"), (double)off / (double)fwd));
	off = prefetch_faults(image, 1, PREFETCH_OFF);
	fwd = prefetch_faults(image, 1, PREFETCH_FORWARD);
	CHECK(off && target_met(bench_target("prefetch_4k_fault_ratio"), (double)fwd / (double)off));
	free(image);
	mmu_config = saved;
}
