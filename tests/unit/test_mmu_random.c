/* Seeded random sequences of MMU operations against a reference model.
 *
 * The guest-physical space holds a few candidate regions (unaligned, crossing
 * 2 MiB boundaries, 2 MiB-capable, one 1 GiB-capable). Each step is an access
 * (through the model TLB), a zap, a discard, a slot add or a slot remove. The
 * model keeps, per gfn, the frame it must map to once known and the word the
 * page must start with; the audit and a full model-TLB check run after every
 * step, and the frame allocator must get every frame back at teardown. */
#include "check.h"
#include "mm/mmu_internal.h"
#include "mm/tdp_mmu.h"
#include "mm/cow.h"
#include "svm/npt.h"
#include "tests/rng.h"
#include "tests/unit/host_mem.h"
#include "tests/unit/model_tlb.h"
#include "vmx/ept.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GiB (1ull << 30)
#define MiB (1ull << 20)
#define KiB (1ull << 10)

#define UNKNOWN_WORD 0xdeadbeefcafef00dull /* eager without zeroing: any content */

struct region {
	uint64_t gpa, size;
	bool only_eager_no_zero; /* too large to zero or scan at every step */
	bool present;
	enum backing_kind kind;
	uint64_t *image;
	uint64_t image_bytes;
	paddr_t *frame; /* per page: the frame seen, 0 if none yet */
	uint64_t *word; /* per page: expected first word */
};

static struct region regions[] = {
	{ .gpa = 0, .size = 1 * MiB },
	{ .gpa = 1 * MiB, .size = 3 * MiB },
	{ .gpa = 6 * MiB, .size = 8 * MiB },
	{ .gpa = 16 * MiB + 4 * KiB, .size = 64 * KiB },
	{ .gpa = 4 * GiB - 2 * MiB, .size = 4 * MiB },
	{ .gpa = 1 * GiB, .size = 1 * GiB, .only_eager_no_zero = true },
};
#define N_REGIONS (sizeof(regions) / sizeof(regions[0]))

static uint64_t image_word(const struct region *r, uint64_t page)
{
	return page * 8 < r->image_bytes / 512 ? r->image[page * 512] : 0;
}

static void region_reset_page(struct region *r, uint64_t page)
{
	r->word[page] = r->kind == BACKING_RESTORE ? image_word(r, page) : 0;
	if (r->kind != BACKING_EAGER)
		r->frame[page] = 0;
}

static bool add_region(struct mmu *mmu, struct region *r, struct rng *rng)
{
	uint64_t pages = r->size >> 12;
	static const uint32_t chunks[] = { 1, 4, 16, 512 };
	struct memslot_config c = { .gpa = r->gpa, .size = r->size };

	r->kind = r->only_eager_no_zero ? BACKING_EAGER : (enum backing_kind)rng_below(rng, 3);
	c.backing.kind = r->kind;
	c.backing.no_zero = r->only_eager_no_zero;
	if (rng_below(rng, 5) == 0)
		c.flags |= MEMSLOT_READONLY;
	if (rng_below(rng, 5) == 0)
		c.flags |= MEMSLOT_NO_HUGE;
	if (r->kind == BACKING_RESTORE) {
		r->image_bytes = rng_below(rng, 2) ? r->size : r->size / 2 + 1234;
		r->image = malloc(r->image_bytes + 8);
		for (uint64_t i = 0; i < (r->image_bytes + 7) / 8; i++)
			r->image[i] = rng_next(rng) | 1;
		c.backing.image = r->image;
		c.backing.image_bytes = r->image_bytes;
		c.backing.chunk_pages = chunks[rng_below(rng, 4)];
	}
	if (mmu_slot_add(mmu, &c))
		return false;
	r->present = true;
	r->frame = calloc(pages, sizeof(*r->frame));
	r->word = calloc(pages, sizeof(*r->word));
	for (uint64_t p = 0; p < pages; p++)
		region_reset_page(r, p);
	if (r->only_eager_no_zero)
		for (uint64_t p = 0; p < pages; p++)
			r->word[p] = UNKNOWN_WORD;
	return true;
}

