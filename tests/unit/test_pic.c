/* The 8259A pair (dev/pic.c) against the 8259A datasheet and QEMU's i8259,
 * initialised as Linux and SeaBIOS do it. */
#include "check.h"
#include "record_check.h"
#include "dev/firmware.h"
#include "dev/pic.h"
#include <stdint.h>
#include <string.h>

#define MB 0x20 /* vector bases: Linux's (0x30/0x38 there), here SeaBIOS-like */
#define SB 0x28

/* ICW1 0x11 (edge, cascade, ICW4), ICW2 base, ICW3 4 (master: slave on IR2)
 * or 2 (slave: ID 2), ICW4 `icw4` (1: 8086; 3: and auto-EOI), then the IMR. */
static void init_pair(struct pic *p, uint8_t icw4, uint8_t mmask, uint8_t smask)
{
	pic_init(p);
	pic_port_write(p, 0x21, 0xff); /* Linux masks first */
	pic_port_write(p, 0xa1, 0xff);
	pic_port_write(p, 0x20, 0x11);
	pic_port_write(p, 0x21, MB);
	pic_port_write(p, 0x21, 0x04);
	pic_port_write(p, 0x21, icw4);
	pic_port_write(p, 0xa0, 0x11);
	pic_port_write(p, 0xa1, SB);
	pic_port_write(p, 0xa1, 0x02);
	pic_port_write(p, 0xa1, icw4);
	pic_port_write(p, 0x21, mmask);
	pic_port_write(p, 0xa1, smask);
}

static void pulse(struct pic *p, unsigned irq)
{
	pic_set_irq(p, irq, true);
	pic_set_irq(p, irq, false);
}

static uint8_t isr(struct pic *p, uint16_t cmd)
{
	uint8_t v;

	pic_port_write(p, cmd, 0x0b);
	v = pic_port_read(p, cmd);
	pic_port_write(p, cmd, 0x0a);
	return v;
}

static void eoi(struct pic *p, uint16_t cmd)
{
	pic_port_write(p, cmd, 0x20);
}

TEST(pic_reset_and_init)
{
	struct pic p;

	/* power-on, as QEMU: unmasked, nothing pending, ELCR all edge */
	pic_init(&p);
	static const struct {
		uint16_t port;
		uint8_t val;
	} reset[] = { { 0x20, 0 }, { 0x21, 0 }, { 0xa0, 0 }, { 0xa1, 0 }, { 0x4d0, 0 }, { 0x4d1, 0 }, { 0x22, 0xff } };
	for (unsigned i = 0; i < sizeof reset / sizeof reset[0]; i++)
		CHECK_EQ_U64(pic_port_read(&p, reset[i].port) + 0x100 * i, reset[i].val + 0x100 * i);
	CHECK(!pic_output(&p));

	/* init sequences: where the next data write lands and the vectors */
	static const struct {
		uint8_t icw[4];
		unsigned n;   /* ICWs written */
		uint8_t base; /* expected vector base */
	} seqs[] = {
		{ { 0x11, 0x30, 0x04, 0x01 }, 4, 0x30 }, /* Linux master */
		{ { 0x11, 0x08, 0x04, 0x01 }, 4, 0x08 }, /* SeaBIOS master */
		{ { 0x11, 0x2f, 0x04, 0x01 }, 4, 0x28 }, /* ICW2 bits 2:0 ignored */
		{ { 0x10, 0x40, 0x04 }, 3, 0x40 },       /* no ICW4 */
		{ { 0x13, 0x50, 0x01 }, 3, 0x50 },       /* single: no ICW3 */
		{ { 0x12, 0x60 }, 2, 0x60 },             /* single, no ICW4 */
	};
	for (unsigned i = 0; i < sizeof seqs / sizeof seqs[0]; i++) {
		pic_init(&p);
		pic_port_write(&p, 0x21, 0x55);
		pic_port_write(&p, 0x20, seqs[i].icw[0]);
		CHECK_EQ_U64(pic_port_read(&p, 0x21) + 0x100 * i, 0 + 0x100 * i); /* ICW1 clears IMR */
		for (unsigned k = 1; k < seqs[i].n; k++)
			pic_port_write(&p, 0x21, seqs[i].icw[k]);
		pic_port_write(&p, 0x21, 0xfe); /* OCW1: all but IRQ 0 */
		CHECK_EQ_U64(pic_port_read(&p, 0x21) + 0x100 * i, 0xfe + 0x100 * i);
		pulse(&p, 0);
		CHECK(pic_output(&p));
		CHECK_EQ_U64(pic_ack(&p) + 0x100 * i, seqs[i].base + 0x100 * i);
	}

	/* ICW1 in the middle of things resets ISR, IRR (edge), IMR and priority */
	init_pair(&p, 1, 0, 0);
	pulse(&p, 3);
	pulse(&p, 4);
	CHECK_EQ_U64(pic_ack(&p), MB + 3);
	pic_port_write(&p, 0x20, 0xc4); /* set priority: IR5 highest */
	pic_port_write(&p, 0x20, 0x11);
	CHECK_EQ_U64(pic_port_read(&p, 0x20), 0);
	CHECK_EQ_U64(isr(&p, 0x20), 0);
	pic_port_write(&p, 0x21, MB);
	pic_port_write(&p, 0x21, 4);
	pic_port_write(&p, 0x21, 1);
	pulse(&p, 7);
	pulse(&p, 6);
	CHECK_EQ_U64(pic_ack(&p), MB + 6); /* IR0 highest again */
}

