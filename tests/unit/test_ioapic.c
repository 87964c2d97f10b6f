/* The I/O APIC model (dev/ioapic.c) against the 82093AA datasheet and QEMU's
 * behaviour, routing to local APIC models (dev/lapic*.c) on a lapic_bus; and
 * the LAPIC's level-triggered EOI hook (lapic_bus.level_eoi). */
#include "check.h"
#include "record_check.h"
#include "dev/ioapic.h"
#include "dev/lapic.h"
#include <stdint.h>
#include <string.h>

#define PHYS 46
#define RTE_LEVEL IOAPIC_RTE_LEVEL
#define RTE_MASKED IOAPIC_RTE_MASKED
#define RTE_REMOTE_IRR IOAPIC_RTE_REMOTE_IRR
#define RTE_LOGICAL IOAPIC_RTE_LOGICAL

static uint32_t reg_rd(struct ioapic *io, uint8_t reg)
{
	ioapic_mmio_write(io, IOAPIC_IOREGSEL, 4, reg);
	return ioapic_mmio_read(io, IOAPIC_IOWIN, 4);
}

static void reg_wr(struct ioapic *io, uint8_t reg, uint32_t val)
{
	ioapic_mmio_write(io, IOAPIC_IOREGSEL, 4, reg);
	ioapic_mmio_write(io, IOAPIC_IOWIN, 4, val);
}

static uint64_t rte_rd(struct ioapic *io, unsigned pin)
{
	uint64_t lo = reg_rd(io, (uint8_t)(IOAPIC_REG_REDTBL + 2 * pin));

	return lo | (uint64_t)reg_rd(io, (uint8_t)(IOAPIC_REG_REDTBL + 2 * pin + 1)) << 32;
}

/* High half first, as Linux does, so the entry is complete when unmasked. */
static void rte_wr(struct ioapic *io, unsigned pin, uint64_t e)
{
	reg_wr(io, (uint8_t)(IOAPIC_REG_REDTBL + 2 * pin + 1), (uint32_t)(e >> 32));
	reg_wr(io, (uint8_t)(IOAPIC_REG_REDTBL + 2 * pin), (uint32_t)e);
}

#define dest(d) ((uint64_t)(d) << IOAPIC_RTE_DEST_SHIFT)

static uint64_t mode(enum lapic_delivery m)
{
	return (uint64_t)m << IOAPIC_RTE_MODE_SHIFT;
}

static bool irr(const struct lapic *a, unsigned v)
{
	return (a->irr[v / 32] >> (v % 32)) & 1;
}

static bool tmr(const struct lapic *a, unsigned v)
{
	return (a->tmr[v / 32] >> (v % 32)) & 1;
}

static unsigned who_has(const struct lapic *a, unsigned n, unsigned vector)
{
	unsigned mask = 0;

	for (unsigned i = 0; i < n; i++)
		if (irr(&a[i], vector))
			mask |= 1u << i;
	return mask;
}

static void lapic_wr(struct lapic *a, unsigned off, uint32_t val)
{
	lapic_mmio_write(a, off, 4, val, 0);
}

/* n software-enabled xAPICs, IDs 0..n-1, flat logical IDs 1 << i, and an I/O
 * APIC sending to them, hooked up for level-triggered EOIs. */
static void setup(struct ioapic *io, struct lapic_bus *bus, struct lapic *a, unsigned n)
{
	memset(bus, 0, sizeof *bus);
	for (unsigned i = 0; i < n; i++) {
		lapic_init(&a[i], bus, i, i == 0, 2000000);
		lapic_wr(&a[i], LAPIC_REG_SVR, 0x1ff);
		lapic_wr(&a[i], LAPIC_REG_LDR, (1u << i) << 24);
	}
	ioapic_init(io, bus);
	bus->level_eoi = ioapic_level_eoi;
	bus->level_eoi_ctx = io;
}

/* The CPU takes the vector and its handler EOIs the LAPIC. */
static void take_and_eoi(struct lapic *a, uint8_t vector)
{
	lapic_ack_irq(a, vector);
	lapic_wr(a, LAPIC_REG_EOI, 0);
}

/* ---- registers ---- */

