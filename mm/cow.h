/* Guest memory shared between address spaces: VM clones, whose MMUs share
 * their frames copy-on-write, and aliases, slots of one MMU that map the same
 * backing at several guest-physical ranges (mm/backing.h has the frames'
 * reference counts). The rules are in mm/cow.c; docs/mmu.md, "Clones and
 * aliases", tells the story. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

struct mmu;
struct mmu_family;
struct memslot;

/* An MMU's place among those it shares frames with. */
struct mmu_share {
	uint32_t id;               /* its VM's id: the order cross-VM operations lock in */
	struct mmu_family *family; /* NULL until it is cloned or is a clone */
	struct mmu *next;          /* the family's next member, by increasing id */
	bool flush_needed;         /* a cross-VM zap took one of its SPTEs */
	uint64_t cow_copies;       /* frames copied on write (under its write lock) */
	/* No writable or huge leaf since a clone's walk took them away: the
	 * next clone need not walk. Set by that walk, cleared by
	 * handle_changed_spte (mm/spte.c) when such a leaf appears. */
	bool write_protected;
};

/* Give `child` (mmu_init'd, no slots, share.id set, no vCPU running) the
 * memory of `parent` (no vCPU running either): the same slots, whose backings
 * share the parent's frames. The parent's writable leaves become read-only and
 * its huge leaves go (shared memory is mapped at 4 KiB), with a flush; both
 * join one family. 0, or -1 when memory runs out (the child is then empty). */
int mmu_clone(struct mmu *parent, struct mmu *child);

/* The write fault's side of copy on write: page gfn of slot (the caller holds
 * slots_lock for reading) holds a shared frame. Gives the page a copy of its
 * own, inside an invalidation (every mapping of the page in this MMU goes, with
 * a flush), and returns TDP_RETRY so that the fault maps the copy, or
 * TDP_NO_MEMORY. */
int mmu_cow_break(struct mmu *mmu, struct memslot *slot, uint64_t gfn);

/* Add an alias slot: [gpa, gpa + size) maps the same frames as the eager slot
 * memory at [target_gpa, target_gpa + size), at 4 KiB. 0, or -1 (no such
 * memory, not eager, overlap, no room). */
int mmu_alias_add(struct mmu *mmu, uint64_t gpa, uint64_t size, uint64_t target_gpa);
/* The slot's frames belong to another slot, or another slot's are its own:
 * mmu_slot_remove refuses to break the pair (both go with the MMU). */
bool mmu_slot_aliased(struct mmu *mmu, const struct memslot *slot);

/* Leave the family at teardown, once the MMU has no SPTE left. */
void mmu_family_leave(struct mmu *mmu);
/* Members of the MMU's family, itself included; 1 when it has none. */
unsigned mmu_family_size(struct mmu *mmu);

/* MADV_DONTNEED: zap [gpa, gpa + len), flush, drop the backing. The next access
 * faults in a zeroed frame (lazy, eager) or the image's data (restore). */
void mmu_discard(struct mmu *mmu, uint64_t gpa, uint64_t len);