TEST(pic_priorities_cascade)
{
	struct pic p;

	init_pair(&p, 1, 0, 0);
	pulse(&p, 3);
	pulse(&p, 1);
	CHECK(pic_output(&p));
	CHECK_EQ_U64(pic_ack(&p), MB + 1);
	CHECK_EQ_U64(isr(&p, 0x20), 0x02);
	CHECK(!pic_output(&p)); /* IRQ 3 waits for IRQ 1's EOI */
	CHECK_EQ_U64(pic_port_read(&p, 0x20), 0x08);
	/* the slave's requests rank as IR2: above IRQ 3, below IRQ 1 */
	pulse(&p, 12);
	CHECK(!pic_output(&p));
	eoi(&p, 0x20);
	CHECK(pic_output(&p));
	CHECK_EQ_U64(pic_ack(&p), SB + 4);
	CHECK_EQ_U64(isr(&p, 0x20), 0x04);
	CHECK_EQ_U64(isr(&p, 0xa0), 0x10);
	/* IRQ 0 nests over it; IRQ 3 and a lower slave request do not */
	pulse(&p, 14);
	CHECK(!pic_output(&p));
	pulse(&p, 0);
	CHECK_EQ_U64(pic_ack(&p), MB + 0);
	eoi(&p, 0x20);
	CHECK(!pic_output(&p));
	/* a higher slave request nests only with special fully nested mode: not here */
	pulse(&p, 9);
	CHECK(!pic_output(&p));
	eoi(&p, 0xa0); /* slave first, then master: as Linux */
	eoi(&p, 0x20);
	CHECK_EQ_U64(pic_ack(&p), SB + 1); /* 9 before 14 */
	eoi(&p, 0xa0);
	eoi(&p, 0x20);
	CHECK_EQ_U64(pic_ack(&p), SB + 6);
	eoi(&p, 0xa0);
	eoi(&p, 0x20);
	CHECK_EQ_U64(pic_ack(&p), MB + 3);
	eoi(&p, 0x20);
	CHECK(!pic_output(&p));
	CHECK_EQ_U64(isr(&p, 0x20) | isr(&p, 0xa0), 0);
	/* IRQ 2 is the cascade: its ISA line is ignored */
	pulse(&p, 2);
	CHECK(!pic_output(&p));
}

