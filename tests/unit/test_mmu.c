/* TDP MMU tests: entry formats, the iterator's yield/resume, fault outcomes, huge
 * mappings, page-table memory, and long seeded random sequences of accesses,
 * zaps, discards and slot changes for each format, checked against a reference
 * model of gfn -> frame and contents, the model TLB, and the audit after every
 * step; a leak check at teardown. */
#include "check.h"
#include "mm/mmu_config.h"
#include "mm/mmu_internal.h"
#include "mm/tdp_mmu.h"
#include "mm/cow.h"
#include "svm/npt.h"
#include "tests/rng.h"
#include "tests/unit/host_mem.h"
#include "tests/unit/mmu_check.h"
#include "tests/unit/model_tlb.h"
#include "vmx/ept.h"
#include <stdlib.h>
#include <string.h>

#define GiB (1ull << 30)
#define MiB (1ull << 20)
#define KiB (1ull << 10)

static const struct spte_format *test_formats[3];

static void formats_init(void)
{
	test_formats[0] = &npt_format;
	test_formats[1] = ept_format(false);
	test_formats[2] = ept_format(true);
}

static uint64_t free_bytes(void)
{
	struct frame_stats st;

	frame_get_stats(&st);
	return st.free_bytes;
}

TEST(mmu_format_bits)
{
	const struct spte_format *npt = &npt_format, *ept = ept_format(false);
	const struct spte_format *ept_ad = ept_format(true);
	paddr_t pa = 0x12345000ull;

	CHECK_EQ_U64(spte_make_leaf(npt, pa, 1, TDP_ACC_ALL), pa | NPT_P | NPT_RW | NPT_US | NPT_A | NPT_D);
	CHECK_EQ_U64(spte_make_leaf(npt, 0x40000000ull, 3, TDP_ACC_READ | TDP_ACC_EXEC),
		     0x40000000ull | NPT_P | NPT_US | NPT_A | NPT_PS);
	CHECK_EQ_U64(spte_make_leaf(npt, pa, 1, TDP_ACC_READ), pa | NPT_P | NPT_US | NPT_A | NPT_NX);
	CHECK_EQ_U64(spte_make_table(npt, pa), pa | NPT_P | NPT_RW | NPT_US | NPT_A);
	CHECK_EQ_U64(spte_make_leaf(ept, pa, 1, TDP_ACC_ALL), pa | 7 | (6 << 3) | (1 << 6));
	CHECK_EQ_U64(spte_make_leaf(ept, 0x200000ull, 2, TDP_ACC_READ | TDP_ACC_EXEC),
		     0x200000ull | 5 | (6 << 3) | (1 << 6) | (1 << 7));
	CHECK_EQ_U64(spte_make_leaf(ept_ad, pa, 1, TDP_ACC_ALL), pa | 7 | (6 << 3) | (1 << 6) | (3 << 8));
	CHECK_EQ_U64(spte_make_table(ept, pa), pa | 7);
	CHECK_EQ_U64(spte_make_table(ept_ad, pa), pa | 7 | (1 << 8));
	CHECK_EQ_U64(npt->root_pointer(npt, pa), pa);
	CHECK_EQ_U64(ept->root_pointer(ept, pa), pa | 6 | (3 << 3));
	CHECK_EQ_U64(ept_ad->root_pointer(ept_ad, pa), pa | 6 | (3 << 3) | (1 << 6));
	for (int i = 0; i < 3; i++) {
		const struct spte_format *f = i == 0 ? npt : i == 1 ? ept : ept_ad;

		for (unsigned r = 0; r <= TDP_ACC_ALL; r++) {
			uint64_t s = spte_make_leaf(f, pa, 1, r | TDP_ACC_READ);

			CHECK(spte_present(f, s));
			CHECK_EQ_U64(spte_rights(f, s), r | TDP_ACC_READ);
			CHECK_EQ_U64(spte_addr(f, s), pa);
		}
		CHECK(!spte_present(f, SPTE_NONE));
		CHECK(spte_is_table(f, spte_make_table(f, pa), 2));
		CHECK(!spte_is_table(f, spte_make_leaf(f, pa, 2, TDP_ACC_ALL), 2));
	}
}

static void no_flush(void *ctx)
{
	(void)ctx;
}