TEST(ioapic_reset_values)
{
	struct ioapic io;

	ioapic_init(&io, NULL);
	static const struct {
		uint8_t reg;
		uint32_t val;
	} regs[] = {
		{ IOAPIC_REG_ID, 0 }, { IOAPIC_REG_VERSION, 0x00170020 }, { IOAPIC_REG_ARB, 0 },
		{ 0x03, 0 }, { 0x0f, 0 }, { 0x40, 0 }, { 0xff, 0 },
	};
	for (unsigned i = 0; i < sizeof regs / sizeof regs[0]; i++)
		CHECK_EQ_U64(reg_rd(&io, regs[i].reg) + ((uint64_t)i << 32), regs[i].val + ((uint64_t)i << 32));
	for (unsigned pin = 0; pin < IOAPIC_PINS; pin++)
		CHECK_EQ_U64(rte_rd(&io, pin) + ((uint64_t)pin << 40), 0x10000 + ((uint64_t)pin << 40));
	CHECK_EQ_U64(io.line, 0);
	ioapic_mmio_write(&io, IOAPIC_IOREGSEL, 4, 0x12);
	CHECK_EQ_U64(ioapic_mmio_read(&io, IOAPIC_IOREGSEL, 4), 0x12);
	ioapic_mmio_write(&io, IOAPIC_IOREGSEL, 4, 0x1234); /* 8 bits held */
	CHECK_EQ_U64(ioapic_mmio_read(&io, IOAPIC_IOREGSEL, 4), 0x34);
}

TEST(ioapic_register_writes)
{
	struct ioapic io;

	ioapic_init(&io, NULL);
	/* ID: bits 27:24 only; the arbitration ID follows it; version read-only */
	reg_wr(&io, IOAPIC_REG_ID, 0xffffffff);
	CHECK_EQ_U64(reg_rd(&io, IOAPIC_REG_ID), 0x0f000000);
	CHECK_EQ_U64(reg_rd(&io, IOAPIC_REG_ARB), 0x0f000000);
	reg_wr(&io, IOAPIC_REG_ID, 0x02000000);
	CHECK_EQ_U64(reg_rd(&io, IOAPIC_REG_ID), 0x02000000);
	reg_wr(&io, IOAPIC_REG_VERSION, 0);
	reg_wr(&io, IOAPIC_REG_ARB, 0x0a000000);
	CHECK_EQ_U64(reg_rd(&io, IOAPIC_REG_VERSION), IOAPIC_VERSION);
	CHECK_EQ_U64(reg_rd(&io, IOAPIC_REG_ARB), 0x02000000);

	/* redirection entries: all bits but delivery status (12) and remote IRR (14) */
	reg_wr(&io, 0x10 + 2 * 5, 0xffffffff);
	reg_wr(&io, 0x11 + 2 * 5, 0xffffffff);
	CHECK_EQ_U64(rte_rd(&io, 5), 0xffffffffffffafffull);
	CHECK_EQ_U64(rte_rd(&io, 4), 0x10000); /* neighbours untouched */
	CHECK_EQ_U64(rte_rd(&io, 6), 0x10000);
	/* each half alone */
	reg_wr(&io, 0x11 + 2 * 7, 0x12345678);
	CHECK_EQ_U64(rte_rd(&io, 7), 0x1234567800010000ull);
	reg_wr(&io, 0x10 + 2 * 7, 0x0000f931); /* 12 and 14 dropped */
	CHECK_EQ_U64(rte_rd(&io, 7), 0x123456780000a931ull);
	/* the last entry, and the register after it */
	rte_wr(&io, 23, 0x0300000000018a55ull);
	CHECK_EQ_U64(rte_rd(&io, 23), 0x0300000000018a55ull);
	reg_wr(&io, 0x40, 0xffffffff);
	CHECK_EQ_U64(reg_rd(&io, 0x40), 0);

	/* remote IRR is read-only, and goes when the entry is made edge */
	struct lapic_bus bus;
	struct lapic a;
	setup(&io, &bus, &a, 1);
	rte_wr(&io, 3, RTE_LEVEL | 0x30);
	ioapic_set_irq(&io, 3, true);
	CHECK_EQ_U64(rte_rd(&io, 3), RTE_LEVEL | RTE_REMOTE_IRR | 0x30);
	reg_wr(&io, 0x10 + 2 * 3, RTE_LEVEL | 0x31); /* no write clears it ... */
	CHECK_EQ_U64(rte_rd(&io, 3), RTE_LEVEL | RTE_REMOTE_IRR | 0x31);
	reg_wr(&io, 0x10 + 2 * 3, RTE_MASKED | 0x31); /* ... but making it edge (Linux's EOI trick) */
	CHECK_EQ_U64(rte_rd(&io, 3), RTE_MASKED | 0x31);
}

/* Sized and odd accesses: IOREGSEL any size at offset 0, IOWIN and EOI only
 * 4 (or 8) bytes, offsets decoded mod 256. */
