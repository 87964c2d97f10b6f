/* What the hostile guest's parts share: hostile.c (the modes), trip.c (the
 * processor-mode trip of modes.S, from C) and storm.c (the modes on every
 * vCPU at once). */
#pragma once
#include "guests/rt/rt.h"

#define RM_BASE 0x8000 /* also in modes.S */

/* What one trip through the processor modes saw. */
struct trip {
	int stage;		/* 6: back in long mode */
	uint32_t rm_gp;		/* #GPs taken through the IVT in real mode (1) */
	uint32_t rm_sig;	/* CPUID 0x40000000's EBX in real mode */
	uint32_t paged;		/* paging modes visited: trip_paging_modes() */
	uint64_t efer;		/* EFER back in long mode */
};

/* Builds the trip's 32-bit and PAE page tables from the runtime's identity
 * map and reads CPUID for PSE and PGE. Once, before any trip. */
void trip_setup(void);
/* 2 when the trip visits 32-bit and PAE paging, 1 without PSE (PAE only). */
uint32_t trip_paging_modes(void);
/* One trip (one CPU at a time: waits for the CPU on it, or returns false at
 * once if !wait and one is). quiet: no lines printed on the way. triple:
 * end in a triple fault in real mode instead (never returns under sprig). */
bool trip_run(struct trip *t, bool quiet, bool triple, bool wait);

/* The storm mode (storm.c): `storm cpus=N [iters=K] [seed=S] [main=MODE]`;
 * bsp_mode runs the main mode on the BSP (NULL for none) and returns its
 * status. Returns the guest's exit status. */
int storm(const struct mb1_info *mbi, int (*bsp_mode)(const struct mb1_info *mbi));
