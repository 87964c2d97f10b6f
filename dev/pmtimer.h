/* The ACPI PM timer (ACPI spec 4.8.2.1 "Power Management Timer"), as a pure
 * model: a 24-bit counter at 3.579545 MHz that the guest reads as a 32-bit
 * port. Port-agnostic: the integrator chooses the port (QEMU's pc machine has
 * it at PIIX4 PM base 0x600 + 8 = 0x608) and calls pmtimer_read for it.
 * Time comes in as `now`, the guest's TSC, at the rate given at init.
 *
 * Choices: the value is floor(now * 3579545 / (tsc_khz * 1000)) modulo 2^24,
 * i.e. ticks since guest TSC 0, computed from TSC 0 each time (no drift);
 * bits 31:24 read 0, so the FADT must say TMR_VAL_EXT = 0 (24-bit timer).
 * The timer's overflow status/interrupt (PM1 TMR_STS / TMR_EN, SCI) is not
 * modelled. Also built for the host (tests/unit/test_pmtimer.c).
 */
#pragma once
#include <stdint.h>

#define PMTIMER_HZ 3579545u
#define PMTIMER_MASK 0xffffffu
#define PMTIMER_QEMU_PORT 0x608 /* PIIX4 PM base 0x600 + 8, as QEMU's pc */

struct pmtimer {
	uint64_t tsc_khz;
};

void pmtimer_init(struct pmtimer *t, uint64_t tsc_khz);
uint32_t pmtimer_read(const struct pmtimer *t, uint64_t now);
