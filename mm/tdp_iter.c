/* The pre-order TDP walk (see tdp_iter.h). */
#include "mm/tdp_iter.h"

static void load_entry(struct tdp_iter *it)
{
	it->sptep = it->tables[it->level] + tdp_index(it->gfn, it->level);
	it->old_spte = tdp_iter_read(it->sptep);
	it->visited[it->level]++;
}

/* Position on the root entry that holds `target`, or end the walk. */
static void walk_from_root(struct tdp_iter *it)
{
	it->level = TDP_ROOT_LEVEL;
	it->gfn = tdp_level_base(it->target, TDP_ROOT_LEVEL);
	it->skip_children = false;
	it->valid = it->target < it->end && it->target < TDP_GFN_LIMIT;
	if (it->valid)
		load_entry(it);
}

void tdp_iter_start(struct tdp_iter *it, const struct tdp_root *root, int min_level,
		    uint64_t start, uint64_t end)
{
	it->fmt = root->fmt;
	it->tables[TDP_ROOT_LEVEL] = pa_to_va(root->table);
	it->start = start;
	it->end = end;
	it->target = start;
	it->yielded_gfn = start;
	it->min_level = min_level;
	for (int level = 0; level <= TDP_ROOT_LEVEL; level++)
		it->visited[level] = 0;
	it->descended = 0;
	it->yielded = false;
	walk_from_root(it);
}

void tdp_iter_restart(struct tdp_iter *it)
{
	it->target = it->gfn > it->start ? it->gfn : it->start;
	it->yielded_gfn = it->target;
	walk_from_root(it);
}

void tdp_iter_next(struct tdp_iter *it)
{
	uint64_t step;

	/* The current entry was not handled: the walk resumes at it. */
	if (it->yielded) {
		it->yielded = false;
		tdp_iter_restart(it);
		return;
	}
	if (it->level > it->min_level && spte_is_table(it->fmt, it->old_spte, it->level)) {
		if (!it->skip_children) {
			/* Down: the first child at or after the target. Only the
			 * first descent of a walk starts inside the child's range. */
			uint64_t aim = it->gfn > it->target ? it->gfn : it->target;

			it->level--;
			it->tables[it->level] = pa_to_va(spte_addr(it->fmt, it->old_spte));
			it->gfn = tdp_level_base(aim, it->level);
			it->descended++;
			load_entry(it);
			return;
		}
		it->skip_children = false;
	}
	/* Sideways, climbing out of every table whose last entry this was. */
	step = tdp_level_pages(it->level);
	it->gfn = tdp_level_base(it->gfn, it->level) + step;
	while (it->level < TDP_ROOT_LEVEL && tdp_index(it->gfn, it->level) == 0)
		it->level++;
	if (it->gfn >= it->end || it->gfn >= TDP_GFN_LIMIT) {
		it->valid = false;
		return;
	}
	load_entry(it);
}
