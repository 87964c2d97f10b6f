/* Checks the MMU tests share. */
#pragma once
#include "mm/mmu.h"

/* Run the audit; on failure print its report (the first broken invariant). */
bool mmu_audit_passes(struct mmu *mmu);
/* What the CPU does on a write through a writable 4 KiB or huge leaf: set
 * its dirty bit (where the format has one). */
void mmu_cpu_sets_dirty(struct mmu *mmu, uint64_t gpa);
