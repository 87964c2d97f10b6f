/* Page migration (mmu_migrate_page): the contents move with the patch
 * applied, the leaf and its rmap follow the new frame (audit), the TLBs are
 * flushed while the old frame is still allocated and it is freed after; the
 * model TLB catches a migration whose flush reaches no TLB; pages that are
 * not a frame of their own are refused. */
#include "check.h"
#include "mm/dirty_log.h"
#include "mm/mmu_config.h"
#include "mm/mmu_internal.h"
#include "mm/tdp_mmu.h"
#include "mm/migrate.h"
#include "svm/npt.h"
#include "tests/unit/host_mem.h"
#include "tests/unit/mmu_check.h"
#include "tests/unit/model_tlb.h"
#include "vmx/ept.h"
#include <string.h>

#define MiB (1ull << 20)
#define PAGE_GPA (1 * MiB + 5 * 4096)
#define PATCH_OFFSET 64

/* The flush callback: the model TLBs, and what the old frame was then. */
struct migrate_env {
	struct mmu mmu;
	struct model_tlb tlb;
	struct model_tlbs tlbs;
	paddr_t old;
	unsigned flushes;
	unsigned flushes_with_old_allocated;
	bool flush_reaches_tlb; /* false: a flush that forgets the TLBs */
};

static void flush(void *ctx)
{
	struct migrate_env *e = ctx;

	e->flushes++;
	if (e->old && frame_of(e->old)->refcount == 1)
		e->flushes_with_old_allocated++;
	if (e->flush_reaches_tlb)
		model_tlb_flush(&e->tlbs);
}

static struct mmu_config saved;

static void env_init(struct migrate_env *e, const struct spte_format *fmt, enum backing_kind kind)
{
	struct memslot_config slot = { .gpa = 0, .size = 4 * MiB, .backing = { .kind = kind } };

	saved = mmu_config;
	mmu_config.prefetch = PREFETCH_OFF;
	host_mem_init(64 * MiB);
	memset(e, 0, sizeof(*e));
	e->tlbs.count = 1;
	e->tlbs.tlb[0] = &e->tlb;
	e->flush_reaches_tlb = true;
	if (mmu_init(&e->mmu, fmt, flush, e) || mmu_slot_add(&e->mmu, &slot))
		__builtin_trap();
}

static void env_destroy(struct migrate_env *e)
{
	mmu_destroy(&e->mmu);
	mmu_config = saved;
}

static paddr_t backing_of(struct mmu *mmu, uint64_t gpa)
{
	struct memslot *s = memslot_find(&mmu->slots, gpa >> PAGE_SHIFT);

	return s ? backing_peek(&s->backing, (gpa >> PAGE_SHIFT) - s->base_gfn) : 0;
}

static uint64_t free_bytes(void)
{
	struct frame_stats st;

	frame_get_stats(&st);
	return st.free_bytes;
}

