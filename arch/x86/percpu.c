#include "arch/x86/percpu.h"
#include "arch/x86/cpu.h"
#include "arch/x86/mce.h"
#include "lib/print.h"
#include <stddef.h>

#define PAT_ENTRY(pat, i) (((pat) >> (8 * (i))) & 7)

/* Static: the bootstrap CPU needs its GDT, TSS and IDT before any allocator. */
static struct percpu bsp_percpu;
static struct percpu *cpus[CPU_MAX];

void percpu_setup(struct percpu *pc, unsigned id, uint32_t apic_id)
{
	pc->self = pc;
	pc->id = id;
	pc->apic_id = apic_id;
	cpus[id] = pc;
}

/* The page tables map RAM with PAT entry 0 and device memory with entry 3
 * (boot/paging.c): WB and UC at reset, but INIT leaves IA32_PAT as it was
 * and firmware may have changed it. */
static void pat_check(unsigned id)
{
	uint64_t pat = rdmsr(MSR_PAT);

	if (PAT_ENTRY(pat, 0) == PAT_WB && PAT_ENTRY(pat, 3) == PAT_UC)
		return;
	kprintf("cpu %u: IA32_PAT was 0x%llx; set to the reset value\n", id,
		(unsigned long long)pat);
	wrmsr(MSR_PAT, PAT_DEFAULT);
}

void percpu_load(struct percpu *pc)
{
	wrmsr(MSR_GS_BASE, (uint64_t)pc);
	pat_check(pc->id);
	mce_cpu_init();
}

void percpu_init_bsp(void)
{
	/* The APIC ID is filled in by smp_init, once the APIC is up. */
	percpu_setup(&bsp_percpu, 0, 0);
	percpu_load(&bsp_percpu);
	lockcheck_start();
}

struct percpu *percpu_of(unsigned id)
{
	return id < CPU_MAX ? cpus[id] : NULL;
}
