/* The MMU's switches: one set for all VMs, read when an operation starts, so
 * that one boot can measure an optimisation off and on. Set from the console
 * (`mmu KEY=VALUE`) and the kernel command line (KEY=VALUE), both through the
 * option table in virt/cmd_mmu.c. */
#pragma once
#include <stdbool.h>

struct mmu_config {
	int reserved; /* the optimisations add their switches here */
};

extern struct mmu_config mmu_config;
