/* The MMU's counters on the console. */
#include "mm/mmu.h"
#include "mm/mmu_config.h"
#include "lib/print.h"

#define STAT_ROW(name) { #name, offsetof(struct mmu_stats, name) }

static const struct {
	const char *name;
	size_t offset;
} stat_rows[] = {
	STAT_ROW(pf_taken),         STAT_ROW(pf_fixed),          STAT_ROW(pf_spurious),
	STAT_ROW(pf_retry),         STAT_ROW(pf_no_slot),        STAT_ROW(pf_permission),
	STAT_ROW(pf_no_memory),     STAT_ROW(pf_prefetch_called), STAT_ROW(pf_prefetch_pages),
	STAT_ROW(pf_prefetch_mapped), STAT_ROW(pf_prefetch_unused),
	STAT_ROW(huge_page_splits_eager), STAT_ROW(huge_page_splits_fault),
	STAT_ROW(nx_lpage_splits),  STAT_ROW(dirty_pages_logged),
	STAT_ROW(pages_4k),          STAT_ROW(pages_2m),
	STAT_ROW(pages_1g),         STAT_ROW(spte_visited),      STAT_ROW(tables_descended),
	STAT_ROW(leaves_installed), STAT_ROW(leaves_zapped),     STAT_ROW(zap_yields),
	STAT_ROW(remote_tlb_flush_requests),                     STAT_ROW(remote_tlb_flush),
	STAT_ROW(mmu_tables),       STAT_ROW(tables_allocated),  STAT_ROW(tables_freed),
	STAT_ROW(max_mmu_rmap_size), STAT_ROW(rmap_failures),
};

/* A wait histogram's percentiles, in ns when the TSC frequency is known. */
static void print_waits(const char *name, const struct latency_hist *h)
{
	static const struct {
		const char *suffix;
		unsigned permille;
	} cols[] = { { "p50", 500 }, { "p99", 990 }, { "p999", 999 } };
	uint64_t khz = mmu_config.tsc_khz;
	const char *unit = khz ? "ns" : "cycles";
	char label[48];

	ksnprintf(label, sizeof(label), "%s_waits", name);
	kprintf("  %-26s %llu\n", label, (unsigned long long)stat_read(&h->count));
	for (size_t i = 0; i < sizeof(cols) / sizeof(cols[0]); i++) {
		uint64_t cycles = latency_percentile(h, cols[i].permille);

		ksnprintf(label, sizeof(label), "%s_wait_%s_%s", name, cols[i].suffix, unit);
		kprintf("  %-26s %llu\n", label,
			(unsigned long long)(khz ? cycles * 1000000 / khz : cycles));
	}
}

void mmu_stats_print(struct mmu *mmu)
{
	uint64_t tables = stat_read(&mmu->stats.mmu_tables);
	uint64_t backed = mmu_backed_pages(mmu);

	kprintf("mmu (%s):\n", mmu->root.fmt->name);
	for (size_t i = 0; i < sizeof(stat_rows) / sizeof(stat_rows[0]); i++)
		kprintf("  %-26s %llu\n", stat_rows[i].name,
			(unsigned long long)stat_read(
				(uint64_t *)((char *)&mmu->stats + stat_rows[i].offset)));
	print_waits("mmu_lock_read", &mmu->stats.lock_read_wait);
	print_waits("mmu_lock_write", &mmu->stats.lock_write_wait);
	zap_stats_print(&mmu->zap_stats);
	/* Every table but the root carries a page of rmap back-references. */
	kprintf("  held: page tables %llu KiB, guest memory %llu KiB in %u slots\n",
		(unsigned long long)((tables ? 2 * tables - 1 : 0) * PAGE_SIZE >> 10),
		(unsigned long long)(backed * PAGE_SIZE >> 10), mmu->slots.count);
}
