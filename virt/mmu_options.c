/* The MMU's switches (mm/mmu_config.h) on the console and the command line. */
#include "mm/mmu_config.h"
#include "virt/options.h"
