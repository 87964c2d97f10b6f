/* The MMU's switches (mm/mmu_config.h) on the console and the command line. */
#include "mm/mmu_config.h"
#include "virt/options.h"
#include <stddef.h>

static const char *const prefetch_modes[] = {
	[PREFETCH_OFF] = "off", [PREFETCH_FORWARD] = "forward", [PREFETCH_BOTH] = "both", NULL,
};
OPTION(prefetch, .name = "prefetch", .value_int = &mmu_config.prefetch,
       .choices = prefetch_modes,
       .help = "on a 4 KiB fault, also map the backed run after it (forward) or around it (both)");
OPTION(prefetch_adaptive, .name = "prefetch_adaptive", .value_bool = &mmu_config.prefetch_adaptive,
       .help = "stop prefetching in a VM whose prefetches map nothing; probe now and then");
OPTION(leaf_hint, .name = "leaf_hint", .value_bool = &mmu_config.leaf_hint,
       .help = "zaps of whole 2 MiB regions skip 4 KiB leaf tables known to be empty");
