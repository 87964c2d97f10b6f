/* Writes a pattern into 8 MiB from 4 MiB up, then, under sprig, gives the
 * lower 4 MiB back with HC_BALLOON_RELEASE and checks that it now reads as
 * zero while the upper 4 MiB kept the pattern. Bare, there is nothing to
 * release and all 8 MiB must keep the pattern. The output is the same on
 * both when all is well. Exit 0, or 1 on a failure. */
#include "guests/rt/rt.h"
#include "virt/hypercall.h"

#define BALLOON_LEN (8 * MIB)
#define RELEASE_LEN (4 * MIB)

static uint64_t pattern(uint64_t addr)
{
	return ~addr ^ (addr << 29);	/* never zero below 4 GiB */
}

/* Counts the words in [start, end) that do not read as expected, printing
 * the first one. */
static unsigned long check(uint64_t start, uint64_t end, bool released)
{
	unsigned long bad = 0;

	for (uint64_t a = start; a < end; a += sizeof(uint64_t)) {
		uint64_t v = *(volatile uint64_t *)a;
		uint64_t want = released ? 0 : pattern(a);

		if (v != want && bad++ == 0)
			printf("balloon: 0x%lx reads 0x%lx, expected 0x%lx\n",
			       a, v, want);
	}
	return bad;
}

int main(const struct mb1_info *mbi)
{
	uint64_t start = GUEST_PLAYGROUND, end = start + BALLOON_LEN;
	uint64_t kept = start;
	unsigned long bad;

	if (!playground_fits(mbi, BALLOON_LEN)) {
		printf("balloon: %lu MiB at 0x%lx does not fit in memory\n",
		       BALLOON_LEN / MIB, start);
		return 1;
	}
	printf("balloon: pattern in %lu MiB at 0x%lx\n", BALLOON_LEN / MIB, start);
	for (uint64_t a = start; a < end; a += sizeof(uint64_t))
		*(volatile uint64_t *)a = pattern(a);

	bad = 0;
	if (under_sprig()) {
		long ret = hypercall(HC_BALLOON_RELEASE, start, RELEASE_LEN, 0, 0);

		if (ret) {
			printf("balloon: release failed: %ld\n", ret);
			return 1;
		}
		kept = start + RELEASE_LEN;
		bad += check(start, kept, true);
	}
	bad += check(kept, end, false);
	if (bad) {
		printf("balloon: %lu words wrong\n", bad);
		return 1;
	}
	printf("balloon ok\n");
	return 0;
}
