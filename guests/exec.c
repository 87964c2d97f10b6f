/* Writes a RET into the first byte of every 4 KiB page of `mib=N` MiB
 * (default 8) from 4 MiB up, then calls every page: the host must let the
 * guest execute memory it has just written (sprig's NX-huge-page policy and
 * split-on-fault see execute faults here). With `pause=1`, under sprig, it
 * stops at HC_SNAPSHOT_POINT after the writes and after the calls, so that
 * the host can time each pass (`bench exec`). With `cpus=N` (default 1) it
 * starts N CPUs (all the machine has) and each writes and then calls its own
 * share of the pages, whole 2 MiB regions, at the same time as the others;
 * the pauses come once all are done. Exit 0. */
#include "guests/rt/rt.h"
#include "guests/rt/smp.h"
#include "virt/hypercall.h"

#define X86_RET 0xc3
#define PAGES_2M 512

static uint64_t pages;
static unsigned int cpus;
static unsigned long calls[SMP_CPU_MAX];

static volatile uint8_t *page(uint64_t i)
{
	return (volatile uint8_t *)(GUEST_PLAYGROUND + i * PAGE_SIZE);
}

static void populate(unsigned int cpu)
{
	uint64_t first, end;

	smp_share(pages, PAGES_2M, cpu, cpus, &first, &end);
	for (uint64_t i = first; i < end; i++)
		*page(i) = X86_RET;
}

static void execute(unsigned int cpu)
{
	uint64_t first, end;

	smp_share(pages, PAGES_2M, cpu, cpus, &first, &end);
	for (uint64_t i = first; i < end; i++) {
		/* The compiler must not reorder the stores past the calls. */
		asm volatile("" : : : "memory");
		((void (*)(void))page(i))();
		calls[cpu]++;
	}
}

int main(const struct mb1_info *mbi)
{
	unsigned long mib = arg_ulong(mbi, "mib", 8), total = 0;
	bool pause = arg_ulong(mbi, "pause", 0) && under_sprig();

	cpus = (unsigned int)arg_ulong(mbi, "cpus", 1);
	pages = mib * MIB / PAGE_SIZE;
	if (!playground_fits(mbi, mib * MIB)) {
		printf("exec: %lu MiB at 0x%lx does not fit in memory\n", mib, GUEST_PLAYGROUND);
		return 1;
	}
	if (!cpus || !smp_workers(mbi, cpus, "exec"))
		return 1;
	printf("exec: %lu MiB at 0x%lx", mib, GUEST_PLAYGROUND);
	if (cpus > 1)
		printf(", %u CPUs", cpus);
	printf("\n");
	if (!smp_run(populate))
		return 1;
	if (pause)
		hypercall(HC_SNAPSHOT_POINT, 0, 0, 0, 0);
	if (!smp_run(execute))
		return 1;
	if (pause)
		hypercall(HC_SNAPSHOT_POINT, 0, 0, 0, 0);
	for (unsigned int c = 0; c < cpus; c++)
		total += calls[c];
	printf("exec: called %lu pages\n", total);
	printf("exec ok\n");
	return 0;
}
