/* The guest's processor mode as instruction emulation needs it: the control
 * registers that select its paging mode (virt/guest_walk.h walks its page
 * tables with them), the width of its code, and its segment bases. Filled by
 * the backend (virt_backend.guest_mode) at an exit. */
#pragma once
#include <stdint.h>

enum guest_seg { SEG_ES, SEG_CS, SEG_SS, SEG_DS, SEG_FS, SEG_GS, SEG_COUNT };

struct guest_mode {
	uint64_t cr0, cr3, cr4, efer; /* as the guest sees them (EFER never shows SVME) */
	unsigned cpl;
	unsigned code_bits;           /* 16, 32 or 64: CS.L, CS.D and the mode */
	uint64_t seg_base[SEG_COUNT]; /* ignored but FS and GS in 64-bit code */
};