static void drop_region(struct region *r)
{
	free(r->frame);
	free(r->word);
	free(r->image);
	r->frame = NULL;
	r->word = NULL;
	r->image = NULL;
	r->present = false;
}

static struct region *region_of(uint64_t gpa)
{
	for (unsigned i = 0; i < N_REGIONS; i++)
		if (regions[i].present && gpa >= regions[i].gpa &&
		    gpa < regions[i].gpa + regions[i].size)
			return &regions[i];
	return NULL;
}

static uint64_t last_gpa;

static uint64_t random_gpa(struct rng *rng)
{
	struct region *r = &regions[rng_below(rng, N_REGIONS)];

	if (rng_below(rng, 2)) /* near the last access: TLB hits, spurious faults */
		return last_gpa = (last_gpa + rng_below(rng, 64 * KiB) - 32 * KiB) & ~7ull;

	if (rng_below(rng, 16) == 0) /* around the region: edges and holes */
		return last_gpa = (r->gpa + r->size - 64 * KiB + rng_below(rng, 128 * KiB)) & ~7ull;
	if (r->only_eager_no_zero && rng_below(rng, 2)) /* keep to a few 2 MiB areas */
		return last_gpa = r->gpa + rng_below(rng, 4) * 256 * MiB +
				  (rng_below(rng, 2 * MiB) & ~7ull);
	return last_gpa = r->gpa + (rng_below(rng, r->size) & ~7ull);
}

struct run {
	struct mmu mmu;
	struct model_tlb tlb;
	struct model_tlbs tlbs;
	struct rng rng;
	uint64_t first_seed; /* MMU_SEED to rerun */
	uint64_t steps, accesses, zaps, discards, adds, removes;
	bool failed;
};

static void fail_step(struct run *run, uint64_t step, const char *what)
{
	char m[256];

	if (run->failed)
		return;
	run->failed = true;
	snprintf(m, sizeof m, "%s seed %llu step %llu: %s", run->mmu.root.fmt->name,
		 (unsigned long long)run->first_seed, (unsigned long long)step, what);
	unit_fail(__FILE__, __LINE__, m);
}

static void step_access(struct run *run, uint64_t step)
{
	uint64_t gpa = random_gpa(&run->rng);
	struct region *r = region_of(gpa);
	unsigned access =
		(unsigned[]){ TDP_ACC_READ, TDP_ACC_WRITE, TDP_ACC_EXEC }[rng_below(&run->rng, 3)];
	paddr_t hpa;
	int res = model_access(&run->tlb, &run->mmu, gpa, access, &hpa);
	struct memslot *slot = memslot_find(&run->mmu.slots, gpa >> 12);
	bool readonly = slot && (slot->flags & MEMSLOT_READONLY);
	uint64_t page, *word;

	run->accesses++;
	if (!r) {
		if (res != TDP_NO_SLOT)
			fail_step(run, step, "access outside every slot did not fault NO_SLOT");
		return;
	}
	if (readonly && access == TDP_ACC_WRITE) {
		if (res != TDP_PERMISSION)
			fail_step(run, step, "write to a read-only slot not refused");
		return;
	}
	if (res != 0) {
		fail_step(run, step, "access in a slot failed");
		return;
	}
	page = (gpa - r->gpa) >> 12;
	if (r->frame[page] && r->frame[page] != (hpa & ~0xfffull))
		fail_step(run, step, "gfn maps a different frame than before");
	r->frame[page] = hpa & ~0xfffull;
	word = pa_to_va(hpa & ~0xfffull);
	if (r->word[page] != UNKNOWN_WORD && *word != r->word[page])
		fail_step(run, step, "page content differs from the model");
	if (access == TDP_ACC_WRITE) {
		r->word[page] = rng_next(&run->rng);
		*word = r->word[page];
	}
}

static void step_zap(struct run *run, uint64_t step, bool discard)
{
	uint64_t a = random_gpa(&run->rng) & ~0xfffull;
	uint64_t len = (rng_below(&run->rng, 4) == 0 ? rng_below(&run->rng, 8 * MiB)
						  : rng_below(&run->rng, 64 * KiB)) + 4096;

	(void)step;
	len &= ~0xfffull;
	if (discard) {
		run->discards++;
		mmu_discard(&run->mmu, a, len);
		for (uint64_t g = a; g < a + len; g += 4096) {
			struct region *r = region_of(g);

			if (r)
				region_reset_page(r, (g - r->gpa) >> 12);
		}
		return;
	}
	run->zaps++;
	write_lock(&run->mmu.lock);
	if (tdp_zap_range(&run->mmu, a >> 12, (a + len) >> 12))
		mmu_flush_tlb(&run->mmu);
	write_unlock(&run->mmu.lock);
}

