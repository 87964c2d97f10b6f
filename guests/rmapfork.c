/* Clones and copy on write, from inside: writes a pattern into 1 MiB (256
 * pages) from GUEST_PLAYGROUND up, then stops at HC_CLONE_POINT. In a clone
 * (the call returns 0) it checks that every page holds the parent's pattern,
 * writes its own tag into every page and reads the tags back; in the parent
 * (the call returns the clone's number), resumed after its clones ran, it
 * checks that no clone's write reached its memory. Exit 0, or 1 on a
 * failure. */
#include "guests/rt/rt.h"
#include "virt/hypercall.h"

#define REGION (1 * MIB)
#define PAGE 4096

static uint64_t pattern(uint64_t addr)
{
	return ~addr ^ (addr << 29);
}

static unsigned long check(uint64_t tag, const char *who)
{
	unsigned long bad = 0;

	for (uint64_t a = GUEST_PLAYGROUND; a < GUEST_PLAYGROUND + REGION; a += PAGE) {
		uint64_t want = tag ? tag ^ a : pattern(a), v = *(volatile uint64_t *)a;

		if (v != want && bad++ == 0)
			printf("rmapfork: %s: 0x%lx reads 0x%lx, expected 0x%lx\n", who, a, v, want);
	}
	return bad;
}

int main(const struct mb1_info *mbi)
{
	long clone;
	uint64_t tag;

	if (!playground_fits(mbi, REGION) || !under_sprig()) {
		printf("rmapfork: needs sprig and %lu MiB at 0x%lx\n", REGION / MIB, GUEST_PLAYGROUND);
		return 1;
	}
	for (uint64_t a = GUEST_PLAYGROUND; a < GUEST_PLAYGROUND + REGION; a += PAGE)
		*(volatile uint64_t *)a = pattern(a);
	printf("rmapfork: pattern in %lu pages, clone point\n", REGION / PAGE);
	clone = hypercall(HC_CLONE_POINT, 0, 0, 0, 0);
	if (clone > 0) {
		if (check(0, "parent"))
			return 1;
		printf("rmapfork: parent ok after clone %ld: no clone's write is visible\n", clone);
		return 0;
	}
	if (check(0, "clone"))
		return 1;
	/* A tag of its own: the TSC differs from clone to clone. */
	tag = (uint64_t)__builtin_ia32_rdtsc() | 1;
	for (uint64_t a = GUEST_PLAYGROUND; a < GUEST_PLAYGROUND + REGION; a += PAGE)
		*(volatile uint64_t *)a = tag ^ a;
	if (check(tag, "clone"))
		return 1;
	printf("rmapfork: clone ok: saw the parent's memory, wrote its own\n");
	return 0;
}
