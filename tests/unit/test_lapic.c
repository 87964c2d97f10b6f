/* The local APIC model (dev/lapic.c), against the SDM vol. 3A chapter 10. */
#include "check.h"
#include "tests/rng.h"
#include "dev/lapic.h"
#include <stdint.h>
#include <string.h>

#define EN LAPIC_BASE_EN
#define EXTD LAPIC_BASE_EXTD
#define BSP LAPIC_BASE_BSP
#define PHYS 46

static uint32_t rd(struct lapic *a, unsigned off)
{
	return (uint32_t)lapic_mmio_read(a, off, 4, 0);
}

static void wr(struct lapic *a, unsigned off, uint32_t val)
{
	lapic_mmio_write(a, off, 4, val, 0);
}

/* An APIC alone (no bus), software-enabled: the BSP's or an AP's. */
static void setup_cpu(struct lapic *a, uint32_t id, bool bsp)
{
	lapic_init(a, NULL, id, bsp, 2000000);
	wr(a, LAPIC_REG_SVR, 0x1ff);
}

static void setup(struct lapic *a, uint32_t id)
{
	setup_cpu(a, id, true);
}

static void setup_x2apic(struct lapic *a, uint32_t id)
{
	setup(a, id);
	lapic_set_base_msr(a, LAPIC_DEFAULT_BASE | EN | EXTD, PHYS);
}

static bool irr(const struct lapic *a, unsigned v)
{
	return (a->irr[v / 32] >> (v % 32)) & 1;
}

static bool isr(const struct lapic *a, unsigned v)
{
	return (a->isr[v / 32] >> (v % 32)) & 1;
}

static bool tmr(const struct lapic *a, unsigned v)
{
	return (a->tmr[v / 32] >> (v % 32)) & 1;
}

static unsigned irr_count(const struct lapic *a)
{
	unsigned n = 0;

	for (int i = 0; i < 8; i++)
		n += __builtin_popcount(a->irr[i]);
	return n;
}

/* The errors logged so far: ESR reads what its last write latched. */
static uint32_t esr(struct lapic *a)
{
	uint64_t v = 0;

	if (lapic_x2apic_mode(a)) {
		lapic_msr_write(a, 0x828, 0, 0);
		lapic_msr_read(a, 0x828, &v, 0);
		return (uint32_t)v;
	}
	wr(a, LAPIC_REG_ESR, 0);
	return rd(a, LAPIC_REG_ESR);
}

/* ---- reset ---- */

TEST(lapic_reset_values)
{
	struct lapic_bus bus = { 0 };
	struct lapic a, b;
	uint64_t base = 0;

	lapic_init(&a, &bus, 3, true, 2000000);
	lapic_init(&b, &bus, 4, false, 2000000);
	CHECK_EQ_U64(bus.count, 2);
	CHECK(bus.apic[0] == &a && bus.apic[1] == &b);
	CHECK_EQ_U64(lapic_base_msr(&a), 0xfee00900);
	CHECK_EQ_U64(lapic_base_msr(&b), 0xfee00800);
	CHECK(lapic_hw_enabled(&a) && !lapic_x2apic_mode(&a) && !lapic_sw_enabled(&a));
	CHECK(lapic_mmio_page(&a, &base));
	CHECK_EQ_U64(base, LAPIC_DEFAULT_BASE);

	static const struct {
		unsigned off;
		uint32_t val;
	} regs[] = {
		{ 0x20, 3u << 24 }, { 0x30, 0x00050014 }, { 0x80, 0 }, { 0x90, 0 }, { 0xa0, 0 },
		{ 0xb0, 0 }, { 0xc0, 0 }, { 0xd0, 0 }, { 0xe0, 0xffffffff }, { 0xf0, 0xff },
		{ 0x280, 0 }, { 0x300, 0 }, { 0x310, 0 }, { 0x320, 0x10000 }, { 0x330, 0x10000 },
		{ 0x340, 0x10000 }, { 0x350, 0x10000 }, { 0x360, 0x10000 }, { 0x370, 0x10000 },
		{ 0x380, 0 }, { 0x390, 0 }, { 0x3e0, 0 },
	};
	for (unsigned i = 0; i < sizeof regs / sizeof regs[0]; i++)
		CHECK_EQ_U64(rd(&a, regs[i].off), regs[i].val);
	for (unsigned off = 0x100; off < 0x280; off += 0x10)
		CHECK_EQ_U64(rd(&a, off), 0);
	CHECK(!a.nmi_pending && !a.init_pending && !a.sipi_pending);
	CHECK_EQ_U64(lapic_timer_next(&a), 0);
	CHECK_EQ_U64(lapic_tsc_deadline_read(&a), 0);
	CHECK_EQ_U64(lapic_pending_irq(&a), (uint64_t)-1);
}

/* ---- IA32_APIC_BASE ---- */

enum { ST_DISABLED, ST_XAPIC, ST_X2APIC };

static const uint64_t state_bits[] = { 0, EN, EN | EXTD };

static void goto_state(struct lapic *a, int st)
{
	lapic_init(a, NULL, 1, true, 2000000);
	if (st == ST_DISABLED)
		lapic_set_base_msr(a, LAPIC_DEFAULT_BASE, PHYS);
	if (st == ST_X2APIC)
		lapic_set_base_msr(a, LAPIC_DEFAULT_BASE | EN | EXTD, PHYS);
}

TEST(lapic_base_transitions)
{
	/* Figure 10-27: from each state, write each EN/EXTD pair. */
	static const struct {
		int from;
		uint64_t bits;
		bool ok;
	} t[] = {
		{ ST_DISABLED, 0, true },        { ST_DISABLED, EN, true },
		{ ST_DISABLED, EXTD, false },    { ST_DISABLED, EN | EXTD, false },
		{ ST_XAPIC, 0, true },           { ST_XAPIC, EN, true },
		{ ST_XAPIC, EXTD, false },       { ST_XAPIC, EN | EXTD, true },
		{ ST_X2APIC, 0, true },          { ST_X2APIC, EN, false },
		{ ST_X2APIC, EXTD, false },      { ST_X2APIC, EN | EXTD, true },
	};
	for (unsigned i = 0; i < sizeof t / sizeof t[0]; i++) {
		struct lapic a;
		uint64_t before;

		goto_state(&a, t[i].from);
		before = lapic_base_msr(&a);
		CHECK_EQ_U64((before & (EN | EXTD)), state_bits[t[i].from]);
		CHECK_EQ_U64(lapic_set_base_msr(&a, LAPIC_DEFAULT_BASE | t[i].bits | BSP, PHYS), t[i].ok);
		if (t[i].ok)
			CHECK_EQ_U64(lapic_base_msr(&a), LAPIC_DEFAULT_BASE | t[i].bits | BSP);
		else
			CHECK_EQ_U64(lapic_base_msr(&a), before);
		CHECK_EQ_U64(lapic_x2apic_mode(&a), (lapic_base_msr(&a) & (EN | EXTD)) == (EN | EXTD));
	}
}

TEST(lapic_base_reserved_and_bsp)
{
	struct lapic a;

	for (unsigned bit = 0; bit < 64; bit++) {
		bool reserved = bit < 8 || bit == 9 || bit >= PHYS;

		goto_state(&a, ST_XAPIC);
		CHECK_EQ_U64(lapic_set_base_msr(&a, LAPIC_DEFAULT_BASE | EN | (1ull << bit), PHYS),
			     !reserved || bit == 11);
	}
	/* BSP is read-only both ways */
	goto_state(&a, ST_XAPIC);
	CHECK(lapic_set_base_msr(&a, LAPIC_DEFAULT_BASE | EN, PHYS));
	CHECK_EQ_U64(lapic_base_msr(&a), LAPIC_DEFAULT_BASE | EN | BSP);
	lapic_init(&a, NULL, 1, false, 2000000);
	CHECK(lapic_set_base_msr(&a, LAPIC_DEFAULT_BASE | EN | BSP, PHYS));
	CHECK_EQ_U64(lapic_base_msr(&a), LAPIC_DEFAULT_BASE | EN);
}

TEST(lapic_base_relocation)
{
	struct lapic a;
	uint64_t base = 0;

	setup(&a, 2);
	wr(&a, LAPIC_REG_TPR, 0x30);
	CHECK(lapic_set_base_msr(&a, 0x123456000ull | EN, 36));
	CHECK(lapic_mmio_page(&a, &base));
	CHECK_EQ_U64(base, 0x123456000ull);
	CHECK_EQ_U64(rd(&a, LAPIC_REG_TPR), 0x30); /* relocation keeps the state */
	CHECK(!lapic_set_base_msr(&a, (1ull << 36) | EN, 36));
	CHECK(lapic_set_base_msr(&a, (1ull << 35) | EN, 36));
	CHECK(lapic_mmio_page(&a, &base));
	CHECK_EQ_U64(base, 1ull << 35);
	/* no MMIO page in x2APIC mode or when disabled */
	CHECK(lapic_set_base_msr(&a, LAPIC_DEFAULT_BASE | EN | EXTD, 36));
	CHECK(!lapic_mmio_page(&a, &base));
	CHECK_EQ_U64(lapic_mmio_read(&a, LAPIC_REG_VERSION, 4, 0), 0);
	CHECK(lapic_set_base_msr(&a, LAPIC_DEFAULT_BASE, 36));
	CHECK(!lapic_mmio_page(&a, &base));
	CHECK_EQ_U64(lapic_mmio_read(&a, LAPIC_REG_VERSION, 4, 0), 0);
}

TEST(lapic_disable_resets)
{
	struct lapic a;

	setup(&a, 2);
	wr(&a, LAPIC_REG_ID, 0x07000000);
	wr(&a, LAPIC_REG_TPR, 0x20);
	wr(&a, LAPIC_REG_LDR, 0x01000000);
	wr(&a, LAPIC_REG_LVT_LINT0, 0x30);
	wr(&a, LAPIC_REG_TIMER_INITIAL, 1000);
	lapic_set_irq(&a, 0x40, true);
	CHECK(lapic_timer_next(&a) != 0);
	CHECK(lapic_set_base_msr(&a, LAPIC_DEFAULT_BASE | BSP, PHYS));
	CHECK(!lapic_hw_enabled(&a));
	CHECK_EQ_U64(lapic_pending_irq(&a), (uint64_t)-1);
	CHECK_EQ_U64(lapic_timer_next(&a), 0);
	lapic_set_irq(&a, 0x50, false); /* a disabled APIC takes nothing */
	CHECK(lapic_set_base_msr(&a, LAPIC_DEFAULT_BASE | EN, PHYS));
	CHECK_EQ_U64(rd(&a, LAPIC_REG_ID), 2u << 24);
	CHECK_EQ_U64(rd(&a, LAPIC_REG_TPR), 0);
	CHECK_EQ_U64(rd(&a, LAPIC_REG_LDR), 0);
	CHECK_EQ_U64(rd(&a, LAPIC_REG_SVR), 0xff);
	CHECK_EQ_U64(rd(&a, LAPIC_REG_LVT_LINT0), 0x10000);
	CHECK_EQ_U64(rd(&a, LAPIC_REG_TIMER_INITIAL), 0);
	CHECK_EQ_U64(rd(&a, LAPIC_REG_IRR + 0x20), 0);
	CHECK_EQ_U64(rd(&a, LAPIC_REG_TMR + 0x20), 0);
}

