/* AMD NPT entry format (long-mode page-table entries) for the TDP MMU. */
#pragma once
#include "mm/spte.h"

struct cpuinfo;

#define NPT_P (1ull << 0)
#define NPT_RW (1ull << 1)
#define NPT_US (1ull << 2)
#define NPT_A (1ull << 5)
#define NPT_D (1ull << 6)
#define NPT_PS (1ull << 7)
#define NPT_NX (1ull << 63)
#define NPT_ADDR 0x000ffffffffff000ull

extern const struct spte_format npt_format;

/* Whether entry at level (4 the root table, 1 a 4 KiB leaf) sets a bit the
 * APM reserves: the walk then ends in a nested page fault with RSV set. The
 * nested walk runs in the host's paging mode, so the host CPU's MAXPHYADDR,
 * NX (sprig sets EFER.NXE where the CPU has it) and 1 GiB pages decide. */
bool npt_entry_reserved(uint64_t entry, int level, const struct cpuinfo *cpu);
/* Names the entry behind such a fault at gpa, from the walk tdp_get_walk
 * read (sptes[TDP_ROOT_LEVEL] down to sptes[last]): the first entry with a
 * reserved bit set, or the last one. The mirror of ept_describe_misconfig. */
int npt_describe_reserved(const uint64_t sptes[TDP_ROOT_LEVEL + 1], int last, uint64_t gpa,
			  const struct cpuinfo *cpu, char *buf, size_t size);