TEST(ioapic_mmio_sizes)
{
	struct ioapic io;

	ioapic_init(&io, NULL);
	ioapic_mmio_write(&io, IOAPIC_IOREGSEL, 1, IOAPIC_REG_VERSION);
	CHECK_EQ_U64(ioapic_mmio_read(&io, IOAPIC_IOREGSEL, 1), 1);
	static const struct {
		unsigned off, size;
		uint32_t val;
	} reads[] = {
		{ 0x10, 4, IOAPIC_VERSION }, { 0x10, 8, IOAPIC_VERSION }, { 0x10, 1, 0 },
		{ 0x10, 2, 0 }, { 0x11, 1, 0 }, { 0x14, 4, 0 }, { 0x20, 4, 0 },
		{ 0x40, 4, 0 }, { 0x110, 4, IOAPIC_VERSION }, { 0xf10, 4, IOAPIC_VERSION },
		{ 0x01, 1, 0 }, { 0x100, 4, 1 },
	};
	for (unsigned i = 0; i < sizeof reads / sizeof reads[0]; i++)
		CHECK_EQ_U64(ioapic_mmio_read(&io, reads[i].off, reads[i].size) + ((uint64_t)i << 32),
			     reads[i].val + ((uint64_t)i << 32));
	/* IOWIN writes of 1 or 2 bytes are dropped */
	ioapic_mmio_write(&io, IOAPIC_IOREGSEL, 2, 0x10);
	ioapic_mmio_write(&io, IOAPIC_IOWIN, 1, 0x40);
	ioapic_mmio_write(&io, IOAPIC_IOWIN, 2, 0x40);
	CHECK_EQ_U64(ioapic_mmio_read(&io, IOAPIC_IOWIN, 4), 0x10000);
	ioapic_mmio_write(&io, 0x210, 4, 0x40); /* an alias of IOWIN */
	CHECK_EQ_U64(ioapic_mmio_read(&io, IOAPIC_IOWIN, 4), 0x40);
	/* a byte write past IOREGSEL's first byte does nothing */
	ioapic_mmio_write(&io, 0x01, 1, 0x11);
	CHECK_EQ_U64(ioapic_mmio_read(&io, IOAPIC_IOREGSEL, 4), 0x10);
}

/* ---- delivery ---- */

TEST(ioapic_edge_delivery)
{
	struct ioapic io;
	struct lapic_bus bus;
	struct lapic a[2];

	setup(&io, &bus, a, 2);
	rte_wr(&io, 4, dest(1) | 0x41);
	ioapic_set_irq(&io, 4, true);
	CHECK_EQ_U64(who_has(a, 2, 0x41), 0x2);
	CHECK(!tmr(&a[1], 0x41));
	CHECK_EQ_U64(io.delivered[4], 1);
	CHECK_EQ_U64(rte_rd(&io, 4), dest(1) | 0x41); /* no remote IRR for edge */
	/* staying high is no new edge */
	lapic_ack_irq(&a[1], 0x41);
	ioapic_set_irq(&io, 4, true);
	CHECK(!irr(&a[1], 0x41));
	CHECK_EQ_U64(io.delivered[4], 1);
	/* low, then high again: a second edge */
	ioapic_set_irq(&io, 4, false);
	CHECK_EQ_U64(io.line, 0);
	ioapic_set_irq(&io, 4, true);
	CHECK(irr(&a[1], 0x41));
	CHECK_EQ_U64(io.delivered[4], 2);
	CHECK_EQ_U64(io.line, 1u << 4);
	/* an edge on a masked pin is lost, and unmasking does not bring it back */
	rte_wr(&io, 5, RTE_MASKED | dest(0) | 0x42);
	ioapic_set_irq(&io, 5, true);
	rte_wr(&io, 5, dest(0) | 0x42);
	CHECK(!irr(&a[0], 0x42));
	CHECK_EQ_U64(io.delivered[5], 0);
	/* out-of-range pins are ignored */
	ioapic_set_irq(&io, IOAPIC_PINS, true);
	CHECK_EQ_U64(io.line, (1u << 4) | (1u << 5));
}