TEST(lapic_x2apic_enter)
{
	static const struct {
		uint32_t id, ldr;
	} t[] = {
		{ 0, 0x00000001 }, { 1, 0x00000002 }, { 0xf, 0x00008000 },
		{ 0x10, 0x00010001 }, { 0x23, 0x00020008 }, { 0x3f, 0x00038000 },
	};
	for (unsigned i = 0; i < sizeof t / sizeof t[0]; i++) {
		struct lapic a;
		uint64_t v = 0;

		setup(&a, t[i].id);
		wr(&a, LAPIC_REG_TPR, 0x40);
		wr(&a, LAPIC_REG_ID, 0x09000000); /* the xAPIC ID software set is not kept */
		CHECK(lapic_set_base_msr(&a, LAPIC_DEFAULT_BASE | EN | EXTD, PHYS));
		CHECK(lapic_msr_read(&a, 0x802, &v, 0));
		CHECK_EQ_U64(v, t[i].id);
		CHECK_EQ_U64(lapic_id(&a), t[i].id);
		CHECK(lapic_msr_read(&a, 0x80d, &v, 0));
		CHECK_EQ_U64(v, t[i].ldr);
		CHECK(lapic_msr_read(&a, 0x808, &v, 0));
		CHECK_EQ_U64(v, 0x40); /* the rest of the state carries over */
		CHECK(lapic_msr_read(&a, 0x80f, &v, 0));
		CHECK_EQ_U64(v, 0x1ff);
		CHECK(lapic_msr_read(&a, 0x803, &v, 0));
		CHECK_EQ_U64(v, LAPIC_VERSION);
	}
}

/* ---- register bits ---- */

TEST(lapic_xapic_writable_bits)
{
	/* Write all ones (then all zeros) to each register of a fresh,
	 * software-enabled APIC and read back what the SDM's figures allow. */
	static const struct {
		unsigned off;
		uint32_t ones, zeros;
		uint32_t esr; /* errors the writes log */
	} t[] = {
		{ 0x20, 0xff000000, 0, 0 },          /* ID: bits 31:24 */
		{ 0x30, 0x00050014, 0x00050014, 0 }, /* version: read-only */
		{ 0x80, 0xff, 0, 0 },                /* TPR */
		{ 0x90, 0, 0, 0 },                   /* APR: read-only */
		{ 0xa0, 0, 0, 0 },                   /* PPR: read-only */
		{ 0xb0, 0, 0, 0 },                   /* EOI: write-only */
		{ 0xc0, 0, 0, 0 },                   /* RRD */
		{ 0xd0, 0xff000000, 0, 0 },          /* LDR: bits 31:24 */
		{ 0xe0, 0xffffffff, 0x0fffffff, 0 }, /* DFR: model in 31:28, the rest ones */
		{ 0xf0, 0x3ff, 0, 0 },               /* SVR: no EOI-broadcast suppression */
		{ 0x100, 0, 0, 0 }, { 0x170, 0, 0, 0 }, { 0x180, 0, 0, 0 }, { 0x1f0, 0, 0, 0 },
		{ 0x200, 0, 0, 0 }, { 0x270, 0, 0, 0 },
		{ 0x280, 0, 0, 0 },                  /* ESR: latches errors, not the value */
		{ 0x300, 0x000ccfff, 0, LAPIC_ESR_SEND_ILLEGAL_VECTOR }, /* ICR low: sends; status idle */
		{ 0x310, 0xff000000, 0, 0 },         /* ICR high */
		{ 0x320, 0x000700ff, 0, 0 },         /* LVT timer: vector, mask, mode */
		{ 0x330, 0x000107ff, 0, 0 },         /* thermal: + delivery mode */
		{ 0x340, 0x000107ff, 0, 0 },         /* perf */
		{ 0x350, 0x0001a7ff, 0, 0 },         /* LINT0: + polarity, trigger */
		{ 0x360, 0x0001a7ff, 0, 0 },         /* LINT1 */
		{ 0x370, 0x000100ff, 0, 0 },         /* error */
		{ 0x380, 0xffffffff, 0, 0 },         /* initial count */
		{ 0x390, 0, 0, 0 },                  /* current count: read-only */
		{ 0x3e0, 0xb, 0, 0 },                /* divide: bits 3, 1, 0 */
	};
	for (unsigned i = 0; i < sizeof t / sizeof t[0]; i++) {
		struct lapic a;

		setup(&a, 1);
		wr(&a, t[i].off, 0xffffffff);
		CHECK_EQ_U64(rd(&a, t[i].off) | (uint64_t)t[i].off << 32,
			     t[i].ones | (uint64_t)t[i].off << 32);
		wr(&a, t[i].off, 0);
		CHECK_EQ_U64(rd(&a, t[i].off) | (uint64_t)t[i].off << 32,
			     t[i].zeros | (uint64_t)t[i].off << 32);
		CHECK_EQ_U64(esr(&a), t[i].esr); /* none of these is an illegal address */
	}
}

TEST(lapic_reserved_offsets)
{
	static const unsigned reserved[] = { 0x00, 0x10, 0x40, 0x50, 0x60, 0x70, 0x290, 0x2e0,
					     0x2f0, 0x3a0, 0x3d0, 0x3f0, 0x400, 0xff0 };

	for (unsigned i = 0; i < sizeof reserved / sizeof reserved[0]; i++) {
		struct lapic a;

		setup(&a, 1);
		CHECK_EQ_U64(rd(&a, reserved[i]), 0);
		CHECK_EQ_U64(esr(&a), LAPIC_ESR_ILLEGAL_REGISTER);
		wr(&a, reserved[i], 0x12345678);
		CHECK_EQ_U64(esr(&a), LAPIC_ESR_ILLEGAL_REGISTER);
		CHECK_EQ_U64(esr(&a), 0); /* the latch clears */
	}
}

/* x2APIC: writable bits read back; each reserved bit faults. */
TEST(lapic_x2apic_writable_bits)
{
	static const struct {
		uint32_t msr;
		uint32_t valid; /* every settable bit, as a valid value */
		uint32_t defined; /* bits that are not reserved */
	} t[] = {
		{ 0x808, 0xff, 0xff },
		{ 0x80f, 0x3ff, 0x3ff },
		{ 0x832, 0x000300ff, 0x000710ff },
		{ 0x833, 0x000107ff, 0x000117ff },
		{ 0x834, 0x000107ff, 0x000117ff },
		{ 0x835, 0x0001a7ff, 0x0001f7ff },
		{ 0x836, 0x0001a7ff, 0x0001f7ff },
		{ 0x837, 0x000100ff, 0x000110ff },
		{ 0x838, 0xffffffff, 0xffffffff },
		{ 0x83e, 0xb, 0xb },
	};
	for (unsigned i = 0; i < sizeof t / sizeof t[0]; i++) {
		struct lapic a;
		uint64_t v = 0;

		setup_x2apic(&a, 1);
		CHECK(lapic_msr_write(&a, t[i].msr, t[i].valid, 0));
		CHECK(lapic_msr_read(&a, t[i].msr, &v, 0));
		CHECK_EQ_U64(v | (uint64_t)t[i].msr << 32, t[i].valid | (uint64_t)t[i].msr << 32);
		for (unsigned bit = 0; bit < 64; bit++) {
			uint64_t val = 1ull << bit;

			if (bit < 32 && (t[i].defined & val))
				continue;
			if (lapic_msr_write(&a, t[i].msr, val, 0))
				CHECK_EQ_U64(t[i].msr * 100 + bit, 0); /* names the failing bit */
		}
	}
	/* the reserved timer mode 11b faults */
	struct lapic a;

	setup_x2apic(&a, 1);
	CHECK(!lapic_msr_write(&a, 0x832, 0x00060000, 0));
}

TEST(lapic_x2apic_msr_gp)
{
	struct lapic a;
	uint64_t v;
	/* absent in x2APIC mode: both directions fault */
	static const uint32_t absent[] = { 0x800, 0x801, 0x804, 0x805, 0x806, 0x807, 0x809, 0x80c,
					   0x80e, 0x829, 0x82e, 0x82f, 0x831, 0x83a, 0x83d, 0x840,
					   0x8ff, 0x7ff, 0x900 };
	static const uint32_t read_only[] = { 0x802, 0x803, 0x80a, 0x80d, 0x810, 0x817, 0x818,
					      0x81f, 0x820, 0x827, 0x839 };

	setup_x2apic(&a, 1);
	for (unsigned i = 0; i < sizeof absent / sizeof absent[0]; i++) {
		CHECK(!lapic_msr_read(&a, absent[i], &v, 0));
		CHECK(!lapic_msr_write(&a, absent[i], 0, 0));
	}
	for (unsigned i = 0; i < sizeof read_only / sizeof read_only[0]; i++) {
		CHECK(lapic_msr_read(&a, read_only[i], &v, 0));
		CHECK(!lapic_msr_write(&a, read_only[i], 0, 0));
	}
	/* write-only */
	CHECK(!lapic_msr_read(&a, 0x80b, &v, 0));
	CHECK(!lapic_msr_read(&a, 0x83f, &v, 0));
	/* EOI and ESR: zero only */
	CHECK(lapic_msr_write(&a, 0x80b, 0, 0));
	CHECK(!lapic_msr_write(&a, 0x80b, 1, 0));
	CHECK(lapic_msr_write(&a, 0x828, 0, 0));
	CHECK(!lapic_msr_write(&a, 0x828, 0x80, 0));
	/* bits 63:32 of 32-bit registers */
	CHECK(!lapic_msr_write(&a, 0x808, 1ull << 32, 0));
	CHECK(!lapic_msr_write(&a, 0x838, 1ull << 63, 0));
	/* ICR: 31:20, 17:16 and 13 reserved; 12 (delivery status) ignored */
	CHECK(!lapic_msr_write(&a, 0x830, 1u << 13, 0));
	CHECK(!lapic_msr_write(&a, 0x830, 1u << 16, 0));
	CHECK(!lapic_msr_write(&a, 0x830, 1u << 17, 0));
	CHECK(!lapic_msr_write(&a, 0x830, 1u << 20, 0));
	CHECK(!lapic_msr_write(&a, 0x830, 1u << 31, 0));
	CHECK(lapic_msr_write(&a, 0x830, (5ull << 32) | (1u << 12) | 0x4400, 0)); /* NMI to ID 5 */
	CHECK(lapic_msr_read(&a, 0x830, &v, 0));
	CHECK_EQ_U64(v, (5ull << 32) | 0x4400);
	/* SELF IPI: bits 31:8 reserved */
	CHECK(!lapic_msr_write(&a, 0x83f, 0x100, 0));

	/* no MSR works outside x2APIC mode */
	setup(&a, 1);
	CHECK(!lapic_msr_read(&a, 0x802, &v, 0));
	CHECK(!lapic_msr_read(&a, 0x808, &v, 0));
	CHECK(!lapic_msr_write(&a, 0x808, 0, 0));
	CHECK(!lapic_msr_write(&a, 0x83f, 0x40, 0));
	lapic_set_base_msr(&a, LAPIC_DEFAULT_BASE, PHYS);
	CHECK(!lapic_msr_read(&a, 0x803, &v, 0));
}

/* ---- priorities ---- */

TEST(lapic_ppr_table)
{
	static const struct {
		uint32_t tpr;
		int isr;
		uint32_t ppr;
	} t[] = {
		{ 0x00, -1, 0x00 }, { 0x35, -1, 0x35 }, { 0x35, 0x31, 0x35 }, { 0x35, 0x3f, 0x35 },
		{ 0x35, 0x41, 0x40 }, { 0x00, 0xfe, 0xf0 }, { 0xff, 0xfe, 0xff }, { 0x4f, 0x50, 0x50 },
	};
	for (unsigned i = 0; i < sizeof t / sizeof t[0]; i++) {
		struct lapic a;

		setup(&a, 0);
		wr(&a, LAPIC_REG_TPR, t[i].tpr);
		if (t[i].isr >= 0) {
			lapic_set_irq(&a, (uint8_t)t[i].isr, false);
			lapic_ack_irq(&a, (uint8_t)t[i].isr);
		}
		CHECK_EQ_U64(rd(&a, LAPIC_REG_PPR), t[i].ppr);
		CHECK_EQ_U64(lapic_ppr(&a), t[i].ppr);
	}
}

