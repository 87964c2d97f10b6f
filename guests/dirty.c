/* The dirty-logging workload (KVM's dirty_log_perf_test): fills `mib=N` MiB
 * (default 64) from 4 MiB up, one word per 4 KiB page, then, in iteration 1,
 * touches every page once: writes a second word into `writes=P` percent of
 * them (default 5) chosen by a fixed pattern seeded with `seed=S`, and reads
 * the rest. It logs the pages it wrote in a bitmap right after the region
 * (bit i: page i of the region) that the host compares with its dirty log.
 * Under sprig it stops at HC_SNAPSHOT_POINT after filling (the host enables
 * logging there) and after iteration 1 (the host reads the log); then it
 * checks every page's words and exits 0, or 1 on a mismatch. With `cpus=N`
 * (default 1) it starts N CPUs (all the machine has) and each fills,
 * dirties and checks its own share of the pages (whole 64-page words of the
 * log) at the same time as the others; the same pages are written as with
 * one CPU, and the pauses come once all are done. */
#include "guests/rt/rt.h"
#include "guests/rt/smp.h"
#include "virt/hypercall.h"

#define LOG_WORD_PAGES 64

static uint64_t start, pages, seed;
static unsigned long writes;
static unsigned int cpus;
static volatile uint64_t *log;
static unsigned long written[SMP_CPU_MAX], bad[SMP_CPU_MAX];
static uint64_t sums[SMP_CPU_MAX];

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Never zero: a zeroed page must not pass for a written one. */
static uint64_t pattern(uint64_t addr, uint64_t s)
{
	return mix(addr ^ s) | 1;
}

static void pause_under_sprig(void)
{
	if (under_sprig())
		hypercall(HC_SNAPSHOT_POINT, 0, 0, 0, 0);
}

static volatile uint64_t *page(uint64_t i)
{
	return (volatile uint64_t *)(start + i * PAGE_SIZE);
}

static void fill(unsigned int cpu)
{
	uint64_t first, end;

	smp_share(pages, LOG_WORD_PAGES, cpu, cpus, &first, &end);
	for (uint64_t i = first; i < end; i += LOG_WORD_PAGES)
		log[i / LOG_WORD_PAGES] = 0;
	for (uint64_t i = first; i < end; i++)
		*page(i) = pattern(i, 0);
}

static void iterate(unsigned int cpu)
{
	uint64_t first, end;

	smp_share(pages, LOG_WORD_PAGES, cpu, cpus, &first, &end);
	for (uint64_t i = first; i < end; i++) {
		if (mix(i ^ (seed << 32)) % 100 < writes) {
			page(i)[1] = pattern(i, seed);
			log[i / 64] |= 1ull << (i % 64);
			written[cpu]++;
		} else {
			sums[cpu] += page(i)[0];
		}
	}
}

static void check(unsigned int cpu)
{
	uint64_t first, end;

	smp_share(pages, LOG_WORD_PAGES, cpu, cpus, &first, &end);
	for (uint64_t i = first; i < end; i++) {
		bool was_written = log[i / 64] & (1ull << (i % 64));

		if (page(i)[0] != pattern(i, 0) ||
		    page(i)[1] != (was_written ? pattern(i, seed) : 0))
			bad[cpu]++;
	}
}

int main(const struct mb1_info *mbi)
{
	unsigned long mib = arg_ulong(mbi, "mib", 64), all_written = 0, all_bad = 0;
	uint64_t sum = 0;

	writes = arg_ulong(mbi, "writes", 5);
	seed = arg_ulong(mbi, "seed", 1);
	cpus = (unsigned int)arg_ulong(mbi, "cpus", 1);
	start = GUEST_PLAYGROUND;
	pages = mib * MIB / PAGE_SIZE;
	log = (volatile uint64_t *)(start + mib * MIB);
	if (writes > 100 || !playground_fits(mbi, mib * MIB + pages / 8 + PAGE_SIZE)) {
		printf("dirty: bad arguments or %lu MiB does not fit\n", mib);
		return 1;
	}
	if (!cpus || !smp_workers(mbi, cpus, "dirty"))
		return 1;
	printf("dirty: %lu MiB at 0x%lx, %lu%% writes, seed %lu", mib, start, writes,
	       (unsigned long)seed);
	if (cpus > 1)
		printf(", %u CPUs", cpus);
	printf("\n");
	if (!smp_run(fill))
		return 1;
	pause_under_sprig();
	if (!smp_run(iterate))
		return 1;
	pause_under_sprig();
	if (!smp_run(check))
		return 1;
	for (unsigned int c = 0; c < cpus; c++) {
		all_written += written[c];
		all_bad += bad[c];
		sum += sums[c];
	}
	printf("dirty: wrote %lu of %lu pages, read sum %lx, %lu bad\n", all_written,
	       (unsigned long)pages, (unsigned long)(sum & 0xffff), all_bad);
	if (all_bad)
		return 1;
	printf("dirty ok\n");
	return 0;
}
