/* The PC's pair of 8259A PICs (Intel 8259A datasheet), master at ports
 * 0x20/0x21 and slave at 0xa0/0xa1 cascaded on the master's IR2, with the
 * PIIX/ICH edge/level control registers (ELCR) at 0x4d0/0x4d1. A pure model
 * as QEMU's hw/intc/i8259.c behaves: ports are function calls, the CPU side is
 * pic_output (INTR, to LINT0 programmed as ExtINT) and pic_ack (the INTA
 * cycle). Also built for the host (tests/unit/test_pic.c).
 *
 * Choices (details at each function in pic.c):
 *   - Power-on: real 8259As are undefined until ICW1; QEMU resets each chip as
 *     ICW1 does (IMR 0 = all unmasked, ISR/IRR 0, vector base 0, IR0 highest
 *     priority, reads return IRR) with ELCR 0 (all edge). sprig does the same
 *     (pic_init); a VM that boots a kernel then gets the pair as the firmware
 *     leaves it (dev/firmware.h).
 *   - ICW1 (8259A "Initialization Command Words") resets the chip's state but
 *     keeps level-triggered requests pending and the ELCR (as QEMU). ICW3's
 *     value is ignored: the cascade is wired (slave on IR2); ICW4's SFNM and
 *     AEOI are honoured, BUF and M/S ignored; ICW1 LTIM makes all 8 inputs
 *     level-triggered, like the ELCR does one at a time.
 *   - ELCR: master bits 0-2 and slave bits 0 and 5 (IRQ 0, 1, 2, 8, 13) are
 *     always edge and read 0, as on PIIX.
 *   - Edge inputs latch IRR on a rising edge, held until acknowledged (QEMU:
 *     a request that falls before INTA is not withdrawn); level inputs hold
 *     IRR while the line is high. A request gone at INTA time (a level line
 *     dropped, or masked after INTR rose) gives the spurious vector base+7
 *     with no ISR bit; through the cascade the master takes IR2 into service
 *     and the slave answers its base+7 (spurious IRQ 15), as real hardware.
 *   - OCW2: non-specific, specific and rotating EOIs, rotate in automatic EOI
 *     mode set/clear, set priority. OCW3: read IRR/ISR, poll, special mask.
 *     A poll read (either port) is an acknowledge: 0x80 | level, or 0; a poll
 *     of the master does not reach through to the slave (read it next).
 *   - Other ports read 0xff, writes to them are dropped.
 */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include "virt/state_record.h"

#define PIC_MASTER_CMD 0x20
#define PIC_MASTER_DATA 0x21
#define PIC_SLAVE_CMD 0xa0
#define PIC_SLAVE_DATA 0xa1
#define PIC_ELCR_MASTER 0x4d0
#define PIC_ELCR_SLAVE 0x4d1
#define PIC_CASCADE_IRQ 2

/* One 8259A. */
struct pic_chip {
	uint8_t irr, isr, imr;
	uint8_t line;         /* input levels, for edge detection */
	uint8_t priority_add; /* the IR with the highest priority (rotation) */
	uint8_t base;         /* ICW2: vector of IR0 (bits 7:3) */
	uint8_t elcr, elcr_mask;
	uint8_t init_state; /* 0: initialised; 1, 2, 3: ICW2, ICW3, ICW4 expected next */
	bool icw4_needed, single, ltim;
	bool auto_eoi, rotate_on_auto_eoi, sfnm;
	bool special_mask, poll, read_isr;
	bool is_master;
};

struct pic {
	struct pic_chip chip[2]; /* master, slave */
};

void pic_init(struct pic *p);
/* Ports 0x20 0x21 0xa0 0xa1 0x4d0 0x4d1. */
uint8_t pic_port_read(struct pic *p, uint16_t port);
void pic_port_write(struct pic *p, uint16_t port, uint8_t val);
/* ISA IRQ 0-15's line is now high (`level` true) or low. IRQ 2 is the
 * cascade: its line belongs to the slave and is ignored here. */
void pic_set_irq(struct pic *p, unsigned irq, bool level);
/* INTR: the master has an unmasked request above what it has in service. */
bool pic_output(const struct pic *p);
/* The CPU's interrupt acknowledge: the vector to take, with the request moved
 * to ISR (unless auto-EOI); base+7 of the chip concerned when spurious. */
uint8_t pic_ack(struct pic *p);
/* Whether IRQ irq (0-15) is masked in its chip's IMR; whether its chip has
 * it in service or requested and unmasked (the CPU is not done with it).
 * For the PIT's reinjection (dev/platform.c). */
bool pic_irq_masked(const struct pic *p, unsigned irq);
bool pic_irq_busy(const struct pic *p, unsigned irq);
/* The pair's state record (REC_PIC). */
extern const struct record_type pic_record;
