/* Physical frame allocator: a buddy allocator over the usable RAM ranges that
 * hands out blocks of 2^order 4 KiB frames, naturally aligned (order 9 = 2 MiB,
 * order 18 = 1 GiB). Each 4 KiB frame has a 16-byte struct frame. Frames
 * are reached through the direct map (arch/x86/direct_map.h). */
#pragma once
#include "arch/x86/direct_map.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mmu;

#define PAGE_SHIFT 12
#define PAGE_SIZE (1ull << PAGE_SHIFT)
#define ORDER_2M 9
#define ORDER_1G 18
#define FRAME_MAX_ORDER ORDER_1G

/* frame.flags */
#define FRAME_FREE      0x0001 /* in the buddy free lists (head of a free block) */
#define FRAME_RESERVED  0x0002 /* not RAM the allocator manages */
#define FRAME_PAGETABLE 0x0004 /* an MMU page table */
#define FRAME_GUEST     0x0008 /* backs guest memory */

/* One per 4 KiB frame; 16 bytes. The union's member depends on what the frame is. */
struct frame {
	uint32_t refcount;
	uint16_t flags;
	uint8_t order;  /* block order, valid on the head frame of a block */
	uint8_t spare;
	union {
		uint64_t rmap;                        /* guest frame: reverse-map head */
		struct mmu *owner;                    /* second frame of a leaf table: its MMU */
		struct { uint32_t next, prev; } free; /* free block: buddy list links (frame numbers) */
		struct {                              /* page table: owned by the MMU */
			uint16_t present;             /* present entries in the table */
			uint8_t level;                /* 1 = 4 KiB leaf table ... 4 = root */
			uint8_t hint;                 /* MMU hint bits (e.g. leaf-empty) */
			uint32_t base_gfn_hi;         /* gfn of the table's first entry >> 9 */
		} pt;
	};
};
_Static_assert(sizeof(struct frame) == 16, "struct frame must stay 16 bytes");

struct mem_range {
	paddr_t start; /* inclusive */
	paddr_t end;   /* exclusive */
};

/* Take over the usable ranges minus the reserved ones (the image, modules, boot
 * information, the first MiB). The metadata array is carved out of the usable
 * memory itself. Ranges need not be sorted nor page aligned (they are trimmed
 * inwards). Returns false, with a message, if nothing usable remains. */
bool frame_init(const struct mem_range *usable, size_t n_usable,
		const struct mem_range *reserved, size_t n_reserved);

/* A block of 2^order frames aligned to its size; 0 when none is free. Its head
 * frame has refcount 1, the others 0, and all their flags and union are clear.
 * The allocator owns `order` and the free links: owners must not write them. */
paddr_t frame_alloc(unsigned order);
/* As frame_alloc, and zero-filled. */
paddr_t frame_alloc_zeroed(unsigned order);
/* Merges with free buddies. A double free, a wrong order, a frame that is not
 * the start of an allocated block or is reserved is reported and ignored. */
void frame_free(paddr_t pa, unsigned order);

/* Make an allocated block of 2^order frames 2^order blocks of one frame, each
 * with refcount 1, freed one by one from then on: guest frames shared page by
 * page (VM clones) come from eager blocks too. */
void frame_split(paddr_t pa, unsigned order);

/* Metadata of the frame holding pa; NULL if pa is outside the managed memory's
 * span (holes and reserved ranges inside it have FRAME_RESERVED metadata). */
struct frame *frame_of(paddr_t pa);

struct frame_stats {
	uint64_t total_bytes;                      /* managed RAM */
	uint64_t free_bytes;
	uint64_t meta_bytes;                       /* the struct frame array */
	uint64_t free_blocks[FRAME_MAX_ORDER + 1]; /* free blocks per order */
	uint64_t bad_frees;                        /* frame_free calls refused as misuse */
};
void frame_get_stats(struct frame_stats *st);
/* Totals and free blocks per order, for the console. */
void frame_print_stats(void);
