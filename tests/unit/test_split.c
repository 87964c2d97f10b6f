/* Split on fault and dirty logging (mm/split.c, mm/dirty_log.c): the children a
 * split builds (addresses, the NX-huge-page rule, the dirty-logging rule), 1 GiB
 * and 2 MiB leaves split by execute and write faults or zapped
 * (split_on_fault=off), the vCPU table cache, the bitmap, write-protection and
 * dirty-bit logging with the CPU's dirty bit simulated; and long seeded random
 * sequences of accesses, discards, logging on/off/get and switch changes per
 * format, checked against a reference model of the guest's data and of the
 * pages it wrote, the model TLB (no stale writable or executable translation
 * after write-protection or a split) and the audit. Leak checks count tables
 * (mmu_tables back to 0): a split briefly maps a frame twice, so the rmap's
 * slab keeps a descriptor page, which free_bytes would see. conc_split_*:
 * execute faults from several threads racing to split the same leaves (also
 * under TSan). */
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
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define GiB (1ull << 30)
#define MiB (1ull << 20)
#define N_FORMATS 3

static const struct spte_format *format(int i)
{
	return i == 0 ? &npt_format : i == 1 ? ept_format(true) : ept_format(false);
}

static struct mmu_config saved_config;

/* Switches for one test (prefetch off: these count single faults). */
static void test_begin(int nx, bool split, bool eager)
{
	saved_config = mmu_config;
	mmu_config.prefetch = PREFETCH_OFF;
	mmu_config.nx_huge_pages = nx;
	mmu_config.split_on_fault = split;
	mmu_config.eager_page_split = eager;
}

static void test_end(void)
{
	mmu_config = saved_config;
}

static uint64_t free_bytes(void)
{
	struct frame_stats st;

	frame_get_stats(&st);
	return st.free_bytes;
}

static struct memslot_config eager_slot(uint64_t gpa, uint64_t size, uint32_t flags)
{
	return (struct memslot_config){ .gpa = gpa, .size = size, .flags = flags,
					.backing = { .kind = BACKING_EAGER, .no_zero = true } };
}

/* A VM of one slot whose flushes go to tlbs. */
static bool vm_open(struct mmu *mmu, const struct spte_format *f, struct model_tlbs *tlbs,
		    struct memslot_config slot)
{
	return mmu_init(mmu, f, model_tlb_flush, tlbs) == 0 && mmu_slot_add(mmu, &slot) == 0;
}

static bool translate(struct mmu *mmu, uint64_t gpa, int *level, unsigned *rights)
{
	paddr_t hpa;
	bool ok;

	read_lock(&mmu->lock);
	ok = tdp_translate(mmu, gpa, &hpa, level, rights);
	read_unlock(&mmu->lock);
	return ok;
}


static bool bit(const uint64_t *bits, uint64_t i)
{
	return bits[i / 64] & (1ull << (i % 64));
}

TEST(split_child_entries)
{
	struct memslot slot = { .base_gfn = 0, .npages = 1ull << 18 };

	for (int fi = 0; fi < N_FORMATS; fi++) {
		const struct spte_format *f = format(fi);
		uint64_t huge_1g = spte_make_leaf(f, 1 * GiB, 3, TDP_ACC_READ | TDP_ACC_WRITE);
		uint64_t huge_2m = spte_make_leaf(f, 6 * MiB, 2, TDP_ACC_READ | TDP_ACC_WRITE);
		unsigned r3 = split_child_rights(f, huge_1g, 3, &slot);
		unsigned r2 = split_child_rights(f, huge_2m, 2, &slot);

		/* 1 GiB into 2 MiB: still huge, so still not executable. */
		CHECK_EQ_U64(r3, TDP_ACC_READ | TDP_ACC_WRITE);
		/* 2 MiB into 4 KiB: all 512 executable. */
		CHECK_EQ_U64(r2, TDP_ACC_ALL);
		for (unsigned i = 0; i < SPTE_PER_TABLE; i += 73) {
			uint64_t c3 = split_child_spte(f, huge_1g, 3, i, r3);
			uint64_t c2 = split_child_spte(f, huge_2m, 2, i, r2);

			CHECK_EQ_U64(c3, spte_make_leaf(f, 1 * GiB + i * 2 * MiB, 2, r3));
			CHECK_EQ_U64(c2, spte_make_leaf(f, 6 * MiB + i * 4096ull, 1, TDP_ACC_ALL));
		}
		/* A leaf the walker never used keeps its accessed bit clear. */
		CHECK_EQ_U64(split_child_spte(f, huge_2m & ~f->accessed, 2, 1, r2) & f->accessed, 0);
		/* Dirty logging: no child writable. */
		slot.flags = MEMSLOT_DIRTY_LOG;
		CHECK_EQ_U64(split_child_rights(f, huge_2m, 2, &slot), TDP_ACC_READ | TDP_ACC_EXEC);
		slot.flags = 0;
	}
}

