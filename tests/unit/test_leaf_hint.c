/* The leaf-empty hint (mm/leaf_hint.h): where it is set, cleared and consulted,
 * the per-zap counters, the iterator's skip step across a restart, and seeded
 * random interleavings of whole-region and partial zaps, refaults, discards,
 * slot removal and the switch, run in lockstep on two VMs (hint on, hint off)
 * that must end every step with the same mappings, the same guest data and a
 * clean audit ("a hinted table is an empty leaf table" included). */
#include "check.h"
#include "mm/leaf_hint.h"
#include "mm/mmu_internal.h"
#include "mm/tdp_mmu.h"
#include "mm/cow.h"
#include "svm/npt.h"
#include "tests/rng.h"
#include "tests/unit/host_mem.h"
#include "vmx/ept.h"
#include <stdlib.h>
#include <string.h>

#define GiB (1ull << 30)
#define MiB (1ull << 20)
#define REGION_PAGES 512ull

static void no_flush(void *ctx)
{
	(void)ctx;
}

static bool audit_ok(struct mmu *mmu)
{
	struct mmu_audit_report r;

	if (mmu_audit(mmu, &r))
		return true;
	mmu_audit_print(&r);
	return false;
}

/* Prefetch would map whole tables on one fault: these tests count faults. */
struct config_guard {
	struct mmu_config saved;
};

static struct config_guard config_for_test(bool leaf_hint)
{
	struct config_guard g = { mmu_config };

	mmu_config.prefetch = PREFETCH_OFF;
	mmu_config.leaf_hint = leaf_hint;
	return g;
}

static void config_restore(const struct config_guard *g)
{
	mmu_config = g->saved;
}

static void zap(struct mmu *mmu, uint64_t gpa, uint64_t len)
{
	write_lock(&mmu->lock);
	if (tdp_zap_range(mmu, gpa >> 12, (gpa + len) >> 12))
		mmu_flush_tlb(mmu);
	write_unlock(&mmu->lock);
}

static void fault_range(struct mmu *mmu, uint64_t gpa, uint64_t len)
{
	for (uint64_t a = gpa; a < gpa + len; a += 4096)
		CHECK_EQ_U64(tdp_map(mmu, a, TDP_ACC_WRITE), TDP_FIXED);
}

/* The leaf table mapping gpa, NULL if there is none. */
static struct frame *leaf_table_of(struct mmu *mmu, uint64_t gpa)
{
	const struct spte_format *f = mmu->root.fmt;
	struct tdp_iter it;

	for_each_tdp_pte(it, &mmu->root, gpa >> 12, (gpa >> 12) + 1) {
		if (it.level == 2)
			return spte_is_table(f, it.old_spte, 2)
				       ? frame_of(spte_addr(f, it.old_spte))
				       : NULL;
		if (!spte_is_table(f, it.old_spte, it.level))
			return NULL;
	}
	return NULL;
}

static struct zap_stats zap_delta(const struct zap_stats *after, const struct zap_stats *before)
{
	struct zap_stats d = *after;

	d.zaps -= before->zaps;
	d.zap_spte_visits -= before->zap_spte_visits;
	d.zap_leaf_visits -= before->zap_leaf_visits;
	d.zap_hint_checks -= before->zap_hint_checks;
	d.tdp_zap_skip_child -= before->tdp_zap_skip_child;
	d.zap_hints_set -= before->zap_hints_set;
	return d;
}

/* Zap [gpa, gpa + len) and return what that one zap counted. */
static struct zap_stats zap_counted(struct mmu *mmu, uint64_t gpa, uint64_t len)
{
	struct zap_stats before = mmu->zap_stats;

	zap(mmu, gpa, len);
	return zap_delta(&mmu->zap_stats, &before);
}

#define BASE (64 * MiB)

static void vm_16m(struct mmu *mmu, const struct spte_format *fmt)
{
	struct memslot_config c = { .gpa = BASE, .size = 16 * MiB, .flags = MEMSLOT_NO_HUGE,
				    .backing = { .kind = BACKING_LAZY } };

	host_mem_init(1 * GiB);
	REQUIRE(mmu_init(mmu, fmt, no_flush, NULL) == 0);
	REQUIRE(mmu_slot_add(mmu, &c) == 0);
	fault_range(mmu, BASE, 16 * MiB);
}

