/* Huge-page splitting (see split.h) and the per-vCPU table cache.
 *
 * Why a split needs no TLB flush when the children are equivalent: every child
 * maps the same frame the huge leaf mapped for its addresses, with at least
 * the huge leaf's rights. A TLB entry still holding the huge translation thus
 * translates every address exactly as the new entries do and allows nothing
 * they forbid; it only makes the CPU fault where a child now allows more (the
 * fault finds the child's rights and returns spurious, and the faulting
 * translation is not kept). The huge leaf's table entry is replaced by one
 * compare-exchange, so a concurrent walker sees either the leaf or the complete
 * child table, never a half-filled one: the children are written before the
 * link is published (release order).
 *
 * When a flush is needed: when a child has fewer rights than the huge leaf
 * (eager splitting at dirty-log enable write-protects the children), since a
 * TLB entry of the huge leaf would still allow the write. Changing the frame
 * would need one too; a split never does.
 *
 * The iTLB-multihit erratum concerns two translations of one address of
 * different page sizes in the instruction TLB. A huge leaf that the NX-huge-page
 * policy made non-executable is never used for a fetch, so it never sits in the
 * instruction TLB beside its executable 4 KiB children. */
#include "mm/split.h"
#include "mm/mmu_internal.h"

int tdp_table_cache_topup(struct tdp_table_cache *cache)
{
	while (cache->count < TDP_TABLE_CACHE_MIN) {
		paddr_t pa = tdp_table_frame_alloc();

		if (!pa)
			return -1;
		cache->frames[cache->count++] = pa;
	}
	return 0;
}

void tdp_table_cache_release(struct tdp_table_cache *cache)
{
	while (cache->count)
		tdp_table_frame_free(cache->frames[--cache->count]);
}

paddr_t tdp_table_take(struct mmu *mmu, struct tdp_table_cache *cache, int level,
		       uint64_t base_gfn)
{
	paddr_t pa;

	if (!cache)
		return tdp_table_alloc(mmu, level, base_gfn);
	/* The caller did not top up before locking: allocate after all. */
	if (MMU_WARN_ON(!cache->count, level, base_gfn, 0, 0))
		return tdp_table_alloc(mmu, level, base_gfn);
	pa = cache->frames[--cache->count];
	tdp_table_init(mmu, pa, level, base_gfn);
	return pa;
}

unsigned split_child_rights(const struct spte_format *f, uint64_t huge, int level,
			    const struct memslot *slot)
{
	unsigned rights = spte_rights(f, huge);

	if (level - 1 == 1)
		rights |= memslot_rights(slot) & TDP_ACC_EXEC;
	if (slot->flags & MEMSLOT_DIRTY_LOG)
		rights &= ~TDP_ACC_WRITE;
	return rights;
}

uint64_t split_child_spte(const struct spte_format *f, uint64_t huge, int level, unsigned i,
			  unsigned rights)
{
	paddr_t pa = spte_addr(f, huge) + ((paddr_t)i * tdp_level_pages(level - 1) << PAGE_SHIFT);
	uint64_t child = spte_make_leaf(f, pa, level - 1, rights);

	return huge & f->accessed ? child : child & ~f->accessed;
}

/* Empty the first n children of a table nobody saw, through the choke point
 * (undoing their accounting), and free it. */
static void unfill_children(struct mmu *mmu, paddr_t table, int level, uint64_t gfn, unsigned n)
{
	uint64_t *pt = pa_to_va(table);

	for (unsigned i = 0; i < n; i++)
		tdp_set_unlinked_spte(mmu, &pt[i], gfn + i * tdp_level_pages(level - 1), level - 1,
				      SPTE_NONE);
	tdp_table_free_unlinked(mmu, table);
}

/* False when a child's rmap entry found no memory: the table is then freed. */
static bool fill_children(struct mmu *mmu, paddr_t table, uint64_t huge, int level, uint64_t gfn,
			  unsigned rights)
{
	uint64_t *pt = pa_to_va(table);

	for (unsigned i = 0; i < SPTE_PER_TABLE; i++) {
		if (tdp_set_unlinked_spte(mmu, &pt[i], gfn + i * tdp_level_pages(level - 1),
					  level - 1,
					  split_child_spte(mmu->root.fmt, huge, level, i, rights)) !=
		    TDP_SET_DONE) {
			unfill_children(mmu, table, level, gfn, i);
			return false;
		}
	}
	return true;
}

enum tdp_set_result tdp_split_huge_spte_atomic(struct mmu *mmu, struct tdp_iter *it,
					       paddr_t table, unsigned rights)
{
	enum tdp_set_result res;

	if (!fill_children(mmu, table, it->old_spte, it->level, it->gfn, rights))
		return TDP_SET_NO_MEMORY;
	res = tdp_set_spte_atomic(mmu, it, spte_make_table(mmu->root.fmt, table));
	/* Lost the race: nobody saw the table, so empty it and free it now. */
	if (res != TDP_SET_DONE)
		unfill_children(mmu, table, it->level, it->gfn, SPTE_PER_TABLE);
	return res;
}

enum tdp_set_result tdp_split_huge_spte(struct mmu *mmu, struct tdp_iter *it, paddr_t table,
					unsigned rights, bool *flush)
{
	unsigned lost = spte_rights(mmu->root.fmt, it->old_spte) & ~rights;

	if (!fill_children(mmu, table, it->old_spte, it->level, it->gfn, rights))
		return TDP_SET_NO_MEMORY;
	tdp_set_spte(mmu, it, spte_make_table(mmu->root.fmt, table));
	*flush |= lost != 0;
	return TDP_SET_DONE;
}
