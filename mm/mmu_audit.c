/* The MMU audit: walks every table under the write lock and checks
 *  - each table is a page-table frame with the level and base gfn it is linked
 *    at, reachable once, with a present count equal to a recount;
 *  - each entry is empty, an exact table entry, or an exact leaf: a leaf lies
 *    wholly in one memslot, maps the frame the slot's backing has at that gfn,
 *    at a level the backing allows, with the slot's rights (leaf_matches_slot:
 *    the accessed and dirty bits may be clear or set by the walker, write may
 *    be withheld by prefetch or dirty logging, execute on a huge leaf by the
 *    NX-huge-page policy);
 *  - on a dirty-logged slot, no huge leaf is writable and, in formats without
 *    dirty bits, every writable leaf's page is in the log (dirty_log_audit_leaf);
 *  - a table with the leaf-empty hint is a 4 KiB leaf table and is empty;
 *  - the per-level leaf counts and the table count equal the recount (no table
 *    leaked or lost), and each backing's resident count equals its recount;
 *  - reverse maps: each leaf is in its frame's rmap exactly once, and every
 *    entry in the rmap of a backed frame is a present leaf mapping that frame. */
#include "mm/leaf_hint.h"
#include "mm/mmu_internal.h"
#include "lib/print.h"

#define AUDIT_MARK 0x80 /* in frame.pt.hint while the audit runs */

struct audit {
	struct mmu *mmu;
	struct mmu_audit_report *r;
};

static void fail(struct audit *a, const char *what, uint64_t gfn, int level, uint64_t spte)
{
	char bits[96];

	if (!a->r->errors++) {
		a->mmu->root.fmt->describe(a->mmu->root.fmt, spte, bits, sizeof(bits));
		ksnprintf(a->r->first_error, sizeof(a->r->first_error),
			  "%s: gfn %#llx level %d spte %s", what, (unsigned long long)gfn, level,
			  bits);
	}
}

static void check_leaf(struct audit *a, const uint64_t *sptep, uint64_t gfn, int level,
		       uint64_t spte)
{
	const struct spte_format *f = a->mmu->root.fmt;
	struct memslot *s = memslot_find(&a->mmu->slots, gfn);
	const char *rmap_error, *dirty_error;
	uint64_t idx;

	a->r->leaves[level - 1]++;
	if (!s || memslot_end(s) < gfn + tdp_level_pages(level)) {
		fail(a, "leaf outside a memslot", gfn, level, spte);
		return;
	}
	idx = gfn - s->base_gfn;
	if (memslot_max_level(s, gfn) < level)
		fail(a, "leaf larger than its backing allows", gfn, level, spte);
	else if (!backing_peek(&s->backing, idx))
		fail(a, "leaf maps an unbacked page", gfn, level, spte);
	else if (!leaf_matches_slot(f, spte, backing_peek(&s->backing, idx), level, s))
		fail(a, "leaf differs from the backing frame or the slot's rights", gfn, level, spte);
	else if ((rmap_error = mmu_rmap_check_leaf(f, sptep, spte)))
		fail(a, rmap_error, gfn, level, spte);
	else if ((dirty_error = dirty_log_audit_leaf(f, s, gfn, spte, level)))
		fail(a, dirty_error, gfn, level, spte);
}

static void audit_table(struct audit *a, paddr_t table, int level, uint64_t base_gfn)
{
	const struct spte_format *f = a->mmu->root.fmt;
	const uint64_t *pt = pa_to_va(table);
	struct frame *fr = frame_of(table);
	unsigned present = 0;

	if (!fr || !(fr->flags & FRAME_PAGETABLE) || fr->pt.level != level ||
	    fr->pt.base_gfn_hi != (uint32_t)(base_gfn >> 9)) {
		fail(a, "table frame metadata wrong", base_gfn, level, table);
		return;
	}
	if (fr->pt.hint & AUDIT_MARK) {
		fail(a, "table reachable twice", base_gfn, level, table);
		return;
	}
	fr->pt.hint |= AUDIT_MARK;
	a->r->tables++;
	for (unsigned i = 0; i < SPTE_PER_TABLE; i++) {
		uint64_t spte = tdp_iter_read(&pt[i]), gfn = base_gfn + i * tdp_level_pages(level);

		if (spte == SPTE_NONE)
			continue;
		present++;
		if (!spte_present(f, spte))
			fail(a, "junk in a non-present entry", gfn, level, spte);
		else if (spte_is_leaf(f, spte, level) && level > TDP_MAX_HUGE_LEVEL)
			fail(a, "leaf at the root level", gfn, level, spte);
		else if (spte_is_leaf(f, spte, level))
			check_leaf(a, &pt[i], gfn, level, spte);
		else if (level == TDP_ROOT_LEVEL && gfn >= TDP_GFN_LIMIT)
			fail(a, "entry beyond the address space", gfn, level, spte);
		else if (spte != spte_make_table(f, spte_addr(f, spte)))
			fail(a, "table entry has wrong bits", gfn, level, spte);
		else
			audit_table(a, spte_addr(f, spte), level - 1, gfn);
	}
	if (present != fr->pt.present)
		fail(a, "table present count differs from a recount", base_gfn, level, fr->pt.present);
	if ((fr->pt.hint & PT_HINT_LEAF_EMPTY) && (level != 1 || present))
		fail(a, "leaf-empty hint on a table with entries or above the leaf level", base_gfn,
		     level, present);
}