TEST(ioapic_level_remote_irr)
{
	struct ioapic io;
	struct lapic_bus bus;
	struct lapic a;

	setup(&io, &bus, &a, 1);
	rte_wr(&io, 10, RTE_LEVEL | 0x50);
	ioapic_set_irq(&io, 10, true);
	CHECK(irr(&a, 0x50) && tmr(&a, 0x50));
	CHECK(rte_rd(&io, 10) & RTE_REMOTE_IRR);
	CHECK_EQ_U64(io.delivered[10], 1);
	/* still asserted, remote IRR set: nothing more */
	lapic_ack_irq(&a, 0x50);
	ioapic_set_irq(&io, 10, true);
	CHECK(!irr(&a, 0x50));
	CHECK_EQ_U64(io.delivered[10], 1);
	/* the LAPIC's EOI reaches the I/O APIC: the line is still high, so again */
	lapic_wr(&a, LAPIC_REG_EOI, 0);
	CHECK(irr(&a, 0x50) && tmr(&a, 0x50));
	CHECK(rte_rd(&io, 10) & RTE_REMOTE_IRR);
	CHECK_EQ_U64(io.delivered[10], 2);
	/* the device lets go before the EOI: remote IRR clears, nothing is sent */
	ioapic_set_irq(&io, 10, false);
	take_and_eoi(&a, 0x50);
	CHECK(!irr(&a, 0x50));
	CHECK(!(rte_rd(&io, 10) & RTE_REMOTE_IRR));
	CHECK_EQ_U64(io.delivered[10], 2);

	/* the EOI register (0x40) does the same, by vector (bits 7:0) */
	ioapic_set_irq(&io, 10, true);
	CHECK_EQ_U64(io.delivered[10], 3);
	lapic_ack_irq(&a, 0x50); /* the guest handles it without a LAPIC level EOI */
	ioapic_mmio_write(&io, IOAPIC_EOI, 4, 0x51);
	CHECK(rte_rd(&io, 10) & RTE_REMOTE_IRR); /* another vector */
	ioapic_mmio_write(&io, IOAPIC_EOI, 4, 0x150);
	CHECK(rte_rd(&io, 10) & RTE_REMOTE_IRR); /* sent again: still asserted */
	CHECK_EQ_U64(io.delivered[10], 4);
	ioapic_set_irq(&io, 10, false);
	ioapic_mmio_write(&io, IOAPIC_EOI, 2, 0x50); /* not 4 bytes: dropped */
	CHECK(rte_rd(&io, 10) & RTE_REMOTE_IRR);
	ioapic_eoi(&io, 0x50);
	CHECK(!(rte_rd(&io, 10) & RTE_REMOTE_IRR));
	CHECK_EQ_U64(io.delivered[10], 4);

	/* one EOI clears every level entry with the vector; edge entries unaffected */
	memset(a.irr, 0, sizeof a.irr);
	rte_wr(&io, 11, RTE_LEVEL | 0x60);
	rte_wr(&io, 12, RTE_LEVEL | 0x60);
	rte_wr(&io, 13, 0x60);
	ioapic_set_irq(&io, 11, true);
	ioapic_set_irq(&io, 12, true);
	ioapic_set_irq(&io, 13, true);
	CHECK(rte_rd(&io, 11) & rte_rd(&io, 12) & RTE_REMOTE_IRR);
	ioapic_set_irq(&io, 12, false);
	ioapic_eoi(&io, 0x60);
	CHECK_EQ_U64(io.delivered[11], 2); /* 11 still high: again */
	CHECK_EQ_U64(io.delivered[12], 1);
	CHECK_EQ_U64(io.delivered[13], 1);
	CHECK(!(rte_rd(&io, 12) & RTE_REMOTE_IRR));
}

TEST(ioapic_masking)
{
	struct ioapic io;
	struct lapic_bus bus;
	struct lapic a;

	setup(&io, &bus, &a, 1);
	/* a masked level pin holds its request until unmasked */
	rte_wr(&io, 9, RTE_MASKED | RTE_LEVEL | 0x70);
	ioapic_set_irq(&io, 9, true);
	CHECK(!irr(&a, 0x70));
	CHECK_EQ_U64(rte_rd(&io, 9), RTE_MASKED | RTE_LEVEL | 0x70);
	rte_wr(&io, 9, RTE_LEVEL | 0x70);
	CHECK(irr(&a, 0x70) && tmr(&a, 0x70));
	CHECK_EQ_U64(rte_rd(&io, 9), RTE_REMOTE_IRR | RTE_LEVEL | 0x70);
	/* masked while in service: the EOI clears remote IRR but sends nothing */
	lapic_ack_irq(&a, 0x70);
	rte_wr(&io, 9, RTE_MASKED | RTE_LEVEL | 0x70);
	lapic_wr(&a, LAPIC_REG_EOI, 0);
	CHECK(!irr(&a, 0x70));
	CHECK_EQ_U64(rte_rd(&io, 9), RTE_MASKED | RTE_LEVEL | 0x70);
	CHECK_EQ_U64(io.delivered[9], 1);
	/* a level pin that falls while masked has nothing to send on unmask */
	ioapic_set_irq(&io, 9, false);
	rte_wr(&io, 9, RTE_LEVEL | 0x70);
	CHECK(!irr(&a, 0x70));
	/* an edge pin made level while its line is high sends at once */
	rte_wr(&io, 8, 0x71);
	ioapic_set_irq(&io, 8, true);
	lapic_ack_irq(&a, 0x71);
	rte_wr(&io, 8, RTE_LEVEL | 0x71);
	CHECK(irr(&a, 0x71) && tmr(&a, 0x71));
	CHECK_EQ_U64(io.delivered[8], 2);
}

