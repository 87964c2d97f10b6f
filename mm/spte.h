/* Second-level page-table entries (SPTEs), independent of their hardware format.
 *
 * NPT and EPT differ only in which bits mean what, so the MMU describes an entry
 * format as a table of masks plus two functions, supplied by svm/npt.c and
 * vmx/ept.c. Everything here is pure computation on those masks: the MMU's
 * algorithms never name a hardware bit. */
#pragma once
#include "mm/frame.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Four levels, 512 entries each: level 1 holds 4 KiB leaves, level 2 may hold
 * 2 MiB leaves, level 3 1 GiB leaves, level 4 is the root. */
#define TDP_ROOT_LEVEL 4
#define TDP_MAX_HUGE_LEVEL 3
#define SPTE_PER_TABLE 512
#define TDP_GFN_BITS 36 /* 48-bit guest-physical addresses */
#define TDP_GFN_LIMIT (1ull << TDP_GFN_BITS)

/* Access rights, as a fault asks for them and as a mapping grants them. */
#define TDP_ACC_READ 1u
#define TDP_ACC_WRITE 2u
#define TDP_ACC_EXEC 4u
#define TDP_ACC_ALL (TDP_ACC_READ | TDP_ACC_WRITE | TDP_ACC_EXEC)

struct spte_format {
	const char *name;
	uint64_t present;    /* the entry is present if any of these bits is set */
	uint64_t readable;
	uint64_t writable;
	uint64_t executable; /* 0 if the format has no execute-allow bit */
	uint64_t nx;         /* 0 if the format has no execute-disable bit */
	uint64_t huge;       /* leaf at level 2 or 3 */
	uint64_t accessed;   /* 0 when the format runs without A/D bits */
	uint64_t dirty;
	uint64_t addr;       /* physical-address bits */
	uint64_t table;      /* every non-leaf entry: present and fully permissive */
	uint64_t leaf;       /* every leaf besides its rights: user bit, memory type */
	/* The value the backend loads into nCR3 or the EPTP for a root table. */
	uint64_t (*root_pointer)(const struct spte_format *fmt, paddr_t root);
	/* Names the set bits of an entry, for audit reports and the console. */
	int (*describe)(const struct spte_format *fmt, uint64_t spte, char *buf, size_t size);
};

/* The empty entry: not present in either format, and what a zap leaves. */
#define SPTE_NONE 0ull

static inline uint64_t tdp_level_pages(int level)
{
	return 1ull << (9 * (level - 1));
}

static inline unsigned tdp_index(uint64_t gfn, int level)
{
	return (unsigned)(gfn >> (9 * (level - 1))) & (SPTE_PER_TABLE - 1);
}

static inline uint64_t tdp_level_base(uint64_t gfn, int level)
{
	return gfn & ~(tdp_level_pages(level) - 1);
}

static inline bool spte_present(const struct spte_format *f, uint64_t spte)
{
	return (spte & f->present) != 0;
}

static inline bool spte_is_leaf(const struct spte_format *f, uint64_t spte, int level)
{
	return level == 1 || (spte & f->huge);
}

static inline bool spte_is_table(const struct spte_format *f, uint64_t spte, int level)
{
	return spte_present(f, spte) && !spte_is_leaf(f, spte, level);
}

static inline paddr_t spte_addr(const struct spte_format *f, uint64_t spte)
{
	return spte & f->addr;
}

static inline unsigned spte_rights(const struct spte_format *f, uint64_t spte)
{
	unsigned r = 0;

	if (spte & f->readable)
		r |= TDP_ACC_READ;
	if (spte & f->writable)
		r |= TDP_ACC_WRITE;
	if (f->executable ? (spte & f->executable) != 0 : !(spte & f->nx))
		r |= TDP_ACC_EXEC;
	return r;
}

/* A leaf is built accessed (and dirty if writable) so that the hardware walker
 * never needs a locked update to set those bits. */
static inline uint64_t spte_make_leaf(const struct spte_format *f, paddr_t pa, int level,
				      unsigned rights)
{
	uint64_t s = f->leaf | f->accessed | (pa & f->addr);

	if (level > 1)
		s |= f->huge;
	if (rights & TDP_ACC_READ)
		s |= f->readable;
	if (rights & TDP_ACC_WRITE)
		s |= f->writable | f->dirty;
	s |= (rights & TDP_ACC_EXEC) ? f->executable : f->nx;
	return s;
}

/* Table entries are built accessed too: the walker would set the bit anyway
 * (QEMU does on NPT), and an entry that never changes under the hardware keeps
 * compare-exchange and the audit exact. */
static inline uint64_t spte_make_table(const struct spte_format *f, paddr_t child)
{
	return f->table | f->accessed | (child & f->addr);
}
