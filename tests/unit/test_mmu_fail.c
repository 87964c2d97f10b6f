/* A reverse-map insertion that finds no memory fails the install: no leaf is
 * published without its rmap entry (reclaim finds leaves through the rmaps,
 * so a leaf missing from one would keep its frame mapped after the frame
 * went). The slab shim fails the Nth descriptor allocation (slab_fail_nth). */
#include "check.h"
#include "mm/mmu_config.h"
#include "mm/mmu_internal.h"
#include "mm/rmap.h"
#include "mm/slab.h"
#include "mm/tdp_mmu.h"
#include "mm/cow.h"
#include "svm/npt.h"
#include "tests/unit/host_mem.h"
#include "tests/unit/mmu_check.h"
#include <stdlib.h>

#define MiB (1ull << 20)
#define ALIAS_GPA (16 * MiB)

static void no_flush(void *ctx)
{
	(void)ctx;
}

static struct mmu_config saved;

/* An eager slot [0, 4M) and an alias of its first MiB at 16M (4 KiB leaves):
 * a frame mapped through both sits in an rmap of two, which takes a
 * descriptor. */
static void setup(struct mmu *mmu, uint32_t flags, int prefetch, int nx)
{
	struct memslot_config eager = { .gpa = 0, .size = 4 * MiB, .flags = flags,
					.backing = { .kind = BACKING_EAGER } };

	saved = mmu_config;
	mmu_config.prefetch = prefetch;
	mmu_config.prefetch_adaptive = false;
	mmu_config.nx_huge_pages = nx;
	mmu_config.rmap_desc = RMAP_DESC_COUNTED;
	host_mem_init(256 * MiB);
	if (mmu_init(mmu, &npt_format, no_flush, NULL) || mmu_slot_add(mmu, &eager) ||
	    mmu_alias_add(mmu, ALIAS_GPA, MiB, 0))
		abort();
}

static void teardown(struct mmu *mmu)
{
	slab_fail_nth = 0;
	mmu_destroy(mmu);
	mmu_config = saved;
}

static paddr_t frame_at(struct mmu *mmu, uint64_t gpa)
{
	struct memslot *s = memslot_find(&mmu->slots, gpa >> 12);

	return backing_peek(&s->backing, (gpa >> 12) - s->base_gfn);
}

static bool mapped(struct mmu *mmu, uint64_t gpa)
{
	paddr_t hpa;
	unsigned rights;
	int level;
	bool ok;

	read_lock(&mmu->lock);
	ok = tdp_translate(mmu, gpa, &hpa, &level, &rights);
	read_unlock(&mmu->lock);
	return ok;
}

/* Leaves, anywhere in the tables, whose range covers frame pa. */
static unsigned leaves_mapping(struct mmu *mmu, paddr_t pa)
{
	const struct spte_format *f = mmu->root.fmt;
	struct tdp_iter it;
	unsigned n = 0;

	write_lock(&mmu->lock);
	for_each_tdp_pte(it, &mmu->root, 0, TDP_GFN_LIMIT) {
		uint64_t a = spte_addr(f, it.old_spte);

		if (spte_present(f, it.old_spte) && spte_is_leaf(f, it.old_spte, it.level) &&
		    pa >= a && pa < a + (tdp_level_pages(it.level) << 12))
			n++;
	}
	write_unlock(&mmu->lock);
	return n;
}