static struct memslot_config slot_cfg(uint64_t gpa, uint64_t size, enum backing_kind kind)
{
	return (struct memslot_config){ .gpa = gpa, .size = size,
					.backing = { .kind = kind } };
}

TEST(mmu_fault_results)
{
	struct mmu mmu;
	uint64_t before;

	host_mem_init(1 * GiB);
	before = free_bytes();
	formats_init();
	for (int fi = 0; fi < 3; fi++) {
		struct memslot_config ro = slot_cfg(4 * MiB, 1 * MiB, BACKING_LAZY);

		ro.flags = MEMSLOT_READONLY;
		REQUIRE(mmu_init(&mmu, test_formats[fi], no_flush, NULL) == 0);
		REQUIRE(mmu_slot_add(&mmu, &(struct memslot_config){ 0 }) != 0);
		struct memslot_config rw = slot_cfg(0, 2 * MiB, BACKING_LAZY);
		REQUIRE(mmu_slot_add(&mmu, &rw) == 0);
		REQUIRE(mmu_slot_add(&mmu, &ro) == 0);
		rw.gpa = 1 * MiB;
		CHECK(mmu_slot_add(&mmu, &rw) != 0); /* overlaps */
		CHECK_EQ_U64(tdp_map(&mmu, 0x1000, TDP_ACC_READ), TDP_FIXED);
		CHECK_EQ_U64(tdp_map(&mmu, 0x1000, TDP_ACC_WRITE), TDP_SPURIOUS);
		CHECK_EQ_U64(tdp_map(&mmu, 3 * MiB, TDP_ACC_READ), TDP_NO_SLOT);
		CHECK_EQ_U64(tdp_map(&mmu, 4 * MiB, TDP_ACC_WRITE), TDP_PERMISSION);
		CHECK_EQ_U64(tdp_map(&mmu, 4 * MiB, TDP_ACC_EXEC), TDP_FIXED);
		mmu.invalidate_in_progress = 1;
		CHECK_EQ_U64(tdp_map(&mmu, 0x2000, TDP_ACC_READ), TDP_RETRY);
		mmu.invalidate_in_progress = 0;
		CHECK_EQ_U64(mmu.stats.pf_taken, 6);
		CHECK_EQ_U64(mmu.stats.pf_fixed, 2);
		CHECK_EQ_U64(mmu.stats.pages_4k, 2);
		CHECK_EQ_U64(mmu.stats.mmu_tables, 5);
		CHECK(mmu_audit_passes(&mmu));
		write_lock(&mmu.lock);
		CHECK(tdp_zap_range(&mmu, 1, 2));
		CHECK(!tdp_zap_range(&mmu, 1, 2));
		write_unlock(&mmu.lock);
		CHECK_EQ_U64(mmu.stats.pages_4k, 1);
		CHECK(mmu_audit_passes(&mmu));
		CHECK(mmu_slot_remove(&mmu, 4 * MiB) == 0);
		CHECK(mmu_slot_remove(&mmu, 4 * MiB) != 0);
		CHECK_EQ_U64(mmu.stats.pages_4k, 0);
		CHECK(mmu_audit_passes(&mmu));
		mmu_destroy(&mmu);
		CHECK_EQ_U64(mmu.stats.mmu_tables, 0);
		CHECK_EQ_U64(free_bytes(), before);
	}
}