/* An execute fault in a 1 GiB NX leaf splits it to 2 MiB, then the 2 MiB
 * child to 4 KiB; the rest of the gigabyte stays mapped, its data intact. */
TEST(split_exec_fault_1g_then_2m)
{
	host_mem_init(4 * GiB);
	for (int fi = 0; fi < N_FORMATS; fi++) {
		for (int split = 0; split < 2; split++) {
			struct memslot_config s = eager_slot(1 * GiB, 1 * GiB, 0);
			struct model_tlb tlb = { 0 };
			struct model_tlbs tlbs = { 1, { &tlb } };
			unsigned rights;
			struct mmu mmu;
			paddr_t hpa;
			int level;

			test_begin(NX_HUGE_ON, split, false);
			REQUIRE(vm_open(&mmu, format(fi), &tlbs, s));
			for (uint64_t a = 1 * GiB; a < 2 * GiB; a += 64 * MiB + 4096) {
				REQUIRE(model_access(&tlb, &mmu, a, TDP_ACC_WRITE, &hpa) == 0);
				*(uint64_t *)pa_to_va(hpa) = a ^ 0x5a5a;
			}
			CHECK_EQ_U64(mmu.stats.pages_1g, 1);
			CHECK(translate(&mmu, 1 * GiB, &level, &rights));
			CHECK_EQ_U64(rights, TDP_ACC_READ | TDP_ACC_WRITE);
			CHECK(model_access(&tlb, &mmu, 1 * GiB + 3 * MiB, TDP_ACC_EXEC, &hpa) == 0);
			CHECK(translate(&mmu, 1 * GiB + 3 * MiB + 4096, &level, &rights) == (bool)split);
			if (split) {
				CHECK_EQ_U64(level, 1);
				CHECK_EQ_U64(rights, TDP_ACC_ALL);
				CHECK_EQ_U64(mmu.stats.pages_1g, 0);
				CHECK_EQ_U64(mmu.stats.pages_2m, 511);
				CHECK_EQ_U64(mmu.stats.pages_4k, 512);
				CHECK_EQ_U64(mmu.stats.huge_page_splits_fault, 2);
				CHECK_EQ_U64(mmu.stats.nx_lpage_splits, 2);
				CHECK(translate(&mmu, 1 * GiB + 9 * MiB, &level, &rights));
				CHECK_EQ_U64(level, 2);
				CHECK_EQ_U64(rights, TDP_ACC_READ | TDP_ACC_WRITE);
			} else {
				CHECK_EQ_U64(mmu.stats.pages_1g + mmu.stats.pages_2m, 0);
				CHECK_EQ_U64(mmu.stats.pages_4k, 1);
				CHECK_EQ_U64(mmu.stats.huge_page_splits_fault, 0);
			}
			uint64_t faults = tlb.faults;
			for (uint64_t a = 1 * GiB; a < 2 * GiB; a += 64 * MiB + 4096) {
				CHECK(model_access(&tlb, &mmu, a, TDP_ACC_READ, &hpa) == 0);
				CHECK_EQ_U64(*(uint64_t *)pa_to_va(hpa), a ^ 0x5a5a);
			}
			/* Split: nothing refaults; zapped: every page does. */
			CHECK_EQ_U64(tlb.faults - faults, split ? 0 : 16);
			model_tlb_check_all(&tlb, &mmu);
			CHECK_EQ_U64(tlb.violations, 0);
			CHECK(mmu_audit_passes(&mmu));
			mmu_destroy(&mmu);
			CHECK_EQ_U64(mmu.stats.mmu_tables, 0);
			test_end();
		}
	}
}