TEST(rmap_fail_fault_installs_nothing)
{
	struct mmu mmu;
	paddr_t pa;

	setup(&mmu, MEMSLOT_NO_HUGE, PREFETCH_OFF, NX_HUGE_OFF);
	REQUIRE(tdp_map(&mmu, 0, TDP_ACC_READ) == TDP_FIXED);
	pa = frame_at(&mmu, 0);
	CHECK_EQ_U64(rmap_count(&frame_of(pa)->rmap), 1);
	/* The alias's leaf would make the rmap a chain: no descriptor. */
	slab_fail_nth = 1;
	CHECK_EQ_U64(tdp_map(&mmu, ALIAS_GPA, TDP_ACC_READ), TDP_NO_MEMORY);
	CHECK_EQ_U64(slab_fail_nth, 0);
	CHECK(!mapped(&mmu, ALIAS_GPA));
	CHECK_EQ_U64(rmap_count(&frame_of(pa)->rmap), 1);
	CHECK_EQ_U64(leaves_mapping(&mmu, pa), 1);
	CHECK_EQ_U64(mmu.stats.rmap_failures, 1);
	CHECK_EQ_U64(mmu.stats.pf_no_memory, 1);
	CHECK_EQ_U64(mmu.stats.pages_4k, 1);
	CHECK(mmu_audit_passes(&mmu));
	/* Reclaim: the frame leaves every table, the failed install included. */
	mmu_discard(&mmu, 0, 4096);
	CHECK_EQ_U64(leaves_mapping(&mmu, pa), 0);
	CHECK_EQ_U64(rmap_count(&frame_of(pa)->rmap), 0);
	CHECK(mmu_audit_passes(&mmu));
	/* With memory, the alias maps (a new frame, the discard dropped the old). */
	CHECK_EQ_U64(tdp_map(&mmu, 0, TDP_ACC_READ), TDP_FIXED);
	CHECK_EQ_U64(tdp_map(&mmu, ALIAS_GPA, TDP_ACC_READ), TDP_FIXED);
	CHECK_EQ_U64(rmap_count(&frame_of(frame_at(&mmu, 0))->rmap), 2);
	CHECK(mmu_audit_passes(&mmu));
	teardown(&mmu);
}

TEST(rmap_fail_prefetch_stops)
{
	struct mmu mmu;

	setup(&mmu, MEMSLOT_NO_HUGE, PREFETCH_OFF, NX_HUGE_OFF);
	for (uint64_t p = 0; p < 8; p++)
		REQUIRE(tdp_map(&mmu, p * 4096, TDP_ACC_READ) == TDP_FIXED);
	mmu_config.prefetch = PREFETCH_FORWARD;
	/* The fault's own leaf gets its descriptor, the third prefetched not. */
	slab_fail_nth = 4;
	CHECK_EQ_U64(tdp_map(&mmu, ALIAS_GPA, TDP_ACC_READ), TDP_FIXED);
	for (uint64_t p = 0; p < 3; p++)
		CHECK(mapped(&mmu, ALIAS_GPA + p * 4096));
	CHECK(!mapped(&mmu, ALIAS_GPA + 3 * 4096));
	CHECK_EQ_U64(leaves_mapping(&mmu, frame_at(&mmu, 3 * 4096)), 1);
	CHECK_EQ_U64(mmu.stats.rmap_failures, 1);
	CHECK_EQ_U64(mmu.stats.pf_prefetch_mapped, 2);
	CHECK(mmu_audit_passes(&mmu));
	teardown(&mmu);
}

/* An execute fault splits a non-executable 2 MiB leaf: child 0 maps the
 * leaf's own first frame, whose rmap then needs a descriptor. Without one
 * the split fails whole: the huge leaf stays, no table is left behind. */
TEST(rmap_fail_split_keeps_huge_leaf)
{
	struct mmu mmu;
	uint64_t tables;
	paddr_t pa;

	setup(&mmu, 0, PREFETCH_OFF, NX_HUGE_ON);
	REQUIRE(tdp_map(&mmu, 0, TDP_ACC_READ) == TDP_FIXED);
	REQUIRE(mmu.stats.pages_2m == 1);
	pa = frame_at(&mmu, 0);
	tables = mmu.stats.mmu_tables;
	slab_fail_nth = 1;
	CHECK_EQ_U64(tdp_map(&mmu, 4096, TDP_ACC_EXEC), TDP_NO_MEMORY);
	CHECK_EQ_U64(mmu.stats.pages_2m, 1);
	CHECK_EQ_U64(mmu.stats.pages_4k, 0);
	CHECK_EQ_U64(mmu.stats.mmu_tables, tables);
	CHECK_EQ_U64(mmu.stats.huge_page_splits_fault, 0);
	CHECK_EQ_U64(leaves_mapping(&mmu, pa), 1);
	CHECK_EQ_U64(rmap_count(&frame_of(pa)->rmap), 1);
	CHECK(mmu_audit_passes(&mmu));
	CHECK_EQ_U64(tdp_map(&mmu, 4096, TDP_ACC_EXEC), TDP_FIXED);
	CHECK_EQ_U64(mmu.stats.pages_4k, 512);
	CHECK(mmu_audit_passes(&mmu));
	teardown(&mmu);
}