TEST(lapic_pending_order_and_nesting)
{
	struct lapic a;

	setup(&a, 0);
	CHECK_EQ_U64(lapic_pending_irq(&a), (uint64_t)-1);
	lapic_set_irq(&a, 0x31, false);
	lapic_set_irq(&a, 0x45, false);
	lapic_set_irq(&a, 0x80, false);
	CHECK_EQ_U64(lapic_pending_irq(&a), 0x80); /* highest first */
	wr(&a, LAPIC_REG_TPR, 0x80);
	CHECK_EQ_U64(lapic_pending_irq(&a), (uint64_t)-1); /* class 8 not above TPR class 8 */
	wr(&a, LAPIC_REG_TPR, 0x7f);
	CHECK_EQ_U64(lapic_pending_irq(&a), 0x80);
	lapic_ack_irq(&a, 0x80);
	CHECK(isr(&a, 0x80) && !irr(&a, 0x80));
	CHECK_EQ_U64(rd(&a, LAPIC_REG_PPR), 0x80);
	CHECK_EQ_U64(lapic_pending_irq(&a), (uint64_t)-1);
	lapic_set_irq(&a, 0x85, false); /* same class as in service: waits */
	CHECK_EQ_U64(lapic_pending_irq(&a), (uint64_t)-1);
	lapic_set_irq(&a, 0x91, false); /* higher class nests */
	CHECK_EQ_U64(lapic_pending_irq(&a), 0x91);
	lapic_ack_irq(&a, 0x91);
	CHECK_EQ_U64(rd(&a, LAPIC_REG_PPR), 0x90);
	CHECK_EQ_U64(rd(&a, LAPIC_REG_ISR + 0x40), (1u << 0x11) | 1u); /* 0x80 and 0x91 */
	wr(&a, LAPIC_REG_EOI, 0); /* pops the highest: 0x91 */
	CHECK(!isr(&a, 0x91) && isr(&a, 0x80));
	CHECK_EQ_U64(rd(&a, LAPIC_REG_PPR), 0x80);
	CHECK_EQ_U64(lapic_pending_irq(&a), (uint64_t)-1);
	wr(&a, LAPIC_REG_EOI, 0);
	CHECK(!isr(&a, 0x80));
	CHECK_EQ_U64(lapic_pending_irq(&a), 0x85);
	lapic_ack_irq(&a, 0x85);
	wr(&a, LAPIC_REG_EOI, 0);
	CHECK_EQ_U64(lapic_pending_irq(&a), (uint64_t)-1); /* 0x45 masked by TPR 0x7f */
	lapic_set_tpr(&a, 0x40);
	CHECK_EQ_U64(lapic_tpr(&a), 0x40);
	CHECK_EQ_U64(lapic_pending_irq(&a), (uint64_t)-1); /* class 4 not above 4 */
	lapic_set_tpr(&a, 0x3f);
	CHECK_EQ_U64(lapic_pending_irq(&a), 0x45);
	wr(&a, LAPIC_REG_EOI, 0); /* EOI with nothing in service: harmless */
	CHECK_EQ_U64(lapic_pending_irq(&a), 0x45);
}

TEST(lapic_apr)
{
	struct lapic a;

	setup(&a, 0);
	wr(&a, LAPIC_REG_TPR, 0x35);
	CHECK_EQ_U64(rd(&a, LAPIC_REG_APR), 0x35);
	lapic_set_irq(&a, 0x61, false);
	CHECK_EQ_U64(rd(&a, LAPIC_REG_APR), 0x60); /* pending class above TPR */
	lapic_ack_irq(&a, 0x61);
	CHECK_EQ_U64(rd(&a, LAPIC_REG_APR), 0x60); /* in-service class above TPR */
	wr(&a, LAPIC_REG_TPR, 0x7a);
	CHECK_EQ_U64(rd(&a, LAPIC_REG_APR), 0x7a);
}

/* SDM 10.8.4: accepting a vector sets its TMR bit for a level-triggered
 * interrupt and clears it for an edge one; the EOI leaves it (kvm-unit-tests
 * ioapic: "TMR for ioapic level interrupts (expected true)"). */
TEST(lapic_tmr_set_by_acceptance)
{
	struct lapic a;

	setup(&a, 0);
	lapic_set_irq(&a, 0x60, true);
	lapic_set_irq(&a, 0x61, false);
	CHECK(tmr(&a, 0x60) && !tmr(&a, 0x61));
	lapic_ack_irq(&a, 0x61);
	lapic_ack_irq(&a, 0x60);
	wr(&a, LAPIC_REG_EOI, 0);
	CHECK(!isr(&a, 0x61) && isr(&a, 0x60) && tmr(&a, 0x60));
	wr(&a, LAPIC_REG_EOI, 0);
	CHECK(!isr(&a, 0x60) && tmr(&a, 0x60));
	lapic_set_irq(&a, 0x60, false); /* the same vector, edge this time */
	CHECK(!tmr(&a, 0x60));
	lapic_ack_irq(&a, 0x60);
	lapic_set_irq(&a, 0x61, true);
	CHECK(tmr(&a, 0x61));
}

/* 10.12.1.2: the x2APIC MSRs 0x810-0x817, 0x818-0x81f and 0x820-0x827 read
 * the eight 32-bit words of ISR, TMR and IRR, each its own. */
TEST(lapic_x2apic_vector_set_words)
{
	struct lapic a;
	uint64_t v;

	setup_x2apic(&a, 0);
	lapic_set_irq(&a, 0x79, true);  /* word 3, bit 25 */
	lapic_set_irq(&a, 0xe1, false); /* word 7, bit 1 */
	lapic_ack_irq(&a, 0xe1);
	for (unsigned w = 0; w < 8; w++) {
		REQUIRE(lapic_msr_read(&a, 0x818 + w, &v, 0));
		CHECK_EQ_U64(v, w == 3 ? 1u << 25 : 0);
		REQUIRE(lapic_msr_read(&a, 0x820 + w, &v, 0));
		CHECK_EQ_U64(v, w == 3 ? 1u << 25 : 0);
		REQUIRE(lapic_msr_read(&a, 0x810 + w, &v, 0));
		CHECK_EQ_U64(v, w == 7 ? 1u << 1 : 0);
	}
}

TEST(lapic_illegal_vectors_and_error_lvt)
{
	struct lapic a;

	setup(&a, 0);
	lapic_set_irq(&a, 15, false);
	CHECK_EQ_U64(irr_count(&a), 0);
	CHECK_EQ_U64(esr(&a), LAPIC_ESR_RECV_ILLEGAL_VECTOR);
	wr(&a, LAPIC_REG_ICR_LO, (LAPIC_DEST_SELF << 18) | 0x03);
	CHECK_EQ_U64(irr_count(&a), 0);
	CHECK_EQ_U64(esr(&a), LAPIC_ESR_SEND_ILLEGAL_VECTOR);
	lapic_set_irq(&a, 16, false); /* the first legal vector */
	CHECK(irr(&a, 16));
	CHECK_EQ_U64(esr(&a), 0);
	/* an unmasked LVT error entry signals the error */
	wr(&a, LAPIC_REG_LVT_ERROR, 0xee);
	lapic_set_irq(&a, 2, false);
	CHECK(irr(&a, 0xee));
	CHECK_EQ_U64(esr(&a), LAPIC_ESR_RECV_ILLEGAL_VECTOR);
}

TEST(lapic_software_disabled)
{
	struct lapic a;

	lapic_init(&a, NULL, 0, true, 2000000);
	lapic_set_irq(&a, 0x40, false);
	CHECK_EQ_U64(irr_count(&a), 0); /* fixed interrupts dropped */
	wr(&a, LAPIC_REG_LVT_LINT0, 0x40);
	CHECK_EQ_U64(rd(&a, LAPIC_REG_LVT_LINT0), 0x10040); /* mask stays set */
	lapic_deliver(&a, LAPIC_DM_NMI, 0, false);
	lapic_deliver(&a, LAPIC_DM_INIT, 0, false);
	lapic_deliver(&a, LAPIC_DM_SIPI, 0x9a, false);
	CHECK(a.nmi_pending && a.init_pending && a.sipi_pending);
	CHECK_EQ_U64(a.sipi_vector, 0x9a);

	wr(&a, LAPIC_REG_SVR, 0x1ff);
	wr(&a, LAPIC_REG_LVT_LINT0, 0x40);
	wr(&a, LAPIC_REG_LVT_TIMER, 0x41);
	CHECK_EQ_U64(rd(&a, LAPIC_REG_LVT_LINT0), 0x40);
	lapic_set_irq(&a, 0x50, false);
	wr(&a, LAPIC_REG_SVR, 0xff); /* software disable masks every LVT... */
	for (unsigned off = 0x320; off <= 0x370; off += 0x10)
		CHECK(rd(&a, off) & LAPIC_LVT_MASKED);
	CHECK_EQ_U64(lapic_pending_irq(&a), 0x50); /* ...and keeps what is pending */
	wr(&a, LAPIC_REG_SVR, 0x1ff);
	CHECK_EQ_U64(rd(&a, LAPIC_REG_LVT_LINT0), 0x10040); /* enabling does not unmask */
}

/* ---- IPIs ---- */

TEST(lapic_self_ipi)
{
	struct lapic a;

	setup(&a, 3);
	wr(&a, LAPIC_REG_ICR_LO, (LAPIC_DEST_SELF << 18) | 0x40);
	CHECK(irr(&a, 0x40));
	CHECK_EQ_U64(rd(&a, LAPIC_REG_ICR_LO), (LAPIC_DEST_SELF << 18) | 0x40); /* idle */
	/* without a bus: physical to our own ID, broadcast and all-including-self reach us */
	wr(&a, LAPIC_REG_ICR_HI, 3u << 24);
	wr(&a, LAPIC_REG_ICR_LO, 0x41);
	CHECK(irr(&a, 0x41));
	wr(&a, LAPIC_REG_ICR_HI, 4u << 24);
	wr(&a, LAPIC_REG_ICR_LO, 0x42);
	CHECK(!irr(&a, 0x42));
	wr(&a, LAPIC_REG_ICR_HI, 0xffu << 24);
	wr(&a, LAPIC_REG_ICR_LO, 0x43);
	CHECK(irr(&a, 0x43));
	wr(&a, LAPIC_REG_ICR_LO, (LAPIC_DEST_ALL << 18) | 0x44);
	CHECK(irr(&a, 0x44));
	wr(&a, LAPIC_REG_ICR_LO, (LAPIC_DEST_OTHERS << 18) | 0x45);
	CHECK(!irr(&a, 0x45));
	wr(&a, LAPIC_REG_ICR_LO, (LAPIC_DEST_SELF << 18) | LAPIC_ICR_LEVEL | LAPIC_ICR_ASSERT | 0x46);
	CHECK(irr(&a, 0x46) && tmr(&a, 0x46));

	/* x2APIC SELF IPI register */
	setup_x2apic(&a, 3);
	CHECK(lapic_msr_write(&a, 0x83f, 0x55, 0));
	CHECK(irr(&a, 0x55) && !tmr(&a, 0x55));
	CHECK(lapic_msr_write(&a, 0x83f, 0x05, 0));
	CHECK_EQ_U64(esr(&a), LAPIC_ESR_SEND_ILLEGAL_VECTOR);
	CHECK(lapic_msr_write(&a, 0x830, (LAPIC_DEST_SELF << 18) | 0x56, 0));
	CHECK(irr(&a, 0x56));
	CHECK(lapic_msr_write(&a, 0x830, (3ull << 32) | 0x57, 0));
	CHECK(irr(&a, 0x57));
}

