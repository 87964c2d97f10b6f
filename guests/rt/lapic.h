/* The local APIC as the test guests drive it: its registers by their xAPIC
 * MMIO offsets, reached through the page at apic_base or, in x2APIC mode,
 * through the MSRs (SDM vol. 3 ch. 11). */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#define APIC_DEFAULT 0xfee00000ul

#define APIC_ID 0x20
#define APIC_VERSION 0x30
#define APIC_TPR 0x80
#define APIC_PPR 0xa0
#define APIC_EOI 0xb0
#define APIC_LDR 0xd0
#define APIC_SVR 0xf0
#define APIC_ISR 0x100
#define APIC_IRR 0x200
#define APIC_ESR 0x280
#define APIC_ICR_LO 0x300
#define APIC_ICR_HI 0x310
#define APIC_LVT_TIMER 0x320
#define APIC_LVT_LINT0 0x350
#define APIC_LVT_LINT1 0x360
#define APIC_LVT_ERROR 0x370
#define APIC_TICR 0x380
#define APIC_TCCR 0x390
#define APIC_TDCR 0x3e0

#define LVT_MASKED (1u << 16)
#define LVT_PERIODIC (1u << 17)
#define LVT_DEADLINE (2u << 17)
#define LVT_NMI (4u << 8)
#define LVT_EXTINT (7u << 8)
#define ICR_FIXED (0u << 8)
#define ICR_NMI (4u << 8)
#define ICR_INIT (5u << 8)
#define ICR_STARTUP (6u << 8)
#define ICR_PENDING (1u << 12)
#define ICR_ASSERT (1u << 14)
#define ICR_SELF (1u << 18)
#define ICR_ALL_INCL (2u << 18)
#define SVR_ENABLE (1u << 8)
#define SPURIOUS_VEC 0xff

/* Where the xAPIC page is (the apic guest moves it), and whether this CPU's
 * APIC is in x2APIC mode. Both describe every CPU: the guests keep their
 * APICs alike. */
extern uint64_t apic_base;
extern bool x2apic_mode;

volatile uint32_t *apic_reg(uint32_t reg);
uint32_t apic_read(uint32_t reg);
void apic_write(uint32_t reg, uint32_t val);
/* Sends an IPI: ICR high (destination) first in xAPIC mode, then the low
 * half, and waits (bounded) for the delivery status to clear; one 64-bit MSR
 * write in x2APIC mode. */
void apic_icr(uint32_t dest, uint32_t low);
void apic_eoi(void);
/* The APIC ID: 8 bits in xAPIC mode, 32 in x2APIC mode. */
uint32_t apic_id(void);
