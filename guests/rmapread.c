/* Shared frames read by many clones (`bench rmap`): writes a pattern into 1 MiB
 * (256 pages) from GUEST_PLAYGROUND up, then stops at HC_CLONE_POINT. A clone
 * (the call returns 0) only reads every page and checks the pattern: reads
 * keep the frames shared, so each clone's mappings stay in the frames' rmaps
 * instead of moving to copies. The parent, if resumed, exits too. Exit 0, or 1
 * on a mismatch. Silent on success: the scenario runs hundreds of clones. */
#include "guests/rt/rt.h"
#include "virt/hypercall.h"

#define REGION (1 * MIB)

static uint64_t pattern(uint64_t addr)
{
	return addr * 0x9e3779b97f4a7c15ull + 1;
}

int main(const struct mb1_info *mbi)
{
	uint64_t a;

	if (!playground_fits(mbi, REGION) || !under_sprig()) {
		printf("rmapread: needs sprig and %lu MiB at 0x%lx\n", REGION / MIB, GUEST_PLAYGROUND);
		return 1;
	}
	for (a = GUEST_PLAYGROUND; a < GUEST_PLAYGROUND + REGION; a += PAGE_SIZE)
		*(volatile uint64_t *)a = pattern(a);
	if (hypercall(HC_CLONE_POINT, 0, 0, 0, 0) > 0)
		return 0;
	for (a = GUEST_PLAYGROUND; a < GUEST_PLAYGROUND + REGION; a += PAGE_SIZE) {
		uint64_t v = *(volatile uint64_t *)a;

		if (v != pattern(a)) {
			printf("rmapread: clone: 0x%lx reads 0x%lx, expected 0x%lx\n", a, v,
			       pattern(a));
			return 1;
		}
	}
	return 0;
}
