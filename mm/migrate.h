/* Moving a guest page to another frame (mm/migrate.c). */
#pragma once
#include "mm/mmu.h"

/* Page migration, as a host moves a page for compaction: the 4 KiB guest
 * page at gpa moves to a new frame (with patch, one 64-bit word of the copy
 * changed before the guest can see it: the stale-translation test). Under the
 * write lock and inside an invalidation: the page's leaf is zapped and the TLBs
 * flushed (so that no CPU writes the old frame during the copy), the copy
 * made, the backing and a leaf with the old one's rights switched to it, and
 * then the old frame freed. Pages that are not a frame of their own are
 * refused: part of an eager block (huge-mappable memory), shared with a clone,
 * mapped twice through an alias slot, or not backed. */
struct mmu_page_patch {
	uint32_t offset; /* 8-byte aligned, in the page */
	uint64_t value;
};
enum mmu_migrate_result {
	MIGRATE_DONE,
	MIGRATE_NO_SLOT,
	MIGRATE_NOT_BACKED,
	MIGRATE_BLOCK,     /* part of an eager block larger than a page */
	MIGRATE_SHARED,    /* a clone's shared frame, or an alias slot's */
	MIGRATE_NO_MEMORY, /* no frame for the copy: nothing changed */
};
enum mmu_migrate_result mmu_migrate_page(struct mmu *mmu, uint64_t gpa,
					 const struct mmu_page_patch *patch);
