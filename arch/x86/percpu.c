#include "arch/x86/percpu.h"
#include "arch/x86/cpu.h"
#include <stddef.h>

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

void percpu_load(struct percpu *pc)
{
	wrmsr(MSR_GS_BASE, (uint64_t)pc);
}

void percpu_init_bsp(void)
{
	/* The APIC ID is filled in by smp_init, once the APIC is up. */
	percpu_setup(&bsp_percpu, 0, 0);
	percpu_load(&bsp_percpu);
}

struct percpu *percpu_of(unsigned id)
{
	return id < CPU_MAX ? cpus[id] : NULL;
}