TEST(pic_masking)
{
	struct pic p;

	init_pair(&p, 1, 0xff, 0xff);
	pic_set_irq(&p, 4, true);
	CHECK(!pic_output(&p));
	CHECK_EQ_U64(pic_port_read(&p, 0x20), 0x10); /* requested, masked */
	pic_port_write(&p, 0x21, 0xef);
	CHECK(pic_output(&p));
	CHECK_EQ_U64(pic_ack(&p), MB + 4);
	eoi(&p, 0x20);
	/* slave IRQs need both the slave's bit and the master's IR2 */
	pulse(&p, 11);
	CHECK(!pic_output(&p));
	pic_port_write(&p, 0xa1, 0xf7);
	CHECK(!pic_output(&p));
	CHECK_EQ_U64(pic_port_read(&p, 0x20), 0x04); /* IR2 requested */
	pic_port_write(&p, 0x21, 0xeb);
	CHECK(pic_output(&p));
	CHECK_EQ_U64(pic_ack(&p), SB + 3);
	CHECK_EQ_U64(pic_port_read(&p, 0x21), 0xeb);
	CHECK_EQ_U64(pic_port_read(&p, 0xa1), 0xf7);
}

TEST(pic_eoi_forms)
{
	struct pic p;

	init_pair(&p, 1, 0, 0);
	/* non-specific EOI retires the highest priority in service */
	pulse(&p, 5);
	CHECK_EQ_U64(pic_ack(&p), MB + 5);
	pulse(&p, 3);
	CHECK_EQ_U64(pic_ack(&p), MB + 3);
	CHECK_EQ_U64(isr(&p, 0x20), 0x28);
	eoi(&p, 0x20);
	CHECK_EQ_U64(isr(&p, 0x20), 0x20);
	/* specific EOI: that level only */
	pic_port_write(&p, 0x20, 0x63); /* not in service: nothing */
	CHECK_EQ_U64(isr(&p, 0x20), 0x20);
	pic_port_write(&p, 0x20, 0x65);
	CHECK_EQ_U64(isr(&p, 0x20), 0);
	/* rotate on non-specific EOI: the retired level becomes the lowest */
	pulse(&p, 1);
	CHECK_EQ_U64(pic_ack(&p), MB + 1);
	pic_port_write(&p, 0x20, 0xa0);
	pulse(&p, 1);
	pulse(&p, 6);
	CHECK_EQ_U64(pic_ack(&p), MB + 6); /* order now 2..7, 0, 1 */
	pic_port_write(&p, 0x20, 0x66);
	CHECK_EQ_U64(pic_ack(&p), MB + 1);
	pic_port_write(&p, 0x20, 0x61);
	/* set priority: IR4 lowest, so IR5 highest */
	pic_port_write(&p, 0x20, 0xc4);
	pulse(&p, 0);
	pulse(&p, 5);
	CHECK_EQ_U64(pic_ack(&p), MB + 5);
	CHECK(!pic_output(&p)); /* IR0 ranks below IR5 now */
	/* rotate on specific EOI: IR5 retired and made lowest: IR6 highest */
	pic_port_write(&p, 0x20, 0xe5);
	CHECK_EQ_U64(isr(&p, 0x20), 0);
	pulse(&p, 6);
	CHECK_EQ_U64(pic_ack(&p), MB + 6);
	eoi(&p, 0x20);
	CHECK_EQ_U64(pic_ack(&p), MB + 0);
	/* no-op OCW2 (0x40) */
	pic_port_write(&p, 0x20, 0x40);
	CHECK_EQ_U64(isr(&p, 0x20), 0x01);
}

TEST(pic_auto_eoi)
{
	struct pic p;

	init_pair(&p, 3, 0, 0); /* ICW4: 8086, AEOI */
	pulse(&p, 3);
	pulse(&p, 12);
	CHECK_EQ_U64(pic_ack(&p), SB + 4);
	CHECK_EQ_U64(isr(&p, 0x20) | isr(&p, 0xa0), 0);
	CHECK(pic_output(&p)); /* nothing in service: IRQ 3 comes at once */
	CHECK_EQ_U64(pic_ack(&p), MB + 3);
	/* rotate in AEOI mode: each acknowledged level becomes the lowest */
	pic_port_write(&p, 0x20, 0x80);
	pulse(&p, 1);
	pulse(&p, 4);
	CHECK_EQ_U64(pic_ack(&p), MB + 1);
	pulse(&p, 0);
	CHECK_EQ_U64(pic_ack(&p), MB + 4); /* 0 is below 1 now... */
	CHECK_EQ_U64(pic_ack(&p), MB + 0); /* ... and comes next */
	pic_port_write(&p, 0x20, 0x00); /* rotate off */
	pulse(&p, 7);
	pulse(&p, 6);
	CHECK_EQ_U64(pic_ack(&p), MB + 6); /* order from IR1 (after 0): 6 before 7 */
}

