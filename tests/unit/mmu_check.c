#include "tests/unit/mmu_check.h"

bool mmu_audit_passes(struct mmu *mmu)
{
	struct mmu_audit_report r;

	if (mmu_audit(mmu, &r))
		return true;
	mmu_audit_print(&r);
	return false;
}
