/* Checks the MMU tests share. */
#pragma once
#include "mm/mmu.h"

/* Run the audit; on failure print its report (the first broken invariant). */
bool mmu_audit_passes(struct mmu *mmu);
