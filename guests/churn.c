/* Keeps faulting and writing its memory and checks its own data, while sprig
 * zaps (or discards) parts of it behind its back: `bench zap` runs it.
 *
 * The guest writes one word into every page of `mib=N` MiB (default 32) from
 * 4 MiB up, then makes `touches=N` (default 20000) accesses to pages chosen by
 * a seeded generator: each reads the page's word, checks it, and writes a new
 * one. A zap keeps the backing, so every word must survive; a discard drops
 * it, and under sprig the guest learns which ranges it lost from
 * HC_LOST_RANGES: exactly those pages must read zero, all others their last
 * word. A last pass checks every page. Prints what it saw; exit 0 when every
 * check passed, 1 otherwise. Bare (no sprig) nothing is lost.
 *
 * With `cpus=N` (default 1) it starts N CPUs (all the machine has) and each
 * does all of that, `touches` included, on its own share of the pages (whole
 * 2 MiB regions), with its own generator, at the same time as the others.
 * Discards are then data loss: HC_LOST_RANGES answers for the whole VM, and
 * the CPU that asked would learn of other CPUs' pages. */
#include "guests/rt/rt.h"
#include "guests/rt/smp.h"
#include "virt/hypercall.h"

#define MAX_MIB 64
#define MAX_PAGES (MAX_MIB * MIB / PAGE_SIZE)
#define LOST_BATCH 16
#define COLLECT_EVERY 512 /* touches between two HC_LOST_RANGES calls */
#define PAGES_2M 512

static uint64_t expected[MAX_PAGES]; /* each page's word; 0 once lost */
static struct hc_range lost[LOST_BATCH];
static uint64_t area_start, area_pages, seed;
static unsigned long touches, lost_ranges, lost_pages, bad;
static unsigned int cpus;
static bool lost_unknown;

static uint64_t rng(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1Dull;
}

static volatile uint64_t *word_of(uint64_t page)
{
	return (volatile uint64_t *)(area_start + page * PAGE_SIZE);
}

/* Ask sprig what it discarded since the last call; those pages read zero now. */
static void collect_lost(void)
{
	long n;

	if (!under_sprig() || cpus > 1)
		return;
	do {
		n = hypercall(HC_LOST_RANGES, (unsigned long)lost, LOST_BATCH, 0, 0);
		if (n < 0) {
			if (!lost_unknown)
				printf("churn: HC_LOST_RANGES failed: %ld\n", n);
			lost_unknown = true;
			return;
		}
		for (long i = 0; i < n; i++) {
			lost_ranges++;
			for (uint64_t a = lost[i].gpa; a < lost[i].gpa + lost[i].len; a += PAGE_SIZE) {
				if (a < area_start || a >= area_start + area_pages * PAGE_SIZE)
					continue;
				expected[(a - area_start) / PAGE_SIZE] = 0;
				lost_pages++;
			}
		}
	} while (n == LOST_BATCH);
}

/* A word that is wrong even after learning of the latest losses is data loss. */
static void check(uint64_t page)
{
	uint64_t v = *word_of(page);

	if (v == expected[page])
		return;
	collect_lost();
	if (v == expected[page])
		return;
	if (__atomic_fetch_add(&bad, 1, __ATOMIC_RELAXED) == 0)
		printf("churn: page at 0x%lx reads 0x%lx, expected 0x%lx\n",
		       area_start + page * PAGE_SIZE, v, expected[page]);
}

/* One CPU's share: fill, touch, check. */
static void churn(unsigned int cpu)
{
	uint64_t s = (seed + cpu * 0x9e3779b97f4a7c15ull) | 1, first, end;

	smp_share(area_pages, PAGES_2M, cpu, cpus, &first, &end);
	for (uint64_t p = first; p < end; p++)
		*word_of(p) = expected[p] = rng(&s) | 1;
	for (unsigned long t = 0; t < touches && end > first; t++) {
		uint64_t page = first + rng(&s) % (end - first);

		if (t % COLLECT_EVERY == 0)
			collect_lost();
		check(page);
		*word_of(page) = expected[page] = rng(&s) | 1;
	}
	collect_lost();
	for (uint64_t p = first; p < end; p++)
		check(p);
}

int main(const struct mb1_info *mbi)
{
	unsigned long mib = arg_ulong(mbi, "mib", 32);

	touches = arg_ulong(mbi, "touches", 20000);
	seed = arg_ulong(mbi, "seed", 1) | 1;
	cpus = (unsigned int)arg_ulong(mbi, "cpus", 1);
	if (mib == 0 || mib > MAX_MIB || !playground_fits(mbi, mib * MIB)) {
		printf("churn: %lu MiB does not fit (1 to %u, in memory)\n", mib, MAX_MIB);
		return 1;
	}
	if (!cpus || !smp_workers(mbi, cpus, "churn"))
		return 1;
	area_start = GUEST_PLAYGROUND;
	area_pages = mib * MIB / PAGE_SIZE;
	printf("churn: %lu MiB at 0x%lx, %lu touches", mib, area_start, touches);
	if (cpus > 1)
		printf(", %u CPUs", cpus);
	printf("\n");
	if (!smp_run(churn))
		return 1;
	printf("churn: lost %lu ranges (%lu pages), data check %s (%lu bad words)\n",
	       lost_ranges, lost_pages, bad || lost_unknown ? "FAILED" : "ok", bad);
	return bad || lost_unknown ? 1 : 0;
}
