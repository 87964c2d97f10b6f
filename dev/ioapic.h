/* The I/O APIC (Intel 82093AA datasheet; the ICH "IOxAPIC" version 0x20, as
 * QEMU's hw/intc/ioapic.c models it), as a pure model: 24 input pins, each
 * routed by a 64-bit redirection entry to the local APICs of a lapic_bus as
 * interrupt messages. It knows nothing of VMs or backends: the MMIO exit
 * handler calls ioapic_mmio_read/write, device models call ioapic_set_irq.
 * Also built for the host (tests/unit/test_ioapic.c).
 *
 * Registers, through IOREGSEL (offset 0x00) and IOWIN (0x10): 0 ID (bits
 * 27:24), 1 version 0x00170020 (24 entries, version 0x20), 2 arbitration ID,
 * 0x10 + 2n / 0x11 + 2n: redirection entry n, low / high half. Offset 0x40 is
 * the version-0x20 EOI register.
 *
 * Choices (QEMU's where the datasheet leaves one; details at each function):
 *   - Reset: ID 0, IOREGSEL 0, every entry masked with all other bits 0.
 *   - The arbitration register reads the ID (as QEMU); ID, version and
 *     arbitration are read-only but for the ID's 4 bits 27:24.
 *   - Redirection entries keep every written bit (reserved bits included, as
 *     QEMU), except the read-only delivery status (12, always 0: messages are
 *     delivered at once) and remote IRR (14). Making an entry edge-triggered
 *     clears its remote IRR (QEMU and KVM: Linux relies on it to EOI an I/O
 *     APIC without the EOI register).
 *   - MMIO decodes offset bits 7:0 only (the 4 KiB window aliases every 256
 *     bytes, as QEMU). IOREGSEL takes any write size at offset 0 and keeps 8
 *     bits; IOWIN and EOI act on 4-byte accesses only (others read 0, writes
 *     dropped); an 8-byte access is the 4-byte one at its offset (its upper
 *     half never hits a register). Other offsets read 0, writes are dropped.
 *   - The EOI register uses bits 7:0 as the vector (the rest are reserved).
 *   - ioapic_set_irq takes a pin's logical state (asserted or not): polarity
 *     (bit 13) is kept for the guest to read back but not applied, as in QEMU
 *     and KVM: the board reports assertion, and the polarity the guest
 *     programs only describes the wire. Pins are GSIs: mapping ISA IRQ 0 to
 *     pin 2 is the board's business.
 *   - Edge pins send a message on a 0 -> 1 change of an unmasked pin; an edge
 *     on a masked pin is lost (82093AA, IOREDTBL "Interrupt Mask"; QEMU).
 *     Level pins send one while asserted, unmasked and remote IRR clear;
 *     sending sets remote IRR, which a LAPIC EOI of the vector (broadcast
 *     over the lapic_bus: level_eoi) or a write to the EOI register clears,
 *     re-sending if still asserted.
 *   - Only fixed and lowest-priority messages can be level-triggered: NMI,
 *     INIT, SMI and ExtINT are always edge (82093AA, IOREDTBL "Delivery Mode").
 *   - Destination: bits 63:56, physical or logical (bit 11) as the LAPICs
 *     match it (lapic_match_dest); 0xff is broadcast, also to x2APIC-mode
 *     APICs (it goes out as 0xffffffff, as KVM does for I/O APIC messages).
 *   - Lowest priority goes to the matching, software-enabled APIC with the
 *     lowest arbitration priority, ties to the lowest APIC ID: the same rule
 *     as the LAPIC's lowest-priority IPIs (lapic_ipi.c).
 *   - SMI and ExtINT messages are not sent (ExtINT: the 8259 reaches the CPU
 *     through LINT0, dev/pic.h; virtual wire through the I/O APIC is not
 *     modelled). No interrupt-storm throttling (QEMU delays re-delivery after
 *     10000 back-to-back EOIs; there is no time here).
 *   - delivered[pin] counts the messages sent for that pin (whether or not
 *     any APIC accepted them).
 */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include "virt/state_record.h"

struct lapic_bus;

#define IOAPIC_BASE 0xfec00000ull
#define IOAPIC_SIZE 0x1000u
#define IOAPIC_PINS 24
#define IOAPIC_VERSION 0x00170020u /* max redirection entry 23, version 0x20 */

/* MMIO offsets */
#define IOAPIC_IOREGSEL 0x00u
#define IOAPIC_IOWIN 0x10u
#define IOAPIC_EOI 0x40u

/* Registers (IOREGSEL values) */
#define IOAPIC_REG_ID 0x00u
#define IOAPIC_REG_VERSION 0x01u
#define IOAPIC_REG_ARB 0x02u
#define IOAPIC_REG_REDTBL 0x10u /* entry n: 0x10 + 2n (low), 0x11 + 2n (high) */

/* Redirection entry fields */
#define IOAPIC_RTE_VECTOR 0xffull
#define IOAPIC_RTE_MODE_SHIFT 8 /* delivery mode, bits 10:8: enum lapic_delivery */
#define IOAPIC_RTE_LOGICAL (1ull << 11)
#define IOAPIC_RTE_DELIVS (1ull << 12)     /* delivery status, read-only */
#define IOAPIC_RTE_POLARITY (1ull << 13)   /* 1: active low */
#define IOAPIC_RTE_REMOTE_IRR (1ull << 14) /* read-only */
#define IOAPIC_RTE_LEVEL (1ull << 15)
#define IOAPIC_RTE_MASKED (1ull << 16)
#define IOAPIC_RTE_DEST_SHIFT 56

struct ioapic {
	uint8_t id;     /* ID register bits 27:24 */
	uint8_t regsel; /* IOREGSEL */
	uint64_t redir[IOAPIC_PINS];
	uint32_t line; /* asserted pins (bit n: pin n) */
	struct lapic_bus *bus;
	uint64_t delivered[IOAPIC_PINS]; /* stats: messages sent per pin */
};

/* Power-on state (see above), sending to the APICs on `bus` (NULL: nowhere).
 * Does not hook the bus's level_eoi: the VM sets it to ioapic_level_eoi. */
void ioapic_init(struct ioapic *io, struct lapic_bus *bus);

/* `offset` within the 4 KiB window at IOAPIC_BASE; `size` 1, 2, 4 or 8. */
uint32_t ioapic_mmio_read(struct ioapic *io, unsigned offset, unsigned size);
void ioapic_mmio_write(struct ioapic *io, unsigned offset, unsigned size, uint32_t val);

/* The input line of `pin` is now asserted (`level` true) or not. Pins from
 * IOAPIC_PINS up are ignored. */
void ioapic_set_irq(struct ioapic *io, unsigned pin, bool level);

/* An EOI of level-triggered `vector`: clears remote IRR of every
 * level-triggered entry with that vector and re-sends those whose line is
 * still asserted (and unmasked). */
void ioapic_eoi(struct ioapic *io, uint8_t vector);
/* ioapic_eoi with the shape of lapic_bus.level_eoi (ctx: the struct ioapic). */
void ioapic_level_eoi(void *ctx, uint8_t vector);

/* The I/O APIC's state record (REC_IOAPIC). */
extern const struct record_type ioapic_record;
