/* AMD NPT entry format (long-mode page-table entries) for the TDP MMU. */
#pragma once
#include "mm/spte.h"

#define NPT_P (1ull << 0)
#define NPT_RW (1ull << 1)
#define NPT_US (1ull << 2)
#define NPT_A (1ull << 5)
#define NPT_D (1ull << 6)
#define NPT_PS (1ull << 7)
#define NPT_NX (1ull << 63)
#define NPT_ADDR 0x000ffffffffff000ull

extern const struct spte_format npt_format;
