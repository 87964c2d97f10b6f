/* The local APIC's register file (lapic.h) and its two views, xAPIC MMIO and
 * x2APIC MSRs, after Intel SDM vol. 3A chapter 10; section numbers below are
 * that chapter's. Acceptance, EOI and reset are in lapic.c. */
#include "dev/lapic_internal.h"

#define LVT_DELIVERY_STATUS (1u << 12)   /* read-only: always idle here */
#define ICR_DELIVERY_STATUS (1u << 12)
#define ICR_LO_WRITABLE 0x000ccfffu      /* vector, mode, dest mode, level, trigger, shorthand */
#define TIMER_MODE_RESERVED 3u

/* ---- the register file ---- */

enum {
	REG_R = 1,          /* readable */
	REG_W = 2,          /* writable */
	REG_W_XAPIC = 4,    /* writable in xAPIC mode only (read-only in x2APIC) */
	REG_XAPIC_ONLY = 8, /* absent in x2APIC mode */
	REG_X2APIC_ONLY = 16,
};

struct reg_desc {
	uint16_t offset;
	uint8_t flags;
	uint32_t writable; /* bits a write sets */
	uint32_t readonly; /* defined, read-only bits: not reserved, writes keep them */
};

#define LVT_DESC(off, writable, readonly) { off, REG_R | REG_W, writable, readonly }

static const struct reg_desc reg_table[] = {
	{ LAPIC_REG_ID, REG_R | REG_W_XAPIC, 0xff000000u, 0 },
	{ LAPIC_REG_VERSION, REG_R, 0, 0 },
	{ LAPIC_REG_TPR, REG_R | REG_W, 0xff, 0 },
	{ LAPIC_REG_APR, REG_R | REG_XAPIC_ONLY, 0, 0 },
	{ LAPIC_REG_PPR, REG_R, 0, 0 },
	{ LAPIC_REG_EOI, REG_W, 0, 0 },
	{ LAPIC_REG_RRD, REG_R | REG_XAPIC_ONLY, 0, 0 },
	{ LAPIC_REG_LDR, REG_R | REG_W_XAPIC, 0xff000000u, 0 },
	{ LAPIC_REG_DFR, REG_R | REG_W | REG_XAPIC_ONLY, 0xf0000000u, 0 },
	{ LAPIC_REG_SVR, REG_R | REG_W, 0x3ff, 0 }, /* vector, enable, focus check */
	{ LAPIC_REG_ISR, REG_R, 0, 0 },
	{ LAPIC_REG_TMR, REG_R, 0, 0 },
	{ LAPIC_REG_IRR, REG_R, 0, 0 },
	{ LAPIC_REG_ESR, REG_R | REG_W, 0, 0 },
	{ LAPIC_REG_ICR_LO, REG_R | REG_W, ICR_LO_WRITABLE, ICR_DELIVERY_STATUS },
	{ LAPIC_REG_ICR_HI, REG_R | REG_W | REG_XAPIC_ONLY, 0xff000000u, 0 },
	LVT_DESC(LAPIC_REG_LVT_TIMER, 0x000700ffu, LVT_DELIVERY_STATUS),
	LVT_DESC(LAPIC_REG_LVT_THERMAL, 0x000107ffu, LVT_DELIVERY_STATUS),
	LVT_DESC(LAPIC_REG_LVT_PERF, 0x000107ffu, LVT_DELIVERY_STATUS),
	LVT_DESC(LAPIC_REG_LVT_LINT0, 0x0001a7ffu, LVT_DELIVERY_STATUS | LAPIC_LVT_REMOTE_IRR),
	LVT_DESC(LAPIC_REG_LVT_LINT1, 0x0001a7ffu, LVT_DELIVERY_STATUS | LAPIC_LVT_REMOTE_IRR),
	LVT_DESC(LAPIC_REG_LVT_ERROR, 0x000100ffu, LVT_DELIVERY_STATUS),
	{ LAPIC_REG_TIMER_INITIAL, REG_R | REG_W, 0xffffffffu, 0 },
	{ LAPIC_REG_TIMER_CURRENT, REG_R, 0, 0 },
	{ LAPIC_REG_TIMER_DIVIDE, REG_R | REG_W, 0xb, 0 },
	{ LAPIC_REG_SELF_IPI, REG_W | REG_X2APIC_ONLY, 0xff, 0 },
};