TEST(lapic_match_xapic)
{
	static const struct {
		uint32_t id, ldr, dfr, dest;
		bool logical, match;
	} t[] = {
		/* physical: 8-bit ID, 0xff broadcast */
		{ 5, 0, 0xffffffff, 5, false, true },
		{ 5, 0, 0xffffffff, 6, false, false },
		{ 5, 0, 0xffffffff, 0xff, false, true },
		{ 5, 0, 0xffffffff, 0x105, false, false },
		{ 5, 0, 0xffffffff, 0xffffffff, false, true },
		/* logical flat: any common bit */
		{ 1, 0x01000000, 0xffffffff, 0x01, true, true },
		{ 1, 0x01000000, 0xffffffff, 0x03, true, true },
		{ 1, 0x01000000, 0xffffffff, 0x02, true, false },
		{ 1, 0x80000000, 0xffffffff, 0xf0, true, true },
		{ 1, 0x80000000, 0xffffffff, 0x00, true, false },
		{ 1, 0x00000000, 0xffffffff, 0x7f, true, false },
		{ 1, 0x01000000, 0xffffffff, 0xff, true, true },
		/* logical cluster: cluster 7:4 equal, member bits 3:0 in common */
		{ 1, 0x21000000, 0x0fffffff, 0x21, true, true },
		{ 1, 0x21000000, 0x0fffffff, 0x23, true, true },
		{ 1, 0x21000000, 0x0fffffff, 0x22, true, false },
		{ 1, 0x21000000, 0x0fffffff, 0x31, true, false },
		{ 1, 0x21000000, 0x0fffffff, 0x11, true, false },
		{ 1, 0x21000000, 0x0fffffff, 0xff, true, true },
	};
	for (unsigned i = 0; i < sizeof t / sizeof t[0]; i++) {
		struct lapic a;

		setup(&a, t[i].id);
		wr(&a, LAPIC_REG_LDR, t[i].ldr);
		wr(&a, LAPIC_REG_DFR, t[i].dfr);
		CHECK_EQ_U64(lapic_match_dest(&a, t[i].dest, t[i].logical) + 10 * i, t[i].match + 10 * i);
	}
	struct lapic a;

	setup(&a, 5);
	lapic_set_base_msr(&a, LAPIC_DEFAULT_BASE, PHYS);
	CHECK(!lapic_match_dest(&a, 5, false)); /* hardware-disabled */
	CHECK(!lapic_match_dest(&a, 0xffffffff, false));
}

TEST(lapic_match_x2apic)
{
	static const struct {
		uint32_t id, dest;
		bool logical, match;
	} t[] = {
		{ 0x23, 0x23, false, true },
		{ 0x23, 0x24, false, false },
		{ 0x123, 0x23, false, false },
		{ 0x123, 0x123, false, true },
		{ 0x23, 0xff, false, false }, /* not broadcast in x2APIC mode */
		{ 0x23, 0xffffffff, false, true },
		/* logical: LDR of 0x23 is cluster 2, bit 3 */
		{ 0x23, 0x00020008, true, true },
		{ 0x23, 0x0002000f, true, true },
		{ 0x23, 0x00020004, true, false },
		{ 0x23, 0x00010008, true, false },
		{ 0x23, 0x00030008, true, false },
		{ 0x23, 0xffffffff, true, true },
		{ 0x0, 0x00000001, true, true },
		{ 0x1f, 0x00018000, true, true },
	};
	for (unsigned i = 0; i < sizeof t / sizeof t[0]; i++) {
		struct lapic a;

		setup_x2apic(&a, t[i].id);
		CHECK_EQ_U64(lapic_match_dest(&a, t[i].dest, t[i].logical) + 10 * i, t[i].match + 10 * i);
	}
}

/* Four software-enabled APICs on one bus, IDs 0-3, flat logical IDs 1 << i. */
static void setup_bus(struct lapic_bus *bus, struct lapic *a, unsigned n)
{
	bus->count = 0;
	for (unsigned i = 0; i < n; i++) {
		lapic_init(&a[i], bus, i, i == 0, 2000000);
		wr(&a[i], LAPIC_REG_SVR, 0x1ff);
		wr(&a[i], LAPIC_REG_LDR, (1u << i) << 24);
	}
}

static unsigned who_has(struct lapic *a, unsigned n, unsigned vector)
{
	unsigned mask = 0;

	for (unsigned i = 0; i < n; i++)
		if (irr(&a[i], vector))
			mask |= 1u << i;
	return mask;
}

static void send(struct lapic *from, uint32_t dest8, uint32_t icr)
{
	wr(from, LAPIC_REG_ICR_HI, dest8 << 24);
	wr(from, LAPIC_REG_ICR_LO, icr);
}

TEST(lapic_ipi_routing)
{
	struct lapic_bus bus = { 0 };
	struct lapic a[4];

	setup_bus(&bus, a, 4);
	send(&a[0], 2, 0x40);
	CHECK_EQ_U64(who_has(a, 4, 0x40), 0x4);
	send(&a[0], 0xff, 0x41);
	CHECK_EQ_U64(who_has(a, 4, 0x41), 0xf);
	send(&a[1], 0, (LAPIC_DEST_ALL << 18) | 0x42);
	CHECK_EQ_U64(who_has(a, 4, 0x42), 0xf);
	send(&a[1], 0, (LAPIC_DEST_OTHERS << 18) | 0x43);
	CHECK_EQ_U64(who_has(a, 4, 0x43), 0xd);
	send(&a[1], 0, (LAPIC_DEST_SELF << 18) | 0x44);
	CHECK_EQ_U64(who_has(a, 4, 0x44), 0x2);
	send(&a[0], 0x0a, LAPIC_ICR_LOGICAL | 0x45); /* flat: APICs 1 and 3 */
	CHECK_EQ_U64(who_has(a, 4, 0x45), 0xa);
	/* cluster model */
	for (unsigned i = 0; i < 4; i++) {
		wr(&a[i], LAPIC_REG_DFR, 0x0fffffff);
		wr(&a[i], LAPIC_REG_LDR, ((i / 2 + 1) << 28) | ((1u << (i % 2)) << 24));
	}
	send(&a[0], 0x23, LAPIC_ICR_LOGICAL | 0x46); /* cluster 2, both members */
	CHECK_EQ_U64(who_has(a, 4, 0x46), 0xc);
	send(&a[0], 0x11, LAPIC_ICR_LOGICAL | 0x47);
	CHECK_EQ_U64(who_has(a, 4, 0x47), 0x1);
	/* a hardware-disabled APIC receives nothing, broadcast included */
	lapic_set_base_msr(&a[3], LAPIC_DEFAULT_BASE, PHYS);
	send(&a[0], 0xff, 0x48);
	CHECK_EQ_U64(who_has(a, 4, 0x48), 0x7);
}

TEST(lapic_nmi_init_sipi)
{
	struct lapic_bus bus = { 0 };
	struct lapic a[3];

	setup_bus(&bus, a, 3);
	send(&a[0], 1, LAPIC_ICR_ASSERT | (LAPIC_DM_NMI << 8));
	CHECK(!a[0].nmi_pending && a[1].nmi_pending && !a[2].nmi_pending);
	send(&a[0], 0, (LAPIC_DEST_OTHERS << 18) | LAPIC_ICR_LEVEL | LAPIC_ICR_ASSERT | (LAPIC_DM_INIT << 8));
	CHECK(!a[0].init_pending && a[1].init_pending && a[2].init_pending);
	a[1].init_pending = a[2].init_pending = false;
	/* INIT level de-assert does nothing */
	send(&a[0], 0, (LAPIC_DEST_OTHERS << 18) | LAPIC_ICR_LEVEL | (LAPIC_DM_INIT << 8));
	CHECK(!a[1].init_pending && !a[2].init_pending);
	send(&a[0], 2, LAPIC_ICR_ASSERT | (LAPIC_DM_SIPI << 8) | 0x9a);
	CHECK(a[2].sipi_pending && !a[1].sipi_pending);
	CHECK_EQ_U64(a[2].sipi_vector, 0x9a);
	/* SMI: not modelled, nothing happens */
	send(&a[0], 1, LAPIC_ICR_ASSERT | (LAPIC_DM_SMI << 8));
	CHECK_EQ_U64(irr_count(&a[1]), 0);
	/* an NMI reaches a software-disabled APIC */
	wr(&a[2], LAPIC_REG_SVR, 0xff);
	send(&a[0], 2, LAPIC_ICR_ASSERT | (LAPIC_DM_NMI << 8));
	CHECK(a[2].nmi_pending);
	/* INIT signal: registers reset, ID and mode kept */
	wr(&a[2], LAPIC_REG_ID, 0x09000000);
	wr(&a[2], LAPIC_REG_TPR, 0x20);
	lapic_init_signal(&a[2]);
	CHECK_EQ_U64(rd(&a[2], LAPIC_REG_ID), 0x09000000);
	CHECK_EQ_U64(rd(&a[2], LAPIC_REG_TPR), 0);
	CHECK(!a[2].nmi_pending && !a[2].sipi_pending);
}

/* Two NMIs that arrive before the vCPU enters (one from another CPU, one it
 * sent itself) are both taken, one after the other; while the CPU blocks
 * NMIs one waits, as the CPU latches one (kvm-unit-tests apic: multiple
 * nmi, pending nmi). */
TEST(lapic_nmis_pending)
{
	struct lapic_bus bus = { 0 };
	struct lapic a[2];

	setup_bus(&bus, a, 2);
	CHECK(!lapic_nmi_pending(&a[0], false));
	send(&a[1], 0, LAPIC_ICR_ASSERT | (LAPIC_DM_NMI << 8));
	send(&a[0], 0, (LAPIC_DEST_SELF << 18) | LAPIC_ICR_ASSERT | (LAPIC_DM_NMI << 8));
	send(&a[1], 0, LAPIC_ICR_ASSERT | (LAPIC_DM_NMI << 8)); /* a third: lost */
	CHECK(lapic_nmi_pending(&a[0], false));
	lapic_ack_nmi(&a[0]);                   /* the first injected */
	CHECK(lapic_nmi_pending(&a[0], true));  /* the second waits for its IRET */
	lapic_ack_nmi(&a[0]);
	CHECK(!lapic_nmi_pending(&a[0], false));

	/* Sent while the handler blocks NMIs: ten collapse into one. */
	for (int i = 0; i < 10; i++)
		send(&a[0], 0, (LAPIC_DEST_SELF << 18) | LAPIC_ICR_ASSERT | (LAPIC_DM_NMI << 8));
	CHECK(lapic_nmi_pending(&a[0], true));
	CHECK(lapic_nmi_pending(&a[0], false)); /* its IRET ran */
	lapic_ack_nmi(&a[0]);
	CHECK(!lapic_nmi_pending(&a[0], false));
	CHECK(!lapic_nmi_pending(&a[1], false));
}

/* The INIT/SIPI state machine a vCPU runs before each entry
 * (lapic_accept_start): an AP waits for a SIPI after INIT, a SIPI starts only
 * a waiting CPU, once, with its vector; the BSP comes back from INIT running. */
TEST(lapic_accept_start_ap)
{
	struct lapic_bus bus = { 0 };
	struct lapic a[2];
	bool wait = false;
	uint8_t vector = 0;

	setup_bus(&bus, a, 2);
	CHECK_EQ_U64(lapic_accept_start(&a[1], &wait, &vector), 0);
	/* a SIPI to a running CPU is dropped */
	send(&a[0], 1, LAPIC_ICR_ASSERT | (LAPIC_DM_SIPI << 8) | 0x10);
	CHECK_EQ_U64(lapic_accept_start(&a[1], &wait, &vector), 0);
	CHECK(!a[1].sipi_pending && !wait);
	/* INIT: registers reset, waiting for a SIPI */
	wr(&a[1], LAPIC_REG_TPR, 0x30);
	send(&a[0], 1, LAPIC_ICR_ASSERT | (LAPIC_DM_INIT << 8));
	CHECK_EQ_U64(lapic_accept_start(&a[1], &wait, &vector), LAPIC_ACCEPT_INIT);
	CHECK(wait && !a[1].init_pending);
	CHECK_EQ_U64(rd(&a[1], LAPIC_REG_TPR), 0);
	CHECK_EQ_U64(lapic_accept_start(&a[1], &wait, &vector), 0);
	CHECK(wait);
	/* SIPI: started with its vector; a second SIPI (the guest sends two)
	 * is dropped */
	send(&a[0], 1, LAPIC_ICR_ASSERT | (LAPIC_DM_SIPI << 8) | 0x9f);
	CHECK_EQ_U64(lapic_accept_start(&a[1], &wait, &vector), LAPIC_ACCEPT_SIPI);
	CHECK(!wait);
	CHECK_EQ_U64(vector, 0x9f);
	send(&a[0], 1, LAPIC_ICR_ASSERT | (LAPIC_DM_SIPI << 8) | 0x20);
	CHECK_EQ_U64(lapic_accept_start(&a[1], &wait, &vector), 0);
	CHECK_EQ_U64(vector, 0x9f);
	CHECK(!wait);
}