TEST(mmu_huge_mappings)
{
	struct mmu mmu;
	uint64_t before;
	paddr_t hpa;
	int level;
	unsigned rights;

	int prefetch = mmu_config.prefetch;

	/* Counts the leaves of single faults: prefetch (test_prefetch.c) off. */
	mmu_config.prefetch = PREFETCH_OFF;
	host_mem_init(4 * GiB);
	before = free_bytes();
	formats_init();
	for (int fi = 0; fi < 3; fi++) {
		struct memslot_config big = slot_cfg(1 * GiB, 1 * GiB, BACKING_EAGER);
		struct memslot_config mid = slot_cfg(3 * MiB, 6 * MiB, BACKING_EAGER);

		big.backing.no_zero = true;
		REQUIRE(mmu_init(&mmu, test_formats[fi], no_flush, NULL) == 0);
		REQUIRE(mmu_slot_add(&mmu, &big) == 0);
		REQUIRE(mmu_slot_add(&mmu, &mid) == 0);
		CHECK_EQ_U64(tdp_map(&mmu, 1 * GiB + 0x123456, TDP_ACC_WRITE), TDP_FIXED);
		CHECK_EQ_U64(tdp_map(&mmu, 2 * GiB - 1, TDP_ACC_READ), TDP_SPURIOUS);
		CHECK_EQ_U64(mmu.stats.pages_1g, 1);
		/* [3M,4M) is 4 KiB-backed; [4M,8M) two 2 MiB blocks; [8M,9M) 4 KiB. */
		CHECK_EQ_U64(tdp_map(&mmu, 3 * MiB, TDP_ACC_READ), TDP_FIXED);
		CHECK_EQ_U64(tdp_map(&mmu, 5 * MiB, TDP_ACC_READ), TDP_FIXED);
		CHECK_EQ_U64(tdp_map(&mmu, 7 * MiB, TDP_ACC_READ), TDP_FIXED);
		CHECK_EQ_U64(tdp_map(&mmu, 8 * MiB + 4096, TDP_ACC_READ), TDP_FIXED);
		CHECK_EQ_U64(mmu.stats.pages_2m, 2);
		CHECK_EQ_U64(mmu.stats.pages_4k, 2);
		read_lock(&mmu.lock);
		CHECK(tdp_translate(&mmu, 5 * MiB + 0x1234, &hpa, &level, &rights));
		read_unlock(&mmu.lock);
		CHECK_EQ_U64(level, 2);
		CHECK_EQ_U64(rights, TDP_ACC_ALL);
		CHECK_EQ_U64(hpa & (2 * MiB - 1), 1 * MiB + 0x1234);
		/* The diagnostic walk: the entries from the root to where it ends. */
		const struct spte_format *f = test_formats[fi];
		uint64_t sptes[TDP_ROOT_LEVEL + 1];

		CHECK_EQ_U64(tdp_get_walk(&mmu, 5 * MiB + 0x1234, sptes), 2);
		CHECK(spte_is_table(f, sptes[4], 4) && spte_is_table(f, sptes[3], 3));
		CHECK(spte_is_leaf(f, sptes[2], 2));
		CHECK_EQ_U64(spte_addr(f, sptes[2]), hpa - (1 * MiB + 0x1234));
		CHECK_EQ_U64(tdp_get_walk(&mmu, 1 * GiB + 0x5000, sptes), 3);
		CHECK(spte_is_leaf(f, sptes[3], 3));
		CHECK_EQ_U64(tdp_get_walk(&mmu, 3 * GiB, sptes), 3);
		CHECK(!spte_present(f, sptes[3]));
		CHECK(mmu_audit_passes(&mmu));
		/* A zap touching one page of a huge leaf removes the whole leaf. */
		write_lock(&mmu.lock);
		CHECK(tdp_zap_range(&mmu, (5 * MiB) >> 12, (5 * MiB >> 12) + 1));
		mmu_flush_tlb(&mmu);
		write_unlock(&mmu.lock);
		CHECK_EQ_U64(mmu.stats.pages_2m, 1);
		CHECK(mmu_audit_passes(&mmu));
		/* The slot was removed and re-added: a 2 MiB-capable region whose
		 * level-2 entry kept a table must map below it, not replace it. */
		CHECK(mmu_slot_remove(&mmu, 3 * MiB) == 0);
		struct memslot_config small = slot_cfg(6 * MiB, 4096, BACKING_LAZY);
		REQUIRE(mmu_slot_add(&mmu, &small) == 0);
		CHECK_EQ_U64(tdp_map(&mmu, 6 * MiB, TDP_ACC_READ), TDP_FIXED);
		CHECK(mmu_slot_remove(&mmu, 6 * MiB) == 0);
		struct memslot_config again = slot_cfg(4 * MiB, 4 * MiB, BACKING_EAGER);
		REQUIRE(mmu_slot_add(&mmu, &again) == 0);
		CHECK_EQ_U64(tdp_map(&mmu, 6 * MiB + 8192, TDP_ACC_READ), TDP_FIXED);
		CHECK_EQ_U64(tdp_map(&mmu, 4 * MiB, TDP_ACC_READ), TDP_FIXED);
		CHECK(mmu_audit_passes(&mmu));
		mmu_destroy(&mmu);
		CHECK_EQ_U64(free_bytes(), before);
	}
	mmu_config.prefetch = prefetch;
}