/* The register at a 16-byte-aligned offset in the current mode, or NULL when
 * the offset is reserved. ISR, TMR and IRR are one entry each. */
static const struct reg_desc *reg_find(const struct lapic *a, unsigned offset)
{
	bool x2apic = lapic_x2apic_mode(a);

	if (offset >= LAPIC_REG_ISR && offset < LAPIC_REG_ESR)
		offset = LAPIC_REG_ISR + (offset - LAPIC_REG_ISR) / 0x80 * 0x80;
	for (unsigned i = 0; i < sizeof reg_table / sizeof reg_table[0]; i++) {
		const struct reg_desc *d = &reg_table[i];

		if (d->offset != offset)
			continue;
		if ((x2apic && (d->flags & REG_XAPIC_ONLY)) || (!x2apic && (d->flags & REG_X2APIC_ONLY)))
			return NULL;
		return d;
	}
	return NULL;
}

/* The register at a 16-byte-aligned offset, whatever the mode. */
static const struct reg_desc *reg_desc_at(unsigned offset)
{
	for (unsigned i = 0; i < sizeof reg_table / sizeof reg_table[0]; i++)
		if (reg_table[i].offset == offset)
			return &reg_table[i];
	return NULL;
}

/* The bits a register can hold here: those writes set, and the read-only
 * ones the model sets itself (Remote IRR; delivery status is always idle). */
uint32_t reg_held_bits(unsigned offset)
{
	const struct reg_desc *d = reg_desc_at(offset);

	return d ? (d->writable | d->readonly) & ~LVT_DELIVERY_STATUS : 0;
}

static bool reg_writable(const struct lapic *a, const struct reg_desc *d)
{
	return (d->flags & REG_W) || ((d->flags & REG_W_XAPIC) && !lapic_x2apic_mode(a));
}

/* A register's value as read (write-only ones read 0 through MMIO). */
static uint32_t reg_read(struct lapic *a, unsigned offset, uint64_t now)
{
	if (offset >= LAPIC_REG_ISR && offset < LAPIC_REG_TMR)
		return a->isr[(offset - LAPIC_REG_ISR) / 16];
	if (offset >= LAPIC_REG_TMR && offset < LAPIC_REG_IRR)
		return a->tmr[(offset - LAPIC_REG_TMR) / 16];
	if (offset >= LAPIC_REG_IRR && offset < LAPIC_REG_ESR)
		return a->irr[(offset - LAPIC_REG_IRR) / 16];
	if (offset >= LAPIC_REG_LVT_TIMER && offset <= LAPIC_REG_LVT_ERROR)
		return a->lvt[(offset - LAPIC_REG_LVT_TIMER) / 16];
	switch (offset) {
	case LAPIC_REG_ID:
		return a->id;
	case LAPIC_REG_VERSION:
		return LAPIC_VERSION;
	case LAPIC_REG_TPR:
		return a->tpr;
	case LAPIC_REG_APR:
		return arbitration_priority(a);
	case LAPIC_REG_PPR:
		return lapic_ppr(a);
	case LAPIC_REG_LDR:
		return a->ldr;
	case LAPIC_REG_DFR:
		return a->dfr | DFR_RESERVED_ONES;
	case LAPIC_REG_SVR:
		return a->svr;
	case LAPIC_REG_ESR:
		return a->esr;
	case LAPIC_REG_ICR_LO:
		return a->icr_lo;
	case LAPIC_REG_ICR_HI:
		return a->icr_hi;
	case LAPIC_REG_TIMER_INITIAL:
		return a->timer_initial;
	case LAPIC_REG_TIMER_CURRENT:
		return timer_current_count(a, now);
	case LAPIC_REG_TIMER_DIVIDE:
		return a->timer_divide;
	default:
		return 0; /* EOI, RRD, SELF_IPI */
	}
}