/* After an execute fault split (or zapped) the 1 GiB leaf, mmu_zap keeps the
 * tables, so a write refaults into a 4 KiB leaf; mmu_zap_all frees them, so
 * it maps 1 GiB again (what `bench exec guest=linux` needs between rounds),
 * with the model TLB holding nothing stale and the data kept. */
TEST(zap_all_restores_huge_leaves)
{
	host_mem_init(4 * GiB);
	for (int fi = 0; fi < N_FORMATS; fi++) {
		for (int split = 0; split < 2; split++) {
			struct memslot_config s = eager_slot(1 * GiB, 1 * GiB, 0);
			struct model_tlb tlb = { 0 };
			struct model_tlbs tlbs = { 1, { &tlb } };
			uint64_t a = 1 * GiB + 3 * MiB;
			unsigned rights;
			struct mmu mmu;
			paddr_t hpa;
			int level;

			test_begin(NX_HUGE_ON, split, false);
			REQUIRE(vm_open(&mmu, format(fi), &tlbs, s));
			REQUIRE(model_access(&tlb, &mmu, a, TDP_ACC_WRITE, &hpa) == 0);
			*(uint64_t *)pa_to_va(hpa) = 0x5a5a;
			CHECK(model_access(&tlb, &mmu, a, TDP_ACC_EXEC, &hpa) == 0);
			mmu_zap(&mmu, 1 * GiB, 1 * GiB);
			CHECK(model_access(&tlb, &mmu, a, TDP_ACC_WRITE, &hpa) == 0);
			CHECK(translate(&mmu, a, &level, &rights));
			CHECK_EQ_U64(level, 1);
			mmu_zap_all(&mmu);
			CHECK_EQ_U64(mmu.stats.mmu_tables, 1); /* the root alone */
			CHECK(!translate(&mmu, a, &level, &rights));
			CHECK(model_access(&tlb, &mmu, a, TDP_ACC_WRITE, &hpa) == 0);
			CHECK_EQ_U64(*(uint64_t *)pa_to_va(hpa), 0x5a5a);
			CHECK(translate(&mmu, a, &level, &rights));
			CHECK_EQ_U64(level, 3);
			model_tlb_check_all(&tlb, &mmu);
			CHECK_EQ_U64(tlb.violations, 0);
			CHECK(mmu_audit_passes(&mmu));
			mmu_destroy(&mmu);
			test_end();
		}
	}
}

/* The fault path takes its tables from the vCPU's cache, topped up first. */
TEST(split_table_cache)
{
	struct tdp_table_cache cache = { 0 };
	struct memslot_config s = eager_slot(0, 8 * MiB, 0);
	struct model_tlbs no_tlbs = { 0 };
	struct mmu mmu;
	uint64_t before;

	host_mem_init(1 * GiB);
	test_begin(NX_HUGE_ON, true, false);
	REQUIRE(vm_open(&mmu, &npt_format, &no_tlbs, s));
	CHECK_EQ_U64(tdp_map_cached(&mmu, &cache, 2 * MiB, TDP_ACC_READ), TDP_FIXED);
	CHECK_EQ_U64(cache.count, TDP_TABLE_CACHE_MIN - 2); /* levels 3 and 2 linked */
	CHECK_EQ_U64(mmu.stats.pages_2m, 1);
	CHECK_EQ_U64(tdp_map_cached(&mmu, &cache, 2 * MiB + 4096, TDP_ACC_EXEC), TDP_FIXED);
	CHECK_EQ_U64(cache.count, TDP_TABLE_CACHE_MIN - 1); /* topped up, one split */
	CHECK_EQ_U64(mmu.stats.pages_4k, 512);
	CHECK(mmu_audit_passes(&mmu));
	mmu_destroy(&mmu);
	CHECK_EQ_U64(mmu.stats.mmu_tables, 0);
	before = free_bytes();
	tdp_table_cache_release(&cache);
	CHECK(free_bytes() > before);
	CHECK_EQ_U64(cache.count, 0);
	test_end();
}

TEST(dirty_bitmap_get_and_clear)
{
	struct dirty_log log = { 0 };
	uint64_t out[3] = { 0 };

	host_mem_init(1 * GiB);
	REQUIRE(dirty_log_alloc(&log, 130) == 0);
	CHECK(dirty_log_mark(&log, 0));
	CHECK(dirty_log_mark(&log, 129));
	CHECK(!dirty_log_mark(&log, 129));
	CHECK_EQ_U64(dirty_log_take(&log, 130, out), 2);
	CHECK_EQ_U64(out[0], 1);
	CHECK_EQ_U64(out[2], 2);
	CHECK_EQ_U64(dirty_log_take(&log, 130, out), 0);
	CHECK_EQ_U64(out[2], 0);
	dirty_log_free(&log);
}