/* A CPU without 1 GiB (or 2 MiB) leaves: faults map at most what it takes,
 * whatever the backing would allow. */
TEST(mmu_max_leaf_level)
{
	struct mmu mmu;
	uint64_t before;
	unsigned rights;
	paddr_t hpa;
	int level;

	host_mem_init(4 * GiB);
	before = free_bytes();
	formats_init();
	for (int max = 1; max <= 3; max++) {
		struct memslot_config big = slot_cfg(1 * GiB, 1 * GiB, BACKING_EAGER);

		big.backing.no_zero = true;
		REQUIRE(mmu_init(&mmu, test_formats[0], no_flush, NULL) == 0);
		mmu.max_leaf_level = max;
		REQUIRE(mmu_slot_add(&mmu, &big) == 0);
		CHECK_EQ_U64(tdp_map(&mmu, 1 * GiB + 0x5000, TDP_ACC_WRITE), TDP_FIXED);
		read_lock(&mmu.lock);
		CHECK(tdp_translate(&mmu, 1 * GiB + 0x5000, &hpa, &level, &rights));
		read_unlock(&mmu.lock);
		CHECK_EQ_U64(level, max);
		for (int above = max + 1; above <= 3; above++)
			CHECK_EQ_U64(mmu.stats.pages[above - 1], 0);
		CHECK(mmu_audit_passes(&mmu));
		mmu_destroy(&mmu);
		CHECK_EQ_U64(free_bytes(), before);
	}
}

TEST(mmu_iter_yield_resume)
{
	struct mmu mmu;
	struct rng rng = rng_seeded(7);
	uint64_t visited_plain[600], n_plain = 0;
	struct memslot_config s = slot_cfg(0, 64 * MiB, BACKING_LAZY);

	host_mem_init(1 * GiB);
	REQUIRE(mmu_init(&mmu, &npt_format, no_flush, NULL) == 0);
	REQUIRE(mmu_slot_add(&mmu, &s) == 0);
	for (int i = 0; i < 500; i++)
		tdp_map(&mmu, rng_below(&rng, 64 * MiB), TDP_ACC_READ);
	for (int round = 0; round < 50; round++) {
		struct tdp_iter it;
		uint64_t n = 0, start = rng_below(&rng, 16384), end = start + rng_below(&rng, 16384);
		bool ok = true;

		n_plain = 0;
		for_each_tdp_pte(it, &mmu.root, start, end)
			if (spte_present(mmu.root.fmt, it.old_spte) && it.level == 1)
				visited_plain[n_plain++] = it.gfn;
		for_each_tdp_pte(it, &mmu.root, start, end) {
			if (tdp_iter_may_yield(&it) && rng_below(&rng, 4) == 0) {
				tdp_iter_restart(&it);
				if (!it.valid)
					break;
			}
			if (spte_present(mmu.root.fmt, it.old_spte) && it.level == 1)
				ok &= n < n_plain && visited_plain[n++] == it.gfn;
		}
		CHECK(ok);
		CHECK_EQ_U64(n, n_plain);
	}
	mmu_destroy(&mmu);
}

TEST(mmu_table_memory_4k)
{
	struct mmu mmu;
	struct memslot_config s = slot_cfg(1 * GiB, 64 * MiB, BACKING_LAZY);
	uint64_t leaf_tables = 64 * MiB / (2 * MiB), min_tables = leaf_tables + 3;

	host_mem_init(1 * GiB);
	REQUIRE(mmu_init(&mmu, &npt_format, no_flush, NULL) == 0);
	REQUIRE(mmu_slot_add(&mmu, &s) == 0);
	for (uint64_t gpa = 1 * GiB; gpa < 1 * GiB + 64 * MiB; gpa += 4096)
		REQUIRE(tdp_map(&mmu, gpa, TDP_ACC_WRITE) == TDP_FIXED);
	CHECK_EQ_U64(mmu.stats.pages_4k, 64 * MiB / 4096);
	CHECK(mmu.stats.mmu_tables * 100 <= min_tables * 101);
	CHECK_EQ_U64(mmu.stats.mmu_tables, min_tables);
	CHECK(mmu_audit_passes(&mmu));
	mmu_destroy(&mmu);
}