TEST(pic_spurious)
{
	struct pic p;

	/* nothing at all: IRQ 7's vector, not in service */
	init_pair(&p, 1, 0, 0);
	CHECK_EQ_U64(pic_ack(&p), MB + 7);
	CHECK_EQ_U64(isr(&p, 0x20), 0);
	/* masked between INTR and INTA */
	pulse(&p, 4);
	CHECK(pic_output(&p));
	pic_port_write(&p, 0x21, 0x10);
	CHECK(!pic_output(&p));
	CHECK_EQ_U64(pic_ack(&p), MB + 7);
	CHECK_EQ_U64(isr(&p, 0x20), 0);
	/* a level request withdrawn before INTA */
	pic_port_write(&p, 0x4d0, 0x20);
	pic_set_irq(&p, 5, true);
	CHECK(pic_output(&p));
	pic_set_irq(&p, 5, false);
	CHECK(!pic_output(&p));
	CHECK_EQ_U64(pic_ack(&p), MB + 7);
	CHECK_EQ_U64(isr(&p, 0x20), 0);
	/* through the cascade: the master serves IR2, the slave answers IRQ 15 */
	pic_port_write(&p, 0x4d1, 0x04); /* IRQ 10 level */
	pic_set_irq(&p, 10, true);
	CHECK(pic_output(&p));
	pic_set_irq(&p, 10, false);
	CHECK_EQ_U64(pic_ack(&p), SB + 7);
	CHECK_EQ_U64(isr(&p, 0x20), 0x04);
	CHECK_EQ_U64(isr(&p, 0xa0), 0);
	eoi(&p, 0x20); /* Linux's answer to a spurious IRQ 15: the master's EOI */
	CHECK_EQ_U64(isr(&p, 0x20), 0);
	/* a real IRQ 7 is in service, and a real IRQ 15 too */
	pulse(&p, 7);
	CHECK_EQ_U64(pic_ack(&p), MB + 7);
	CHECK_EQ_U64(isr(&p, 0x20), 0x80);
	eoi(&p, 0x20);
	pulse(&p, 15);
	CHECK_EQ_U64(pic_ack(&p), SB + 7);
	CHECK_EQ_U64(isr(&p, 0xa0), 0x80);
}

TEST(pic_ocw3_reads)
{
	struct pic p;

	init_pair(&p, 1, 0, 0);
	pulse(&p, 6);
	pulse(&p, 3);
	pulse(&p, 13);
	CHECK_EQ_U64(pic_port_read(&p, 0x20), 0x4c); /* IRR by default */
	CHECK_EQ_U64(pic_port_read(&p, 0xa0), 0x20);
	CHECK_EQ_U64(pic_ack(&p), SB + 5);
	pic_port_write(&p, 0x20, 0x0b);              /* read ISR */
	CHECK_EQ_U64(pic_port_read(&p, 0x20), 0x04);
	CHECK_EQ_U64(pic_port_read(&p, 0x20), 0x04); /* stays selected */
	CHECK_EQ_U64(pic_port_read(&p, 0x21), 0);    /* the data port reads IMR */
	pic_port_write(&p, 0x20, 0x08);              /* RR=0: selection unchanged */
	CHECK_EQ_U64(pic_port_read(&p, 0x20), 0x04);
	pic_port_write(&p, 0x20, 0x0a); /* IRR */
	CHECK_EQ_U64(pic_port_read(&p, 0x20), 0x48);
	/* poll: an acknowledge by reading, 0x80 | level, once */
	eoi(&p, 0xa0);
	eoi(&p, 0x20);
	pic_port_write(&p, 0x20, 0x0c);
	CHECK_EQ_U64(pic_port_read(&p, 0x20), 0x83);
	CHECK_EQ_U64(isr(&p, 0x20), 0x08);
	CHECK_EQ_U64(pic_port_read(&p, 0x20), 0x40); /* poll over: IRR again */
	pic_port_write(&p, 0x20, 0x0c);
	CHECK_EQ_U64(pic_port_read(&p, 0x21), 0); /* IR6 is below IR3 in service */
	eoi(&p, 0x20);
	/* special mask mode: masking the level in service lets lower ones in */
	pulse(&p, 1);
	CHECK_EQ_U64(pic_ack(&p), MB + 1);
	pic_port_write(&p, 0x21, 0x02);
	CHECK(!pic_output(&p));
	pic_port_write(&p, 0x20, 0x68); /* SMM on */
	CHECK(pic_output(&p));
	CHECK_EQ_U64(pic_ack(&p), MB + 6);
	pic_port_write(&p, 0x20, 0x66);
	pulse(&p, 4);
	pic_port_write(&p, 0x20, 0x48); /* SMM off: IR1 blocks again */
	CHECK(!pic_output(&p));
	pic_port_write(&p, 0x20, 0x28); /* ESMM clear: no change */
	CHECK(!pic_output(&p));
}