static void migrate_mapped(const struct spte_format *fmt)
{
	static struct migrate_env e;
	static uint64_t before[512], after[512];
	struct mmu_page_patch patch = { PATCH_OFFSET, 0x5157a1e };
	paddr_t hpa, new_hpa, tables_hpa;
	unsigned rights;
	uint64_t free0;
	int level;

	env_init(&e, fmt, BACKING_LAZY);
	for (unsigned i = 0; i < 512; i++)
		before[i] = 0x1000 + i;
	REQUIRE(mmu_write_guest(&e.mmu, PAGE_GPA, before, sizeof(before)) == 0);
	/* Written through the TLB: the entry is writable and cached. */
	REQUIRE(model_access(&e.tlb, &e.mmu, PAGE_GPA, TDP_ACC_WRITE, &hpa) == 0);
	e.old = backing_of(&e.mmu, PAGE_GPA);
	REQUIRE(hpa == e.old);
	free0 = free_bytes();
	CHECK(mmu_migrate_page(&e.mmu, PAGE_GPA, &patch) == MIGRATE_DONE);
	/* One flush, before the old frame went back to the allocator. */
	CHECK_EQ_U64(e.flushes, 1);
	CHECK_EQ_U64(e.flushes_with_old_allocated, 1);
	CHECK_EQ_U64(frame_of(e.old)->refcount, 0);
	CHECK_EQ_U64(free_bytes(), free0); /* one frame in, one out */
	new_hpa = backing_of(&e.mmu, PAGE_GPA);
	CHECK(new_hpa && new_hpa != e.old);
	/* The leaf follows, with its rights. */
	read_lock(&e.mmu.lock);
	CHECK(tdp_translate(&e.mmu, PAGE_GPA, &tables_hpa, &level, &rights));
	read_unlock(&e.mmu.lock);
	CHECK_EQ_U64(tables_hpa, new_hpa);
	CHECK_EQ_U64(level, 1);
	CHECK(rights & TDP_ACC_WRITE);
	/* Contents preserved, the one word patched. */
	REQUIRE(mmu_read_guest(&e.mmu, PAGE_GPA, after, sizeof(after)) == 0);
	before[PATCH_OFFSET / 8] = patch.value;
	CHECK(memcmp(before, after, sizeof(after)) == 0);
	/* The TLB was flushed: the next access walks to the copy. */
	CHECK(model_access(&e.tlb, &e.mmu, PAGE_GPA + PATCH_OFFSET, TDP_ACC_READ, &hpa) == 0);
	CHECK_EQ_U64(hpa, new_hpa + PATCH_OFFSET);
	CHECK_EQ_U64(e.tlb.violations, 0);
	CHECK(mmu_audit_passes(&e.mmu));
	env_destroy(&e);
}

TEST(migrate_mapped_npt)
{
	migrate_mapped(&npt_format);
}

TEST(migrate_mapped_ept)
{
	migrate_mapped(ept_format(true));
}

/* An unmapped page moves without a flush: no TLB can hold it. */
TEST(migrate_unmapped)
{
	static struct migrate_env e;
	uint64_t word = 7, got = 0;

	env_init(&e, &npt_format, BACKING_LAZY);
	REQUIRE(mmu_write_guest(&e.mmu, PAGE_GPA, &word, sizeof(word)) == 0);
	e.old = backing_of(&e.mmu, PAGE_GPA);
	CHECK(mmu_migrate_page(&e.mmu, PAGE_GPA, NULL) == MIGRATE_DONE);
	CHECK_EQ_U64(e.flushes, 0);
	CHECK(backing_of(&e.mmu, PAGE_GPA) != e.old);
	CHECK(mmu_read_guest(&e.mmu, PAGE_GPA, &got, sizeof(got)) == 0);
	CHECK_EQ_U64(got, 7);
	CHECK(mmu_audit_passes(&e.mmu));
	env_destroy(&e);
}

/* The model TLB sees a migration whose flush reaches no TLB: the cached
 * translation names the freed frame. */
TEST(migrate_without_flush_is_caught)
{
	static struct migrate_env e;
	paddr_t hpa;

	env_init(&e, &npt_format, BACKING_LAZY);
	REQUIRE(model_access(&e.tlb, &e.mmu, PAGE_GPA, TDP_ACC_READ, &hpa) == 0);
	e.flush_reaches_tlb = false;
	CHECK(mmu_migrate_page(&e.mmu, PAGE_GPA, NULL) == MIGRATE_DONE);
	CHECK(model_access(&e.tlb, &e.mmu, PAGE_GPA, TDP_ACC_READ, &hpa) == 0);
	CHECK(e.tlb.violations > 0);
	env_destroy(&e);
}

/* Dirty logging without dirty bits: the written page stays in the log and
 * its writable leaf is legal on the copy (the audit's dirty-log check). */
