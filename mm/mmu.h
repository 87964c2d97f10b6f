/* The TDP MMU of one VM: second-level page tables (NPT or EPT), the memslots
 * that say what guest-physical memory exists, and the locking that lets vCPU
 * faults run concurrently with invalidations. virt/ embeds a struct mmu in its
 * VM and calls only the functions below; docs/mmu.md has the full story.
 *
 * Locking (the protocol, written down once):
 *
 *   slots_lock (rwlock)  read: a fault, a discard, a guest-memory copy, the audit;
 *                        write: slot add and remove. Taken before mmu_lock.
 *   lock (mmu_lock)      read: faults, which change SPTEs only by compare-exchange
 *                        and only from non-present to present (a leaf, or a new
 *                        table), so no table is ever freed under a reader;
 *                        write: zaps, slot removal, discard, the audit, which may
 *                        drop it at yield points (flushing first if a zap is
 *                        pending: once the lock is dropped, others see the entry
 *                        gone and must be able to assume no TLB holds it).
 *   invalidate_in_progress, invalidate_seq (changed under the write lock):
 *                        an invalidation (discard, slot removal) raises the count
 *                        before it zaps and, after it has zapped, flushed and
 *                        dropped the backing, bumps the sequence and lowers the
 *                        count. A fault reads the sequence before it resolves the
 *                        backing frame (without mmu_lock, as KVM resolves a pfn),
 *                        then, under the read lock, retries if an invalidation is
 *                        in progress or the sequence moved: a frame looked up
 *                        before or during an invalidation is never installed.
 *
 * Flushes: operations that remove or weaken SPTEs return "flush needed" instead
 * of flushing, so that callers batch; whoever holds the write lock flushes before
 * releasing it (mmu_flush_tlb), and page-table frames unlinked by a zap are freed
 * only after that flush. Installing a mapping where none was needs no flush. */
#pragma once
#include "arch/x86/lock.h"
#include "mm/cow.h"
#include "mm/memslot.h"
#include "mm/mmu_stats.h"
#include "mm/prefetch.h"
#include "mm/split.h"
#include "mm/tdp_iter.h"
#include "mm/zap_stats.h"

struct mmu {
	struct tdp_root root;
	int max_leaf_level;       /* the largest leaf the CPU's tables take: 1 to 3 */
	struct rwlock lock;
	struct rwlock slots_lock;
	uint32_t invalidate_in_progress;
	uint64_t invalidate_seq;
	struct memslots slots;
	struct mmu_stats stats;
	struct zap_stats zap_stats; /* written under the write lock only */
	struct prefetch_backoff prefetch;
	/* Supplied by the backend: INVEPT single-context, or TLB_CONTROL / a new
	 * ASID. Called with the write lock held, or with the VM quiescent. */
	void (*flush_tlb)(void *ctx);
	void *flush_ctx;
	paddr_t tables_to_free; /* unlinked tables awaiting the next flush */
	uint32_t dirty_log_slots; /* slots with MEMSLOT_DIRTY_LOG (changed under both locks) */
	struct mmu_share share;   /* clones and aliases (mm/cow.h) */
	uint64_t walk_visits;     /* SPTE visits of the running write-locked walk (tdp_cond_yield) */
	/* Cycles the write-lock holders spent handed over at yield points
	 * (mmu_cond_yield), for a hold's own time (zap_stats.zap_hold). */
	uint64_t write_yield_cycles;
};

enum tdp_fault_result {
	TDP_FIXED,      /* a mapping was installed */
	TDP_SPURIOUS,   /* a mapping that allows the access was already there */
	TDP_RETRY,      /* raced an invalidation or another fault: re-enter the guest */
	TDP_NO_SLOT,    /* no memslot: MMIO or a bad access */
	TDP_PERMISSION, /* the slot forbids the access (e.g. a write to read-only) */
	TDP_NO_MEMORY,  /* no frame for the backing or a page table */
};

/* VM life cycle. mmu_init returns 0, or -1 if no root table can be had. */
int mmu_init(struct mmu *mmu, const struct spte_format *fmt, void (*flush_tlb)(void *ctx),
	     void *flush_ctx);