/* A write to a write-protected 2 MiB leaf splits it; only the written 4 KiB
 * page becomes writable, and only it is in the log. */
TEST(dirty_write_fault_splits)
{
	host_mem_init(1 * GiB);
	for (int fi = 0; fi < N_FORMATS; fi++) {
		for (int eager = 0; eager < 2; eager++) {
			struct memslot_config s = eager_slot(0, 8 * MiB, 0);
			struct model_tlb tlb = { 0 };
			struct model_tlbs tlbs = { 1, { &tlb } };
			uint64_t bits[32];
			unsigned rights;
			struct mmu mmu;
			paddr_t hpa;
			int level;

			test_begin(NX_HUGE_OFF, true, eager);
			REQUIRE(vm_open(&mmu, format(fi), &tlbs, s));
			for (uint64_t a = 0; a < 8 * MiB; a += 2 * MiB)
				REQUIRE(model_access(&tlb, &mmu, a, TDP_ACC_WRITE, &hpa) == 0);
			CHECK_EQ_U64(mmu.stats.pages_2m, 4);
			REQUIRE(mmu_dirty_log_enable(&mmu, 0, true) == 0);
			CHECK_EQ_U64(mmu.stats.huge_page_splits_eager, eager ? 4 : 0);
			/* Cached writable translations were flushed. */
			CHECK(model_access(&tlb, &mmu, 2 * MiB + 5 * 4096, TDP_ACC_WRITE, &hpa) == 0);
			mmu_cpu_sets_dirty(&mmu, 2 * MiB + 5 * 4096);
			CHECK_EQ_U64(tlb.violations, 0);
			CHECK_EQ_U64(mmu.stats.huge_page_splits_fault, eager ? 0 : 1);
			CHECK_EQ_U64(mmu.stats.pages_2m, eager ? 0 : 3);
			CHECK(translate(&mmu, 2 * MiB + 5 * 4096, &level, &rights));
			CHECK_EQ_U64(rights & TDP_ACC_WRITE, TDP_ACC_WRITE);
			CHECK(translate(&mmu, 2 * MiB + 6 * 4096, &level, &rights));
			CHECK_EQ_U64(level, 1);
			CHECK_EQ_U64(rights & TDP_ACC_WRITE, 0);
			CHECK(mmu_audit_passes(&mmu));
			CHECK_EQ_U64(mmu_dirty_log_get(&mmu, 0, bits), 1);
			CHECK(bit(bits, 512 + 5));
			CHECK_EQ_U64(mmu_dirty_log_get(&mmu, 0, bits), 0);
			/* Write-protected again: the next write faults and is logged. */
			uint64_t faults = tlb.faults;
			CHECK(model_access(&tlb, &mmu, 2 * MiB + 5 * 4096, TDP_ACC_WRITE, &hpa) == 0);
			mmu_cpu_sets_dirty(&mmu, 2 * MiB + 5 * 4096);
			CHECK_EQ_U64(tlb.faults - faults, dirty_log_by_dirty_bit(format(fi)) ? 0 : 1);
			CHECK_EQ_U64(mmu_dirty_log_get(&mmu, 0, bits), 1);
			CHECK_EQ_U64(tlb.violations, 0);
			CHECK(mmu_audit_passes(&mmu));
			REQUIRE(mmu_dirty_log_enable(&mmu, 0, false) == 0);
			CHECK(mmu_dirty_log_get(&mmu, 0, bits) < 0);
			CHECK(model_access(&tlb, &mmu, 2 * MiB + 6 * 4096, TDP_ACC_WRITE, &hpa) == 0);
			CHECK(mmu_audit_passes(&mmu));
			mmu_destroy(&mmu);
			test_end();
		}
	}
}

/* Dirty-bit logging: reads map writable clean leaves, the CPU's dirty bit is
 * harvested by get, and a discard does not lose it. */
