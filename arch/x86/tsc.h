/* The time-stamp counter as sprig's clock: calibration and conversions. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

/* Measure the TSC frequency and print one line saying how. Run on the BSP with
 * interrupts off; after acpi_init() so that the ACPI PM timer can serve when
 * the PIT does not count. */
void tsc_init(void);

/* TSC frequency in kHz (0 before tsc_init). */
uint64_t tsc_khz(void);
/* How it was found: "cpuid-0x15", "pit", "acpi-pm-timer", or, when nothing
 * could measure it, "cpuid-0x16-nominal" / "assumed" (both unreliable). */
const char *tsc_source(void);
/* CPUID 0x80000007 EDX bit 8: the TSC ticks at a constant rate in every
 * P-, C- and T-state. */
bool tsc_invariant(void);

uint64_t tsc_to_ns(uint64_t cycles);
uint64_t tsc_from_us(uint64_t us);
/* Busy-wait at least us microseconds. Usable before tsc_init (waits longer). */
void tsc_delay_us(uint64_t us);
