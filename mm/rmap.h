/* Reverse map: from a guest frame to every SPTE that maps it, in any VM.
 *
 * The head is the frame's 64-bit `rmap` word (mm/frame.h):
 *   0                        no SPTE maps the frame;
 *   sptep, bit 0 clear       exactly one SPTE, stored in place (no allocation:
 *                            the common case of a page mapped once);
 *   desc | RMAP_MANY | kind  a chain of descriptors from a slab cache, of the
 *                            layout `kind` (bits 2-3) it was created with.
 * Bit 1 (RMAP_LOCKED) is the head's bit lock. Every operation below takes it
 * with atomics for its own duration, always inside some VM's mmu_lock (read
 * mode is enough): faults of one VM (two aliases of one backing) and of
 * several VMs (clones sharing a frame) may change one head at the same time,
 * and the bit lock is what orders them. It never nests inside another head's.
 *
 * Three descriptor layouts, chosen at run time for chains created from then on
 * (a chain keeps the layout it was born with, so switching is safe at any time):
 *   ext3     3 entries and a link, no count: KVM's layout before 2021. Adding
 *            walks to the first descriptor with a free last slot and scans for
 *            its first empty slot; counting scans every slot.
 *   ext14    the same with 14 entries (a 128-byte descriptor).
 *   counted  RMAP_COUNTED_EXT entries, this descriptor's count and (in the
 *            newest) the count of the others, in a ring from the oldest
 *            descriptor to the newest. Only those two are ever partly filled:
 *            adding fills the newest or puts a new one after it, removing
 *            fills the hole with the oldest's last entry, counting reads two
 *            numbers. None of the three scans for anything; a removal that
 *            must scan (back-reference off) starts at the oldest, as KVM's.
 * Removal from a counted chain goes further than KVM, which scans the chain for
 * the SPTE: each SPTE's back-reference (the address of the descriptor slot
 * holding it) lives in the page after its table (see rmap_backref), so
 * removal costs the same at any chain length. docs/mmu.md, "Reverse map", has
 * the measurements behind the layout and the back-reference. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#define RMAP_MANY 1ull
#define RMAP_LOCKED 2ull
#define RMAP_KIND_SHIFT 2
#define RMAP_KIND_MASK (3ull << RMAP_KIND_SHIFT)
#define RMAP_FLAG_MASK (RMAP_MANY | RMAP_LOCKED | RMAP_KIND_MASK)

/* Entries per counted descriptor: 14 entries, two 32-bit counts and a link fill
 * two cache lines (the measurement in docs/mmu.md). */
#ifndef RMAP_COUNTED_EXT
#define RMAP_COUNTED_EXT 14
#endif

enum rmap_desc_kind {
	RMAP_DESC_EXT3,
	RMAP_DESC_EXT14,
	RMAP_DESC_COUNTED,
	RMAP_DESC_KINDS,
};
/* "ext3", "ext14", "counted", then NULL: the switch's values. */
extern const char *const rmap_desc_names[RMAP_DESC_KINDS + 1];

/* The fork benchmarks' variants (host rmap_fork, `bench rmap guest=linux`):
 * ext3 and ext14 remove by scanning whatever the switch says; counted runs
 * both ways. */
struct rmap_variant {
	int layout;
	bool backref;
};
#define RMAP_FORK_VARIANTS 4
extern const struct rmap_variant rmap_fork_variants[RMAP_FORK_VARIANTS];

/* The switches, in mm/mmu_config.h: mmu_config.rmap_desc is the layout of
 * chains created from then on; mmu_config.rmap_backref says whether counted
 * chains remove through the back-reference or by scanning as KVM does (kept
 * to measure what the back-reference buys: back-references are kept up to date
 * either way, so it may change any time). */

/* Every table that can hold leaves is followed by a page of back-references:
 * the word SPTE_PER_TABLE entries after an SPTE belongs to the rmap, which
 * stores there the address of the descriptor slot that holds the SPTE while
 * it sits in a counted chain. */
#define RMAP_BACKREF_DISTANCE 512
static inline uint64_t ***rmap_backref(uint64_t *sptep)
{
	return (uint64_t ***)(sptep + RMAP_BACKREF_DISTANCE);
}

/* Sets up the descriptor caches; again after frame_init in the host tests. */
void rmap_init(void);

/* Adds sptep to the rmap at head. Returns the rmap's size after the add, or 0
 * if no descriptor could be allocated (the rmap is then unchanged). */
unsigned rmap_add(uint64_t *head, uint64_t *sptep);
/* The same, joined to the write that publishes the SPTE: under the head's bit
 * lock, first whatever the add needs is allocated, then publish(ctx) writes
 * the entry (a compare-exchange may fail), and only if it did is sptep added.
 * So a leaf is never published without its rmap entry, and a failed add
 * leaves both unchanged. Returns the rmap's size after the add, 0 when no
 * descriptor could be had (publish was not called), -1 when publish failed.
 * publish runs with the head locked: it must not touch this rmap. */
int rmap_add_publish(uint64_t *head, uint64_t *sptep, bool (*publish)(void *ctx), void *ctx);
/* Removes sptep, which must be in the rmap. Returns false (and changes nothing)
 * if it is not: a broken caller, which the audit reports. */
bool rmap_remove(uint64_t *head, uint64_t *sptep);
/* The number of SPTEs in the rmap. */
unsigned rmap_count(uint64_t *head);
/* Some SPTE of the rmap, or NULL when it is empty: reclaim zaps SPTEs one at a
 * time through the choke point, which removes each from the rmap. */
uint64_t *rmap_first(uint64_t *head);
/* Calls fn for each SPTE in the rmap, with the head locked: fn must not change
 * this rmap. Returns the number of calls. */
unsigned rmap_for_each(uint64_t *head, void (*fn)(uint64_t *sptep, void *ctx), void *ctx);

/* Descriptors allocated, all layouts together. */
uint64_t rmap_descs_in_use(void);
/* Size of one descriptor of a layout, in bytes, as the slab cache holds it. */
unsigned rmap_desc_bytes(enum rmap_desc_kind kind);

/* Log2 histogram of rmap sizes, per mapping level, as KVM's mmu_rmaps_stat:
 * buckets 0, 1, 2-3, 4-7, ..., 512-1023, 1024+. */
#define RMAP_HIST_BUCKETS 12
#define RMAP_HIST_LEVELS 3
struct rmap_histogram {
	uint64_t count[RMAP_HIST_LEVELS][RMAP_HIST_BUCKETS];
};
static inline unsigned rmap_hist_bucket(unsigned size)
{
	unsigned b = size ? 32 - (unsigned)__builtin_clz(size) : 0;

	return b < RMAP_HIST_BUCKETS ? b : RMAP_HIST_BUCKETS - 1;
}
/* The table, for the console: a header line and one line per level. */
void rmap_hist_print(const struct rmap_histogram *h);