TEST(lapic_accept_start_init_and_sipi_together)
{
	struct lapic_bus bus = { 0 };
	struct lapic a[2];
	bool wait = false;
	uint8_t vector = 0;
	uint64_t arrivals;

	setup_bus(&bus, a, 2);
	arrivals = a[1].arrivals;
	/* INIT then SIPI before the CPU looked: reset, then started */
	send(&a[0], 1, LAPIC_ICR_ASSERT | (LAPIC_DM_INIT << 8));
	send(&a[0], 1, LAPIC_ICR_ASSERT | (LAPIC_DM_SIPI << 8) | 0x08);
	CHECK_EQ_U64(a[1].arrivals, arrivals + 2);
	CHECK_EQ_U64(lapic_accept_start(&a[1], &wait, &vector),
		     LAPIC_ACCEPT_INIT | LAPIC_ACCEPT_SIPI);
	CHECK(!wait && !a[1].sipi_pending && !a[1].init_pending);
	CHECK_EQ_U64(vector, 0x08);
}

TEST(lapic_accept_start_bsp)
{
	struct lapic_bus bus = { 0 };
	struct lapic a[2];
	bool wait = false;
	uint8_t vector = 0;

	setup_bus(&bus, a, 2);
	/* INIT to the BSP: reset, running again (at the reset vector) */
	send(&a[1], 0, LAPIC_ICR_ASSERT | (LAPIC_DM_INIT << 8));
	CHECK_EQ_U64(lapic_accept_start(&a[0], &wait, &vector), LAPIC_ACCEPT_INIT);
	CHECK(!wait);
	send(&a[1], 0, LAPIC_ICR_ASSERT | (LAPIC_DM_SIPI << 8) | 0x12);
	CHECK_EQ_U64(lapic_accept_start(&a[0], &wait, &vector), 0);
}

/* Every accepted message counts as an arrival (what another CPU's kick
 * decision reads); a refused one does not. */
TEST(lapic_arrivals)
{
	struct lapic_bus bus = { 0 };
	struct lapic a[2];
	uint64_t n;

	setup_bus(&bus, a, 2);
	n = a[1].arrivals;
	send(&a[0], 1, 0x40);
	send(&a[0], 1, LAPIC_ICR_ASSERT | (LAPIC_DM_NMI << 8));
	CHECK_EQ_U64(a[1].arrivals, n + 2);
	wr(&a[1], LAPIC_REG_SVR, 0xff); /* software-disabled: fixed IPIs dropped */
	send(&a[0], 1, 0x41);
	CHECK_EQ_U64(a[1].arrivals, n + 2);
}

TEST(lapic_lowest_priority)
{
	struct lapic_bus bus = { 0 };
	struct lapic a[4];
	static const uint32_t tpr[4] = { 0x40, 0x20, 0x20, 0x10 };
	uint32_t lowest = LAPIC_ICR_LOGICAL | (LAPIC_DM_LOWEST << 8);

	setup_bus(&bus, a, 4);
	for (unsigned i = 0; i < 4; i++)
		wr(&a[i], LAPIC_REG_TPR, tpr[i]);
	send(&a[0], 0x0f, lowest | 0x50);
	CHECK_EQ_U64(who_has(a, 4, 0x50), 0x8); /* TPR 0x10 */
	send(&a[0], 0x07, lowest | 0x51);
	CHECK_EQ_U64(who_has(a, 4, 0x51), 0x2); /* tie of 1 and 2: lowest ID */
	lapic_ack_irq(&a[1], 0x51); /* 1 now serves class 5: above 2's TPR class */
	send(&a[0], 0x07, lowest | 0x52);
	CHECK_EQ_U64(who_has(a, 4, 0x52), 0x4);
	wr(&a[2], LAPIC_REG_SVR, 0xff); /* software-disabled: out of the running */
	send(&a[0], 0x06, lowest | 0x53); /* 1 (APR 0x50) or 2 (disabled) */
	CHECK_EQ_U64(who_has(a, 4, 0x53), 0x2);
	send(&a[0], 0x07, lowest | 0x54); /* now 0 (APR 0x40) is lowest */
	CHECK_EQ_U64(who_has(a, 4, 0x54), 0x1);
	/* a pending interrupt raises the APR too: 0 and 3 now hold class 5 */
	send(&a[0], 0x0f, lowest | 0x55);
	CHECK_EQ_U64(who_has(a, 4, 0x55), 0x1); /* 0, 1, 3 all at 0x50: lowest ID */

	setup_bus(&bus, a, 4);
	for (unsigned i = 0; i < 4; i++)
		wr(&a[i], LAPIC_REG_TPR, tpr[i]);
	wr(&a[3], LAPIC_REG_SVR, 0xff); /* the lowest TPR, but software-disabled */
	send(&a[0], 0x0f, lowest | 0x58);
	CHECK_EQ_U64(who_has(a, 4, 0x58), 0x2);
	wr(&a[3], LAPIC_REG_SVR, 0x1ff);
	send(&a[1], 0xff, (LAPIC_DM_LOWEST << 8) | 0x56); /* physical broadcast */
	CHECK_EQ_U64(who_has(a, 4, 0x56), 0x8);
	send(&a[1], 0, (LAPIC_DEST_OTHERS << 18) | (LAPIC_DM_LOWEST << 8) | 0x57);
	CHECK_EQ_U64(who_has(a, 4, 0x57), 0x4); /* 3 holds class 5 now: 2 (TPR 0x20) */
	send(&a[0], 0x07, lowest | 0x05); /* illegal vector: nobody */
	CHECK_EQ_U64(esr(&a[0]), LAPIC_ESR_SEND_ILLEGAL_VECTOR);
}

TEST(lapic_x2apic_ipis)
{
	struct lapic_bus bus = { 0 };
	struct lapic a[3];
	static const uint32_t ids[3] = { 0, 1, 0x21 };

	for (unsigned i = 0; i < 3; i++) {
		lapic_init(&a[i], &bus, ids[i], i == 0, 2000000);
		wr(&a[i], LAPIC_REG_SVR, 0x1ff);
		CHECK(lapic_set_base_msr(&a[i], LAPIC_DEFAULT_BASE | EN | EXTD, PHYS));
	}
	CHECK(lapic_msr_write(&a[0], 0x830, (0x21ull << 32) | 0x60, 0));
	CHECK_EQ_U64(who_has(a, 3, 0x60), 0x4);
	CHECK(lapic_msr_write(&a[0], 0x830, (0x00020002ull << 32) | LAPIC_ICR_LOGICAL | 0x61, 0));
	CHECK_EQ_U64(who_has(a, 3, 0x61), 0x4);
	CHECK(lapic_msr_write(&a[0], 0x830, (0x00000003ull << 32) | LAPIC_ICR_LOGICAL | 0x62, 0));
	CHECK_EQ_U64(who_has(a, 3, 0x62), 0x3);
	CHECK(lapic_msr_write(&a[0], 0x830, (0xffffffffull << 32) | 0x63, 0));
	CHECK_EQ_U64(who_has(a, 3, 0x63), 0x7);
	CHECK(lapic_msr_write(&a[0], 0x830, (0xffull << 32) | 0x64, 0)); /* 0xff: just an ID */
	CHECK_EQ_U64(who_has(a, 3, 0x64), 0);
}

TEST(lapic_lint)
{
	struct lapic a;

	setup(&a, 0);
	lapic_lint(&a, 0); /* masked */
	CHECK_EQ_U64(irr_count(&a), 0);
	wr(&a, LAPIC_REG_LVT_LINT0, LAPIC_LVT_LEVEL | 0x50);
	lapic_lint(&a, 0);
	CHECK(irr(&a, 0x50) && tmr(&a, 0x50));
	CHECK(rd(&a, LAPIC_REG_LVT_LINT0) & LAPIC_LVT_REMOTE_IRR);
	lapic_ack_irq(&a, 0x50);
	lapic_lint(&a, 0); /* Remote IRR: still in service, not accepted again */
	CHECK(!irr(&a, 0x50));
	wr(&a, LAPIC_REG_LVT_LINT0, LAPIC_LVT_LEVEL | 0x50); /* Remote IRR is read-only */
	CHECK(rd(&a, LAPIC_REG_LVT_LINT0) & LAPIC_LVT_REMOTE_IRR);
	wr(&a, LAPIC_REG_EOI, 0);
	CHECK(!(rd(&a, LAPIC_REG_LVT_LINT0) & LAPIC_LVT_REMOTE_IRR));
	lapic_lint(&a, 0);
	CHECK(irr(&a, 0x50));
	wr(&a, LAPIC_REG_LVT_LINT1, LAPIC_DM_NMI << 8);
	lapic_lint(&a, 1);
	CHECK(a.nmi_pending);
	wr(&a, LAPIC_REG_LVT_LINT0, 0x51); /* edge */
	lapic_lint(&a, 0);
	CHECK(irr(&a, 0x51) && !tmr(&a, 0x51));
	/* hardware-disabled: LINT1 is the NMI pin */
	lapic_set_base_msr(&a, LAPIC_DEFAULT_BASE, PHYS);
	a.nmi_pending = false;
	lapic_lint(&a, 1);
	CHECK(a.nmi_pending);
}

/* ---- MMIO widths ---- */

TEST(lapic_mmio_narrow)
{
	struct lapic a;

	setup(&a, 5);
	wr(&a, LAPIC_REG_TPR, 0xab);
	CHECK_EQ_U64(lapic_mmio_read(&a, 0x80, 1, 0), 0xab);
	CHECK_EQ_U64(lapic_mmio_read(&a, 0x81, 1, 0), 0);
	CHECK_EQ_U64(lapic_mmio_read(&a, 0x23, 1, 0), 0x05);
	CHECK_EQ_U64(lapic_mmio_read(&a, 0x22, 2, 0), 0x0500);
	CHECK_EQ_U64(lapic_mmio_read(&a, 0x21, 2, 0), 0);
	CHECK_EQ_U64(lapic_mmio_read(&a, 0x20, 8, 0), 0x05000000);
	CHECK_EQ_U64(lapic_mmio_read(&a, 0x23, 4, 0), 0x05); /* into the padding */
	CHECK_EQ_U64(lapic_mmio_read(&a, 0x1c, 8, 0), 0x05000000ull << 32);
	CHECK_EQ_U64(lapic_mmio_read(&a, 0x7e, 4, 0), 0xab0000);
	CHECK_EQ_U64(lapic_mmio_read(&a, 0x30, 2, 0), 0x0014);
	CHECK_EQ_U64(lapic_mmio_read(&a, 0x32, 2, 0), 0x0005);
	CHECK_EQ_U64(lapic_mmio_read(&a, 0xffe, 8, 0), 0); /* past the page */
	CHECK_EQ_U64(esr(&a), 0); /* padding of a real register is no illegal access */

	/* writes: the touched bytes merge into the register */
	lapic_mmio_write(&a, 0x80, 1, 0xcd, 0);
	CHECK_EQ_U64(rd(&a, LAPIC_REG_TPR), 0xcd);
	lapic_mmio_write(&a, 0x81, 1, 0xff, 0);
	CHECK_EQ_U64(rd(&a, LAPIC_REG_TPR), 0xcd);
	lapic_mmio_write(&a, 0x84, 4, 0x11, 0); /* padding only */
	CHECK_EQ_U64(rd(&a, LAPIC_REG_TPR), 0xcd);
	lapic_mmio_write(&a, 0x23, 1, 0x07, 0);
	CHECK_EQ_U64(rd(&a, LAPIC_REG_ID), 0x07000000);
	lapic_mmio_write(&a, 0x7c, 8, 0x0000001200000000ull, 0); /* crosses into TPR */
	CHECK_EQ_U64(rd(&a, LAPIC_REG_TPR), 0x12);
	lapic_mmio_write(&a, 0x352, 2, 0x0000, 0); /* clear LINT0's mask only */
	CHECK_EQ_U64(rd(&a, LAPIC_REG_LVT_LINT0), 0);
	lapic_mmio_write(&a, 0x350, 1, 0x77, 0);
	CHECK_EQ_U64(rd(&a, LAPIC_REG_LVT_LINT0), 0x77);
	/* a one-byte ICR write sends with the other bytes as they are */
	wr(&a, LAPIC_REG_ICR_HI, 7u << 24);
	lapic_mmio_write(&a, 0x300, 1, 0x66, 0); /* physical, to our own ID 7 */
	CHECK(irr(&a, 0x66));
	lapic_mmio_write(&a, 0x313, 1, 9, 0);
	CHECK_EQ_U64(rd(&a, LAPIC_REG_ICR_HI), 9u << 24);
	lapic_mmio_write(&a, 0x300, 1, 0x67, 0); /* to ID 9: nobody */
	CHECK(!irr(&a, 0x67));
	lapic_mmio_write(&a, 0x302, 1, LAPIC_DEST_SELF << 2, 0); /* vector 0x67 kept */
	CHECK(irr(&a, 0x67));
	lapic_ack_irq(&a, 0x67);
	wr(&a, LAPIC_REG_EOI, 0);
	/* a one-byte EOI write is an EOI */
	lapic_ack_irq(&a, 0x66);
	lapic_mmio_write(&a, 0xb3, 1, 0, 0);
	CHECK(!isr(&a, 0x66));
	/* read-only registers ignore writes without an error */
	wr(&a, LAPIC_REG_VERSION, 0);
	CHECK_EQ_U64(rd(&a, LAPIC_REG_VERSION), LAPIC_VERSION);
	CHECK_EQ_U64(esr(&a), 0);
}

