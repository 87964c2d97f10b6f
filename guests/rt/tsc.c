/* Time in the test guests (tsc.h). */
#include "guests/rt/tsc.h"
#include "guests/rt/cpu.h"
#include "guests/rt/rt.h"
#include "virt/hypercall.h"

uint64_t tsc_khz;

/* The TSC against the PIT's channel 2 (mode 0, about 50 ms). 0 if the
 * PIT's output never rises. */
static uint64_t pit_tsc_khz(void)
{
	const uint32_t count = 59659;	/* 1193182 Hz * 50 ms */
	uint64_t t0, t1;
	uint32_t spins = 0;

	outb(0x61, (inb(0x61) & ~0x02) | 0x01);	/* gate 2 on, speaker off */
	outb(0x43, 0xb0);			/* channel 2, lo/hi, mode 0 */
	outb(0x42, count & 0xff);
	outb(0x42, count >> 8);
	t0 = rdtsc();
	while (!(inb(0x61) & 0x20))
		if (++spins > 100000000)
			return 0;
	t1 = rdtsc();
	return (t1 - t0) * 1193182 / count / 1000;
}

uint64_t tsc_calibrate(void)
{
	if (under_sprig()) {
		tsc_khz = (uint64_t)hypercall(HC_TSC_KHZ, 0, 0, 0, 0);
	} else {
		tsc_khz = pit_tsc_khz();
		if (!tsc_khz) {
			uint32_t a, b, c, d;

			cpuid(0x16, 0, &a, &b, &c, &d);
			tsc_khz = a ? (uint64_t)a * 1000 : 1000000;
			printf("info: no PIT; TSC rate from CPUID 0x16\n");
		}
	}
	return tsc_khz;
}

uint64_t us_to_tsc(uint64_t us)
{
	return us * tsc_khz / 1000;
}

int64_t tsc_to_us(int64_t t)
{
	return t * 1000 / (int64_t)tsc_khz;
}

void delay_us(uint64_t us)
{
	uint64_t end = rdtsc() + us_to_tsc(us);

	while (rdtsc() < end)
		cpu_relax();
}

bool wait_count(volatile unsigned int *v, unsigned int target, uint64_t us)
{
	uint64_t end = rdtsc() + us_to_tsc(us);

	while (*v < target) {
		if (rdtsc() > end)
			return false;
		cpu_relax();
	}
	return true;
}