/* Physical, logical (flat and cluster) and broadcast destinations, four
 * LAPICs; x2APIC-mode receivers of an 8-bit broadcast. */
TEST(ioapic_destinations)
{
	struct ioapic io;
	struct lapic_bus bus;
	struct lapic a[4];
	static const struct {
		uint64_t rte;
		unsigned who;
	} t[] = {
		{ dest(0), 0x1 },
		{ dest(3), 0x8 },
		{ dest(4), 0x0 },    /* nobody has ID 4 */
		{ dest(0xff), 0xf }, /* physical broadcast */
		{ RTE_LOGICAL | dest(0x05), 0x5 },
		{ RTE_LOGICAL | dest(0x08), 0x8 },
		{ RTE_LOGICAL | dest(0x00), 0x0 },
		{ RTE_LOGICAL | dest(0xff), 0xf },
	};

	setup(&io, &bus, a, 4);
	for (unsigned i = 0; i < sizeof t / sizeof t[0]; i++) {
		uint8_t v = (uint8_t)(0x80 + i);

		rte_wr(&io, i, t[i].rte | v);
		ioapic_set_irq(&io, i, true);
		CHECK_EQ_U64(who_has(a, 4, v) + 0x100 * i, t[i].who + 0x100 * i);
	}
	/* cluster model: cluster in bits 7:4, members in 3:0 */
	for (unsigned i = 0; i < 4; i++) {
		lapic_wr(&a[i], LAPIC_REG_DFR, 0x0fffffff);
		lapic_wr(&a[i], LAPIC_REG_LDR, ((i / 2 + 1) << 28) | ((1u << (i % 2)) << 24));
	}
	rte_wr(&io, 12, RTE_LOGICAL | dest(0x23) | 0x90);
	ioapic_set_irq(&io, 12, true);
	CHECK_EQ_U64(who_has(a, 4, 0x90), 0xc);
	rte_wr(&io, 13, RTE_LOGICAL | dest(0x12) | 0x91);
	ioapic_set_irq(&io, 13, true);
	CHECK_EQ_U64(who_has(a, 4, 0x91), 0x2);
	/* x2APIC-mode APICs: 0xff is still broadcast; physical IDs match */
	for (unsigned i = 2; i < 4; i++)
		CHECK(lapic_set_base_msr(&a[i], LAPIC_DEFAULT_BASE | LAPIC_BASE_EN | LAPIC_BASE_EXTD, PHYS));
	rte_wr(&io, 14, dest(0xff) | 0x92);
	ioapic_set_irq(&io, 14, true);
	CHECK_EQ_U64(who_has(a, 4, 0x92), 0xf);
	rte_wr(&io, 15, dest(3) | 0x93);
	ioapic_set_irq(&io, 15, true);
	CHECK_EQ_U64(who_has(a, 4, 0x93), 0x8);
	/* a hardware-disabled APIC gets nothing, broadcast included */
	lapic_set_base_msr(&a[0], LAPIC_DEFAULT_BASE, PHYS);
	rte_wr(&io, 16, dest(0xff) | 0x94);
	ioapic_set_irq(&io, 16, true);
	CHECK_EQ_U64(who_has(a, 4, 0x94), 0xe);
}

