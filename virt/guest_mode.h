/* The guest's processor mode as instruction emulation needs it: the control
 * registers that select its paging mode (virt/guest_walk.h walks its page
 * tables with them), the width of its code and stack, and its segment
 * registers' selectors and bases. Filled by
 * the backend (virt_backend.guest_mode) at an exit. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

/* The segment registers in the encoding's order (and the VMCS's); LDTR and
 * TR after them. */
enum guest_seg { SEG_ES, SEG_CS, SEG_SS, SEG_DS, SEG_FS, SEG_GS, SEG_COUNT, SEG_LDTR = SEG_COUNT,
		 SEG_TR };

/* A segment register's hidden part, as a load fills it from a descriptor. */
struct guest_segment {
	uint16_t sel;
	uint16_t attrib; /* bits 7:0 the descriptor's type, S, DPL and P; 11:8 its
	                  * AVL, L, D/B and G (SVM's packed form) */
	bool unusable;   /* loaded with a null selector (attrib keeps SS's DPL) */
	uint32_t limit;  /* in bytes, G applied */
	uint64_t base;
};

struct guest_mode {
	uint64_t cr0, cr3, cr4, efer; /* as the guest sees them (EFER never shows SVME) */
	unsigned cpl;
	unsigned code_bits;           /* 16, 32 or 64: CS.L, CS.D and the mode */
	unsigned stack_bits;          /* 16, 32 or 64: the width of rSP, SS.B or 64 in
	                               * 64-bit code */
	uint16_t seg_sel[SEG_COUNT];
	uint64_t seg_base[SEG_COUNT]; /* ignored but FS and GS in 64-bit code */
	uint64_t gdt_base, ldt_base;  /* the descriptor tables segment loads read */
	uint32_t gdt_limit, ldt_limit;
	bool ldt_usable;
};
