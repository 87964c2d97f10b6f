/* The processor-mode trip of modes.S, from C (hostile.h). The trip keeps its
 * state in globals and uses the low memory at RM_BASE, the IVT and a real-mode
 * stack: one CPU at a time. It loads segment registers with flat selectors,
 * which clears the FS and GS bases the runtime keeps per CPU (smp.c), so
 * those are put back afterwards. */
#include "guests/hostile/hostile.h"
#include "arch/x86/msr.h"
#include "guests/rt/cpu.h"

#define PTE_P 0x1u
#define PTE_RW 0x2u
#define PTE_PS 0x80u
#define PTE_ADDR 0x000ffffffffff000ul
#define CPUID_PSE (1u << 3)
#define CPUID_PGE (1u << 13)
#define CR4_PGE (1u << 7)
#define CR0_WRITES 8 /* WP toggles in each paging mode: an even number */

extern int hostile_mode_trip(void);
extern const char rm_start[], rm_end[], rm_triple[], rm_quiet[];
extern volatile uint32_t trip_stage, trip_rm_gp, trip_rm_sig, trip_paged, trip_quiet;
extern uint32_t trip_pd32, trip_pdpt, trip_pge, trip_cr0_writes;

/* 32-bit paging: 1024 4 MiB pages, the low 4 GiB identity-mapped. */
static uint32_t pd32[1024] __attribute__((aligned(4096)));
/* PAE: the runtime's four page directories (2 MiB pages) behind PDPTEs,
 * which hold only P and the address (SDM vol. 3A 4.4.1: no RW). */
static uint64_t pdpt[4] __attribute__((aligned(32)));
static int lock;

void trip_setup(void)
{
	uint64_t *pml4 = (uint64_t *)(read_cr3() & PTE_ADDR);
	uint64_t *rt_pdpt = (uint64_t *)(pml4[0] & PTE_ADDR);
	uint32_t a, b, c, d;

	cpuid(1, 0, &a, &b, &c, &d);
	for (unsigned i = 0; i < 4; i++)
		pdpt[i] = (rt_pdpt[i] & PTE_ADDR) | PTE_P;
	trip_pdpt = (uint32_t)(uint64_t)pdpt;
	if (d & CPUID_PSE) {
		for (uint32_t i = 0; i < 1024; i++)
			pd32[i] = i << 22 | PTE_PS | PTE_RW | PTE_P;
		trip_pd32 = (uint32_t)(uint64_t)pd32;
	}
	trip_pge = d & CPUID_PGE ? CR4_PGE : 0;
	trip_cr0_writes = CR0_WRITES;
}

uint32_t trip_paging_modes(void)
{
	return trip_pd32 ? 2 : 1;
}

bool trip_run(struct trip *t, bool quiet, bool triple, bool wait)
{
	uint64_t fs, gs;

	while (__atomic_exchange_n(&lock, 1, __ATOMIC_ACQUIRE)) {
		if (!wait)
			return false;
		cpu_relax();
	}
	/* The real-mode part runs from below 1 MiB. */
	for (const char *s = rm_start; s < rm_end; s++)
		((volatile char *)RM_BASE)[s - rm_start] = *s;
	*(volatile uint8_t *)(RM_BASE + (rm_triple - rm_start)) = triple;
	*(volatile uint8_t *)(RM_BASE + (rm_quiet - rm_start)) = quiet;
	trip_quiet = quiet;
	trip_paged = 0;
	fs = rdmsr(MSR_FS_BASE);
	gs = rdmsr(MSR_GS_BASE);
	t->stage = hostile_mode_trip();
	wrmsr(MSR_FS_BASE, fs);
	wrmsr(MSR_GS_BASE, gs);
	t->rm_gp = trip_rm_gp;
	t->rm_sig = trip_rm_sig;
	t->paged = trip_paged;
	t->efer = rdmsr(MSR_EFER);
	__atomic_store_n(&lock, 0, __ATOMIC_RELEASE);
	return true;
}
