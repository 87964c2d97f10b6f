/* The local APIC's state record lapic_record (lapic.h; snapshots and
 * clones, virt/vcpu_state.h): the one field list that saves and loads it,
 * and its check that a loaded state is one this model could hold. Apart from
 * the live model: it needs only the model's register bits and power-on
 * values (lapic_internal.h). */
#include "dev/lapic_internal.h"
#include "lib/print.h"
#include "lib/string.h"

/* ---- the state record ---- */

/* Saved: the whole architectural state (times are guest-TSC values: the
 * restored vCPU's TSC goes on from the saved one). Not saved: the bus, the
 * TSC rate, and the timer_fires and arrivals counters, which belong to the
 * loading VM. Checked (lapic_record_check): that the APIC is the loading
 * vCPU's (initial ID = its index, the BSP flag on vCPU 0's alone) and one
 * the model could hold. The flags load only as 0 or 1. */
static void lapic_fields(void *model, struct field_io *io)
{
	struct lapic *a = model;

	FIELD(io, a->apic_base);
	FIELD(io, a->initial_id);
	FIELD(io, a->id);
	FIELD(io, a->tpr);
	FIELD(io, a->ldr);
	FIELD(io, a->dfr);
	FIELD(io, a->svr);
	FIELD(io, a->isr);
	FIELD(io, a->tmr);
	FIELD(io, a->irr);
	FIELD(io, a->esr);
	FIELD(io, a->esr_pending);
	FIELD(io, a->icr_lo);
	FIELD(io, a->icr_hi);
	FIELD(io, a->lvt);
	FIELD(io, a->timer_initial);
	FIELD(io, a->timer_divide);
	FIELD(io, a->timer_base);
	FIELD(io, a->timer_expiries);
	FIELD(io, a->tsc_deadline);
	FIELD(io, a->timer_first);
	FIELD_BOOL(io, a->timer_armed);
	FIELD(io, a->nmi_pending);
	FIELD_BOOL(io, a->init_pending);
	FIELD_BOOL(io, a->sipi_pending);
	FIELD(io, a->sipi_vector);
}

/* ---- what a loaded state may hold ---- */

#define ESR_MODEL_BITS \
	(LAPIC_ESR_SEND_ILLEGAL_VECTOR | LAPIC_ESR_RECV_ILLEGAL_VECTOR | LAPIC_ESR_ILLEGAL_REGISTER)

static const char *const lvt_names[LAPIC_LVT_COUNT] = {
	"timer", "thermal", "perf", "LINT0", "LINT1", "error",
};

/* IA32_APIC_BASE, the IDs, LDR and the ICR destination per the mode. */
static bool check_mode(const struct lapic *a, unsigned phys_bits, char *err, size_t len)
{
	uint64_t base = a->apic_base;

	if (base & base_reserved(phys_bits)) {
		ksnprintf(err, len, "APIC base 0x%llx sets reserved bits (MAXPHYADDR %u)",
			  (unsigned long long)base, phys_bits);
		return false;
	}
	if ((base & LAPIC_BASE_EXTD) && !(base & LAPIC_BASE_EN)) {
		ksnprintf(err, len, "APIC base 0x%llx sets x2APIC mode (EXTD) without EN",
			  (unsigned long long)base);
		return false;
	}
	if ((base & LAPIC_BASE_EXTD)) {
		if (a->id != a->initial_id) {
			ksnprintf(err, len, "x2APIC ID 0x%x is not the APIC's initial ID 0x%x", a->id,
				  a->initial_id);
			return false;
		}
		if (a->ldr != x2apic_ldr(a->initial_id)) {
			ksnprintf(err, len, "x2APIC LDR 0x%x is not the one ID 0x%x derives (0x%x)",
				  a->ldr, a->initial_id, x2apic_ldr(a->initial_id));
			return false;
		}
		return true;
	}
	if (a->id & ~reg_held_bits(LAPIC_REG_ID)) {
		ksnprintf(err, len, "xAPIC ID 0x%x sets bits 23:0", a->id);
		return false;
	}
	if (a->ldr & ~reg_held_bits(LAPIC_REG_LDR)) {
		ksnprintf(err, len, "xAPIC LDR 0x%x sets bits 23:0", a->ldr);
		return false;
	}
	if (a->icr_hi & ~reg_held_bits(LAPIC_REG_ICR_HI)) {
		ksnprintf(err, len, "xAPIC ICR destination 0x%x sets bits 23:0", a->icr_hi);
		return false;
	}
	return true;
}