TEST(leaf_hint_set_cleared_consulted)
{
	struct config_guard g = config_for_test(true);
	struct zap_stats z;
	struct mmu mmu;

	vm_16m(&mmu, &npt_format);
	/* The first zap walks all 8 full tables and marks them on the way out. */
	z = zap_counted(&mmu, BASE, 16 * MiB);
	CHECK_EQ_U64(z.zaps, 1);
	CHECK_EQ_U64(z.zap_leaf_visits, 8 * REGION_PAGES);
	CHECK_EQ_U64(z.zap_hint_checks, 8);
	CHECK_EQ_U64(z.tdp_zap_skip_child, 0);
	CHECK_EQ_U64(z.zap_hints_set, 8);
	CHECK_EQ_U64(mmu.stats.pages_4k, 0);
	CHECK(audit_ok(&mmu));
	/* Again: nothing below level 2 is read. */
	z = zap_counted(&mmu, BASE, 16 * MiB);
	CHECK_EQ_U64(z.zap_leaf_visits, 0);
	CHECK_EQ_U64(z.tdp_zap_skip_child, 8);
	/* A refault clears its table's hint; the tables stay linked. */
	uint64_t tables = mmu.stats.mmu_tables;
	CHECK_EQ_U64(tdp_map(&mmu, BASE + 3 * 2 * MiB + 5 * 4096, TDP_ACC_READ), TDP_FIXED);
	CHECK_EQ_U64(mmu.stats.mmu_tables, tables);
	CHECK(!leaf_hint_is_set(leaf_table_of(&mmu, BASE + 3 * 2 * MiB)));
	CHECK(leaf_hint_is_set(leaf_table_of(&mmu, BASE + 2 * 2 * MiB)));
	CHECK(audit_ok(&mmu));
	z = zap_counted(&mmu, BASE, 16 * MiB);
	CHECK_EQ_U64(z.zap_leaf_visits, REGION_PAGES);
	CHECK_EQ_U64(z.tdp_zap_skip_child, 7);
	CHECK_EQ_U64(z.zap_hints_set, 1);
	CHECK_EQ_U64(mmu.stats.pages_4k, 0);
	CHECK(audit_ok(&mmu));
	mmu_destroy(&mmu);
	config_restore(&g);
}

TEST(leaf_hint_partial_zaps_bypass)
{
	struct config_guard g = config_for_test(true);
	struct zap_stats z;
	struct mmu mmu;

	vm_16m(&mmu, ept_format(true));
	/* Below 2 MiB: no check, no mark, even when the table ends up empty. */
	z = zap_counted(&mmu, BASE, 1 * MiB);
	z = zap_counted(&mmu, BASE + 1 * MiB, 1 * MiB);
	CHECK_EQ_U64(z.zap_hint_checks, 0);
	CHECK_EQ_U64(z.zap_hints_set, 0);
	CHECK(!leaf_hint_is_set(leaf_table_of(&mmu, BASE)));
	/* 2 MiB not aligned: no whole region inside, no hint work at all. */
	z = zap_counted(&mmu, BASE + 3 * MiB, 2 * MiB);
	CHECK_EQ_U64(z.zap_hint_checks, 0);
	/* Unaligned ends: only the whole regions inside are checked and marked;
	 * the emptied region 0 is marked now that a covering zap walks it. */
	z = zap_counted(&mmu, BASE + 4096, 7 * MiB);
	CHECK_EQ_U64(z.zap_hint_checks, 2);
	CHECK_EQ_U64(z.zap_hints_set, 2);
	z = zap_counted(&mmu, BASE, 8 * MiB);
	CHECK_EQ_U64(z.zap_hint_checks, 4);
	CHECK_EQ_U64(z.tdp_zap_skip_child, 2);
	CHECK_EQ_U64(z.zap_hints_set, 2);
	CHECK_EQ_U64(z.zap_leaf_visits, 2 * REGION_PAGES);
	CHECK(audit_ok(&mmu));
	mmu_destroy(&mmu);
	config_restore(&g);
}

TEST(leaf_hint_switch)
{
	struct config_guard g = config_for_test(true);
	struct zap_stats z;
	struct mmu mmu;

	vm_16m(&mmu, &npt_format);
	zap(&mmu, BASE, 16 * MiB);
	/* Off: no checks, every table walked; installs still clear hints, so
	 * turning the switch on again finds none stale. */
	mmu_config.leaf_hint = false;
	z = zap_counted(&mmu, BASE, 16 * MiB);
	CHECK_EQ_U64(z.zap_hint_checks, 0);
	CHECK_EQ_U64(z.zap_leaf_visits, 8 * REGION_PAGES);
	CHECK_EQ_U64(tdp_map(&mmu, BASE + 2 * MiB, TDP_ACC_READ), TDP_FIXED);
	mmu_config.leaf_hint = true;
	CHECK(audit_ok(&mmu));
	z = zap_counted(&mmu, BASE, 16 * MiB);
	CHECK_EQ_U64(z.tdp_zap_skip_child, 7);
	CHECK_EQ_U64(z.zap_leaf_visits, REGION_PAGES);
	CHECK_EQ_U64(mmu.stats.pages_4k, 0);
	mmu_destroy(&mmu);
	config_restore(&g);
}