TEST(ioapic_lowest_priority)
{
	struct ioapic io;
	struct lapic_bus bus;
	struct lapic a[4];
	static const uint32_t tpr[4] = { 0x40, 0x20, 0x20, 0x10 };
	uint64_t lowest = RTE_LOGICAL | mode(LAPIC_DM_LOWEST);

	setup(&io, &bus, a, 4);
	for (unsigned i = 0; i < 4; i++)
		lapic_wr(&a[i], LAPIC_REG_TPR, tpr[i]);
	rte_wr(&io, 1, lowest | dest(0x0f) | 0xa0);
	ioapic_set_irq(&io, 1, true);
	CHECK_EQ_U64(who_has(a, 4, 0xa0), 0x8); /* TPR 0x10 */
	rte_wr(&io, 2, lowest | dest(0x07) | 0xa1);
	ioapic_set_irq(&io, 2, true);
	CHECK_EQ_U64(who_has(a, 4, 0xa1), 0x2); /* 1 and 2 tie: the lower ID */
	lapic_wr(&a[2], LAPIC_REG_SVR, 0xff);   /* software-disabled: not a candidate */
	rte_wr(&io, 3, lowest | dest(0x06) | 0xa2);
	ioapic_set_irq(&io, 3, true);
	CHECK_EQ_U64(who_has(a, 4, 0xa2), 0x2);
	/* physical broadcast, lowest priority: 3 and 1 hold class 0xa now */
	rte_wr(&io, 4, mode(LAPIC_DM_LOWEST) | dest(0xff) | 0x30);
	ioapic_set_irq(&io, 4, true);
	CHECK_EQ_U64(who_has(a, 4, 0x30), 0x1); /* APR: 0 0x40, 1 0xa0, 3 0xa0 */
	/* level-triggered lowest priority: remote IRR and TMR as for fixed */
	rte_wr(&io, 5, RTE_LEVEL | lowest | dest(0x08) | 0xb0);
	ioapic_set_irq(&io, 5, true);
	CHECK(irr(&a[3], 0xb0) && tmr(&a[3], 0xb0));
	CHECK(rte_rd(&io, 5) & RTE_REMOTE_IRR);
}

TEST(ioapic_other_modes)
{
	struct ioapic io;
	struct lapic_bus bus;
	struct lapic a[2];

	setup(&io, &bus, a, 2);
	/* NMI: always edge, even programmed level (no remote IRR) */
	rte_wr(&io, 1, RTE_LEVEL | mode(LAPIC_DM_NMI) | dest(1));
	ioapic_set_irq(&io, 1, true);
	CHECK(!a[0].nmi_pending && a[1].nmi_pending);
	CHECK(!(rte_rd(&io, 1) & RTE_REMOTE_IRR));
	a[1].nmi_pending = false;
	ioapic_set_irq(&io, 1, true);
	CHECK(!a[1].nmi_pending);
	/* INIT to everyone */
	rte_wr(&io, 2, mode(LAPIC_DM_INIT) | dest(0xff));
	ioapic_set_irq(&io, 2, true);
	CHECK(a[0].init_pending && a[1].init_pending);
	/* ExtINT and SMI: not modelled, nothing is sent */
	rte_wr(&io, 3, mode(LAPIC_DM_EXTINT) | dest(0xff));
	rte_wr(&io, 4, mode(LAPIC_DM_SMI) | dest(0xff));
	ioapic_set_irq(&io, 3, true);
	ioapic_set_irq(&io, 4, true);
	CHECK_EQ_U64(io.delivered[3] + io.delivered[4], 0);
	for (unsigned i = 0; i < 8; i++)
		CHECK_EQ_U64(a[0].irr[i] | a[1].irr[i], 0);
	/* a fixed vector below 16 is the receiver's error */
	rte_wr(&io, 6, dest(0) | 0x05);
	ioapic_set_irq(&io, 6, true);
	CHECK_EQ_U64(a[0].esr_pending, LAPIC_ESR_RECV_ILLEGAL_VECTOR);
	/* no bus: counted, remote IRR set, nothing else */
	ioapic_init(&io, NULL);
	rte_wr(&io, 0, RTE_LEVEL | 0x40);
	ioapic_set_irq(&io, 0, true);
	CHECK_EQ_U64(io.delivered[0], 1);
	CHECK(rte_rd(&io, 0) & RTE_REMOTE_IRR);
}

/* ---- the LAPIC's hook (dev/lapic.c eoi()) ---- */

static unsigned hook_calls;
static uint8_t hook_vector;
static void *hook_ctx;

static void hook(void *ctx, uint8_t vector)
{
	hook_calls++;
	hook_vector = vector;
	hook_ctx = ctx;
}

