/* Intel EPT entry format for the TDP MMU. */
#pragma once
#include "mm/spte.h"

#define EPT_R (1ull << 0)
#define EPT_W (1ull << 1)
#define EPT_X (1ull << 2)
#define EPT_MEMTYPE_WB (6ull << 3)  /* leaf memory type, bits 5:3 */
#define EPT_IPAT (1ull << 6)        /* leaf: ignore the guest PAT */
#define EPT_LARGE (1ull << 7)
#define EPT_A (1ull << 8)           /* only with A/D enabled in the EPTP */
#define EPT_D (1ull << 9)
#define EPT_ADDR 0x000ffffffffff000ull

#define EPTP_MEMTYPE_WB 6ull
#define EPTP_WALK_4 (3ull << 3)     /* walk length minus one */
#define EPTP_AD (1ull << 6)

/* The format with or without accessed/dirty flags (IA32_VMX_EPT_VPID_CAP bit 21
 * says whether the CPU has them). */
const struct spte_format *ept_format(bool ad_enabled);

/* Whether the SDM's misconfiguration rules (28.3.3.1) reject entry at level
 * (4 the root table, 1 a 4 KiB leaf); exec_only: IA32_VMX_EPT_VPID_CAP bit 0. */
bool ept_entry_misconfigured(uint64_t entry, int level, bool exec_only);
/* Names the entry behind an EPT misconfiguration exit at gpa, from the walk
 * tdp_get_walk read (sptes[TDP_ROOT_LEVEL] down to sptes[last]): the first
 * entry the rules reject, or the last one. */
int ept_describe_misconfig(const uint64_t sptes[TDP_ROOT_LEVEL + 1], int last, uint64_t gpa,
			   bool exec_only, char *buf, size_t size);
