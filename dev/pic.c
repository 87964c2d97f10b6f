/* The 8259A pair (pic.h), after the Intel 8259A datasheet ("Initialization
 * Command Words", "Operation Command Words", "Interrupt Sequence", "The
 * Cascade Buffer/Comparator") and the PIIX ELCR, behaving as QEMU's i8259. */
#include "dev/pic.h"
#include "lib/print.h"
#include "lib/string.h"

enum { MASTER, SLAVE };

#define NO_IRQ 8 /* get_priority: nothing requested */

/* The ELCR bits that exist: IRQ 0-2 (master) and 8, 13 (slave) are edge only. */
static const uint8_t elcr_mask[2] = { 0xf8, 0xde };

/* ICW1 bits (written to the command port with bit 4 set) */
#define ICW1_IC4 0x01    /* ICW4 follows */
#define ICW1_SNGL 0x02   /* single chip: no ICW3 */
#define ICW1_LTIM 0x08   /* level-triggered inputs */
#define ICW1_SELECT 0x10
/* ICW4 bits */
#define ICW4_AEOI 0x02
#define ICW4_SFNM 0x10
/* OCW3 bits (bit 3 set, bit 4 clear) */
#define OCW3_SELECT 0x08
#define OCW3_RIS 0x01  /* read ISR (else IRR) ... */
#define OCW3_RR 0x02   /* ... when this is set */
#define OCW3_POLL 0x04
#define OCW3_SMM 0x20  /* special mask mode on ... */
#define OCW3_ESMM 0x40 /* ... or off, when this is set */

static void update(struct pic *p);

/* The priority rank (0: highest) of the best IR in `mask`, counting from
 * priority_add (the IR of highest priority after rotations); NO_IRQ if none. */
static unsigned get_priority(const struct pic_chip *c, uint8_t mask)
{
	unsigned prio = 0;

	if (!mask)
		return NO_IRQ;
	while (!(mask & (1u << ((prio + c->priority_add) & 7))))
		prio++;
	return prio;
}

/* The IR the chip would signal now: the best unmasked request, if it ranks
 * above everything in service; else -1. In special mask mode masked ISR bits
 * do not block lower levels; in special fully nested mode the master lets the
 * slave interrupt while IR2 is in service (8259A, "Special Fully Nest Mode"). */
static int chip_irq(const struct pic_chip *c)
{
	unsigned prio = get_priority(c, c->irr & ~c->imr);
	uint8_t in_service = c->isr;

	if (prio == NO_IRQ)
		return -1;
	if (c->special_mask)
		in_service &= ~c->imr;
	if (c->sfnm && c->is_master)
		in_service &= ~(1u << PIC_CASCADE_IRQ);
	if (prio >= get_priority(c, in_service))
		return -1;
	return (int)((prio + c->priority_add) & 7);
}

static bool level_triggered(const struct pic_chip *c, unsigned ir)
{
	return c->ltim || (c->elcr >> ir & 1);
}

/* One input line of one chip: edge inputs latch on 0 -> 1, level inputs
 * follow the line. */
static void chip_set_line(struct pic_chip *c, unsigned ir, bool level)
{
	uint8_t bit = (uint8_t)(1u << ir);

	if (level_triggered(c, ir)) {
		if (level)
			c->irr |= bit;
		else
			c->irr &= (uint8_t)~bit;
	} else if (level && !(c->line & bit)) {
		c->irr |= bit;
	}
	if (level)
		c->line |= bit;
	else
		c->line &= (uint8_t)~bit;
}

/* The slave's INT output drives the master's IR2 (an edge input: the PIIX
 * ELCR cannot make IRQ 2 level). */
static void update(struct pic *p)
{
	chip_set_line(&p->chip[MASTER], PIC_CASCADE_IRQ, chip_irq(&p->chip[SLAVE]) >= 0);
}

/* INTA for IR `ir` of one chip (8259A "Interrupt Sequence"): into service
 * (or, in AEOI mode, the rotation it asks for), and an edge request consumed;
 * a level request stays while its line is high. */
static void chip_ack(struct pic_chip *c, unsigned ir)
{
	if (!c->auto_eoi)
		c->isr |= (uint8_t)(1u << ir);
	else if (c->rotate_on_auto_eoi)
		c->priority_add = (ir + 1) & 7;
	if (!level_triggered(c, ir))
		c->irr &= (uint8_t)~(1u << ir);
}

/* What ICW1 does to a chip (8259A: edge sense reset, IMR cleared, IR7 lowest
 * priority, special mask off, IRR selected for reads, ICW4 functions 0).
 * Level requests survive: their lines are still high. */
static void chip_icw1(struct pic_chip *c, uint8_t icw1)
{
	c->line = 0;
	c->irr &= c->elcr;
	c->isr = c->imr = 0;
	c->priority_add = 0;
	c->base = 0;
	c->special_mask = c->poll = c->read_isr = false;
	c->auto_eoi = c->rotate_on_auto_eoi = c->sfnm = false;
	c->icw4_needed = icw1 & ICW1_IC4;
	c->single = icw1 & ICW1_SNGL;
	c->ltim = icw1 & ICW1_LTIM;
	c->init_state = 1;
}