TEST(pic_elcr_level)
{
	struct pic p;

	init_pair(&p, 1, 0, 0);
	/* writable bits: not IRQ 0, 1, 2, 8, 13 */
	pic_port_write(&p, 0x4d0, 0xff);
	pic_port_write(&p, 0x4d1, 0xff);
	CHECK_EQ_U64(pic_port_read(&p, 0x4d0), 0xf8);
	CHECK_EQ_U64(pic_port_read(&p, 0x4d1), 0xde);
	pic_port_write(&p, 0x4d0, 0x00);
	pic_port_write(&p, 0x4d1, 0x0c); /* IRQ 10, 11 level */
	/* a level request stays while the line is high: again after each EOI */
	pic_set_irq(&p, 11, true);
	CHECK_EQ_U64(pic_ack(&p), SB + 3);
	CHECK_EQ_U64(pic_port_read(&p, 0xa0), 0x08); /* still requested */
	eoi(&p, 0xa0);
	eoi(&p, 0x20);
	CHECK(pic_output(&p));
	CHECK_EQ_U64(pic_ack(&p), SB + 3);
	pic_set_irq(&p, 11, false);
	CHECK_EQ_U64(pic_port_read(&p, 0xa0), 0);
	eoi(&p, 0xa0);
	eoi(&p, 0x20);
	CHECK(!pic_output(&p));
	/* an edge request is latched: it survives the line falling */
	pulse(&p, 9);
	CHECK_EQ_U64(pic_port_read(&p, 0xa0), 0x02);
	CHECK_EQ_U64(pic_ack(&p), SB + 1);
	CHECK_EQ_U64(pic_port_read(&p, 0xa0), 0);
	eoi(&p, 0xa0);
	eoi(&p, 0x20);
	/* and a held edge line does not request again */
	pic_set_irq(&p, 9, true);
	CHECK_EQ_U64(pic_ack(&p), SB + 1);
	eoi(&p, 0xa0);
	eoi(&p, 0x20);
	pic_set_irq(&p, 9, true);
	CHECK(!pic_output(&p));
	/* ICW1 with LTIM: all the chip's inputs level */
	pic_port_write(&p, 0x20, 0x19);
	pic_port_write(&p, 0x21, MB);
	pic_port_write(&p, 0x21, 4);
	pic_port_write(&p, 0x21, 1);
	pic_set_irq(&p, 4, true);
	CHECK_EQ_U64(pic_ack(&p), MB + 4);
	eoi(&p, 0x20);
	CHECK_EQ_U64(pic_ack(&p), MB + 4);
	pic_set_irq(&p, 4, false);
	eoi(&p, 0x20);
	CHECK(!pic_output(&p));
}

/* ---- the state record (pic_record) ---- */