TEST(mmu_discard_and_guest_copy)
{
	struct mmu mmu;
	static uint64_t image[8 * 512];
	uint64_t word;
	struct memslot_config r = slot_cfg(0, 16 * 4096, BACKING_RESTORE);
	int prefetch = mmu_config.prefetch;

	host_mem_init(1 * GiB);
	for (unsigned i = 0; i < 8 * 512; i++)
		image[i] = 0x1000 + i;
	r.backing.image = image;
	r.backing.image_bytes = sizeof(image);
	r.backing.chunk_pages = 4;
	/* Counts the leaves of single faults: prefetch (test_prefetch.c) off. */
	mmu_config.prefetch = PREFETCH_OFF;
	REQUIRE(mmu_init(&mmu, ept_format(true), no_flush, NULL) == 0);
	REQUIRE(mmu_slot_add(&mmu, &r) == 0);
	CHECK(mmu_read_guest(&mmu, 4096 + 8, &word, 8) == 0);
	CHECK_EQ_U64(word, 0x1000 + 512 + 1);
	CHECK_EQ_U64(mmu_backed_pages(&mmu), 4); /* one chunk */
	word = 42;
	CHECK(mmu_write_guest(&mmu, 4096 + 8, &word, 8) == 0);
	CHECK(mmu_read_guest(&mmu, 12 * 4096, &word, 8) == 0); /* past the image */
	CHECK_EQ_U64(word, 0);
	CHECK_EQ_U64(tdp_map(&mmu, 4096, TDP_ACC_WRITE), TDP_FIXED);
	mmu_discard(&mmu, 4096, 4096);
	CHECK_EQ_U64(mmu.stats.pages_4k, 0);
	CHECK(mmu_read_guest(&mmu, 4096 + 8, &word, 8) == 0);
	CHECK_EQ_U64(word, 0x1000 + 512 + 1); /* refilled from the image */
	CHECK(mmu_read_guest(&mmu, 15 * 4096 + 4000, &word, 8) == 0);
	CHECK(mmu_read_guest(&mmu, 15 * 4096 + 4090, &word, 8) != 0); /* runs off the slot */
	CHECK(mmu_audit_passes(&mmu));
	mmu_destroy(&mmu);
	mmu_config.prefetch = prefetch;
}

/* The model TLB must see a zap whose flush was left out. */
TEST(mmu_model_tlb_catches_missing_flush)
{
	struct mmu mmu;
	struct model_tlb tlb = { 0 };
	struct model_tlbs tlbs = { 1, { &tlb } };
	struct memslot_config s = slot_cfg(0, 2 * MiB, BACKING_LAZY);
	paddr_t hpa;

	host_mem_init(1 * GiB);
	REQUIRE(mmu_init(&mmu, &npt_format, model_tlb_flush, &tlbs) == 0);
	REQUIRE(mmu_slot_add(&mmu, &s) == 0);
	CHECK(model_access(&tlb, &mmu, 0x3000, TDP_ACC_WRITE, &hpa) == 0);
	CHECK(model_access(&tlb, &mmu, 0x3008, TDP_ACC_READ, &hpa) == 0);
	CHECK_EQ_U64(tlb.hits, 1);
	CHECK_EQ_U64(tlb.violations, 0);
	write_lock(&mmu.lock);
	CHECK(tdp_zap_range(&mmu, 0, 512));
	write_unlock(&mmu.lock); /* no flush: wrong on purpose */
	CHECK(model_access(&tlb, &mmu, 0x3000, TDP_ACC_READ, &hpa) == 0);
	CHECK_EQ_U64(tlb.violations, 1);
	write_lock(&mmu.lock);
	mmu_flush_tlb(&mmu); /* the flush that was missing */
	write_unlock(&mmu.lock);
	tlb.violations = 0;
	CHECK(model_access(&tlb, &mmu, 0x3000, TDP_ACC_WRITE, &hpa) == 0);
	mmu_discard(&mmu, 0, 2 * MiB); /* zaps the new mapping and flushes */
	CHECK_EQ_U64(tlb.violations, 0);
	CHECK(model_access(&tlb, &mmu, 0x3000, TDP_ACC_READ, &hpa) == 0);
	model_tlb_check_all(&tlb, &mmu);
	CHECK_EQ_U64(tlb.violations, 0);
	mmu_destroy(&mmu);
}
