/* The crwin guest (tests/e2e/e2e_crwin.py): two CPUs racing a control-register
 * exit against MMU work on another CPU. The AP leaves long mode for legacy PAE
 * paging and writes CR0 in a loop (pae.S), which under sprig on VMX exits
 * every time and reads the PDPTEs from guest memory; the BSP meanwhile drops a
 * page through pc-testdev's flush port (0xe4), which sprig serves under the MMU
 * write lock with a remote TLB flush that waits for the AP's vCPU to leave the
 * guest, then writes the page again and checks that the value stayed.
 * Arguments (HC_ARGS under sprig, the command line bare):
 *   writes=N   CR0 writes the AP must make (default 5000)
 *   flushes=N  flushes the BSP must make, at least (default 500)
 * Prints "crwin: N cr0 writes, M flushes, B bad" and exits 0 when both counts
 * were reached with no bad word, 1 otherwise; a guest that never gets there
 * (the AP stuck, or sprig hung) prints nothing more. */
#include "guests/rt/cpu.h"
#include "guests/rt/rt.h"
#include "guests/rt/smp.h"
#include "virt/hypercall.h"

#define TESTDEV_FLUSH_PORT 0xe4
#define PDPTE_P 1ull
#define PDE_P_RW_PS 0x83ull
#define PDES 512

/* Legacy PAE paging for the AP: PDPT[0] maps the first GiB with 2 MiB pages
 * (PDPTEs have no RW bit: bits 2:1 are reserved), which holds the image,
 * the stacks and the playground. */
static uint64_t pd[PDES] __attribute__((aligned(4096)));
static uint64_t pdpt[4] __attribute__((aligned(32)));
static volatile uint32_t cr0_writes;

void pae_cr0_loop(uint32_t pdpt_pa, volatile uint32_t *count) __attribute__((noreturn));

static void ap_main(unsigned int cpu)
{
	(void)cpu;
	for (unsigned int i = 0; i < PDES; i++)
		pd[i] = ((uint64_t)i << 21) | PDE_P_RW_PS;
	pdpt[0] = (uint64_t)(uintptr_t)pd | PDPTE_P;
	pae_cr0_loop((uint32_t)(uintptr_t)pdpt, &cr0_writes);
}

int main(const struct mb1_info *mbi)
{
	static char buf[256];
	struct mb1_info args = *mbi;
	volatile uint64_t *page = (volatile uint64_t *)GUEST_PLAYGROUND;
	unsigned long writes, flushes, done = 0, bad = 0;

	if (under_sprig()) {
		hypercall(HC_ARGS, (unsigned long)buf, sizeof(buf), 0, 0);
		args.args = buf;
	}
	writes = arg_ulong(&args, "writes", 5000);
	flushes = arg_ulong(&args, "flushes", 500);
	if (smp_start(mbi, ap_main) < 2) {
		printf("crwin: needs a second CPU\n");
		return 1;
	}
	printf("crwin: AP started; %lu cr0 writes, %lu flushes wanted\n", writes, flushes);
	page[0] = 0;
	while (cr0_writes < writes || done < flushes) {
		page[0] = done + 1; /* maps the page again */
		outl(TESTDEV_FLUSH_PORT, (uint32_t)(uintptr_t)page);
		if (page[0] != ++done)
			bad++;
	}
	printf("crwin: %u cr0 writes, %lu flushes, %lu bad\n", cr0_writes, done, bad);
	return bad ? 1 : 0;
}
