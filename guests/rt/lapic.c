/* The local APIC as the test guests drive it (lapic.h). */
#include "guests/rt/lapic.h"
#include "arch/x86/msr.h"
#include "guests/rt/cpu.h"

uint64_t apic_base = APIC_DEFAULT;
bool x2apic_mode;

volatile uint32_t *apic_reg(uint32_t reg)
{
	return (volatile uint32_t *)(apic_base + reg);
}

uint32_t apic_read(uint32_t reg)
{
	if (x2apic_mode)
		return (uint32_t)rdmsr(MSR_X2APIC_BASE + reg / 16);
	return *apic_reg(reg);
}

void apic_write(uint32_t reg, uint32_t val)
{
	if (x2apic_mode)
		wrmsr(MSR_X2APIC_BASE + reg / 16, val);
	else
		*apic_reg(reg) = val;
}

void apic_icr(uint32_t dest, uint32_t low)
{
	if (x2apic_mode) {
		wrmsr(MSR_X2APIC_BASE + APIC_ICR_LO / 16, (uint64_t)dest << 32 | low);
		return;
	}
	apic_write(APIC_ICR_HI, dest << 24);
	apic_write(APIC_ICR_LO, low);
	for (int i = 0; i < 1000000 && (apic_read(APIC_ICR_LO) & ICR_PENDING); i++)
		cpu_relax();
}

void apic_eoi(void)
{
	apic_write(APIC_EOI, 0);
}

uint32_t apic_id(void)
{
	return x2apic_mode ? apic_read(APIC_ID) : apic_read(APIC_ID) >> 24;
}
