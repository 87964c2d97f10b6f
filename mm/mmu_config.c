#include "mm/mmu_config.h"

/* The defaults: every optimisation on. */
struct mmu_config mmu_config = {
	.reserved = 0,
};