static void write_svr(struct lapic *a, uint32_t val)
{
	a->svr = val;
	if (!(val & LAPIC_SVR_ENABLE)) /* 10.4.7.2: software disable masks every LVT */
		for (unsigned i = 0; i < LAPIC_LVT_COUNT; i++)
			a->lvt[i] |= LAPIC_LVT_MASKED;
}

static void write_lvt(struct lapic *a, unsigned index, uint32_t val, uint64_t now)
{
	if (!lapic_sw_enabled(a))
		val |= LAPIC_LVT_MASKED; /* can't unmask while software-disabled */
	if (index == LAPIC_LVT_TIMER)
		write_lvt_timer(a, val, now);
	else
		a->lvt[index] = val;
}

/* A write already checked against the mode: reserved bits dropped, the
 * read-only ones kept, then the register's side effect. */
static void reg_write(struct lapic *a, const struct reg_desc *d, uint32_t val, uint64_t now)
{
	unsigned offset = d->offset;

	val = (val & d->writable) | (reg_read(a, offset, now) & d->readonly);
	if (offset >= LAPIC_REG_LVT_TIMER && offset <= LAPIC_REG_LVT_ERROR) {
		write_lvt(a, (offset - LAPIC_REG_LVT_TIMER) / 16, val, now);
		return;
	}
	switch (offset) {
	case LAPIC_REG_ID:
		a->id = val;
		break;
	case LAPIC_REG_TPR:
		a->tpr = val;
		break;
	case LAPIC_REG_EOI:
		lapic_eoi(a);
		break;
	case LAPIC_REG_LDR:
		a->ldr = val;
		break;
	case LAPIC_REG_DFR:
		a->dfr = val | DFR_RESERVED_ONES;
		break;
	case LAPIC_REG_SVR:
		write_svr(a, val);
		break;
	case LAPIC_REG_ESR: /* 10.5.3: a write latches the errors seen since the last one */
		a->esr = a->esr_pending;
		a->esr_pending = 0;
		break;
	case LAPIC_REG_ICR_LO: /* xAPIC: the low half sends, to the high half's destination */
		a->icr_lo = val;
		send_ipi(a, val, a->icr_hi >> 24);
		break;
	case LAPIC_REG_ICR_HI:
		a->icr_hi = val;
		break;
	case LAPIC_REG_TIMER_INITIAL:
		write_timer_initial(a, val, now);
		break;
	case LAPIC_REG_TIMER_DIVIDE:
		write_timer_divide(a, val, now);
		break;
	case LAPIC_REG_SELF_IPI:
		send_self_ipi(a, val & 0xff);
		break;
	default:
		break;
	}
}

/* ---- xAPIC MMIO ---- */

static bool mmio_active(const struct lapic *a)
{
	return lapic_hw_enabled(a) && !lapic_x2apic_mode(a);
}

static uint32_t mmio_slot_read(struct lapic *a, unsigned slot, uint64_t now)
{
	if (!reg_find(a, slot)) {
		raise_error(a, LAPIC_ESR_ILLEGAL_REGISTER);
		return 0;
	}
	return reg_read(a, slot, now);
}

/* `bytes` under `mask` replace those bytes of the register; the rest come from
 * its current value, and the result is written as one 32-bit write. */
static void mmio_slot_write(struct lapic *a, unsigned slot, uint32_t bytes, uint32_t mask, uint64_t now)
{
	const struct reg_desc *d = reg_find(a, slot);
	uint32_t cur;

	if (!d) {
		raise_error(a, LAPIC_ESR_ILLEGAL_REGISTER);
		return;
	}
	if (!reg_writable(a, d))
		return; /* read-only: ignored */
	cur = mask == 0xffffffffu ? 0 : reg_read(a, slot, now);
	reg_write(a, d, (cur & ~mask) | bytes, now);
}