/* A zap that yields at every chance (a waiter is faked) still zaps every leaf,
 * marks only empty tables, and skips the hinted ones. */
TEST(leaf_hint_zap_yields)
{
	struct config_guard g = config_for_test(true);
	struct zap_stats z;
	struct mmu mmu;

	vm_16m(&mmu, &npt_format);
	mmu.lock.waiters = 1;
	z = zap_counted(&mmu, BASE, 16 * MiB);
	CHECK(mmu.stats.zap_yields > 0);
	CHECK_EQ_U64(mmu.stats.pages_4k, 0);
	CHECK(z.zap_hints_set >= 7);
	CHECK(audit_ok(&mmu));
	CHECK_EQ_U64(tdp_map(&mmu, BASE + 5 * 2 * MiB, TDP_ACC_READ), TDP_FIXED);
	z = zap_counted(&mmu, BASE, 16 * MiB);
	CHECK_EQ_U64(mmu.stats.pages_4k, 0);
	CHECK(z.tdp_zap_skip_child >= 6);
	mmu.lock.waiters = 0;
	CHECK(audit_ok(&mmu));
	mmu_destroy(&mmu);
	config_restore(&g);
}

/* A skip decided before a restart is forgotten: the walk descends again. */
TEST(leaf_hint_iter_skip_forgotten_on_restart)
{
	struct config_guard g = config_for_test(true);
	struct tdp_iter it;
	struct mmu mmu;

	vm_16m(&mmu, &npt_format);
	for_each_tdp_pte(it, &mmu.root, BASE >> 12, (BASE + 4 * MiB) >> 12)
		if (it.level == 2)
			break;
	REQUIRE(it.valid && it.level == 2);
	tdp_iter_skip_children(&it);
	tdp_iter_restart(&it);
	while (it.valid && it.level > 2)
		tdp_iter_next(&it);
	tdp_iter_next(&it);
	CHECK_EQ_U64(it.level, 1);
	/* Without the restart the skip takes effect: the next entry is the
	 * following level-2 one. */
	tdp_iter_start(&it, &mmu.root, 1, BASE >> 12, (BASE + 4 * MiB) >> 12);
	while (it.valid && it.level > 2)
		tdp_iter_next(&it);
	tdp_iter_skip_children(&it);
	tdp_iter_next(&it);
	CHECK_EQ_U64(it.level, 2);
	CHECK_EQ_U64(it.gfn, (BASE + 2 * MiB) >> 12);
	mmu_destroy(&mmu);
	config_restore(&g);
}

/* Random lockstep: VM `hinted` runs with the switch as the sequence sets it,
 * VM `plain` always without. Slot 0 is lazy and mapped at 4 KiB (discards free
 * its frames); slot 1 is eager and may map 2 MiB leaves. */
#define SLOT0 (64 * MiB)
#define SLOT0_SIZE (16 * MiB)
#define SLOT1 (96 * MiB)
#define SLOT1_SIZE (8 * MiB)
#define PAGES ((SLOT0_SIZE + SLOT1_SIZE) >> 12)

struct lockstep {
	struct mmu hinted, plain;
	bool hint_on;     /* the switch during `hinted`'s operations */
	bool slot1_small; /* slot 1 has MEMSLOT_NO_HUGE this time */
	uint64_t word[PAGES]; /* what each page's first word must read */
	struct rng rng;
	uint64_t seed, step; /* seed: MMU_SEED to rerun */
	bool failed;
};

static uint64_t page_gpa(uint64_t page)
{
	return page < (SLOT0_SIZE >> 12) ? SLOT0 + (page << 12)
					 : SLOT1 + ((page - (SLOT0_SIZE >> 12)) << 12);
}

