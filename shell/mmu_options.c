/* The MMU's switches (mm/mmu_config.h) on the console and the command line. */
#include "mm/mmu_config.h"
#include "mm/rmap.h"
#include "shell/options.h"
#include "virt/sched.h"
#include <stddef.h>

static const char *const prefetch_modes[] = {
	[PREFETCH_OFF] = "off", [PREFETCH_FORWARD] = "forward", [PREFETCH_BOTH] = "both", NULL,
};
OPTION(prefetch, .name = "prefetch", .value_int = &mmu_config.prefetch,
       .choices = prefetch_modes,
       .help = "on a 4 KiB fault, also map the backed run after it (forward) or around it (both)");
OPTION(prefetch_adaptive, .name = "prefetch_adaptive", .value_bool = &mmu_config.prefetch_adaptive,
       .help = "stop prefetching in a VM whose prefetches map nothing; probe now and then");
static const char *const nx_huge_modes[] = {
	[NX_HUGE_OFF] = "off", [NX_HUGE_ON] = "on", [NX_HUGE_AUTO] = "auto", NULL,
};
OPTION(nx_huge_pages, .name = "nx_huge_pages", .value_int = &mmu_config.nx_huge_pages,
       .choices = nx_huge_modes,
       .help = "huge pages non-executable, split on an execute fault (iTLB multihit); auto: on "
	       "Intel without PSCHANGE_MC_NO");
OPTION(split_on_fault, .name = "split_on_fault", .value_bool = &mmu_config.split_on_fault,
       .help = "split a huge page in a fault's way (NX huge page, dirty logging); off: zap it");
OPTION(eager_page_split, .name = "eager_page_split", .value_bool = &mmu_config.eager_page_split,
       .help = "split every huge page of a slot to 4 KiB when its dirty logging is enabled");
OPTION(leaf_hint, .name = "leaf_hint", .value_bool = &mmu_config.leaf_hint,
       .help = "zaps of whole 2 MiB regions skip 4 KiB leaf tables known to be empty");
OPTION(rmap_desc, .name = "rmap_desc", .value_int = &mmu_config.rmap_desc,
       .choices = rmap_desc_names,
       .help = "rmap descriptors of new chains: ext3, ext14 (KVM's old layouts) or counted");
OPTION(rmap_backref, .name = "rmap_backref", .value_bool = &mmu_config.rmap_backref,
       .help = "remove from counted rmaps through the SPTE's back-reference instead of a scan");
OPTION(remote_flush, .name = "remote_flush", .value_bool = &vm_remote_flush,
       .help = "kick the CPUs running a VM's vCPUs and wait for them on a TLB flush; off: "
	       "only post the request (a debug switch: stale translations can survive)");
