/* The dirty-logging workload (KVM's dirty_log_perf_test, one vCPU): fills
 * `mib=N` MiB (default 64) from 4 MiB up, one word per 4 KiB page, then, in
 * iteration 1, touches every page once: writes a second word into
 * `writes=P` percent of them (default 5) chosen by a fixed pattern seeded with
 * `seed=S`, and reads the rest. It logs the pages it wrote in a bitmap right
 * after the region (bit i: page i of the region) that the host compares with
 * its dirty log. Under sprig it stops at HC_SNAPSHOT_POINT after filling
 * (the host enables logging there) and after iteration 1 (the host reads the
 * log); then it checks every page's words and exits 0, or 1 on a mismatch. */
#include "guests/rt/rt.h"
#include "virt/hypercall.h"

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Never zero: a zeroed page must not pass for a written one. */
static uint64_t pattern(uint64_t addr, uint64_t seed)
{
	return mix(addr ^ seed) | 1;
}

static void pause_under_sprig(void)
{
	if (under_sprig())
		hypercall(HC_SNAPSHOT_POINT, 0, 0, 0, 0);
}

int main(const struct mb1_info *mbi)
{
	unsigned long mib = arg_ulong(mbi, "mib", 64);
	unsigned long writes = arg_ulong(mbi, "writes", 5);
	uint64_t seed = arg_ulong(mbi, "seed", 1);
	uint64_t start = GUEST_PLAYGROUND, pages = mib * MIB / PAGE_SIZE;
	volatile uint64_t *log = (volatile uint64_t *)(start + mib * MIB);
	unsigned long written = 0, bad = 0;
	uint64_t sum = 0;

	if (writes > 100 || !playground_fits(mbi, mib * MIB + pages / 8 + PAGE_SIZE)) {
		printf("dirty: bad arguments or %lu MiB does not fit\n", mib);
		return 1;
	}
	printf("dirty: %lu MiB at 0x%lx, %lu%% writes, seed %lu\n", mib, start, writes,
	       (unsigned long)seed);
	for (uint64_t i = 0; i < (pages + 63) / 64; i++)
		log[i] = 0;
	for (uint64_t i = 0; i < pages; i++)
		*(volatile uint64_t *)(start + i * PAGE_SIZE) = pattern(i, 0);
	pause_under_sprig();

	for (uint64_t i = 0; i < pages; i++) {
		volatile uint64_t *page = (volatile uint64_t *)(start + i * PAGE_SIZE);

		if (mix(i ^ (seed << 32)) % 100 < writes) {
			page[1] = pattern(i, seed);
			log[i / 64] |= 1ull << (i % 64);
			written++;
		} else {
			sum += page[0];
		}
	}
	pause_under_sprig();

	for (uint64_t i = 0; i < pages; i++) {
		volatile uint64_t *page = (volatile uint64_t *)(start + i * PAGE_SIZE);
		bool was_written = log[i / 64] & (1ull << (i % 64));

		if (page[0] != pattern(i, 0) || page[1] != (was_written ? pattern(i, seed) : 0))
			bad++;
	}
	printf("dirty: wrote %lu of %lu pages, read sum %lx, %lu bad\n", written,
	       (unsigned long)pages, (unsigned long)(sum & 0xffff), bad);
	if (bad)
		return 1;
	printf("dirty ok\n");
	return 0;
}
