/* The MMU's switches: one set for all VMs, read when an operation starts, so
 * that one boot can measure an optimisation off and on. Set from the console
 * (`mmu KEY=VALUE`) and the kernel command line (KEY=VALUE), both through the
 * option table in virt/cmd_mmu.c. */
#pragma once
#include <stdbool.h>

/* mmu_config.prefetch: which neighbours of a 4 KiB fault get mapped with it. */
enum prefetch_mode {
	PREFETCH_OFF,
	PREFETCH_FORWARD, /* the backed run after the faulting page, in its leaf table */
	PREFETCH_BOTH,    /* and the run before it, for guests that walk downwards */
};

struct mmu_config {
	int prefetch;           /* enum prefetch_mode */
	bool prefetch_adaptive; /* back off in a VM whose prefetches map nothing */
	bool leaf_hint;         /* zaps skip 4 KiB leaf tables known to be empty */
};

extern struct mmu_config mmu_config;
