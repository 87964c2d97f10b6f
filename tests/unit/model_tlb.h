/* A model TLB for host tests: every simulated guest access goes through it,
 * caches the translation it used (huge ones too), and only the MMU's flush
 * callback drops entries (besides capacity evictions, which real TLBs do too).
 * Each hit is checked against the page tables: a cached translation that was
 * zapped, remapped or lost a right without a flush is a violation. Neither QEMU
 * nor Bochs can show a missing flush; this is where flushes are tested. */
#pragma once
#include "mm/mmu.h"
#include "virt/kick.h"

#define MODEL_TLB_ENTRIES 256

struct model_tlb_entry {
	uint64_t gfn;   /* first gfn of the mapping */
	paddr_t hpa;    /* its first byte */
	unsigned rights;
	int level;      /* 0 = empty */
	uint64_t stamp; /* the filler's, for checks of what it used (model_tlb_fill) */
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

/* The pieces of an access, for vCPUs in guest mode (below): a hit, looked up
 * without any lock (the TLB is this CPU's own), returning the entry; and a
 * fill from a walk of the tables (tdp_translate, caller holds mmu_lock),
 * stamped with the caller's stamp. Both false when the access cannot be made
 * that way (a miss; not mapped with the access). */
const struct model_tlb_entry *model_tlb_hit(struct model_tlb *tlb, uint64_t gpa, unsigned access,
					    paddr_t *hpa);
bool model_tlb_fill(struct model_tlb *tlb, struct mmu *mmu, uint64_t gpa, unsigned access,
		    uint64_t stamp, paddr_t *hpa);

/* One model TLB per simulated CPU, for threads standing in for vCPUs on
 * separate CPUs that follow virt/kick.h: each flushes its own TLB, and only
 * when it takes KICK_REQ_FLUSH_TLB at an entry; the kick (the host IPI) is a
 * flag the vCPU polls in guest mode, where it exits when it sees it. */
#define MODEL_CPUS 8

struct model_cpu {
	struct model_tlb tlb;
	struct kick_sync sync;
	uint32_t kicked;
	uint64_t flushes; /* requests taken */
};

/* The MMU's flush callback's context: kick_remote_flush over the CPUs, with
 * kick NULL when !remote_flush (the `mmu remote_flush=off` path: requests
 * posted, nobody kicked or waited for). Called under the write lock, so one
 * caller at a time uses seq. */
struct model_smp {
	unsigned count;
	struct kick_sync *sync[MODEL_CPUS];
	uint32_t seq[MODEL_CPUS];
	bool remote_flush;
};
/* CPU i runs cpus[i]; the kick reaches them through a table of this module
 * (one model_smp at a time). */
void model_smp_init(struct model_smp *smp, struct model_cpu *cpus, unsigned n, bool remote_flush);
void model_smp_flush(void *model_smp);
/* The vCPU's entry (kick_sync_enter; a flush request empties its TLB) and exit. */
void model_cpu_enter(struct model_cpu *c);
static inline bool model_cpu_kicked(struct model_cpu *c)
{
	return __atomic_load_n(&c->kicked, __ATOMIC_ACQUIRE);
}
static inline void model_cpu_exit(struct model_cpu *c)
{
	kick_sync_exit(&c->sync);
}