static void lockstep_fail(struct lockstep *ls, const char *what)
{
	char m[200];

	if (ls->failed)
		return;
	ls->failed = true;
	snprintf(m, sizeof m, "%s seed %llu step %llu: %s", ls->hinted.root.fmt->name,
		 (unsigned long long)ls->seed, (unsigned long long)ls->step, what);
	unit_fail(__FILE__, __LINE__, m);
}

static void add_slots(struct mmu *mmu, bool slot1_small, int which)
{
	struct memslot_config s0 = { .gpa = SLOT0, .size = SLOT0_SIZE, .flags = MEMSLOT_NO_HUGE,
				     .backing = { .kind = BACKING_LAZY } };
	struct memslot_config s1 = { .gpa = SLOT1, .size = SLOT1_SIZE,
				     .flags = slot1_small ? MEMSLOT_NO_HUGE : 0,
				     .backing = { .kind = BACKING_EAGER } };

	if (which != 1)
		CHECK(mmu_slot_add(mmu, &s0) == 0);
	if (which != 0)
		CHECK(mmu_slot_add(mmu, &s1) == 0);
}

/* Run op on `hinted` with its switch, then on `plain` with the hint off. */
#define ON_BOTH(ls, op)                                           \
	do {                                                      \
		struct mmu *mmu_ = &(ls)->hinted;                 \
		mmu_config.leaf_hint = (ls)->hint_on;             \
		op;                                               \
		mmu_ = &(ls)->plain;                              \
		mmu_config.leaf_hint = false;                     \
		op;                                               \
	} while (0)

static bool mapped(struct mmu *mmu, uint64_t gpa, paddr_t *hpa)
{
	int level;
	unsigned rights;
	bool m;

	read_lock(&mmu->lock);
	m = tdp_translate(mmu, gpa, hpa, &level, &rights);
	read_unlock(&mmu->lock);
	return m;
}

static void ls_access(struct lockstep *ls)
{
	/* A few pages per region, so that tables refill partly. */
	uint64_t page = rng_below(&ls->rng, PAGES / REGION_PAGES) * REGION_PAGES +
			rng_below(&ls->rng, 16) * 29;
	uint64_t gpa = page_gpa(page), value = rng_next(&ls->rng) | 1;
	paddr_t hpa[2];

	ON_BOTH(ls, if (tdp_map(mmu_, gpa, TDP_ACC_WRITE) == TDP_NO_MEMORY)
			    lockstep_fail(ls, "fault ran out of memory"));
	if (!mapped(&ls->hinted, gpa, &hpa[0]) || !mapped(&ls->plain, gpa, &hpa[1])) {
		lockstep_fail(ls, "page not mapped after its fault");
		return;
	}
	for (int v = 0; v < 2; v++) {
		uint64_t *w = pa_to_va(hpa[v]);

		if (*w != ls->word[page])
			lockstep_fail(ls, v ? "plain VM lost data" : "hinted VM lost data");
		*w = value;
	}
	ls->word[page] = value;
}

/* After a zap or discard of [gpa, gpa + len): nothing mapped there in either. */
static void check_unmapped(struct lockstep *ls, uint64_t gpa, uint64_t len)
{
	paddr_t hpa;

	for (uint64_t a = gpa; a < gpa + len; a += 4096)
		if (mapped(&ls->hinted, a, &hpa) || mapped(&ls->plain, a, &hpa)) {
			lockstep_fail(ls, "a zapped page is still mapped");
			return;
		}
}

static void forget_words(struct lockstep *ls, uint64_t gpa, uint64_t len)
{
	for (uint64_t page = 0; page < PAGES; page++)
		if (page_gpa(page) >= gpa && page_gpa(page) < gpa + len)
			ls->word[page] = 0;
}

/* A range over one slot: whole 2 MiB regions, perhaps with ragged ends, or a
 * piece below 2 MiB. */
static void random_range(struct lockstep *ls, bool whole, uint64_t *gpa, uint64_t *len)
{
	bool slot0 = rng_below(&ls->rng, 3) != 0;
	uint64_t base = slot0 ? SLOT0 : SLOT1, size = slot0 ? SLOT0_SIZE : SLOT1_SIZE;
	uint64_t regions = size / (2 * MiB);

	if (whole) {
		uint64_t first = rng_below(&ls->rng, regions);
		uint64_t n = 1 + rng_below(&ls->rng, regions - first);

		*gpa = base + first * 2 * MiB;
		*len = n * 2 * MiB;
		if (rng_below(&ls->rng, 4) == 0 && *gpa > base) { /* ragged start */
			*gpa -= 4096 * (1 + rng_below(&ls->rng, 511));
			*len += base + first * 2 * MiB - *gpa;
		}
		if (rng_below(&ls->rng, 4) == 0 && *gpa + *len < base + size) /* ragged end */
			*len += 4096 * (1 + rng_below(&ls->rng, 511));
		return;
	}
	*len = 4096 * (1 + rng_below(&ls->rng, 511));
	*gpa = base + (rng_below(&ls->rng, (size - *len) >> 12) << 12);
}