/* ---- the timer ---- */

static uint64_t ceil_tsc(uint64_t ticks, uint64_t khz)
{
	unsigned __int128 x = (unsigned __int128)ticks * khz * 1000;

	return (uint64_t)((x + LAPIC_BUS_HZ - 1) / LAPIC_BUS_HZ);
}

static void timer_setup(struct lapic *a, uint64_t khz, uint32_t lvt, uint32_t divide)
{
	lapic_init(a, NULL, 0, true, khz);
	wr(a, LAPIC_REG_SVR, 0x1ff);
	wr(a, LAPIC_REG_LVT_TIMER, lvt);
	wr(a, LAPIC_REG_TIMER_DIVIDE, divide);
}

TEST(lapic_timer_oneshot)
{
	static const uint64_t rates[] = { 1000000, 2000000, 2500000, 3000001, 999999 };

	for (unsigned r = 0; r < sizeof rates / sizeof rates[0]; r++) {
		struct lapic a;
		uint64_t start = 1000 + r, expiry;

		timer_setup(&a, rates[r], 0x30, 0); /* divide by 2 */
		lapic_mmio_write(&a, LAPIC_REG_TIMER_INITIAL, 4, 1000, start);
		expiry = start + ceil_tsc(2000, rates[r]);
		CHECK_EQ_U64(lapic_timer_next(&a), expiry);
		CHECK_EQ_U64(lapic_mmio_read(&a, LAPIC_REG_TIMER_CURRENT, 4, start), 1000);
		CHECK_EQ_U64(lapic_mmio_read(&a, LAPIC_REG_TIMER_CURRENT, 4, start + ceil_tsc(200, rates[r])),
			     900);
		CHECK_EQ_U64(lapic_mmio_read(&a, LAPIC_REG_TIMER_CURRENT, 4, expiry - 1), 1);
		lapic_timer_update(&a, expiry - 1);
		CHECK(!irr(&a, 0x30));
		CHECK_EQ_U64(a.timer_fires, 0);
		lapic_timer_update(&a, expiry);
		CHECK(irr(&a, 0x30));
		CHECK_EQ_U64(a.timer_fires, 1);
		CHECK_EQ_U64(lapic_timer_next(&a), 0);
		CHECK_EQ_U64(lapic_mmio_read(&a, LAPIC_REG_TIMER_CURRENT, 4, expiry), 0);
		CHECK_EQ_U64(lapic_mmio_read(&a, LAPIC_REG_TIMER_INITIAL, 4, expiry), 1000);
		lapic_timer_update(&a, expiry + 1000000); /* one-shot: once */
		CHECK_EQ_U64(a.timer_fires, 1);
	}
}

TEST(lapic_timer_divide_values)
{
	static const struct {
		uint32_t dcr, divisor;
	} t[] = {
		{ 0x0, 2 }, { 0x1, 4 }, { 0x2, 8 }, { 0x3, 16 },
		{ 0x8, 32 }, { 0x9, 64 }, { 0xa, 128 }, { 0xb, 1 },
	};
	for (unsigned i = 0; i < sizeof t / sizeof t[0]; i++) {
		struct lapic a;
		uint64_t expiry = 500 + ceil_tsc(100ull * t[i].divisor, 2500000);

		timer_setup(&a, 2500000, 0x30, t[i].dcr);
		CHECK_EQ_U64(rd(&a, LAPIC_REG_TIMER_DIVIDE), t[i].dcr);
		lapic_mmio_write(&a, LAPIC_REG_TIMER_INITIAL, 4, 100, 500);
		CHECK_EQ_U64(lapic_timer_next(&a), expiry);
		CHECK_EQ_U64(lapic_mmio_read(&a, LAPIC_REG_TIMER_CURRENT, 4,
					     500 + ceil_tsc(10ull * t[i].divisor, 2500000)), 90);
		lapic_timer_update(&a, expiry - 1);
		CHECK(!irr(&a, 0x30));
		lapic_timer_update(&a, expiry);
		CHECK(irr(&a, 0x30));
	}
}

TEST(lapic_timer_periodic_no_drift)
{
	struct lapic a;
	uint64_t base = 12345;

	/* 1.5 TSC cycles per tick, 333 ticks a period: 499.5 cycles */
	timer_setup(&a, 1500000, (LAPIC_TIMER_PERIODIC << 17) | 0x31, 0xb);
	lapic_mmio_write(&a, LAPIC_REG_TIMER_INITIAL, 4, 333, base);
	for (uint64_t k = 1; k <= 1000; k++) {
		uint64_t expiry = base + ceil_tsc(333 * k, 1500000);

		CHECK_EQ_U64(lapic_timer_next(&a), expiry);
		lapic_timer_update(&a, expiry - 1);
		CHECK_EQ_U64(a.timer_fires, k - 1);
		lapic_timer_update(&a, expiry);
		CHECK_EQ_U64(a.timer_fires, k);
		CHECK_EQ_U64(lapic_mmio_read(&a, LAPIC_REG_TIMER_CURRENT, 4, expiry), 333);
	}
	CHECK(irr(&a, 0x31));
	/* current count runs down within a period */
	CHECK_EQ_U64(lapic_mmio_read(&a, LAPIC_REG_TIMER_CURRENT, 4,
				     base + ceil_tsc(333 * 1000 + 100, 1500000)), 233);
}

TEST(lapic_timer_periodic_missed)
{
	struct lapic a;
	uint64_t late;

	timer_setup(&a, 1000000, (LAPIC_TIMER_PERIODIC << 17) | 0x32, 0xb); /* 1 tick = 1 cycle */
	lapic_mmio_write(&a, LAPIC_REG_TIMER_INITIAL, 4, 1000, 0);
	CHECK_EQ_U64(lapic_timer_next(&a), 1000);
	late = 10500; /* ten periods late */
	lapic_timer_update(&a, late);
	CHECK_EQ_U64(a.timer_fires, 1); /* once */
	CHECK(irr(&a, 0x32));
	CHECK_EQ_U64(lapic_timer_next(&a), 11000); /* the next period after `late`, on the grid */
	lapic_timer_update(&a, 11000);
	CHECK_EQ_U64(a.timer_fires, 2);
	CHECK_EQ_U64(lapic_timer_next(&a), 12000);
	/* exactly on an expiry: that one fires, the next is one period on */
	lapic_timer_update(&a, 15000);
	CHECK_EQ_U64(a.timer_fires, 3);
	CHECK_EQ_U64(lapic_timer_next(&a), 16000);
}

TEST(lapic_timer_masked_counts)
{
	struct lapic a;

	timer_setup(&a, 1000000, (LAPIC_TIMER_PERIODIC << 17) | LAPIC_LVT_MASKED | 0x33, 0xb);
	lapic_mmio_write(&a, LAPIC_REG_TIMER_INITIAL, 4, 100, 0);
	CHECK_EQ_U64(lapic_mmio_read(&a, LAPIC_REG_TIMER_CURRENT, 4, 30), 70);
	lapic_timer_update(&a, 100);
	CHECK(!irr(&a, 0x33));
	CHECK_EQ_U64(a.timer_fires, 0);
	CHECK_EQ_U64(lapic_timer_next(&a), 200); /* still counting */
	wr(&a, LAPIC_REG_LVT_TIMER, (LAPIC_TIMER_PERIODIC << 17) | 0x33); /* unmask */
	lapic_timer_update(&a, 200);
	CHECK(irr(&a, 0x33));
	CHECK_EQ_U64(a.timer_fires, 1);
}

TEST(lapic_timer_stop_and_restart)
{
	struct lapic a;

	timer_setup(&a, 1000000, 0x34, 0xb);
	lapic_mmio_write(&a, LAPIC_REG_TIMER_INITIAL, 4, 100, 0);
	lapic_mmio_write(&a, LAPIC_REG_TIMER_INITIAL, 4, 0, 50); /* 0 stops */
	CHECK_EQ_U64(lapic_timer_next(&a), 0);
	CHECK_EQ_U64(lapic_mmio_read(&a, LAPIC_REG_TIMER_CURRENT, 4, 60), 0);
	lapic_timer_update(&a, 1000);
	CHECK(!irr(&a, 0x34));
	lapic_mmio_write(&a, LAPIC_REG_TIMER_INITIAL, 4, 100, 2000);
	lapic_mmio_write(&a, LAPIC_REG_TIMER_INITIAL, 4, 300, 2050); /* restarts from now */
	CHECK_EQ_U64(lapic_timer_next(&a), 2350);
	/* a divisor change keeps the count reached and runs on at the new rate */
	lapic_mmio_write(&a, LAPIC_REG_TIMER_DIVIDE, 4, 0x0, 2150); /* 200 left, now /2 */
	CHECK_EQ_U64(lapic_mmio_read(&a, LAPIC_REG_TIMER_CURRENT, 4, 2150), 200);
	CHECK_EQ_U64(lapic_timer_next(&a), 2550);
	/* one-shot -> periodic keeps the running count, then reloads */
	lapic_mmio_write(&a, LAPIC_REG_LVT_TIMER, 4, (LAPIC_TIMER_PERIODIC << 17) | 0x34, 2250);
	CHECK_EQ_U64(lapic_timer_next(&a), 2550);
	lapic_timer_update(&a, 2550);
	CHECK(irr(&a, 0x34));
	CHECK_EQ_U64(lapic_timer_next(&a), 2550 + 600);
}

TEST(lapic_timer_mode_change_clears)
{
	struct lapic a;

	/* one-shot -> TSC-deadline disarms and clears the initial count */
	timer_setup(&a, 1000000, 0x35, 0xb);
	lapic_mmio_write(&a, LAPIC_REG_TIMER_INITIAL, 4, 100, 0);
	wr(&a, LAPIC_REG_LVT_TIMER, (LAPIC_TIMER_TSC_DEADLINE << 17) | 0x35);
	CHECK_EQ_U64(lapic_timer_next(&a), 0);
	CHECK_EQ_U64(rd(&a, LAPIC_REG_TIMER_INITIAL), 0);
	lapic_timer_update(&a, 1000);
	CHECK(!irr(&a, 0x35));
	/* TSC-deadline -> periodic disarms the deadline */
	lapic_tsc_deadline_write(&a, 5000, 1000);
	CHECK_EQ_U64(lapic_timer_next(&a), 5000);
	wr(&a, LAPIC_REG_LVT_TIMER, (LAPIC_TIMER_PERIODIC << 17) | 0x35);
	CHECK_EQ_U64(lapic_timer_next(&a), 0);
	CHECK_EQ_U64(lapic_tsc_deadline_read(&a), 0);
	lapic_timer_update(&a, 6000);
	CHECK(!irr(&a, 0x35));
	/* and back: the old deadline does not come back */
	wr(&a, LAPIC_REG_LVT_TIMER, (LAPIC_TIMER_TSC_DEADLINE << 17) | 0x35);
	CHECK_EQ_U64(lapic_tsc_deadline_read(&a), 0);
}

