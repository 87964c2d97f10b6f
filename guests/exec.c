/* Writes a RET into the first byte of every 4 KiB page of `mib=N` MiB
 * (default 8) from 4 MiB up, then calls every page: the host must let the
 * guest execute memory it has just written (sprig's NX-huge-page policy and
 * split-on-fault see execute faults here). With `pause=1`, under sprig, it
 * stops at HC_SNAPSHOT_POINT after the writes and after the calls, so that
 * the host can time each pass (`bench exec`). Exit 0. */
#include "guests/rt/rt.h"
#include "virt/hypercall.h"

#define X86_RET 0xc3

int main(const struct mb1_info *mbi)
{
	unsigned long mib = arg_ulong(mbi, "mib", 8);
	uint64_t start = GUEST_PLAYGROUND, end = start + mib * MIB;
	bool pause = arg_ulong(mbi, "pause", 0) && under_sprig();
	unsigned long calls = 0;

	if (!playground_fits(mbi, mib * MIB)) {
		printf("exec: %lu MiB at 0x%lx does not fit in memory\n", mib, start);
		return 1;
	}
	printf("exec: %lu MiB at 0x%lx\n", mib, start);
	for (uint64_t a = start; a < end; a += PAGE_SIZE)
		*(volatile uint8_t *)a = X86_RET;
	if (pause)
		hypercall(HC_SNAPSHOT_POINT, 0, 0, 0, 0);
	for (uint64_t a = start; a < end; a += PAGE_SIZE) {
		/* The compiler must not reorder the stores past the calls. */
		asm volatile("" : : : "memory");
		((void (*)(void))a)();
		calls++;
	}
	if (pause)
		hypercall(HC_SNAPSHOT_POINT, 0, 0, 0, 0);
	printf("exec: called %lu pages\n", calls);
	printf("exec ok\n");
	return 0;
}