TEST(ioapic_lapic_level_eoi_hook)
{
	struct lapic_bus bus = { 0 };
	struct lapic a;
	int ctx;

	lapic_init(&a, &bus, 0, true, 2000000);
	lapic_wr(&a, LAPIC_REG_SVR, 0x1ff);
	bus.level_eoi = hook;
	bus.level_eoi_ctx = &ctx;
	hook_calls = 0;
	lapic_set_irq(&a, 0x61, true);  /* level */
	lapic_set_irq(&a, 0x62, false); /* edge */
	lapic_ack_irq(&a, 0x62);
	lapic_wr(&a, LAPIC_REG_EOI, 0);
	CHECK_EQ_U64(hook_calls, 0); /* an edge EOI is not broadcast */
	lapic_ack_irq(&a, 0x61);
	lapic_wr(&a, LAPIC_REG_EOI, 0);
	CHECK_EQ_U64(hook_calls, 1);
	CHECK_EQ_U64(hook_vector, 0x61);
	CHECK(hook_ctx == &ctx);
	lapic_wr(&a, LAPIC_REG_EOI, 0); /* nothing in service: nothing */
	CHECK_EQ_U64(hook_calls, 1);
	/* in x2APIC mode too (EOI MSR 0x80b) */
	CHECK(lapic_set_base_msr(&a, LAPIC_DEFAULT_BASE | LAPIC_BASE_EN | LAPIC_BASE_EXTD, PHYS));
	lapic_set_irq(&a, 0x63, true);
	lapic_ack_irq(&a, 0x63);
	CHECK(lapic_msr_write(&a, 0x80b, 0, 0));
	CHECK_EQ_U64(hook_calls, 2);
	CHECK_EQ_U64(hook_vector, 0x63);
	/* no hook: a level EOI still works */
	bus.level_eoi = NULL;
	lapic_set_irq(&a, 0x64, true);
	lapic_ack_irq(&a, 0x64);
	CHECK(lapic_msr_write(&a, 0x80b, 0, 0));
	CHECK_EQ_U64(hook_calls, 2);
	CHECK(!(a.isr[0x64 / 32] >> (0x64 % 32) & 1));
	CHECK(tmr(&a, 0x64)); /* until the vector is accepted again (SDM 10.8.4) */
}

/* ---- the state record (ioapic_record) ---- */

/* ID 5; pin 1 edge with its line held high; pin 4 level, sent (remote IRR)
 * and still asserted; pin 9 level, masked and asserted; pin 12 NMI with the
 * trigger bit set; IOREGSEL left on entry 4's high half. */
static void busy_ioapic(struct ioapic *io)
{
	reg_wr(io, IOAPIC_REG_ID, 5u << 24);
	rte_wr(io, 1, dest(0) | 0x31);
	ioapic_set_irq(io, 1, true);
	rte_wr(io, 4, dest(1) | RTE_LEVEL | 0x34);
	ioapic_set_irq(io, 4, true);
	rte_wr(io, 9, dest(0) | RTE_LEVEL | RTE_MASKED | 0x39);
	ioapic_set_irq(io, 9, true);
	rte_wr(io, 12, dest(1) | mode(LAPIC_DM_NMI) | RTE_LEVEL);
	ioapic_mmio_write(io, IOAPIC_IOREGSEL, 4, IOAPIC_REG_REDTBL + 2 * 4 + 1);
}

/* Both I/O APICs (sending to APIC sets la and lb) read the same and send the
 * same messages after the same inputs: lines, EOIs, unmasking. */
static void check_same_future(struct ioapic *a, struct lapic *la, struct ioapic *b, struct lapic *lb)
{
	uint64_t da[IOAPIC_PINS], db[IOAPIC_PINS];
	struct ioapic *both[2] = { a, b };

	memcpy(da, a->delivered, sizeof da);
	memcpy(db, b->delivered, sizeof db);
	CHECK_EQ_U64(ioapic_mmio_read(a, IOAPIC_IOREGSEL, 4), ioapic_mmio_read(b, IOAPIC_IOREGSEL, 4));
	CHECK_EQ_U64(ioapic_mmio_read(a, IOAPIC_IOWIN, 4), ioapic_mmio_read(b, IOAPIC_IOWIN, 4));
	for (unsigned reg = 0; reg < 0x40; reg++)
		CHECK_EQ_U64(reg_rd(a, (uint8_t)reg) + 0x100000000ull * reg, reg_rd(b, (uint8_t)reg) + 0x100000000ull * reg);
	for (unsigned k = 0; k < 8; k++) {
		for (unsigned i = 0; i < 2; i++) {
			struct ioapic *io = both[i];

			switch (k) {
			case 0: ioapic_set_irq(io, 1, true); break; /* held: no edge */
			case 1: ioapic_set_irq(io, 1, false); ioapic_set_irq(io, 1, true); break;
			case 2: ioapic_eoi(io, 0x34); break; /* still asserted: again */
			case 3: rte_wr(io, 9, dest(0) | RTE_LEVEL | 0x39); break; /* unmasked */
			case 4: ioapic_set_irq(io, 4, false); ioapic_eoi(io, 0x34); break;
			case 5: ioapic_set_irq(io, 12, true); break;
			case 6: ioapic_mmio_write(io, IOAPIC_EOI, 4, 0x39); break;
			default: ioapic_set_irq(io, 4, true); break;
			}
		}
		for (unsigned pin = 0; pin < IOAPIC_PINS; pin++)
			CHECK_EQ_U64(a->delivered[pin] - da[pin] + 0x100 * k, b->delivered[pin] - db[pin] + 0x100 * k);
		for (unsigned i = 0; i < 2; i++) {
			CHECK(memcmp(la[i].irr, lb[i].irr, sizeof la[i].irr) == 0);
			CHECK(memcmp(la[i].tmr, lb[i].tmr, sizeof la[i].tmr) == 0);
			CHECK(la[i].nmi_pending == lb[i].nmi_pending);
		}
	}
	CHECK(a->redir[4] == b->redir[4] && a->line == b->line);
}

