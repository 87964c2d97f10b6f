/* The one-CPU implementation of arch/x86/smp.h, until AP bring-up lands:
 * the bootstrap CPU is the only CPU. */
#include "arch/x86/smp.h"
#include "arch/x86/apic.h"

void smp_init(unsigned maxcpus)
{
	(void)maxcpus;
}

unsigned smp_cpu_count(void)
{
	return 1;
}

unsigned smp_online_count(void)
{
	return 1;
}

enum cpu_state smp_cpu_state(unsigned id)
{
	return id == 0 ? CPU_ONLINE : CPU_OFFLINE;
}

uint32_t smp_apic_id(unsigned id)
{
	return id == 0 ? apic_id() : 0;
}

unsigned this_cpu_id(void)
{
	return 0;
}

bool smp_call(unsigned id, void (*fn)(void *arg), void *arg)
{
	(void)id, (void)fn, (void)arg;
	return false;
}

bool smp_busy(unsigned id)
{
	(void)id;
	return false;
}

void smp_kick(unsigned id)
{
	(void)id;
}