/* Both pairs read the same and go on alike through the same inputs: acks,
 * EOIs, polls, IRR/ISR reads, masks, lines rising and falling. */
static void check_same_future(struct pic *a, struct pic *b)
{
	static const uint16_t ports[] = { 0x20, 0x21, 0xa0, 0xa1, 0x4d0, 0x4d1 };
	struct pic *both[2] = { a, b };

	for (unsigned k = 0; k < 32; k++) {
		CHECK_EQ_U64(pic_output(a) + 0x100 * k, pic_output(b) + 0x100 * k);
		for (unsigned i = 0; i < sizeof ports / sizeof ports[0]; i++)
			CHECK_EQ_U64(pic_port_read(a, ports[i]) + 0x10000 * k, pic_port_read(b, ports[i]) + 0x10000 * k);
		if (pic_output(a))
			CHECK_EQ_U64(pic_ack(a) + 0x100 * k, pic_ack(b) + 0x100 * k);
		for (unsigned i = 0; i < 2; i++) {
			struct pic *p = both[i];

			switch (k % 8) {
			case 0: eoi(p, 0x20); break;
			case 1: /* read ISR, then IRR */
				pic_port_write(p, 0x20, 0x0b ^ (k & 8) >> 3);
				pic_port_write(p, 0xa0, 0x0b ^ (k & 8) >> 3);
				break;
			case 2: eoi(p, 0xa0); break;
			case 3: pic_set_irq(p, k % 16, k & 4); break;
			case 4: pic_port_write(p, 0xa0, 0x0c); break; /* poll */
			case 5: pulse(p, (k * 5) % 16); pulse(p, (k * 3) % 16); break;
			case 6: pic_port_write(p, 0x21 + 0x80 * (k & 8) / 8, (uint8_t)(k * 0x11)); break;
			default: pic_set_irq(p, 5, k & 8); pic_set_irq(p, 14, true); break;
			}
		}
	}
}

/* Programmed, with levels and edges requested, some in service, an edge
 * line left high, a rotated slave in special mask mode, the master in
 * special fully nested mode reading ISR. */
static void busy_pair(struct pic *p)
{
	init_pair(p, 0x11, 0, 0);
	pic_port_write(p, 0x4d0, 0x20); /* IRQ 5 level */
	pic_port_write(p, 0x4d1, 0x04); /* IRQ 10 level */
	pic_set_irq(p, 14, true);
	CHECK_EQ_U64(pic_ack(p), SB + 6);
	eoi(p, 0xa0);
	eoi(p, 0x20);
	pulse(p, 1);
	CHECK_EQ_U64(pic_ack(p), MB + 1); /* IR1 in service */
	pic_set_irq(p, 5, true);
	pic_set_irq(p, 10, true);
	pulse(p, 12);
	pulse(p, 3);
	pic_port_write(p, 0x21, 0x10);
	pulse(p, 4);                   /* masked, requested */
	pic_port_write(p, 0xa0, 0xc3); /* slave: IR3 lowest, IR4 highest */
	pic_port_write(p, 0xa0, 0x68); /* slave: special mask mode */
	pic_port_write(p, 0x20, 0x0b); /* master reads ISR */
}

TEST(pic_record_round_trip_busy)
{
	struct pic a, b;
	struct pic *both[2] = { &a, &b };

	busy_pair(&a);
	pic_init(&b);
	record_copy(&pic_record, &a, &b);
	CHECK(b.chip[0].is_master && !b.chip[1].is_master);
	CHECK_EQ_U64(b.chip[0].elcr_mask, 0xf8);
	CHECK_EQ_U64(pic_port_read(&b, 0x20), 0x02); /* ISR, as selected */
	CHECK_EQ_U64(pic_port_read(&b, 0xa0), 0x14); /* IRR: IRQ 10, 12 */
	CHECK(!pic_output(&b));                       /* IR1 in service blocks them */
	for (unsigned i = 0; i < 2; i++) {
		eoi(both[i], 0x20);
		CHECK_EQ_U64(pic_ack(both[i]), SB + 4); /* rotated: IR4 before IR2 */
		pic_port_write(both[i], 0xa1, 0x10);
		/* masked in special mask mode, IR4 in service lets IR2 in, and
		 * in special fully nested mode the master lets it through IR2 */
		CHECK(pic_output(both[i]));
		CHECK_EQ_U64(pic_ack(both[i]), SB + 2);
	}
	check_same_future(&a, &b);
}