void pic_init(struct pic *p)
{
	memset(p, 0, sizeof *p);
	p->chip[MASTER].is_master = true;
	p->chip[MASTER].elcr_mask = elcr_mask[MASTER];
	p->chip[SLAVE].elcr_mask = elcr_mask[SLAVE];
}

/* OCW2 (8259A "Operation Command Words"): bits 7:5 R, SL, EOI; bits 2:0 the
 * level for the specific forms. */
static void chip_ocw2(struct pic_chip *c, uint8_t val)
{
	unsigned ir = val & 7;
	unsigned prio;

	switch (val >> 5) {
	case 0: /* rotate in automatic EOI mode: clear */
	case 4: /* ... set */
		c->rotate_on_auto_eoi = val >> 7;
		break;
	case 1: /* non-specific EOI: the highest-priority ISR bit */
	case 5: /* ... and rotate: it becomes the lowest priority */
		prio = get_priority(c, c->isr);
		if (prio == NO_IRQ)
			break;
		ir = (prio + c->priority_add) & 7;
		c->isr &= (uint8_t)~(1u << ir);
		if (val >> 5 == 5)
			c->priority_add = (ir + 1) & 7;
		break;
	case 3: /* specific EOI */
		c->isr &= (uint8_t)~(1u << ir);
		break;
	case 7: /* rotate on specific EOI */
		c->isr &= (uint8_t)~(1u << ir);
		c->priority_add = (ir + 1) & 7;
		break;
	case 6: /* set priority: ir becomes the lowest */
		c->priority_add = (ir + 1) & 7;
		break;
	default: /* 2: no operation */
		break;
	}
}

static void chip_write(struct pic_chip *c, bool data, uint8_t val)
{
	if (!data) {
		if (val & ICW1_SELECT) {
			chip_icw1(c, val);
		} else if (val & OCW3_SELECT) {
			if (val & OCW3_POLL)
				c->poll = true;
			if (val & OCW3_RR)
				c->read_isr = val & OCW3_RIS;
			if (val & OCW3_ESMM)
				c->special_mask = val & OCW3_SMM;
		} else {
			chip_ocw2(c, val);
		}
		return;
	}
	switch (c->init_state) {
	case 0: /* OCW1 */
		c->imr = val;
		break;
	case 1: /* ICW2: vector base; the low 3 bits are the IR number (x86 mode) */
		c->base = val & 0xf8;
		c->init_state = !c->single ? 2 : c->icw4_needed ? 3 : 0;
		break;
	case 2: /* ICW3: the cascade is wired, the value is not used */
		c->init_state = c->icw4_needed ? 3 : 0;
		break;
	default: /* ICW4 (bit 0, 8086 mode, assumed) */
		c->sfnm = val & ICW4_SFNM;
		c->auto_eoi = val & ICW4_AEOI;
		c->init_state = 0;
		break;
	}
}

/* A poll (8259A "The Poll Command"): the acknowledge without INTA. */
static uint8_t chip_poll(struct pic *p, struct pic_chip *c)
{
	int ir = chip_irq(c);

	c->poll = false;
	if (ir < 0)
		return 0;
	chip_ack(c, (unsigned)ir);
	update(p);
	return (uint8_t)(0x80 | ir);
}

uint8_t pic_port_read(struct pic *p, uint16_t port)
{
	struct pic_chip *c;

	switch (port) {
	case PIC_MASTER_CMD:
	case PIC_MASTER_DATA:
		c = &p->chip[MASTER];
		break;
	case PIC_SLAVE_CMD:
	case PIC_SLAVE_DATA:
		c = &p->chip[SLAVE];
		break;
	case PIC_ELCR_MASTER:
		return p->chip[MASTER].elcr;
	case PIC_ELCR_SLAVE:
		return p->chip[SLAVE].elcr;
	default:
		return 0xff;
	}
	if (c->poll)
		return chip_poll(p, c);
	if (port & 1)
		return c->imr;
	return c->read_isr ? c->isr : c->irr;
}

void pic_port_write(struct pic *p, uint16_t port, uint8_t val)
{
	switch (port) {
	case PIC_MASTER_CMD:
	case PIC_MASTER_DATA:
		chip_write(&p->chip[MASTER], port & 1, val);
		break;
	case PIC_SLAVE_CMD:
	case PIC_SLAVE_DATA:
		chip_write(&p->chip[SLAVE], port & 1, val);
		break;
	case PIC_ELCR_MASTER:
		p->chip[MASTER].elcr = val & p->chip[MASTER].elcr_mask;
		return;
	case PIC_ELCR_SLAVE:
		p->chip[SLAVE].elcr = val & p->chip[SLAVE].elcr_mask;
		return;
	default:
		return;
	}
	update(p);
}

void pic_set_irq(struct pic *p, unsigned irq, bool level)
{
	if (irq >= 16 || irq == PIC_CASCADE_IRQ)
		return;
	chip_set_line(&p->chip[irq / 8], irq % 8, level);
	update(p);
}

