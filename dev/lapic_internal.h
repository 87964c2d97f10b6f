/* What the local APIC model's files share: dev/lapic.c (vector sets, state
 * queries, acceptance and EOI, reset and IA32_APIC_BASE), dev/lapic_regs.c
 * (the register file, MMIO, MSRs), dev/lapic_timer.c, dev/lapic_ipi.c and
 * dev/lapic_state.c. Internal to the model: nothing outside dev/lapic*.c
 * includes this; the public interface is dev/lapic.h. */
#pragma once
#include "dev/lapic.h"

#define DFR_RESERVED_ONES 0x0fffffffu /* DFR bits 27:0 read as ones */
#define NMIS_PENDING_MAX 2             /* lapic_nmi_pending */

/* ---- lapic.c ---- */

/* 10.5.3: record errors; the LVT error entry signals each new one. */
void raise_error(struct lapic *a, uint32_t bits);
/* 10.6.2.4 (APR): lowest-priority arbitration; also read at 0x90. */
uint32_t arbitration_priority(const struct lapic *a);
/* 10.4.7.1: the power-on register values (ID and IA32_APIC_BASE aside). */
void reset_registers(struct lapic *a);
/* 10.12.10.2: the logical x2APIC ID, derived from the x2APIC ID. */
uint32_t x2apic_ldr(uint32_t id);
/* IA32_APIC_BASE's reserved bits on a CPU of phys_bits (0 or above 52: 52). */
uint64_t base_reserved(unsigned phys_bits);

/* ---- lapic_regs.c ---- */

/* The bits the register at a 16-byte-aligned offset can hold, whatever the
 * mode (0 for a reserved offset). */
uint32_t reg_held_bits(unsigned offset);

/* ---- lapic_timer.c: the register file's timer hooks ---- */

uint32_t timer_current_count(const struct lapic *a, uint64_t now); /* current count register */
void timer_disarm(struct lapic *a);
void write_timer_initial(struct lapic *a, uint32_t val, uint64_t now);
void write_timer_divide(struct lapic *a, uint32_t val, uint64_t now);
void write_lvt_timer(struct lapic *a, uint32_t val, uint64_t now); /* masking already applied */

/* ---- lapic_ipi.c: the register file's IPI hooks ---- */

/* The ICR's low word `icr` to `dest` (xAPIC: 8 bits, x2APIC: 32). */
void send_ipi(struct lapic *from, uint32_t icr, uint32_t dest);
void send_self_ipi(struct lapic *a, uint8_t vector); /* x2APIC SELF IPI register */