TEST(lapic_timer_tsc_deadline)
{
	struct lapic a;

	timer_setup(&a, 1000000, 0x36, 0xb);
	lapic_tsc_deadline_write(&a, 5000, 100); /* not in deadline mode: ignored */
	CHECK_EQ_U64(lapic_tsc_deadline_read(&a), 0);
	CHECK_EQ_U64(lapic_timer_next(&a), 0);

	wr(&a, LAPIC_REG_LVT_TIMER, (LAPIC_TIMER_TSC_DEADLINE << 17) | 0x36);
	lapic_tsc_deadline_write(&a, 5000, 100);
	CHECK_EQ_U64(lapic_tsc_deadline_read(&a), 5000);
	CHECK_EQ_U64(lapic_timer_next(&a), 5000);
	/* initial count writes are ignored, current count reads 0 */
	lapic_mmio_write(&a, LAPIC_REG_TIMER_INITIAL, 4, 100, 200);
	CHECK_EQ_U64(rd(&a, LAPIC_REG_TIMER_INITIAL), 0);
	CHECK_EQ_U64(lapic_mmio_read(&a, LAPIC_REG_TIMER_CURRENT, 4, 300), 0);
	CHECK_EQ_U64(lapic_timer_next(&a), 5000);
	lapic_timer_update(&a, 4999);
	CHECK(!irr(&a, 0x36));
	lapic_timer_update(&a, 5000);
	CHECK(irr(&a, 0x36));
	CHECK_EQ_U64(a.timer_fires, 1);
	CHECK_EQ_U64(lapic_tsc_deadline_read(&a), 0); /* fired: disarmed */
	CHECK_EQ_U64(lapic_timer_next(&a), 0);
	lapic_timer_update(&a, 9000);
	CHECK_EQ_U64(a.timer_fires, 1);

	/* 0 disarms */
	lapic_tsc_deadline_write(&a, 7000, 6000);
	lapic_tsc_deadline_write(&a, 0, 6000);
	CHECK_EQ_U64(lapic_timer_next(&a), 0);
	lapic_timer_update(&a, 8000);
	CHECK_EQ_U64(a.timer_fires, 1);
	/* a deadline already passed fires at once */
	lapic_tsc_deadline_write(&a, 7000, 8000);
	CHECK_EQ_U64(a.timer_fires, 2);
	CHECK_EQ_U64(lapic_tsc_deadline_read(&a), 0);
	/* x2APIC: current count MSR reads 0 in deadline mode */
	uint64_t v = 1;

	lapic_set_base_msr(&a, LAPIC_DEFAULT_BASE | EN | EXTD, PHYS);
	CHECK(lapic_msr_read(&a, 0x839, &v, 9000));
	CHECK_EQ_U64(v, 0);
}

/* ---- saved state (lapic_record) ---- */

/* Everything a guest or sprig can observe of an APIC at `now` is the same. */
static void check_same_behaviour(struct lapic *a, struct lapic *b, uint64_t now)
{
	CHECK_EQ_U64(lapic_base_msr(a), lapic_base_msr(b));
	CHECK_EQ_U64(lapic_timer_next(a), lapic_timer_next(b));
	CHECK_EQ_U64(lapic_tsc_deadline_read(a), lapic_tsc_deadline_read(b));
	CHECK_EQ_U64((uint64_t)lapic_pending_irq(a), (uint64_t)lapic_pending_irq(b));
	CHECK_EQ_U64(lapic_ppr(a), lapic_ppr(b));
	CHECK(a->nmi_pending == b->nmi_pending && a->init_pending == b->init_pending);
	CHECK(a->sipi_pending == b->sipi_pending && a->sipi_vector == b->sipi_vector);
	for (uint32_t msr = LAPIC_X2APIC_MSR_FIRST; msr <= LAPIC_X2APIC_MSR_LAST; msr++) {
		uint64_t va = 0, vb = 0;
		bool ra = lapic_msr_read(a, msr, &va, now), rb = lapic_msr_read(b, msr, &vb, now);

		CHECK(ra == rb);
		if (va != vb)
			CHECK_EQ_U64(msr, 0); /* names the register */
	}
	for (unsigned off = 0; off < 0x400; off += 16)
		if (lapic_mmio_read(a, off, 4, now) != lapic_mmio_read(b, off, 4, now))
			CHECK_EQ_U64(off, 0x1000);
}

/* An AP's APIC (ID 5) with something in every part: x2APIC mode, TPR, a
 * periodic timer some periods in, IRR, ISR and TMR bits, an error logged, an
 * NMI pending. */
static void busy_apic(struct lapic *a, uint64_t *now)
{
	uint64_t t = 5000;

	setup_cpu(a, 5, false);
	CHECK(lapic_set_base_msr(a, LAPIC_DEFAULT_BASE | EN | EXTD, PHYS));
	CHECK(lapic_msr_write(a, 0x808, 0x21, t));                            /* TPR */
	CHECK(lapic_msr_write(a, 0x83e, 0x3, t));                             /* divide by 16 */
	CHECK(lapic_msr_write(a, 0x832, (LAPIC_TIMER_PERIODIC << 17) | 0x40, t));
	CHECK(lapic_msr_write(a, 0x837, 0xfe, t));                            /* error LVT */
	CHECK(lapic_msr_write(a, 0x835, LAPIC_LVT_LEVEL | 0x70, t));          /* LINT0 */
	CHECK(lapic_msr_write(a, 0x838, 1000, t));                            /* initial count */
	lapic_set_irq(a, 0x90, false);
	lapic_ack_irq(a, 0x90);                                               /* in service */
	lapic_set_irq(a, 0x50, true);                                         /* level, pending */
	lapic_lint(a, 0);                                                     /* LINT0 Remote IRR */
	lapic_set_irq(a, 3, false);                                           /* ESR: receive illegal */
	a->nmi_pending = true;
	t += 2500 * 32 + 7; /* 2.5 periods: 32 TSC cycles a count (2 GHz, 1 GHz bus, / 16) */
	lapic_timer_update(a, t);
	*now = t;
}

/* busy_apic's a and its copy b, alike at now, go on alike: the pending
 * vector, then timer expiries, acks and EOIs. */
static void check_same_future(struct lapic *a, struct lapic *b, uint64_t now)
{
	check_same_behaviour(a, b, now);
	CHECK_EQ_U64((uint64_t)lapic_pending_irq(b), 0xfe); /* the error LVT's, above 0x90 in service */
	for (int k = 0; k < 6; k++) {
		uint64_t next = lapic_timer_next(a);
		int v;

		CHECK(next > now);
		now = next;
		lapic_timer_update(a, now);
		lapic_timer_update(b, now);
		check_same_behaviour(a, b, now);
		if ((v = lapic_pending_irq(a)) >= 0) {
			lapic_ack_irq(a, (uint8_t)v);
			lapic_ack_irq(b, (uint8_t)v);
		}
		if (k & 1) {
			CHECK(lapic_msr_write(a, 0x80b, 0, now));
			CHECK(lapic_msr_write(b, 0x80b, 0, now));
		}
		check_same_behaviour(a, b, now);
	}
}

/* lapic_record's limits for vCPU `instance` of an 8-vCPU VM. */
static struct record_limits vcpu_limits(unsigned instance)
{
	return (struct record_limits){ .nr_vcpus = 8, .mem_bytes = 64 << 20, .phys_bits = PHYS,
				       .instance = instance };
}

static uint32_t record_save(struct lapic *a, uint8_t *buf, uint32_t len)
{
	struct field_io io = field_saver(buf, len);

	lapic_record.fields(a, &io);
	CHECK(!io.overrun);
	return io.pos;
}

/* As a restore takes a record: loaded into zeroes and checked against
 * lim; false with the refusal in err. */
static bool check_record_bytes(const uint8_t *buf, uint32_t len, struct record_limits lim, char *err,
			       size_t errlen)
{
	struct lapic l;
	struct field_io io = field_loader(buf, len);

	memset(&l, 0, sizeof l);
	lapic_record.fields(&l, &io);
	CHECK(!io.overrun && !io.bad && io.pos == len);
	return lapic_record.check(&l, &lim, err, errlen);
}

/* A restore's copy of an APIC: from's state into to (lapic_init'ed by the
 * loading VM), by the state record. */
static void copy_by_record(struct lapic *from, struct lapic *to)
{
	uint8_t buf[sizeof *from];
	uint32_t n = record_save(from, buf, sizeof buf);
	struct field_io io = field_loader(buf, n);
	char err[160] = "";

	CHECK(check_record_bytes(buf, n, vcpu_limits(from->initial_id), err, sizeof err));
	if (err[0])
		fprintf(stderr, "  refused: %s\n", err);
	lapic_record.fields(to, &io);
	CHECK(!io.overrun && !io.bad && io.pos == n);
}

TEST(lapic_record_round_trip_busy)
{
	struct lapic_bus bus = { 0 };
	struct lapic a, b;
	uint8_t s[sizeof a], s2[sizeof b];
	uint32_t n;
	uint64_t now;

	busy_apic(&a, &now);
	CHECK(a.timer_armed && a.timer_expiries == 2 && a.timer_fires == 1);
	lapic_init(&b, &bus, 5, false, 2000000);
	b.timer_fires = 77;
	copy_by_record(&a, &b);
	CHECK(b.bus == &bus && b.tsc_khz == 2000000 && b.timer_fires == 77 && bus.count == 1);
	n = record_save(&a, s, sizeof s);
	CHECK(record_save(&b, s2, sizeof s2) == n && memcmp(s, s2, n) == 0);
	check_same_future(&a, &b, now);
	CHECK_EQ_U64(b.timer_fires - 77, a.timer_fires - 1);
}

/* xAPIC with a changed ID, logical destination and an armed deadline */
TEST(lapic_record_round_trip_xapic_and_deadline)
{
	struct lapic a, b;

	setup_cpu(&a, 2, false);
	wr(&a, LAPIC_REG_ID, 0x07000000);
	wr(&a, LAPIC_REG_LDR, 0x41000000);
	wr(&a, LAPIC_REG_DFR, 0x0fffffff); /* cluster model */
	wr(&a, LAPIC_REG_ICR_HI, 0x03000000);
	wr(&a, LAPIC_REG_LVT_TIMER, (LAPIC_TIMER_TSC_DEADLINE << 17) | 0x41);
	lapic_tsc_deadline_write(&a, 90000, 100);
	lapic_init(&b, NULL, 2, false, 2000000);
	copy_by_record(&a, &b);
	check_same_behaviour(&a, &b, 200);
	CHECK_EQ_U64(lapic_timer_next(&b), 90000);
	lapic_timer_update(&b, 90000);
	CHECK(irr(&b, 0x41));
	CHECK(lapic_match_dest(&b, 0x43, true) && lapic_match_dest(&b, 7, false));
	CHECK(!lapic_match_dest(&b, 0x42, true) && !lapic_match_dest(&b, 2, false));
}

/* Case i: break one field of the busy x2APIC state or (*xapic) of an xAPIC
 * one; the reason; NULL past the last. *flag: instead of a field of a, the
 * record's byte of this flag, set to a value no bool holds: the reason is
 * the field the loader names. */