TEST(ioapic_record_round_trip)
{
	struct ioapic a, b;
	struct lapic_bus bus_a, bus_b;
	struct lapic la[2], lb[2];

	setup(&a, &bus_a, la, 2);
	busy_ioapic(&a);
	CHECK_EQ_U64(a.delivered[4], 1);
	setup(&b, &bus_b, lb, 2);
	for (unsigned i = 0; i < 2; i++) { /* the APICs' state goes with them */
		memcpy(lb[i].irr, la[i].irr, sizeof la[i].irr);
		memcpy(lb[i].tmr, la[i].tmr, sizeof la[i].tmr);
	}
	record_copy(&ioapic_record, &a, &b);
	CHECK(b.bus == &bus_b && b.delivered[4] == 0);
	check_same_future(&a, la, &b, lb);
	CHECK_EQ_U64(rte_rd(&b, 12), dest(1) | mode(LAPIC_DM_NMI) | RTE_LEVEL);
	CHECK_EQ_U64(reg_rd(&b, IOAPIC_REG_ID), 5u << 24);
	CHECK_EQ_U64(b.delivered[4], 2); /* re-sent after its EOI, and raised again */
	CHECK_EQ_U64(b.delivered[1], 1); /* only the new edge */
	CHECK(lb[1].nmi_pending && irr(&lb[0], 0x39));
}

TEST(ioapic_record_check_accepts)
{
	struct ioapic io;
	struct lapic_bus bus;
	struct lapic la[2];

	setup(&io, &bus, la, 2);
	CHECK(record_saved_ok(&ioapic_record, &io));
	busy_ioapic(&io);
	CHECK(record_saved_ok(&ioapic_record, &io));
	/* remote IRR stays when the entry turns NMI; asserted, masked, in service */
	rte_wr(&io, 4, dest(1) | RTE_LEVEL | mode(LAPIC_DM_NMI) | 0x34);
	rte_wr(&io, 9, dest(0) | RTE_LEVEL | 0x39);
	rte_wr(&io, 9, dest(0) | RTE_LEVEL | RTE_MASKED | 0x39);
	CHECK(io.redir[4] & io.redir[9] & RTE_REMOTE_IRR);
	CHECK(record_saved_ok(&ioapic_record, &io));
	/* every bit a guest can write, reserved ones included */
	rte_wr(&io, 20, ~0ull);
	reg_wr(&io, IOAPIC_REG_ID, ~0u);
	ioapic_mmio_write(&io, IOAPIC_IOREGSEL, 1, 0xff);
	CHECK(record_saved_ok(&ioapic_record, &io));
}

TEST(ioapic_record_check_refuses)
{
	static const struct {
		unsigned field;
		const char *reason;
	} cases[] = {
		{ 0, "id 0x10 is wider than 4 bits" },
		{ 1, "line 0x1000212 asserts pins above 23" },
		{ 2, "redir[3] 0x11000 sets the delivery status" },
		{ 3, "redir[1] 0x4031 sets remote IRR in an edge entry" },
		{ 4, "redir[9] 0x8039: pin asserted and unmasked, but not sent" },
		{ 5, "redir[4] 0x100000000008034: pin asserted and unmasked, but not sent" },
	};
	struct ioapic io, z;
	struct lapic_bus bus;
	struct lapic la[2];
	char err[160];

	setup(&io, &bus, la, 2);
	busy_ioapic(&io);
	for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		record_loaded(&ioapic_record, &io, &z);
		switch (cases[i].field) {
		case 0: z.id = 0x10; break;
		case 1: z.line |= 1u << 24; break;
		case 2: z.redir[3] |= IOAPIC_RTE_DELIVS; break;
		case 3: z.redir[1] = 0x31 | RTE_REMOTE_IRR; break;
		case 4: z.redir[9] &= ~RTE_MASKED; break;
		default: z.redir[4] &= ~RTE_REMOTE_IRR; break;
		}
		err[0] = 0;
		CHECK(!ioapic_record.check(&z, NULL, err, sizeof err));
		if (!strstr(err, cases[i].reason)) {
			fprintf(stderr, "  case %u: \"%s\", not \"%s\"\n", i, err, cases[i].reason);
			CHECK(!"the refusal names the field");
		}
	}
}
