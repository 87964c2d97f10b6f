/* The TDP MMU's fault, zap and walk of one MMU's tables (mm/tdp_mmu.c). */
#pragma once
#include "mm/mmu.h"

/* The nested-page-fault handler: TDP_ACC_* bits of the faulting access. A
 * vCPU passes its table cache, topped up here before any lock is taken, so
 * that nothing under mmu_lock allocates; tdp_map (host tests and benchmarks)
 * allocates under the lock instead. */
enum tdp_fault_result tdp_map_cached(struct mmu *mmu, struct tdp_table_cache *cache,
				     uint64_t gpa, unsigned access);
enum tdp_fault_result tdp_map(struct mmu *mmu, uint64_t gpa, unsigned access);

/* Zap the leaves mapping any of gfns [start, end), keeping the tables. Caller
 * holds the write lock; the zap may yield it. Returns whether a TLB flush is
 * needed; the caller flushes before releasing the lock. */
bool tdp_zap_range(struct mmu *mmu, uint64_t start, uint64_t end);

/* Software walk. Caller holds mmu_lock (either mode). Returns false if gpa is
 * unmapped; otherwise the host address gpa translates to, the leaf's level and
 * its TDP_ACC_* rights. */
bool tdp_translate(struct mmu *mmu, uint64_t gpa, paddr_t *hpa, int *level, unsigned *rights);

/* The entries a walk of gpa reads, for reports of faults the hardware blames
 * on the tables (KVM's kvm_tdp_mmu_get_walk): sptes[level] from the root
 * (TDP_ROOT_LEVEL) down to the level returned, where the walk ended (a leaf,
 * or an entry that is not a table). Takes the read lock. */
int tdp_get_walk(struct mmu *mmu, uint64_t gpa, uint64_t sptes[TDP_ROOT_LEVEL + 1]);