/* Reserved bits of the other registers, and vectors 0-15. */
static bool check_registers(const struct lapic *a, char *err, size_t len)
{
	static const struct {
		const char *name;
		unsigned offset;
		size_t field;
	} regs[] = {
		{ "TPR", LAPIC_REG_TPR, offsetof(struct lapic, tpr) },
		{ "SVR", LAPIC_REG_SVR, offsetof(struct lapic, svr) },
		{ "ICR", LAPIC_REG_ICR_LO, offsetof(struct lapic, icr_lo) },
		{ "timer divide configuration", LAPIC_REG_TIMER_DIVIDE,
		  offsetof(struct lapic, timer_divide) },
	};
	const struct {
		const char *name;
		const uint32_t *set;
	} vectors[] = { { "ISR", a->isr }, { "TMR", a->tmr }, { "IRR", a->irr } };

	for (unsigned i = 0; i < sizeof regs / sizeof regs[0]; i++) {
		uint32_t v;

		memcpy(&v, (const char *)a + regs[i].field, sizeof v);
		if (v & ~reg_held_bits(regs[i].offset)) {
			ksnprintf(err, len, "%s 0x%x sets reserved bits (0x%x)", regs[i].name, v,
				  v & ~reg_held_bits(regs[i].offset));
			return false;
		}
	}
	if ((a->dfr & DFR_RESERVED_ONES) != DFR_RESERVED_ONES) {
		ksnprintf(err, len, "DFR 0x%x: bits 27:0 are not all ones", a->dfr);
		return false;
	}
	for (unsigned i = 0; i < LAPIC_LVT_COUNT; i++) {
		uint32_t held = reg_held_bits(LAPIC_REG_LVT_TIMER + 16 * i);

		if (a->lvt[i] & ~held) {
			ksnprintf(err, len, "LVT %s 0x%x sets reserved bits (0x%x)", lvt_names[i],
				  a->lvt[i], a->lvt[i] & ~held);
			return false;
		}
		if (!(a->svr & LAPIC_SVR_ENABLE) && !(a->lvt[i] & LAPIC_LVT_MASKED)) {
			ksnprintf(err, len, "LVT %s 0x%x is unmasked while the APIC is software-disabled",
				  lvt_names[i], a->lvt[i]);
			return false;
		}
	}
	if ((a->esr | a->esr_pending) & ~ESR_MODEL_BITS) {
		ksnprintf(err, len, "ESR 0x%x or pending errors 0x%x beyond the ones this APIC reports (0x%x)",
			  a->esr, a->esr_pending, ESR_MODEL_BITS);
		return false;
	}
	for (unsigned i = 0; i < 3; i++) {
		if (vectors[i].set[0] & 0xffff) {
			ksnprintf(err, len, "%s holds vector %u (vectors 0-15 are illegal)", vectors[i].name,
				  (unsigned)__builtin_ctz(vectors[i].set[0] & 0xffff));
			return false;
		}
	}
	return true;
}

