#include "mm/mmu_config.h"

/* The defaults: every optimisation on. */
struct mmu_config mmu_config = {
	.prefetch = PREFETCH_FORWARD,
	.prefetch_adaptive = true,
	.leaf_hint = true,
};