/* Frees every table, slot and backing frame. No vCPU may run. */
void mmu_destroy(struct mmu *mmu);
/* nCR3 or EPTP for the VM's root. */
static inline uint64_t mmu_root_pointer(const struct mmu *mmu)
{
	return mmu->root.fmt->root_pointer(mmu->root.fmt, mmu->root.table);
}

/* Memslots: gpa and size page-aligned. 0 or -1 (overlap, full, no memory). */
struct memslot_config {
	uint64_t gpa;
	uint64_t size;
	uint32_t flags; /* MEMSLOT_* */
	struct backing_config backing;
};
int mmu_slot_add(struct mmu *mmu, const struct memslot_config *cfg);
int mmu_slot_remove(struct mmu *mmu, uint64_t gpa);

/* Runs the backend's flush and frees the tables that waited for it. */
void mmu_flush_tlb(struct mmu *mmu);
/* Zap the mappings of [gpa, gpa + len) and flush, keeping the memory: the
 * next access faults it back in (as a host-side invalidation does). Takes
 * the write lock. */
void mmu_zap(struct mmu *mmu, uint64_t gpa, uint64_t len);
/* Zap every mapping and free every table below the root, then flush, keeping
 * the memory (as KVM's zap of all roots on a memslot change): the next faults
 * find nothing in their way and map huge leaves again where they may. */
void mmu_zap_all(struct mmu *mmu);

/* Copy between the hypervisor and guest memory through the memslots, backing
 * pages on demand (read-only slots may be written: this is the loader's path).
 * The one way sprig writes guest memory (loaders, ACPI tables, the emulator,
 * the clock, hypercall results): a write copies shared frames first, and
 * marks its pages in the dirty log of a logged slot. 0, or -1 if part of the
 * range has no slot or wraps (nothing is copied then) or memory ran out
 * (a write then changes nothing either). */
int mmu_read_guest(struct mmu *mmu, uint64_t gpa, void *buf, uint64_t len);
int mmu_write_guest(struct mmu *mmu, uint64_t gpa, const void *buf, uint64_t len);
/* The guest's byte at gpa exchanged with *val in one atomic access (*val
 * gets the old one), as a guest's own XCHG: a LOCK CMPXCHG another vCPU
 * makes on it lands wholly before or after. Backs and logs the page as a
 * write. 0, or -1 (nothing changed) as mmu_write_guest. */
int mmu_xchg_guest_u8(struct mmu *mmu, uint64_t gpa, uint8_t *val);

/* Copy the guest's memory [gpa, gpa + len) (whole pages, all in memslots)
 * into buf without backing untouched pages (see backing_read_page): for
 * snapshots. 0, or -1 if a page has no slot. */
int mmu_save_memory(struct mmu *mmu, uint64_t gpa, void *buf, uint64_t len);

/* Audit of every invariant (see mmu_audit.c). Takes the locks itself. */
struct mmu_audit_report {
	uint64_t errors;
	uint64_t tables;
	uint64_t leaves[3];
	uint64_t backed_pages;
	char first_error[192];
};
bool mmu_audit(struct mmu *mmu, struct mmu_audit_report *report);
void mmu_audit_print(const struct mmu_audit_report *report);

/* The log2 histogram of the sizes of the rmaps this VM's leaves sit in, per
 * level (see mm/rmap.h). Takes the locks itself. */
struct rmap_histogram;
void mmu_rmap_histogram(struct mmu *mmu, struct rmap_histogram *h);

/* The faults' waits for mmu_lock (bench zap): forget them; read them (count,
 * max, latency_percentile; cycles). */
static inline void mmu_fault_waits_reset(struct mmu *mmu)
{
	latency_reset(&mmu->stats.fault_wait);
}

static inline const struct latency_hist *mmu_fault_waits(const struct mmu *mmu)
{
	return &mmu->stats.fault_wait;
}

/* Page-table frames currently held (stats.mmu_tables) and guest frames backed. */
uint64_t mmu_backed_pages(struct mmu *mmu);
