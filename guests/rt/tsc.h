/* Time in the test guests: the TSC, its rate, and bounded waits. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

/* The TSC's rate in kHz: set by tsc_calibrate(), or by a guest that measures
 * it its own way; 0 until then. */
extern uint64_t tsc_khz;

/* Sets tsc_khz: HC_TSC_KHZ under sprig; bare, the PIT's channel 2 over
 * 50 ms, or CPUID leaf 0x16 on a machine without a PIT (an info: line says
 * so). Returns it. */
uint64_t tsc_calibrate(void);

uint64_t us_to_tsc(uint64_t us);
int64_t tsc_to_us(int64_t t);
void delay_us(uint64_t us);
/* Spins with interrupts as they are until *v reaches target or us pass;
 * false on the timeout. */
bool wait_count(volatile unsigned int *v, unsigned int target, uint64_t us);