/* The master halfway through initialisation (LTIM); the slave in auto-EOI
 * with rotation, a poll pending. */
static void initialising_pair(struct pic *p)
{
	init_pair(p, 3, 0, 0);
	pic_port_write(p, 0xa0, 0x80); /* rotate in auto-EOI mode */
	pulse(p, 14);
	pic_port_write(p, 0xa0, 0x0c); /* poll */
	pic_port_write(p, 0x20, 0x19); /* master: LTIM, ICW4 to come */
	pic_port_write(p, 0x21, 0x48); /* ICW2: ICW3 next */
}

TEST(pic_record_round_trip_initialising)
{
	struct pic a, b;
	struct pic *both[2] = { &a, &b };

	initialising_pair(&a);
	CHECK_EQ_U64(a.chip[0].init_state, 2);
	pic_init(&b);
	record_copy(&pic_record, &a, &b);
	for (unsigned i = 0; i < 2; i++) {
		struct pic *p = both[i];

		pic_port_write(p, 0x21, 0x04); /* ICW3 */
		pic_port_write(p, 0x21, 0x01); /* ICW4 */
		pic_set_irq(p, 6, true);
		CHECK_EQ_U64(pic_port_read(p, 0xa0), 0x86); /* the poll: IR6 (IRQ 14) */
		CHECK_EQ_U64(pic_ack(p), 0x48 + 6);         /* IRQ 6 (level: LTIM) at the new base */
		pulse(p, 9);
		pulse(p, 15);
		CHECK_EQ_U64(pic_ack(p), SB + 7); /* the poll's auto-EOI rotated: IR7 first */
		CHECK_EQ_U64(isr(p, 0xa0), 0);    /* auto-EOI */
		eoi(p, 0x20);
		CHECK_EQ_U64(pic_ack(p), SB + 1);
	}
	check_same_future(&a, &b);
}

/* Each ICW1 form, saved after ICW1 and after ICW2: the same next data bytes
 * land as the same ICWs and OCW1 in the restored chip. */
TEST(pic_record_round_trip_icw_steps)
{
	static const uint8_t icw1[] = { 0x10, 0x11, 0x12, 0x13, 0x19, 0x1a };
	struct pic a, b;

	for (unsigned i = 0; i < 2 * sizeof icw1; i++) {
		pic_init(&a);
		pic_port_write(&a, 0x20, icw1[i / 2]);
		if (i & 1)
			pic_port_write(&a, 0x21, 0x50);
		pic_init(&b);
		record_copy(&pic_record, &a, &b);
		for (unsigned k = 0; k < 4; k++) {
			pic_port_write(&a, 0x21, (uint8_t)(0x58 + k));
			pic_port_write(&b, 0x21, (uint8_t)(0x58 + k));
		}
		CHECK_EQ_U64(pic_port_read(&b, 0x21) + 0x100 * i, pic_port_read(&a, 0x21) + 0x100 * i);
		CHECK_EQ_U64(b.chip[0].init_state + 0x100 * i, 0x100 * i);
		check_same_future(&a, &b);
	}
}

TEST(pic_record_check_accepts)
{
	struct pic p;

	pic_init(&p);
	CHECK(record_saved_ok(&pic_record, &p));
	busy_pair(&p);
	CHECK(record_saved_ok(&pic_record, &p));
	initialising_pair(&p);
	CHECK(record_saved_ok(&pic_record, &p));
	pic_port_write(&p, 0xa0, 0x12); /* slave: single, ICW2 next */
	CHECK(record_saved_ok(&pic_record, &p));
}