bool pic_output(const struct pic *p)
{
	return chip_irq(&p->chip[MASTER]) >= 0;
}

uint8_t pic_ack(struct pic *p)
{
	struct pic_chip *m = &p->chip[MASTER], *s = &p->chip[SLAVE];
	int ir = chip_irq(m), ir2;
	uint8_t vector;

	if (ir < 0)
		return m->base + 7; /* spurious IRQ 7: nothing into service */
	if (ir == PIC_CASCADE_IRQ) {
		/* The master takes IR2 into service and the slave puts the vector
		 * on the bus; with its request gone it answers IR7 (IRQ 15). */
		ir2 = chip_irq(s);
		if (ir2 >= 0)
			chip_ack(s, (unsigned)ir2);
		vector = s->base + (ir2 >= 0 ? (uint8_t)ir2 : 7);
	} else {
		vector = m->base + (uint8_t)ir;
	}
	chip_ack(m, (unsigned)ir);
	update(p);
	return vector;
}

bool pic_irq_masked(const struct pic *p, unsigned irq)
{
	return irq < 16 && (p->chip[irq / 8].imr >> (irq % 8) & 1);
}

bool pic_irq_busy(const struct pic *p, unsigned irq)
{
	const struct pic_chip *c = &p->chip[irq / 8 & 1];

	return irq < 16 && (((c->irr & ~c->imr) | c->isr) >> (irq % 8) & 1);
}

/* ---- state record ----
 *
 * Saved: each chip's registers, input levels, rotation, vector base, ELCR,
 * where its initialisation sequence is and its mode flags. Not saved:
 * is_master and elcr_mask, the chips' wiring, which pic_init sets.
 * Checked: what the functions above index or count with (init_state,
 * priority_add) and what no write can make: ICW2's low bits, ELCR bits of
 * edge-only IRQs, an ICW3/ICW4 step the ICW1 did not ask for, and the
 * master's cascade input (IR2) not following the slave's INT output (the
 * next slave request would give no edge). */
static void pic_fields(void *model, struct field_io *io)
{
	struct pic *p = model;

	for (unsigned i = 0; i < 2; i++) {
		struct pic_chip *c = &p->chip[i];

		FIELD(io, c->irr);
		FIELD(io, c->isr);
		FIELD(io, c->imr);
		FIELD(io, c->line);
		FIELD(io, c->priority_add);
		FIELD(io, c->base);
		FIELD(io, c->elcr);
		FIELD(io, c->init_state);
		FIELD_BOOL(io, c->icw4_needed);
		FIELD_BOOL(io, c->single);
		FIELD_BOOL(io, c->ltim);
		FIELD_BOOL(io, c->auto_eoi);
		FIELD_BOOL(io, c->rotate_on_auto_eoi);
		FIELD_BOOL(io, c->sfnm);
		FIELD_BOOL(io, c->special_mask);
		FIELD_BOOL(io, c->poll);
		FIELD_BOOL(io, c->read_isr);
	}
}

static bool chip_check(const struct pic_chip *c, unsigned i, char *err, size_t errlen)
{
	if (c->init_state > 3)
		ksnprintf(err, errlen, "chip[%u].init_state %u is not 0-3", i, c->init_state);
	else if (c->init_state == 2 && c->single)
		ksnprintf(err, errlen, "chip[%u].init_state 2 (ICW3 next) in single mode", i);
	else if (c->init_state == 3 && !c->icw4_needed)
		ksnprintf(err, errlen, "chip[%u].init_state 3 (ICW4 next) without ICW1's IC4", i);
	else if (c->priority_add > 7)
		ksnprintf(err, errlen, "chip[%u].priority_add %u is not an IR (0-7)", i, c->priority_add);
	else if (c->base & 7)
		ksnprintf(err, errlen, "chip[%u].base 0x%x sets bits 2:0 (ICW2 gives 7:3)", i, c->base);
	else if (c->elcr & ~elcr_mask[i])
		ksnprintf(err, errlen, "chip[%u].elcr 0x%x sets edge-only IRQs (0x%x)", i, c->elcr,
			  c->elcr & ~elcr_mask[i]);
	else
		return true;
	return false;
}

static bool pic_state_check(const void *model, const struct record_limits *lim, char *err, size_t errlen)
{
	const struct pic *p = model;
	bool cascade = p->chip[MASTER].line >> PIC_CASCADE_IRQ & 1;

	(void)lim;
	for (unsigned i = 0; i < 2; i++)
		if (!chip_check(&p->chip[i], i, err, errlen))
			return false;
	if (cascade != (chip_irq(&p->chip[SLAVE]) >= 0)) {
		ksnprintf(err, errlen, "chip[0].line IR2 is %u but the slave's INT is %u", cascade, !cascade);
		return false;
	}
	return true;
}

const struct record_type pic_record = {
	.id = REC_PIC,
	.version = 1,
	.name = "pic",
	.model_bytes = sizeof(struct pic),
	.fields = pic_fields,
	.check = pic_state_check,
};
