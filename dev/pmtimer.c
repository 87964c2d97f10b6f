/* The ACPI PM timer model: see dev/pmtimer.h. */
#include "dev/pmtimer.h"

void pmtimer_init(struct pmtimer *t, uint64_t tsc_khz)
{
	t->tsc_khz = tsc_khz ? tsc_khz : 1;
}

uint32_t pmtimer_read(const struct pmtimer *t, uint64_t now)
{
	unsigned __int128 ticks = (unsigned __int128)now * PMTIMER_HZ / (t->tsc_khz * 1000);

	return (uint32_t)ticks & PMTIMER_MASK;
}
