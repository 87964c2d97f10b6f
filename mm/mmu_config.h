/* The MMU's switches: one set for all VMs, read when an operation starts, so
 * that one boot can measure an optimisation off and on. Set from the console
 * (`mmu KEY=VALUE`) and the kernel command line (KEY=VALUE), both through the
 * option table in shell/mmu_options.c. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

/* mmu_config.prefetch: which neighbours of a 4 KiB fault get mapped with it. */
enum prefetch_mode {
	PREFETCH_OFF,
	PREFETCH_FORWARD, /* the backed run after the faulting page, in its leaf table */
	PREFETCH_BOTH,    /* and the run before it, for guests that walk downwards */
};

/* mmu_config.nx_huge_pages: the iTLB-multihit mitigation (docs/mmu.md). */
enum nx_huge_mode {
	NX_HUGE_OFF,
	NX_HUGE_ON,   /* huge leaves are non-executable; an execute fault splits */
	NX_HUGE_AUTO, /* on where the CPU has the erratum (itlb_multihit) */
};

struct mmu_config {
	int prefetch;           /* enum prefetch_mode */
	bool prefetch_adaptive; /* back off in a VM whose prefetches map nothing */
	bool leaf_hint;         /* zaps skip 4 KiB leaf tables known to be empty */
	int rmap_desc;          /* enum rmap_desc_kind: layout of new rmap chains */
	bool rmap_backref;      /* counted rmaps remove by back-reference, not by scan */
	int nx_huge_pages;      /* enum nx_huge_mode */
	bool split_on_fault;    /* split a huge leaf in a fault's way; off: zap it */
	bool eager_page_split;  /* enabling dirty logging splits every huge leaf */
	/* Not a switch: the CPU's fact, set at boot (Intel, not reporting
	 * IA32_ARCH_CAPABILITIES.PSCHANGE_MC_NO). False on the host. */
	bool itlb_multihit;
	/* Not a switch either: the TSC frequency in kHz, set at boot, so that
	 * mmu_stats_print can give lock waits in ns. 0 (the host): cycles. */
	uint64_t tsc_khz;
};

extern struct mmu_config mmu_config;

/* Whether huge leaves are installed non-executable now. */
static inline bool nx_huge_pages_active(void)
{
	return mmu_config.nx_huge_pages == NX_HUGE_ON ||
	       (mmu_config.nx_huge_pages == NX_HUGE_AUTO && mmu_config.itlb_multihit);
}
