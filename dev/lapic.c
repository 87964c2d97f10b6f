/* The local APIC model (lapic.h): vector sets, priorities, interrupt
 * acceptance and EOI, reset and IA32_APIC_BASE, after Intel SDM vol. 3A
 * chapter 10. Section numbers below are that chapter's. The register file and
 * its MMIO and MSR views are in lapic_regs.c, the timer in lapic_timer.c, IPIs
 * and LINT in lapic_ipi.c, saved state in lapic_state.c; what they share is
 * declared in lapic_internal.h. */
#include "dev/lapic_internal.h"
#include "lib/string.h"

#define MAX_PHYS_BITS 52

/* ---- 256-bit vector sets (IRR, ISR, TMR) ---- */

static bool vec_test(const uint32_t *set, unsigned v)
{
	return (set[v / 32] >> (v % 32)) & 1;
}

static void vec_set(uint32_t *set, unsigned v)
{
	set[v / 32] |= 1u << (v % 32);
}

static void vec_clear(uint32_t *set, unsigned v)
{
	set[v / 32] &= ~(1u << (v % 32));
}

static int vec_highest(const uint32_t *set)
{
	for (int w = 7; w >= 0; w--)
		if (set[w])
			return w * 32 + 31 - __builtin_clz(set[w]);
	return -1;
}

/* The priority class of a vector (bits 7:4); no vector (-1) is class 0. */
static unsigned class_of(int vector)
{
	return vector < 0 ? 0 : (unsigned)vector >> 4;
}

/* ---- state queries ---- */

bool lapic_hw_enabled(const struct lapic *a)
{
	return a->apic_base & LAPIC_BASE_EN;
}

bool lapic_x2apic_mode(const struct lapic *a)
{
	return (a->apic_base & (LAPIC_BASE_EN | LAPIC_BASE_EXTD)) == (LAPIC_BASE_EN | LAPIC_BASE_EXTD);
}

bool lapic_sw_enabled(const struct lapic *a)
{
	return lapic_hw_enabled(a) && (a->svr & LAPIC_SVR_ENABLE);
}

uint32_t lapic_id(const struct lapic *a)
{
	return lapic_x2apic_mode(a) ? a->id : a->id >> 24;
}

uint64_t lapic_base_msr(const struct lapic *a)
{
	return a->apic_base;
}

bool lapic_mmio_page(const struct lapic *a, uint64_t *base)
{
	if (!lapic_hw_enabled(a) || lapic_x2apic_mode(a))
		return false;
	*base = a->apic_base & ~0xfffull;
	return true;
}

uint32_t lapic_tpr(const struct lapic *a)
{
	return a->tpr;
}

void lapic_set_tpr(struct lapic *a, uint32_t tpr)
{
	a->tpr = tpr & 0xff;
}

/* 10.8.3.1: the ISR's class takes over when it is above the TPR's. */
uint32_t lapic_ppr(const struct lapic *a)
{
	unsigned isr_class = class_of(vec_highest(a->isr));

	if ((a->tpr >> 4) >= isr_class)
		return a->tpr;
	return isr_class << 4;
}

/* 10.6.2.4 (APR): the TPR when it is at or above every pending and in-service
 * class, else the highest of the three classes. Used for lowest-priority
 * arbitration and read at 0x90. */
uint32_t arbitration_priority(const struct lapic *a)
{
	unsigned tpr_class = a->tpr >> 4;
	unsigned isr_class = class_of(vec_highest(a->isr));
	unsigned irr_class = class_of(vec_highest(a->irr));
	unsigned top = tpr_class;

	if (tpr_class >= irr_class && tpr_class > isr_class)
		return a->tpr;
	if (isr_class > top)
		top = isr_class;
	if (irr_class > top)
		top = irr_class;
	return top << 4;
}

/* ---- interrupt acceptance ---- */

static void accept_fixed(struct lapic *a, uint8_t vector, bool level)
{
	if (!lapic_sw_enabled(a))
		return; /* a software-disabled APIC takes no fixed interrupts (10.4.7.2) */
	vec_set(a->irr, vector);
	if (level)
		vec_set(a->tmr, vector);
	else
		vec_clear(a->tmr, vector);
}

/* 10.5.3: record errors; the LVT error entry signals each new one. */
void raise_error(struct lapic *a, uint32_t bits)
{
	uint32_t fresh = bits & ~a->esr_pending;
	uint32_t lvt = a->lvt[LAPIC_LVT_ERROR];

	a->esr_pending |= bits;
	/* An illegal error vector would raise another error: drop it instead. */
	if (fresh && !(lvt & LAPIC_LVT_MASKED) && (lvt & 0xff) >= 16)
		accept_fixed(a, lvt & 0xff, false);
}

bool lapic_set_irq(struct lapic *a, uint8_t vector, bool level)
{
	if (!lapic_sw_enabled(a))
		return false;
	if (vector < 16) {
		raise_error(a, LAPIC_ESR_RECV_ILLEGAL_VECTOR);
		return false;
	}
	accept_fixed(a, vector, level);
	a->arrivals++;
	return true;
}

int lapic_pending_irq(const struct lapic *a)
{
	int vector;

	if (!lapic_hw_enabled(a))
		return -1;
	vector = vec_highest(a->irr);
	if (vector < 0 || class_of(vector) <= lapic_ppr(a) >> 4)
		return -1;
	return vector;
}

void lapic_ack_irq(struct lapic *a, uint8_t vector)
{
	if (!vec_test(a->irr, vector))
		return;
	vec_clear(a->irr, vector);
	vec_set(a->isr, vector);
}

