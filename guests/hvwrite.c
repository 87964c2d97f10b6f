/* Makes sprig write the guest's memory itself, for the dirty-log test
 * (tests/e2e/e2e_hvwrite.py). Under sprig it stops at HC_SNAPSHOT_POINT (the
 * console enables dirty logging there), then has sprig write four pages of
 * its own, from 4 MiB up, that it never writes itself afterwards:
 *
 *   0x400000  a REP MOVSD from the local APIC's registers (MMIO) into RAM:
 *             the instruction emulator stores the data;
 *   0x401000  the paravirtual clock's system-time structure
 *             (MSR_KVM_SYSTEM_TIME_NEW);
 *   0x402000  the paravirtual wall clock (MSR_KVM_WALL_CLOCK_NEW);
 *   0x403000  a hypercall's result (HC_ARGS: its arguments);
 *
 * with the pages below and above left alone. It reads each back (reads
 * dirty nothing), prints what it found, stops at HC_SNAPSHOT_POINT again
 * (the console reads the log: all four pages must be in it), and exits 0,
 * or 1 if a page does not hold what sprig should have written. Bare, without
 * sprig, it only does the REP MOVSD. */
#include "guests/rt/cpu.h"
#include "guests/rt/lapic.h"
#include "guests/rt/rt.h"
#include "virt/hypercall.h"
#include "virt/pvclock.h"

#define TARGET (GUEST_PLAYGROUND)
#define MOVS_PAGE (TARGET)
#define CLOCK_PAGE (TARGET + PAGE_SIZE)
#define WALL_PAGE (TARGET + 2 * PAGE_SIZE)
#define ARGS_PAGE (TARGET + 3 * PAGE_SIZE)
#define APIC_VERSION 0x30
#define MOVS_DWORDS 4 /* the version register and the reserved ones after it */
#define ARGS_LEN 64

static void rep_movsd_from_apic(void)
{
	const void *src = (const void *)(APIC_DEFAULT + APIC_VERSION);
	void *dst = (void *)MOVS_PAGE;
	unsigned long n = MOVS_DWORDS;

	asm volatile("cld; rep movsl" : "+S"(src), "+D"(dst), "+c"(n) : : "memory");
}

static uint32_t word32(uint64_t addr)
{
	return *(volatile uint32_t *)addr;
}

int main(const struct mb1_info *mbi)
{
	bool sprig = under_sprig(), ok = true;

	(void)mbi;
	if (sprig)
		hypercall(HC_SNAPSHOT_POINT, 0, 0, 0, 0);
	rep_movsd_from_apic();
	if (sprig) {
		wrmsr(MSR_KVM_SYSTEM_TIME_NEW, CLOCK_PAGE | 1);
		wrmsr(MSR_KVM_WALL_CLOCK_NEW, WALL_PAGE);
		hypercall(HC_ARGS, ARGS_PAGE, ARGS_LEN, 0, 0);
	}
	/* The APIC's version register: a version (bits 7:0) and the LVT count. */
	printf("hvwrite: movs 0x%x\n", word32(MOVS_PAGE));
	ok &= word32(MOVS_PAGE) != 0;
	if (sprig) {
		printf("hvwrite: clock version %u, wall clock version %u, args \"%s\"\n",
		       word32(CLOCK_PAGE), word32(WALL_PAGE), (const char *)ARGS_PAGE);
		ok &= word32(CLOCK_PAGE) != 0 && word32(CLOCK_PAGE) % 2 == 0;
		ok &= word32(WALL_PAGE) == 2;
		ok &= *(const char *)ARGS_PAGE != 0;
		hypercall(HC_SNAPSHOT_POINT, 0, 0, 0, 0);
	}
	printf("hvwrite %s\n", ok ? "ok" : "FAILED");
	return ok ? 0 : 1;
}