TEST(pic_record_check_refuses)
{
	static const struct {
		unsigned chip;
		unsigned field; /* which to break */
		const char *reason;
	} cases[] = {
		{ 1, 0, "chip[1].init_state 4 is not 0-3" },
		{ 0, 1, "chip[0].init_state 2 (ICW3 next) in single mode" },
		{ 1, 2, "chip[1].init_state 3 (ICW4 next) without" },
		{ 0, 3, "chip[0].priority_add 8" },
		{ 1, 4, "chip[1].base 0x2d" },
		{ 0, 5, "chip[0].elcr 0x24 sets edge-only IRQs (0x4)" },
		{ 1, 5, "chip[1].elcr 0x24 sets edge-only IRQs (0x20)" },
		{ 0, 6, "chip[0].line IR2 is 0" },
	};
	struct pic p, z;
	char err[128];

	busy_pair(&p);
	for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct pic_chip *c;

		record_loaded(&pic_record, &p, &z);
		c = &z.chip[cases[i].chip];
		switch (cases[i].field) {
		case 0: c->init_state = 4; break;
		case 1: c->init_state = 2; c->single = true; break;
		case 2: c->init_state = 3; c->icw4_needed = false; break;
		case 3: c->priority_add = 8; break;
		case 4: c->base |= 5; break;
		case 5: c->elcr = 0x24; break;
		default: c->line &= (uint8_t)~4; break;
		}
		err[0] = 0;
		CHECK(!pic_record.check(&z, NULL, err, sizeof err));
		if (!strstr(err, cases[i].reason))
			CHECK_EQ_U64(i, 100); /* names the case */
	}
}

TEST(pic_record_bool_byte)
{
	struct pic p;
	uint8_t off[128], on[128];
	uint32_t n;

	busy_pair(&p);
	n = record_save(&pic_record, &p, off, sizeof off);
	p.chip[1].poll = true;
	CHECK(record_save(&pic_record, &p, on, sizeof on) == n);
	pic_init(&p);
	record_bool_byte_refused(&pic_record, off, on, n, &p, "poll");
	CHECK(!p.chip[1].poll);
}

/* As SeaBIOS leaves the pair for a kernel (dev/firmware.c; measured under QEMU
 * bare): the vector bases 0x08 / 0x70, IMR 0xb8 / 0x8e, IRQ 10 and 11 level. */
TEST(pic_firmware_state)
{
	struct pic p;

	pic_init(&p);
	firmware_pic(&p);
	CHECK_EQ_U64(pic_port_read(&p, 0x21), 0xb8);
	CHECK_EQ_U64(pic_port_read(&p, 0xa1), 0x8e);
	CHECK_EQ_U64(pic_port_read(&p, 0x4d0), 0x00);
	CHECK_EQ_U64(pic_port_read(&p, 0x4d1), 0x0c);
	CHECK_EQ_U64(pic_port_read(&p, 0x20), 0); /* reads give IRR: nothing */
	CHECK_EQ_U64(isr(&p, 0x20), 0);
	CHECK(!pic_output(&p));

	/* masked: IRQ 3 (edge), IRQ 11 (level, raised and dropped) */
	pulse(&p, 3);
	pulse(&p, 11);
	CHECK(!pic_output(&p));
	CHECK_EQ_U64(pic_port_read(&p, 0xa0), 0); /* a level request goes with its line */

	/* the timer, then the RTC through the cascade: the firmware's vectors */
	pulse(&p, 0);
	CHECK(pic_output(&p));
	CHECK_EQ_U64(pic_ack(&p), 0x08);
	eoi(&p, 0x20);
	pulse(&p, 8);
	CHECK(pic_output(&p));
	CHECK_EQ_U64(pic_ack(&p), 0x70);
	eoi(&p, 0xa0);
	eoi(&p, 0x20);
	CHECK(!pic_output(&p));

	/* IRQ 11 held high is seen once unmasked; dropped before the INTA,
	 * the slave answers its spurious IRQ 15 */
	pic_set_irq(&p, 11, true);
	CHECK(!pic_output(&p));
	pic_port_write(&p, 0xa1, 0x86);
	CHECK(pic_output(&p));
	pic_set_irq(&p, 11, false);
	CHECK_EQ_U64(pic_ack(&p), 0x77);
}