TEST(migrate_dirty_logged)
{
	static struct migrate_env e;
	static uint64_t bits[4 * MiB / 4096 / 64];
	paddr_t hpa;

	env_init(&e, ept_format(false), BACKING_LAZY);
	REQUIRE(mmu_dirty_log_enable(&e.mmu, 0, true) == 0);
	REQUIRE(model_access(&e.tlb, &e.mmu, PAGE_GPA, TDP_ACC_WRITE, &hpa) == 0);
	CHECK(mmu_migrate_page(&e.mmu, PAGE_GPA, NULL) == MIGRATE_DONE);
	CHECK(mmu_audit_passes(&e.mmu));
	CHECK(mmu_dirty_log_get(&e.mmu, 0, bits) >= 1);
	CHECK(bits[(PAGE_GPA >> 12) / 64] & (1ull << ((PAGE_GPA >> 12) % 64)));
	env_destroy(&e);
}

TEST(migrate_refusals)
{
	static struct migrate_env e, child;
	struct memslot_config eager = { .gpa = 16 * MiB, .size = 4 * MiB,
					.backing = { .kind = BACKING_EAGER } };
	uint64_t word = 1;

	env_init(&e, &npt_format, BACKING_LAZY);
	CHECK(mmu_migrate_page(&e.mmu, 8 * MiB, NULL) == MIGRATE_NO_SLOT);
	CHECK(mmu_migrate_page(&e.mmu, PAGE_GPA, NULL) == MIGRATE_NOT_BACKED);
	REQUIRE(mmu_slot_add(&e.mmu, &eager) == 0);
	CHECK(mmu_migrate_page(&e.mmu, eager.gpa + 4096, NULL) == MIGRATE_BLOCK);
	REQUIRE(mmu_alias_add(&e.mmu, 32 * MiB, MiB, eager.gpa) == 0);
	CHECK(mmu_migrate_page(&e.mmu, 32 * MiB, NULL) == MIGRATE_SHARED);
	/* A clone shares the lazy page. */
	REQUIRE(mmu_write_guest(&e.mmu, PAGE_GPA, &word, sizeof(word)) == 0);
	e.mmu.share.id = 1;
	REQUIRE(mmu_init(&child.mmu, &npt_format, flush, &child) == 0);
	child.mmu.share.id = 2;
	REQUIRE(mmu_clone(&e.mmu, &child.mmu) == 0);
	CHECK(mmu_migrate_page(&e.mmu, PAGE_GPA, NULL) == MIGRATE_SHARED);
	CHECK(mmu_migrate_page(&child.mmu, PAGE_GPA, NULL) == MIGRATE_SHARED);
	CHECK_EQ_U64(e.flushes, 0);
	CHECK(mmu_audit_passes(&e.mmu));
	mmu_destroy(&child.mmu);
	env_destroy(&e);
}

/* The word a migration patches is sprig's write into the guest's page: it
 * is in the dirty log, as mmu_write_guest's writes are; a plain move is not. */
TEST(migrate_patch_dirty_logged)
{
	static struct migrate_env e;
	struct mmu_page_patch patch = { .offset = 8, .value = 0x5a };
	uint64_t word = 7, log[4 * MiB / PAGE_SIZE / 64];

	env_init(&e, &npt_format, BACKING_LAZY);
	REQUIRE(mmu_write_guest(&e.mmu, PAGE_GPA, &word, sizeof(word)) == 0);
	REQUIRE(mmu_dirty_log_enable(&e.mmu, 0, true) == 0);
	CHECK(mmu_migrate_page(&e.mmu, PAGE_GPA, NULL) == MIGRATE_DONE);
	CHECK(mmu_dirty_log_get(&e.mmu, 0, log) == 0);
	CHECK(mmu_migrate_page(&e.mmu, PAGE_GPA, &patch) == MIGRATE_DONE);
	CHECK(mmu_dirty_log_get(&e.mmu, 0, log) == 1);
	CHECK_EQ_U64(log[(PAGE_GPA >> PAGE_SHIFT) / 64], 1ull << ((PAGE_GPA >> PAGE_SHIFT) % 64));
	CHECK(mmu_audit_passes(&e.mmu));
	env_destroy(&e);
}
