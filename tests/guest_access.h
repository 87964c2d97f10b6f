#ifndef SPRIG_TESTS_GUEST_ACCESS_H
#define SPRIG_TESTS_GUEST_ACCESS_H
/* One guest access, as the host tests and benchmarks model it: a walk of the
 * tables (no TLB), and a fault where no leaf allows the access. */
#include "mm/mmu.h"
#include "mm/tdp_mmu.h"

/* 0: a leaf allowed it; 1: a fault mapped it; -1: the fault did not. */
static inline int guest_access(struct mmu *mmu, uint64_t gpa, unsigned access)
{
	unsigned rights;
	paddr_t hpa;
	int level;
	bool hit;

	read_lock(&mmu->lock);
	hit = tdp_translate(mmu, gpa, &hpa, &level, &rights) && (rights & access) == access;
	read_unlock(&mmu->lock);
	if (hit)
		return 0;
	return tdp_map(mmu, gpa, access) == TDP_FIXED ? 1 : -1;
}

#endif