bool lapic_eoi_is_plain(const struct lapic *a)
{
	unsigned in_service = 0;

	for (unsigned w = 0; w < 8; w++)
		in_service += (unsigned)__builtin_popcount(a->isr[w]);
	if (in_service != 1 || vec_highest(a->irr) >= 0)
		return false;
	return !vec_test(a->tmr, (unsigned)vec_highest(a->isr));
}

/* A level-triggered LINT interrupt is in service until its EOI (Remote IRR). */
static void lint_eoi(struct lapic *a, unsigned vector)
{
	for (unsigned i = LAPIC_LVT_LINT0; i <= LAPIC_LVT_LINT1; i++)
		if ((a->lvt[i] & 0xff) == vector)
			a->lvt[i] &= ~LAPIC_LVT_REMOTE_IRR;
}

/* 10.8.5: EOI retires the highest in-service vector. */
void lapic_eoi(struct lapic *a)
{
	int vector = vec_highest(a->isr);

	if (vector < 0)
		return;
	vec_clear(a->isr, vector);
	/* The TMR bit stays: the next acceptance of the vector sets or clears
	 * it (10.8.4). */
	if (vec_test(a->tmr, vector)) {
		lint_eoi(a, vector);
		/* 10.8.5: a level-triggered EOI is broadcast to the I/O APICs, which
		 * clear Remote IRR in their entries with this vector. */
		if (a->bus && a->bus->level_eoi)
			a->bus->level_eoi(a->bus->level_eoi_ctx, (uint8_t)vector);
	}
}

/* ---- reset and IA32_APIC_BASE ---- */

/* 10.4.7.1: the power-on register values (ID and IA32_APIC_BASE aside). */
void reset_registers(struct lapic *a)
{
	a->tpr = 0;
	a->ldr = 0;
	a->dfr = 0xffffffffu;
	a->svr = 0xff;
	memset(a->isr, 0, sizeof a->isr);
	memset(a->tmr, 0, sizeof a->tmr);
	memset(a->irr, 0, sizeof a->irr);
	a->esr = a->esr_pending = 0;
	a->icr_lo = a->icr_hi = 0;
	for (unsigned i = 0; i < LAPIC_LVT_COUNT; i++)
		a->lvt[i] = LAPIC_LVT_MASKED;
	a->timer_initial = a->timer_divide = 0;
	a->timer_first = 0;
	a->timer_base = a->timer_expiries = 0;
	timer_disarm(a);
}

/* 10.12.10.2: the logical x2APIC ID, derived from the x2APIC ID. */
uint32_t x2apic_ldr(uint32_t id)
{
	return ((id >> 4) << 16) | (1u << (id & 0xf));
}

static void enter_x2apic(struct lapic *a)
{
	a->id = a->initial_id;
	a->ldr = x2apic_ldr(a->initial_id);
}

void lapic_init(struct lapic *a, struct lapic_bus *bus, uint32_t apic_id, bool bsp, uint64_t tsc_khz)
{
	memset(a, 0, sizeof *a);
	a->bus = bus;
	a->tsc_khz = tsc_khz;
	a->initial_id = apic_id;
	a->apic_base = LAPIC_DEFAULT_BASE | LAPIC_BASE_EN | (bsp ? LAPIC_BASE_BSP : 0);
	reset_registers(a);
	a->id = apic_id << 24;
	if (bus && bus->count < LAPIC_BUS_MAX)
		bus->apic[bus->count++] = a;
}

void lapic_init_signal(struct lapic *a)
{
	uint32_t id = a->id;

	reset_registers(a);
	a->id = id;
	if (lapic_x2apic_mode(a))
		a->ldr = x2apic_ldr(a->initial_id);
	a->nmi_pending = a->sipi_pending = false;
	a->init_pending = false;
}

/* 10.12.5, Figure 10-27: the valid transitions are disabled <-> xAPIC,
 * xAPIC -> x2APIC, x2APIC -> disabled, and any state to itself (relocating the
 * base). EXTD without EN is invalid. BSP is read-only: written values of it are
 * ignored. */
/* IA32_APIC_BASE's reserved bits on a CPU of phys_bits (0 or above 52: 52):
 * 0-7, 9, and the address bits from phys_bits up. */
uint64_t base_reserved(unsigned phys_bits)
{
	if (phys_bits == 0 || phys_bits > MAX_PHYS_BITS)
		phys_bits = MAX_PHYS_BITS;
	return 0xffull | (1ull << 9) | (~0ull << phys_bits);
}

bool lapic_set_base_msr(struct lapic *a, uint64_t val, unsigned phys_bits)
{
	bool enable = val & LAPIC_BASE_EN, extd = val & LAPIC_BASE_EXTD;
	bool was_enabled = lapic_hw_enabled(a), was_x2apic = lapic_x2apic_mode(a);

	if (val & base_reserved(phys_bits))
		return false;
	if (extd && !enable)
		return false;
	if (was_x2apic && enable && !extd)
		return false; /* x2APIC -> xAPIC must pass through disabled */
	if (!was_enabled && extd)
		return false; /* disabled -> x2APIC must pass through xAPIC */

	a->apic_base = (val & ~LAPIC_BASE_BSP) | (a->apic_base & LAPIC_BASE_BSP);
	if (was_enabled && !enable) {
		reset_registers(a); /* leaving the enabled state resets the APIC */
		a->id = a->initial_id << 24;
	} else if (!was_x2apic && extd) {
		enter_x2apic(a);
	}
	return true;
}