TEST(dirty_bit_harvest)
{
	struct memslot_config s = eager_slot(0, 2 * MiB, MEMSLOT_NO_HUGE);
	struct model_tlbs no_tlbs = { 0 };
	uint64_t bits[8];
	unsigned rights;
	struct mmu mmu;
	int level;

	host_mem_init(1 * GiB);
	test_begin(NX_HUGE_OFF, true, false);
	REQUIRE(vm_open(&mmu, &npt_format, &no_tlbs, s));
	REQUIRE(mmu_dirty_log_enable(&mmu, 0, true) == 0);
	CHECK_EQ_U64(tdp_map(&mmu, 0x3000, TDP_ACC_READ), TDP_FIXED);
	CHECK_EQ_U64(tdp_map(&mmu, 0x4000, TDP_ACC_READ), TDP_FIXED);
	CHECK(translate(&mmu, 0x3000, &level, &rights));
	CHECK_EQ_U64(rights & TDP_ACC_WRITE, TDP_ACC_WRITE);
	CHECK_EQ_U64(mmu_dirty_log_get(&mmu, 0, bits), 0);
	mmu_cpu_sets_dirty(&mmu, 0x3000);
	mmu_cpu_sets_dirty(&mmu, 0x4000);
	CHECK(mmu_audit_passes(&mmu));
	mmu_discard(&mmu, 0x4000, 4096);
	CHECK_EQ_U64(mmu_dirty_log_get(&mmu, 0, bits), 2);
	CHECK_EQ_U64(bits[0], (1ull << 3) | (1ull << 4));
	CHECK_EQ_U64(mmu_dirty_log_get(&mmu, 0, bits), 0);
	CHECK(mmu_audit_passes(&mmu));
	mmu_destroy(&mmu);
	test_end();
}

#define RANDOM_MEM (32 * MiB)
#define RANDOM_PAGES (RANDOM_MEM >> 12)
#define RANDOM_STEPS 6000

/* Accesses (read, write, execute), discards, logging on/off/get and switch
 * changes in a random order. The reference model keeps each page's last
 * written value and the pages written since the log was last read: get must
 * return exactly those (a write missing would be lost by a migration). */
static void random_run(const struct spte_format *f, uint64_t seed, struct mmu_stats *total)
{
	static uint64_t value[RANDOM_PAGES], written[RANDOM_PAGES / 64], bits[RANDOM_PAGES / 64];
	struct memslot_config s = eager_slot(0, RANDOM_MEM, 0);
	struct model_tlb tlb = { 0 };
	struct model_tlbs tlbs = { 1, { &tlb } };
	bool logging = false;
	struct rng rng = rng_seeded(seed);
	struct mmu mmu;

	s.backing.no_zero = false;
	memset(value, 0, sizeof(value));
	memset(written, 0, sizeof(written));
	REQUIRE(vm_open(&mmu, f, &tlbs, s));
	for (unsigned step = 0; step < RANDOM_STEPS; step++) {
		uint64_t r = rng_next(&rng), page = (r >> 8) % RANDOM_PAGES;
		uint64_t gpa = page << 12;
		paddr_t hpa;

		switch (r % 100) {
		case 0 ... 39: /* read */
		case 40 ... 49: /* execute */
			REQUIRE(model_access(&tlb, &mmu, gpa, r % 100 < 40 ? TDP_ACC_READ : TDP_ACC_EXEC,
					     &hpa) == 0);
			CHECK_EQ_U64(*(uint64_t *)pa_to_va(hpa), value[page]);
			break;
		case 50 ... 79: /* write */
			REQUIRE(model_access(&tlb, &mmu, gpa, TDP_ACC_WRITE, &hpa) == 0);
			mmu_cpu_sets_dirty(&mmu, gpa);
			value[page] = rng_next(&rng) | 1;
			*(uint64_t *)pa_to_va(hpa) = value[page];
			written[page / 64] |= 1ull << (page % 64);
			break;
		case 80 ... 81: /* discard 64 KiB: the pages read as zero again */
			mmu_discard(&mmu, gpa & ~0xffffull, 0x10000);
			for (uint64_t p = page & ~15ull; p < (page & ~15ull) + 16; p++)
				value[p] = 0;
			break;
		case 82 ... 86:
			if (logging) {
				CHECK(mmu_dirty_log_get(&mmu, 0, bits) >= 0);
				CHECK(memcmp(bits, written, sizeof(bits)) == 0);
			}
			memset(written, 0, sizeof(written));
			break;
		case 87 ... 89:
			mmu_config.eager_page_split = r & 0x100;
			logging = !logging;
			REQUIRE(mmu_dirty_log_enable(&mmu, 0, logging) == 0);
			memset(written, 0, sizeof(written));
			break;
		case 90 ... 94:
			mmu_config.nx_huge_pages = (r >> 40) % 2 ? NX_HUGE_ON : NX_HUGE_OFF;
			break;
		default:
			mmu_config.split_on_fault = (r >> 40) % 2;
			break;
		}
		if (step % 500 == 0) {
			model_tlb_check_all(&tlb, &mmu);
			CHECK(mmu_audit_passes(&mmu));
		}
	}
	CHECK_EQ_U64(tlb.violations, 0);
	if (tlb.violations)
		printf("  %s\n", tlb.first_violation);
	total->huge_page_splits_fault += mmu.stats.huge_page_splits_fault;
	total->nx_lpage_splits += mmu.stats.nx_lpage_splits;
	total->dirty_pages_logged += mmu.stats.dirty_pages_logged;
	CHECK(mmu_audit_passes(&mmu));
	mmu_destroy(&mmu);
	CHECK_EQ_U64(mmu.stats.mmu_tables, 0);
}