uint64_t lapic_mmio_read(struct lapic *a, unsigned offset, unsigned size, uint64_t now)
{
	uint64_t val = 0;
	unsigned cached_slot = ~0u;
	uint32_t reg = 0;

	if (!mmio_active(a) || size == 0 || size > 8)
		return 0;
	for (unsigned i = 0; i < size; i++) {
		unsigned at = offset + i;

		if (at >= 0x1000)
			break;
		if ((at & 15) >= 4)
			continue; /* padding after the register */
		if ((at & ~15u) != cached_slot) {
			cached_slot = at & ~15u;
			reg = mmio_slot_read(a, cached_slot, now);
		}
		val |= (uint64_t)((reg >> (8 * (at & 3))) & 0xff) << (8 * i);
	}
	return val;
}

void lapic_mmio_write(struct lapic *a, unsigned offset, unsigned size, uint64_t val, uint64_t now)
{
	unsigned i = 0;

	if (!mmio_active(a) || size == 0 || size > 8)
		return;
	while (i < size && offset + i < 0x1000) {
		unsigned slot = (offset + i) & ~15u;
		uint32_t bytes = 0, mask = 0;

		/* gather this slot's register bytes */
		for (; i < size && ((offset + i) & ~15u) == slot; i++) {
			unsigned byte = (offset + i) & 15;

			if (byte < 4) {
				bytes |= (uint32_t)((val >> (8 * i)) & 0xff) << (8 * byte);
				mask |= 0xffu << (8 * byte);
			}
		}
		if (mask)
			mmio_slot_write(a, slot, bytes, mask, now);
	}
}

/* ---- x2APIC MSRs (10.12.1.2, Table 10-6) ---- */

static const struct reg_desc *msr_reg(const struct lapic *a, uint32_t msr)
{
	if (!lapic_x2apic_mode(a) || msr < LAPIC_X2APIC_MSR_FIRST || msr > LAPIC_X2APIC_MSR_LAST)
		return NULL;
	return reg_find(a, (msr - LAPIC_X2APIC_MSR_FIRST) << 4);
}

bool lapic_msr_read(struct lapic *a, uint32_t msr, uint64_t *val, uint64_t now)
{
	const struct reg_desc *d = msr_reg(a, msr);

	if (!d || !(d->flags & REG_R))
		return false;
	if (d->offset == LAPIC_REG_ICR_LO)
		*val = (uint64_t)a->icr_hi << 32 | a->icr_lo;
	else /* the MSR's own offset: the ISR, TMR and IRR words share one entry */
		*val = reg_read(a, (msr - LAPIC_X2APIC_MSR_FIRST) << 4, now);
	return true;
}

/* ICR as one 64-bit MSR: destination in 63:32. Reserved bits 31:20, 17:16 and
 * 13 fault; the delivery-status bit 12 is ignored. */
static bool x2apic_icr_write(struct lapic *a, uint64_t val)
{
	uint32_t lo = (uint32_t)val;

	if (lo & ~(ICR_LO_WRITABLE | ICR_DELIVERY_STATUS))
		return false;
	a->icr_lo = lo & ICR_LO_WRITABLE;
	a->icr_hi = (uint32_t)(val >> 32);
	send_ipi(a, a->icr_lo, a->icr_hi);
	return true;
}

/* 10.12.1.3: a write with reserved bits set faults; that includes bits 63:32 of
 * every register but the ICR, any nonzero EOI or ESR value (no writable bits)
 * and the reserved timer mode 11b. */
bool lapic_msr_write(struct lapic *a, uint32_t msr, uint64_t val, uint64_t now)
{
	const struct reg_desc *d = msr_reg(a, msr);
	uint32_t v = (uint32_t)val;

	if (!d || !reg_writable(a, d))
		return false;
	if (d->offset == LAPIC_REG_ICR_LO)
		return x2apic_icr_write(a, val);
	if (val >> 32 || (v & ~(d->writable | d->readonly)))
		return false;
	if (d->offset == LAPIC_REG_LVT_TIMER && ((v >> LAPIC_TIMER_MODE_SHIFT) & 3) == TIMER_MODE_RESERVED)
		return false;
	reg_write(a, d, v, now);
	return true;
}