static void step_slot(struct run *run, uint64_t step)
{
	struct region *r = &regions[rng_below(&run->rng, N_REGIONS)];

	if (r->present) {
		run->removes++;
		if (mmu_slot_remove(&run->mmu, r->gpa))
			fail_step(run, step, "slot remove failed");
		drop_region(r);
	} else {
		run->adds++;
		if (!add_region(&run->mmu, r, &run->rng))
			fail_step(run, step, "slot add failed");
	}
}

static void random_run(const struct spte_format *fmt, uint64_t seed, uint64_t steps)
{
	static struct run run;
	struct mmu_audit_report rep;
	struct frame_stats st;
	uint64_t free_before;

	host_mem_init(8 * GiB);
	frame_get_stats(&st);
	free_before = st.free_bytes;
	memset(&run, 0, sizeof(run));
	run.rng = rng_seeded(seed);
	run.first_seed = seed;
	run.tlbs = (struct model_tlbs){ 1, { &run.tlb } };
	if (mmu_init(&run.mmu, fmt, model_tlb_flush, &run.tlbs)) {
		unit_fail(__FILE__, __LINE__, "mmu_init");
		return;
	}
	for (uint64_t step = 0; step < steps && !run.failed; step++) {
		unsigned op = rng_below(&run.rng, 100);

		if (op < 75)
			step_access(&run, step);
		else if (op < 85)
			step_zap(&run, step, false);
		else if (op < 94)
			step_zap(&run, step, true);
		else
			step_slot(&run, step);
		if (!mmu_audit(&run.mmu, &rep)) {
			mmu_audit_print(&rep);
			fail_step(&run, step, rep.first_error);
		}
		model_tlb_check_all(&run.tlb, &run.mmu);
		if (run.tlb.violations)
			fail_step(&run, step, run.tlb.first_violation);
	}
	mmu_destroy(&run.mmu);
	for (unsigned i = 0; i < N_REGIONS; i++)
		if (regions[i].present)
			drop_region(&regions[i]);
	frame_get_stats(&st);
	if (st.free_bytes != free_before)
		unit_fail(__FILE__, __LINE__, "frames leaked at teardown");
	printf("  %s seed %llu: %llu accesses (%llu tlb hits, %llu faults), %llu zaps, %llu "
	       "discards, %llu slot adds, %llu removes; %llu leaves installed, %llu zapped, "
	       "%llu flushes\n",
	       fmt->name, (unsigned long long)seed, (unsigned long long)run.accesses,
	       (unsigned long long)run.tlb.hits, (unsigned long long)run.tlb.faults,
	       (unsigned long long)run.zaps, (unsigned long long)run.discards,
	       (unsigned long long)run.adds, (unsigned long long)run.removes,
	       (unsigned long long)run.mmu.stats.leaves_installed,
	       (unsigned long long)run.mmu.stats.leaves_zapped,
	       (unsigned long long)run.mmu.stats.remote_tlb_flush);
}

/* MMU_SEED=n: the runs use seeds n, n+1, n+2 (+100, +200 for the EPT tests). */
static uint64_t seed_base(void)
{
	const char *s = getenv("MMU_SEED");

	return s ? strtoull(s, NULL, 0) : 1;
}

TEST(mmu_random_npt)
{
	for (uint64_t s = 0; s < 3; s++)
		random_run(&npt_format, seed_base() + s, 4000);
}

TEST(mmu_random_ept)
{
	for (uint64_t s = 0; s < 3; s++)
		random_run(ept_format(false), seed_base() + 100 + s, 4000);
}

TEST(mmu_random_ept_ad)
{
	for (uint64_t s = 0; s < 3; s++)
		random_run(ept_format(true), seed_base() + 200 + s, 4000);
}