/* The timer: a state the model's timer could be in. */
static bool check_timer(const struct lapic *a, char *err, size_t len)
{
	unsigned mode = (a->lvt[LAPIC_LVT_TIMER] >> LAPIC_TIMER_MODE_SHIFT) & 3;

	if (a->tsc_deadline && mode != LAPIC_TIMER_TSC_DEADLINE) {
		ksnprintf(err, len, "APIC TSC deadline 0x%llx armed outside TSC-deadline mode (timer mode %u)",
			  (unsigned long long)a->tsc_deadline, mode);
		return false;
	}
	if (!a->timer_armed)
		return true;
	if (mode != LAPIC_TIMER_ONESHOT && mode != LAPIC_TIMER_PERIODIC) {
		ksnprintf(err, len, "APIC timer armed in timer mode %u (not one-shot or periodic)", mode);
		return false;
	}
	if (!a->timer_first || a->timer_first > a->timer_initial) {
		ksnprintf(err, len, "APIC timer armed counting %u, not 1 to its initial count %u",
			  a->timer_first, a->timer_initial);
		return false;
	}
	if (mode == LAPIC_TIMER_ONESHOT && a->timer_expiries) {
		ksnprintf(err, len, "one-shot APIC timer still armed after %llu expiries",
			  (unsigned long long)a->timer_expiries);
		return false;
	}
	return true;
}

/* The bytes a's field list saves: two APICs hold the same state when these
 * are the same. */
static uint32_t saved_bytes(const struct lapic *a, uint8_t *buf, uint32_t len)
{
	struct field_io io = field_saver(buf, len);

	lapic_fields((void *)(uintptr_t)a, &io);
	return io.pos;
}

/* A hardware-disabled APIC holds its power-on registers (leaving the enabled
 * state resets them, and nothing reaches them until it is enabled again) but
 * for the TPR, which CR8 writes reach; ID initial_id << 24. */
static bool check_disabled(const struct lapic *a, char *err, size_t len)
{
	struct lapic reset;
	uint8_t want[sizeof reset], have[sizeof reset];
	uint32_t n;

	if (a->apic_base & LAPIC_BASE_EN)
		return true;
	memcpy(&reset, a, sizeof reset);
	reset_registers(&reset);
	reset.id = a->initial_id << 24;
	reset.tpr = a->tpr;
	n = saved_bytes(&reset, want, sizeof want);
	if (saved_bytes(a, have, sizeof have) != n || memcmp(want, have, n) != 0) {
		ksnprintf(err, len, "the APIC is disabled (base 0x%llx) but its registers are not at their power-on values",
			  (unsigned long long)a->apic_base);
		return false;
	}
	return true;
}

/* The record's check: would a real APIC (this model) hold the loaded state,
 * as the loading vCPU's APIC, on a CPU of lim->phys_bits physical address
 * bits (0: 52)? False with the field and the reason. */
static bool lapic_record_check(const void *model, const struct record_limits *lim, char *err,
			       size_t errlen)
{
	const struct lapic *a = model;

	if (a->initial_id != lim->instance) {
		ksnprintf(err, errlen, "APIC initial ID 0x%x, this vCPU's is 0x%x", a->initial_id,
			  lim->instance);
		return false;
	}
	/* IA32_APIC_BASE.BSP is read-only: vCPU 0's APIC alone has it. */
	if (!(a->apic_base & LAPIC_BASE_BSP) != (lim->instance != 0)) {
		ksnprintf(err, errlen, "APIC base 0x%llx: the BSP flag belongs to APIC ID 0 alone",
			  (unsigned long long)a->apic_base);
		return false;
	}
	if (a->nmi_pending > NMIS_PENDING_MAX) {
		ksnprintf(err, errlen, "%u NMIs pending, at most %u wait", a->nmi_pending,
			  NMIS_PENDING_MAX);
		return false;
	}
	return check_mode(a, lim->phys_bits, err, errlen) && check_registers(a, err, errlen) &&
	       check_timer(a, err, errlen) && check_disabled(a, err, errlen);
}

const struct record_type lapic_record = {
	.id = REC_LAPIC,
	.version = 1,
	.per_vcpu = true,
	.name = "lapic",
	.model_bytes = sizeof(struct lapic),
	.fields = lapic_fields,
	.check = lapic_record_check,
};
