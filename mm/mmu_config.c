#include "mm/mmu_config.h"
#include "mm/rmap.h"

/* The defaults: every optimisation on. */
struct mmu_config mmu_config = {
	.prefetch = PREFETCH_FORWARD,
	.prefetch_adaptive = true,
	.leaf_hint = true,
	.rmap_desc = RMAP_DESC_COUNTED,
	.rmap_backref = true,
	.nx_huge_pages = NX_HUGE_AUTO,
	.split_on_fault = true,
	.eager_page_split = false,
};
