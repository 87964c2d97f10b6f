/* Dirty logging per memslot: which guest pages were written since logging was
 * enabled or the log was last read. docs/mmu.md ("Dirty logging") has the rules.
 *
 * Two ways to learn of a write, per entry format:
 *  - write protection: a logged slot's leaves are read-only until the guest
 *    writes; the write fault marks the page and makes only that 4 KiB leaf
 *    writable (a huge leaf in the way is split first, see split.h);
 *  - the dirty bit, where the format has one (NPT; EPT with A/D): 4 KiB leaves
 *    are installed writable with D clear, the CPU sets D on the first write,
 *    and reading the log harvests and clears D. Huge leaves stay
 *    write-protected: a dirty bit on a huge leaf would dirty 512 pages.
 * The bitmap is set by faults under the read lock (atomic or) and read and
 * cleared under the write lock, after the leaves were write-protected or their
 * dirty bits cleared and the TLBs flushed: a write after that point faults or
 * sets D again, so it lands in the next read of the log. */
#pragma once
#include "mm/spte.h"
#include <stdbool.h>
#include <stdint.h>

struct memslot;
struct mmu;

struct dirty_log {
	uint64_t *bits; /* one bit per page of the slot; NULL while logging is off */
	paddr_t pa;
	unsigned order;
};

/* 64-bit words a bitmap of npages takes. */
static inline uint64_t dirty_log_words(uint64_t npages)
{
	return (npages + 63) / 64;
}

/* The slot's bitmap: 0, or -1 when memory ran out. */
int dirty_log_alloc(struct dirty_log *log, uint64_t npages);
void dirty_log_free(struct dirty_log *log);
/* Set page index's bit; true if it was clear. */
bool dirty_log_mark(struct dirty_log *log, uint64_t index);
/* Move the bitmap into out (dirty_log_words(npages) words) and clear it.
 * Returns the number of pages that were set. */
uint64_t dirty_log_take(struct dirty_log *log, uint64_t npages, uint64_t *out);

/* Whether a fault on slot installs 4 KiB leaves writable with the dirty bit
 * clear (dirty-bit logging) rather than read-only. */
bool dirty_log_by_dirty_bit(const struct spte_format *f);
/* A fault installed or upgraded a leaf on a logged slot: mark the page if the
 * leaf can be written without the CPU telling (writable, and dirty or in a
 * format without dirty bits). */
void dirty_log_leaf_installed(struct mmu *mmu, struct memslot *slot, uint64_t gfn,
			      uint64_t spte);
/* sprig itself wrote page gfn of slot (mmu_write_guest, under the read
 * locks): no leaf saw that write, so it is marked here if the slot is logged. */
void dirty_log_sprig_write(struct mmu *mmu, struct memslot *slot, uint64_t gfn);
/* A 4 KiB leaf that was spte left the tables (the choke point's hook) or lost
 * its write right outside the log's own harvest (a clone's write-protection):
 * if the CPU may have written through it and the slot is logged, the write
 * must not be lost with it. */
void dirty_log_write_ended(struct mmu *mmu, uint64_t gfn, uint64_t spte, int level);
/* The audit's rule for a leaf of a logged slot: NULL, or what is wrong. */
const char *dirty_log_audit_leaf(const struct spte_format *f, struct memslot *slot,
				 uint64_t gfn, uint64_t spte, int level);

/* Enable (on) or disable logging on the slot that starts at gpa. Enabling
 * write-protects the slot's leaves, or clears their dirty bits, and with
 * mmu_config.eager_page_split splits every huge leaf to 4 KiB at once; it then
 * flushes. Disabling leaves the leaves as they are: each regains write at its
 * next write fault. 0, or -1 (no such slot, no memory for the bitmap). */
int mmu_dirty_log_enable(struct mmu *mmu, uint64_t gpa, bool on);
/* Get and clear the log of the slot at gpa into out (dirty_log_words(npages)
 * words): write-protects what was written (or clears dirty bits), flushes,
 * then hands over the bitmap. Returns the number of dirty pages, or -1 (no
 * such slot, or logging is off). */
int64_t mmu_dirty_log_get(struct mmu *mmu, uint64_t gpa, uint64_t *out);