static void unmark(struct mmu *mmu, paddr_t table, int level)
{
	const struct spte_format *f = mmu->root.fmt;
	const uint64_t *pt = pa_to_va(table);
	struct frame *fr = frame_of(table);

	if (!fr || !(fr->pt.hint & AUDIT_MARK))
		return;
	fr->pt.hint &= ~AUDIT_MARK;
	for (unsigned i = 0; level > 1 && i < SPTE_PER_TABLE; i++) {
		uint64_t spte = tdp_iter_read(&pt[i]);

		if (spte_is_table(f, spte, level))
			unmark(mmu, spte_addr(f, spte), level - 1);
	}
}

bool mmu_audit(struct mmu *mmu, struct mmu_audit_report *r)
{
	struct audit a = { mmu, r };
	static const char *const count_names[] = { "pages_4k", "pages_2m", "pages_1g" };

	*r = (struct mmu_audit_report){ 0 };
	read_lock(&mmu->slots_lock);
	mmu_write_lock(mmu);
	audit_table(&a, mmu->root.table, TDP_ROOT_LEVEL, 0);
	unmark(mmu, mmu->root.table, TDP_ROOT_LEVEL);
	for (int l = 0; l < 3; l++)
		if (r->leaves[l] != stat_read(&mmu->stats.pages[l]))
			fail(&a, count_names[l], 0, l + 1, stat_read(&mmu->stats.pages[l]));
	if (mmu->tables_to_free)
		fail(&a, "unlinked tables waiting without a flush", 0, 0, mmu->tables_to_free);
	if (r->tables != stat_read(&mmu->stats.mmu_tables))
		fail(&a, "mmu_tables differs from the reachable tables", 0, 0,
		     stat_read(&mmu->stats.mmu_tables));
	for (unsigned i = 0; i < mmu->slots.count; i++) {
		struct backing *b = &mmu->slots.slot[i].backing;
		uint64_t n = backing_count_resident(b);

		r->backed_pages += n;
		if (n != __atomic_load_n(&b->resident, __ATOMIC_RELAXED))
			fail(&a, "backing resident count differs from a recount",
			     mmu->slots.slot[i].base_gfn, 0, n);
		for (uint64_t page = 0; page < b->npages; page++) {
			paddr_t pa = backing_peek(b, page);
			const char *rmap_error = pa ? mmu_rmap_check_frame(mmu->root.fmt, pa) : NULL;

			if (rmap_error)
				fail(&a, rmap_error, mmu->slots.slot[i].base_gfn + page, 0, pa);
		}
	}
	write_unlock(&mmu->lock);
	read_unlock(&mmu->slots_lock);
	return r->errors == 0;
}

void mmu_audit_print(const struct mmu_audit_report *r)
{
	kprintf("mmu audit: %s, %llu errors; %llu tables, leaves 4k %llu 2m %llu 1g %llu, "
		"%llu pages backed\n",
		r->errors ? "FAILED" : "ok", (unsigned long long)r->errors,
		(unsigned long long)r->tables, (unsigned long long)r->leaves[0],
		(unsigned long long)r->leaves[1], (unsigned long long)r->leaves[2],
		(unsigned long long)r->backed_pages);
	if (r->errors)
		kprintf("  first: %s\n", r->first_error);
}
