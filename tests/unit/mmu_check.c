#include "tests/unit/mmu_check.h"
#include "mm/mmu_internal.h"
#include <stdio.h>

bool mmu_audit_passes(struct mmu *mmu)
{
	struct mmu_audit_report r;

	/* An MMU_WARN_ON fired somewhere (it printed where): that is a failure
	 * too, even when the tables came out right. */
	if (__atomic_load_n(&mmu_warnings, __ATOMIC_RELAXED)) {
		printf("  %llu MMU warnings\n", (unsigned long long)mmu_warnings);
		return false;
	}
	if (mmu_audit(mmu, &r))
		return true;
	mmu_audit_print(&r);
	return false;
}

/* What the CPU does on a write through a writable leaf: set its dirty bit. */
void mmu_cpu_sets_dirty(struct mmu *mmu, uint64_t gpa)
{
	const struct spte_format *f = mmu->root.fmt;
	uint64_t gfn = gpa >> PAGE_SHIFT;
	struct tdp_iter it;

	read_lock(&mmu->lock);
	for_each_tdp_pte(it, &mmu->root, gfn, gfn + 1)
		if (spte_present(f, it.old_spte) && spte_is_leaf(f, it.old_spte, it.level)) {
			if ((it.old_spte & f->writable) && f->dirty)
				__atomic_fetch_or(it.sptep, f->dirty, __ATOMIC_RELAXED);
			break;
		}
	read_unlock(&mmu->lock);
}