TEST(split_dirty_random_model_tlb)
{
	struct mmu_stats total = { 0 };

	host_mem_init(1 * GiB);
	for (int fi = 0; fi < N_FORMATS; fi++)
		for (uint64_t seed = 1; seed <= 3; seed++) {
			test_begin(NX_HUGE_ON, true, false);
			random_run(format(fi), seed * 0x9E3779B97F4A7C15ull + (uint64_t)fi, &total);
			test_end();
		}
	/* The sequences did split, for writes and for execution, and log. */
	CHECK(total.huge_page_splits_fault > total.nx_lpage_splits);
	CHECK(total.nx_lpage_splits > 0);
	CHECK(total.dirty_pages_logged > 0);
}

#define CONC_THREADS 4
#define CONC_MEM (16 * MiB)

static void no_flush(void *ctx)
{
	(void)ctx;
}

struct conc_arg {
	struct mmu *mmu;
	unsigned thread;
};

/* Execute faults all over 2 MiB NX leaves, every thread in every region: the
 * splits race, and the losers must undo their child tables cleanly. */
static void *conc_exec_faults(void *p)
{
	struct conc_arg *a = p;

	for (uint64_t page = a->thread; page < CONC_MEM >> 12; page += 61) {
		enum tdp_fault_result res = tdp_map(a->mmu, page << 12, TDP_ACC_EXEC);

		if (res != TDP_FIXED && res != TDP_SPURIOUS && res != TDP_RETRY)
			abort();
	}
	return NULL;
}

TEST(conc_split_racing_faults)
{
	struct memslot_config s = eager_slot(0, CONC_MEM, 0);
	pthread_t threads[CONC_THREADS];
	struct conc_arg args[CONC_THREADS];
	struct mmu mmu;

	host_mem_init(1 * GiB);
	for (int split = 0; split < 2; split++) {
		test_begin(NX_HUGE_ON, split, false);
		REQUIRE(mmu_init(&mmu, &npt_format, no_flush, NULL) == 0);
		REQUIRE(mmu_slot_add(&mmu, &s) == 0);
		for (uint64_t a = 0; a < CONC_MEM; a += 2 * MiB)
			REQUIRE(tdp_map(&mmu, a, TDP_ACC_READ) == TDP_FIXED);
		CHECK_EQ_U64(mmu.stats.pages_2m, CONC_MEM / (2 * MiB));
		for (unsigned t = 0; t < CONC_THREADS; t++) {
			args[t] = (struct conc_arg){ &mmu, t };
			pthread_create(&threads[t], NULL, conc_exec_faults, &args[t]);
		}
		for (unsigned t = 0; t < CONC_THREADS; t++)
			pthread_join(threads[t], NULL);
		CHECK_EQ_U64(mmu.stats.pages_2m, 0);
		if (split)
			CHECK_EQ_U64(mmu.stats.pages_4k, CONC_MEM >> 12);
		CHECK(mmu_audit_passes(&mmu));
		mmu_destroy(&mmu);
		CHECK_EQ_U64(mmu.stats.mmu_tables, 0);
		test_end();
	}
}
