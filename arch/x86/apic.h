/* The local APIC, in x2APIC mode (MSRs) where the CPU has it and it is allowed,
 * otherwise xAPIC (MMIO at IA32_APIC_BASE, mapped uncached by the kernel page
 * tables). The 8259 PICs and the I/O APICs are masked: sprig takes no
 * legacy or device interrupts. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

/* ICR fields for apic_send_ipi. */
#define APIC_ICR_FIXED 0x00000u
#define APIC_ICR_NMI 0x00400u
#define APIC_ICR_INIT 0x00500u
#define APIC_ICR_STARTUP 0x00600u
#define APIC_ICR_LEVEL_ASSERT 0x04000u
#define APIC_ICR_LEVEL_TRIGGER 0x08000u

/* One CPU's timer state, in its struct percpu. */
struct apic_timer {
	uint64_t ticks;       /* interrupts taken: periodic ticks and one-shots */
	uint32_t tick_count;  /* the periodic tick's initial count; 0 when not started */
	uint64_t next_tick;   /* TSC by which the periodic tick is next due */
	uint64_t oneshot_due; /* TSC of an armed one-shot (apic_timer_wake_by), else 0 */
};

/* Enable the BSP's local APIC (spurious vector VEC_SPURIOUS, LVTs masked,
 * LINT1 as NMI), mask the 8259s and the I/O APICs (after acpi_init), and measure the APIC timer against the TSC
 * (so after tsc_init). Returns false, with a message, if there is no APIC. */
bool apic_init(bool allow_x2apic);
/* Enable an AP's local APIC in the mode the BSP chose, its timer ticking at
 * the rate the BSP's was started at. */
void apic_init_ap(void);

/* Start the periodic timer on this CPU at hz on VEC_APIC_TIMER; its handler
 * counts this CPU's ticks. */
void apic_timer_start(unsigned hz);
void apic_timer_stop(void);
/* Make this CPU's timer interrupt come by TSC value tsc if the periodic tick
 * would come later: a one-shot, after which the tick goes on. Guests' timer
 * deadlines use it, so they need not wait for the next tick. Interrupts off. */
void apic_timer_wake_by(uint64_t tsc);
/* The bootstrap CPU's ticks. */
uint64_t apic_ticks(void);
/* APIC timer input rate (after the divider sprig uses), in Hz. */
uint64_t apic_timer_hz(void);

void apic_eoi(void);
uint32_t apic_id(void);
const char *apic_mode(void);
/* Whether an IPI can name APIC ID id in the mode in use (xAPIC: 8 bits, of
 * which 0xff is the broadcast). */
bool apic_can_address(uint32_t id);
/* Send an IPI to the APIC ID dest; icr_low holds the vector and APIC_ICR_*.
 * Any context: interrupts are held off while an xAPIC's two ICR halves are
 * written. */
void apic_send_ipi(uint32_t dest, uint32_t icr_low);