static const char *break_apic(unsigned i, struct lapic *a, bool *xapic, bool **flag)
{
	*xapic = false;
	*flag = NULL;
	switch (i) {
	case 0: a->apic_base |= 1; return "APIC base 0xfee00c01 sets reserved bits";
	case 1: a->apic_base |= 1u << 9; return "sets reserved bits";
	case 2: a->apic_base |= 1ull << PHYS; return "sets reserved bits (MAXPHYADDR 46)";
	case 3: a->apic_base &= ~(uint64_t)EN; return "x2APIC mode (EXTD) without EN";
	case 4: a->id = 6; return "x2APIC ID 0x6 is not the APIC's initial ID 0x5";
	case 5: a->ldr ^= 1u << 16; return "x2APIC LDR";
	case 6: a->tpr = 0x100; return "TPR 0x100 sets reserved bits";
	case 7: a->svr |= 1u << 12; return "SVR 0x11ff sets reserved bits";
	case 8: a->icr_lo |= 1u << 12; return "ICR 0x1000 sets reserved bits"; /* send pending: never here */
	case 9: a->icr_lo |= 1u << 20; return "ICR 0x100000 sets reserved bits";
	case 10: a->timer_divide = 4; return "timer divide configuration 0x4";
	case 11: a->dfr = 0xf0000000; return "DFR 0xf0000000";
	case 12: a->lvt[LAPIC_LVT_TIMER] |= 1u << 19; return "LVT timer";
	case 13: a->lvt[LAPIC_LVT_LINT0] |= 1u << 12; return "LVT LINT0";
	case 14: a->lvt[LAPIC_LVT_THERMAL] |= 1u << 13; return "LVT thermal";
	case 15: a->lvt[LAPIC_LVT_ERROR] |= 1u << 15; return "LVT error";
	case 16: a->svr &= ~LAPIC_SVR_ENABLE; return "unmasked while the APIC is software-disabled";
	case 17: a->esr = 1; return "ESR 0x1";
	case 18: a->esr_pending = 1u << 4; return "pending errors 0x10";
	case 19: a->isr[0] = 1u << 3; return "ISR holds vector 3";
	case 20: a->tmr[0] |= 1u << 15; return "TMR holds vector 15";
	case 21: a->irr[0] = 1; return "IRR holds vector 0";
	case 22: *flag = &a->timer_armed; return "timer_armed";
	case 23: a->nmi_pending = 3; return "3 NMIs pending, at most 2 wait";
	case 24: *flag = &a->init_pending; return "init_pending";
	case 25: *flag = &a->sipi_pending; return "sipi_pending";
	case 26: a->tsc_deadline = 5; return "TSC deadline 0x5 armed outside TSC-deadline mode";
	case 27: a->lvt[LAPIC_LVT_TIMER] = (LAPIC_TIMER_TSC_DEADLINE << 17) | 0x40; return "armed in timer mode 2";
	case 28: a->lvt[LAPIC_LVT_TIMER] |= 3u << 17; return "armed in timer mode 3";
	case 29: a->timer_first = 0; return "armed counting 0";
	case 30: a->timer_first = 1001; return "armed counting 1001, not 1 to its initial count 1000";
	case 31: a->timer_initial = 0; return "not 1 to its initial count 0";
	case 32: a->lvt[LAPIC_LVT_TIMER] &= ~(3u << 17); return "one-shot APIC timer still armed after 2 expiries";
	}
	*xapic = true;
	switch (i) {
	case 33: a->id |= 1; return "xAPIC ID 0x7000001 sets bits 23:0";
	case 34: a->ldr |= 0x100; return "xAPIC LDR 0x40000100";
	case 35: a->icr_hi = 0xff; return "xAPIC ICR destination 0xff";
	case 36: a->apic_base &= ~(uint64_t)EN; return "disabled (base 0xfee00000) but its registers are not at their power-on values";
	}
	return NULL;
}

/* An AP's APIC (ID 2) in xAPIC mode with a changed ID and LDR. */
static void xapic_apic(struct lapic *a)
{
	setup_cpu(a, 2, false);
	wr(a, LAPIC_REG_ID, 0x07000000);
	wr(a, LAPIC_REG_LDR, 0x40000000);
}

/* A refusal (ok false) whose reason has `want` (case i). */
static void check_refusal(bool ok, const char *err, const char *want, unsigned i)
{
	CHECK(!ok);
	if (!strstr(err, want))
		fprintf(stderr, "  case %u: '%s' lacks '%s'\n", i, err, want);
	CHECK(strstr(err, want) != NULL);
}

/* Where a's record (n bytes in buf) holds the flag *flag, a bool of a: the
 * one byte that saving it set rather than clear changes. */
static uint32_t flag_byte(struct lapic *a, bool *flag, uint8_t *buf, uint32_t n)
{
	uint8_t clear[sizeof *a];
	bool was = *flag;
	uint32_t at = n;

	*flag = !was;
	CHECK(record_save(a, clear, sizeof clear) == n);
	*flag = was;
	for (uint32_t i = 0; i < n; i++) {
		if (clear[i] != buf[i]) {
			CHECK(at == n); /* one byte only */
			at = i;
		}
	}
	CHECK(at < n && buf[at] == was && clear[at] == !was);
	return at < n ? at : 0;
}

/* A flag byte of 2 or 255 (case i) in a's record: the loader names the
 * flag and leaves it as it was. */
static void check_flag_refusal(struct lapic *a, bool *flag, const char *want, unsigned i)
{
	static const uint8_t bad[] = { 2, 0xff };
	size_t off = (size_t)((char *)flag - (char *)a);
	uint8_t buf[sizeof *a], held;
	uint32_t n = record_save(a, buf, sizeof buf), at = flag_byte(a, flag, buf, n);
	struct lapic l;
	struct field_io io;

	for (unsigned k = 0; k < sizeof bad; k++) {
		buf[at] = bad[k];
		memset(&l, 0, sizeof l);
		io = field_loader(buf, n);
		lapic_record.fields(&l, &io);
		check_refusal(!io.bad, io.bad ? io.bad : "", want, i);
		CHECK(!io.overrun && io.pos == n);
		memcpy(&held, (uint8_t *)&l + off, 1);
		CHECK(held == 0);
	}
}

/* Each broken field is refused by lapic_record's check (or, for a flag, by
 * its loader) with its reason. */
TEST(lapic_record_refuses_each_field)
{
	struct lapic busy, x, s;
	uint8_t buf[sizeof s];
	char err[160];
	uint64_t now;
	const char *reason;
	bool xapic, *flag;

	busy_apic(&busy, &now);
	REQUIRE(check_record_bytes(buf, record_save(&busy, buf, sizeof buf), vcpu_limits(5), err,
				   sizeof err));
	xapic_apic(&x);
	REQUIRE(check_record_bytes(buf, record_save(&x, buf, sizeof buf), vcpu_limits(2), err,
				   sizeof err));
	for (unsigned i = 0;; i++) {
		s = i >= 33 ? x : busy;
		if (!(reason = break_apic(i, &s, &xapic, &flag)))
			break;
		CHECK(xapic == (i >= 33));
		if (flag) {
			check_flag_refusal(&s, flag, reason, i);
			continue;
		}
		err[0] = 0;
		check_refusal(check_record_bytes(buf, record_save(&s, buf, sizeof buf),
						 vcpu_limits(s.initial_id), err, sizeof err),
			      err, reason, i);
	}
}

/* The record's own: the APIC is the loading vCPU's, and a short record
 * loads no more. */
TEST(lapic_record_refuses_another_vcpus_apic)
{
	struct lapic a;
	uint8_t buf[sizeof a];
	uint32_t n;
	char err[160] = "";
	uint64_t now;
	struct field_io io;

	busy_apic(&a, &now); /* vCPU 5's */
	n = record_save(&a, buf, sizeof buf);
	CHECK(check_record_bytes(buf, n, vcpu_limits(5), err, sizeof err));
	check_refusal(check_record_bytes(buf, n, vcpu_limits(4), err, sizeof err), err,
		      "APIC initial ID 0x5, this vCPU's is 0x4", 0);
	a.apic_base |= BSP;
	n = record_save(&a, buf, sizeof buf);
	check_refusal(check_record_bytes(buf, n, vcpu_limits(5), err, sizeof err), err,
		      "APIC base 0xfee00d00: the BSP flag belongs to APIC ID 0 alone", 1);
	lapic_init(&a, NULL, 0, false, 2000000);
	n = record_save(&a, buf, sizeof buf);
	check_refusal(check_record_bytes(buf, n, vcpu_limits(0), err, sizeof err), err,
		      "APIC base 0xfee00800: the BSP flag", 2);
	lapic_init(&a, NULL, 0, true, 2000000);
	n = record_save(&a, buf, sizeof buf);
	CHECK(check_record_bytes(buf, n, vcpu_limits(0), err, sizeof err));
	io = field_loader(buf, n - 1);
	lapic_record.fields(&a, &io);
	CHECK(io.overrun);
}

/* a's state passes the record's check (for a's vCPU). */
static bool state_passes(struct lapic *a, unsigned phys_bits, char *err, size_t len)
{
	uint8_t buf[sizeof *a];
	struct record_limits lim = vcpu_limits(a->initial_id);

	lim.phys_bits = phys_bits;
	return check_record_bytes(buf, record_save(a, buf, sizeof buf), lim, err, len);
}

/* What the model itself reaches passes: power-on, disabled (with a TPR from
 * CR8), the reserved timer mode written through MMIO, INIT, and a random walk
 * over the guest's and sprig's operations. */
TEST(lapic_record_passes_model_states)
{
	struct lapic a;
	char err[160] = "";
	struct rng rng = rng_seeded(12345);
	uint64_t now = 1000;

	lapic_init(&a, NULL, 9, false, 2000000);
	CHECK(state_passes(&a, PHYS, err, sizeof err));
	CHECK(state_passes(&a, 0, err, sizeof err));
	setup_cpu(&a, 9, false);
	CHECK(lapic_set_base_msr(&a, LAPIC_DEFAULT_BASE | EN | EXTD, PHYS));
	lapic_set_base_msr(&a, LAPIC_DEFAULT_BASE, PHYS);
	lapic_set_tpr(&a, 0x30);
	a.nmi_pending = true;
	CHECK(state_passes(&a, PHYS, err, sizeof err));
	setup_cpu(&a, 9, false);
	wr(&a, LAPIC_REG_LVT_TIMER, 3u << 17);
	CHECK_EQ_U64(rd(&a, LAPIC_REG_LVT_TIMER), 3u << 17);
	CHECK(state_passes(&a, PHYS, err, sizeof err));
	/* relocated near the top of a 46-bit space */
	CHECK(lapic_set_base_msr(&a, (1ull << PHYS) - 0x1000 + EN, PHYS));
	CHECK(state_passes(&a, PHYS, err, sizeof err));
	CHECK(!state_passes(&a, 40, err, sizeof err));

	setup_cpu(&a, 9, false);
	for (int step = 0; step < 200000; step++) {
		uint64_t x = rng_next(&rng);
		uint32_t r = (uint32_t)(x >> 33), val = (uint32_t)(x >> 5);

		now += r % 3000;
		switch (r % 13) {
		case 0: case 1: case 2:
			wr(&a, (r >> 8) % 0x40 * 16, val);
			break;
		case 3: case 4:
			lapic_msr_write(&a, 0x800 + (r >> 8) % 0x40, val, now);
			break;
		case 5:
			lapic_set_base_msr(&a, LAPIC_DEFAULT_BASE | state_bits[(r >> 8) % 3], PHYS);
			break;
		case 6:
			lapic_set_irq(&a, (uint8_t)val, val & 0x100);
			break;
		case 7: {
			int v = lapic_pending_irq(&a);
			if (v >= 0)
				lapic_ack_irq(&a, (uint8_t)v);
			break;
		}
		case 8:
			lapic_timer_update(&a, now);
			break;
		case 9:
			lapic_lint(&a, r >> 8 & 1);
			break;
		case 10:
			lapic_tsc_deadline_write(&a, now + val % 5000, now);
			break;
		case 11:
			if ((r >> 8) % 50 == 0)
				lapic_init_signal(&a);
			else if ((r >> 8) % 5 == 0)
				wr(&a, LAPIC_REG_SVR, 0x1ff); /* keep it enabled most of the time */
			else
				lapic_set_tpr(&a, val & 0xff);
			break;
		default: /* mostly small timer counts, so that they expire */
			wr(&a, LAPIC_REG_TIMER_INITIAL, val % 4000);
			lapic_msr_write(&a, 0x838, val % 4000, now);
			break;
		}
		if (!state_passes(&a, PHYS, err, sizeof err)) {
			fprintf(stderr, "  step %d refused: %s\n", step, err);
			CHECK(false);
			break;
		}
	}
}