static void ls_step(struct lockstep *ls)
{
	unsigned op = rng_below(&ls->rng, 100);
	uint64_t gpa, len;

	if (op < 65) {
		ls_access(ls);
	} else if (op < 85) {
		random_range(ls, op < 78, &gpa, &len);
		ON_BOTH(ls, zap(mmu_, gpa, len));
		check_unmapped(ls, gpa, len);
	} else if (op < 94) {
		random_range(ls, op < 90, &gpa, &len);
		ON_BOTH(ls, mmu_discard(mmu_, gpa, len));
		check_unmapped(ls, gpa, len);
		forget_words(ls, gpa, len);
	} else if (op < 97) {
		int which = (int)rng_below(&ls->rng, 2);

		if (which == 1)
			ls->slot1_small = rng_below(&ls->rng, 2);
		ON_BOTH(ls, mmu_slot_remove(mmu_, which ? SLOT1 : SLOT0));
		ON_BOTH(ls, add_slots(mmu_, ls->slot1_small, which));
		forget_words(ls, which ? SLOT1 : SLOT0, which ? SLOT1_SIZE : SLOT0_SIZE);
	} else {
		ls->hint_on = !ls->hint_on;
	}
}

/* Both VMs map exactly the same pages. */
static void check_same_mappings(struct lockstep *ls)
{
	paddr_t hpa;

	for (uint64_t page = 0; page < PAGES; page++)
		if (mapped(&ls->hinted, page_gpa(page), &hpa) !=
		    mapped(&ls->plain, page_gpa(page), &hpa)) {
			lockstep_fail(ls, "the VMs map different pages");
			return;
		}
}

static void lockstep_run(const struct spte_format *fmt, uint64_t seed, uint64_t steps)
{
	static struct lockstep ls;
	struct config_guard g = config_for_test(true);

	host_mem_init(1 * GiB);
	memset(&ls, 0, sizeof(ls));
	ls.seed = seed;
	ls.rng = rng_seeded(seed);
	ls.hint_on = true;
	REQUIRE(mmu_init(&ls.hinted, fmt, no_flush, NULL) == 0);
	REQUIRE(mmu_init(&ls.plain, fmt, no_flush, NULL) == 0);
	add_slots(&ls.hinted, false, -1);
	add_slots(&ls.plain, false, -1);
	for (ls.step = 0; ls.step < steps && !ls.failed; ls.step++) {
		ls_step(&ls);
		if (!audit_ok(&ls.hinted) || !audit_ok(&ls.plain))
			lockstep_fail(&ls, "audit");
		if (ls.step % 64 == 0)
			check_same_mappings(&ls);
	}
	check_same_mappings(&ls);
	CHECK(ls.hinted.zap_stats.tdp_zap_skip_child > 0);
	CHECK(ls.hinted.zap_stats.zap_leaf_visits < ls.plain.zap_stats.zap_leaf_visits);
	CHECK_EQ_U64(ls.plain.zap_stats.zap_hint_checks, 0);
	printf("  %s seed %llu: %llu zaps, leaf visits %llu hinted / %llu plain, %llu skips, "
	       "%llu hints set\n",
	       fmt->name, (unsigned long long)seed, (unsigned long long)ls.hinted.zap_stats.zaps,
	       (unsigned long long)ls.hinted.zap_stats.zap_leaf_visits,
	       (unsigned long long)ls.plain.zap_stats.zap_leaf_visits,
	       (unsigned long long)ls.hinted.zap_stats.tdp_zap_skip_child,
	       (unsigned long long)ls.hinted.zap_stats.zap_hints_set);
	mmu_destroy(&ls.hinted);
	mmu_destroy(&ls.plain);
	config_restore(&g);
}

TEST(leaf_hint_random_lockstep)
{
	const char *s = getenv("MMU_SEED");
	uint64_t base = s ? strtoull(s, NULL, 0) : 1;

	lockstep_run(&npt_format, base, 3000);
	lockstep_run(ept_format(false), base + 1, 3000);
	lockstep_run(ept_format(true), base + 2, 3000);
}
