/* A model TLB for host tests: every simulated guest access goes through it,
 * caches the translation it used (huge ones too), and only the MMU's flush
 * callback drops entries (besides capacity evictions, which real TLBs do too).
 * Each hit is checked against the page tables: a cached translation that was
 * zapped, remapped or lost a right without a flush is a violation. Neither QEMU
 * nor Bochs can show a missing flush; this is where flushes are tested. */
#pragma once
#include "mm/mmu.h"

#define MODEL_TLB_ENTRIES 256

struct model_tlb_entry {
	uint64_t gfn;   /* first gfn of the mapping */
	paddr_t hpa;    /* its first byte */
	unsigned rights;
	int level;      /* 0 = empty */
};

struct model_tlb {
	struct model_tlb_entry e[MODEL_TLB_ENTRIES];
	uint64_t hits, misses, faults, violations;
	char first_violation[160];
};

/* The flush callback's context: every vCPU's TLB of one VM. Entries change
 * only under the VM's mmu_lock (accesses under the read lock touch their own
 * TLB, flushes run under the write lock), as flushes in hardware are ordered
 * by the lock that the zap holds. */
struct model_tlbs {
	unsigned count;
	struct model_tlb *tlb[8];
};
void model_tlb_flush(void *model_tlbs);

/* A guest access through the TLB, faulting (tdp_map) until it translates.
 * Returns 0 and the host address, or the fault's final result (NO_SLOT,
 * PERMISSION, NO_MEMORY); checks the translation against the memslot's backing. */
int model_access(struct model_tlb *tlb, struct mmu *mmu, uint64_t gpa, unsigned access,
		 paddr_t *hpa);
/* Check every cached entry against the page tables (caller: no concurrent zap). */
void model_tlb_check_all(struct model_tlb *tlb, struct mmu *mmu);
