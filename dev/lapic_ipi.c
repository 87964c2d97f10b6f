/* Local APIC interrupt messages (lapic.h; SDM vol. 3A 10.6, 10.12.9-10):
 * destination matching, delivery of one message to one APIC and of one
 * message over the lapic_bus (IPIs sent through the ICR, the I/O APIC's),
 * the NMIs waiting for the CPU, and the LINT pins. Apart from the
 * register file (lapic.c), which calls send_ipi and send_self_ipi
 * (lapic_internal.h). */
#include "dev/lapic_internal.h"

#define DFR_MODEL_FLAT 0xfu
#define X2APIC_BROADCAST 0xffffffffu
#define XAPIC_BROADCAST 0xffu

/* ---- NMIs ---- */

/* A CPU latches one NMI while it blocks NMIs (SDM vol. 3A 6.7.1, APM vol. 2
 * 8.2.5); others are lost. A hypervisor sees NMIs arrive later than the CPU
 * would: two sent close together (one from another CPU, one to itself,
 * say), which the CPU would have taken one after the other, can both arrive
 * before the vCPU enters again. So two wait while the CPU does not block
 * NMIs, one while it does (KVM's process_nmi does the same). */
static void nmi_arrived(struct lapic *a)
{
	if (a->nmi_pending < NMIS_PENDING_MAX)
		a->nmi_pending++;
}

bool lapic_nmi_pending(struct lapic *a, bool masked)
{
	if (masked && a->nmi_pending > 1)
		a->nmi_pending = 1;
	return a->nmi_pending != 0;
}

void lapic_ack_nmi(struct lapic *a)
{
	if (a->nmi_pending)
		a->nmi_pending--;
}

/* ---- IPIs and destinations (10.6, 10.12.9-10) ---- */

bool lapic_match_dest(const struct lapic *a, uint32_t dest, bool logical)
{
	uint32_t ldr;

	if (!lapic_hw_enabled(a))
		return false;
	if (dest == X2APIC_BROADCAST)
		return true;
	if (lapic_x2apic_mode(a)) {
		if (!logical)
			return dest == a->id;
		/* cluster in bits 31:16, one bit per member in 15:0 */
		return (dest >> 16) == (a->ldr >> 16) && (dest & a->ldr & 0xffff);
	}
	if (dest > XAPIC_BROADCAST)
		return false; /* an x2APIC-wide destination no 8-bit ID can hold */
	if (dest == XAPIC_BROADCAST)
		return true;
	if (!logical)
		return dest == a->id >> 24;
	ldr = a->ldr >> 24;
	if (a->dfr >> 28 == DFR_MODEL_FLAT)
		return (ldr & dest) != 0;
	/* cluster model: cluster in bits 7:4, member bitmap in 3:0 */
	return (ldr >> 4) == (dest >> 4) && (ldr & dest & 0xf);
}

bool lapic_deliver(struct lapic *to, enum lapic_delivery mode, uint8_t vector, bool level)
{
	switch (mode) {
	case LAPIC_DM_FIXED:
	case LAPIC_DM_LOWEST:
		return lapic_set_irq(to, vector, level);
	case LAPIC_DM_NMI:
		nmi_arrived(to);
		break;
	case LAPIC_DM_INIT:
		to->init_pending = true;
		break;
	case LAPIC_DM_SIPI:
		to->sipi_pending = true;
		to->sipi_vector = vector;
		break;
	default:
		return false; /* SMI, ExtINT and reserved modes: not modelled */
	}
	to->arrivals++;
	return true;
}

unsigned lapic_accept_start(struct lapic *a, bool *wait_sipi, uint8_t *vector)
{
	unsigned done = 0;

	if (a->init_pending) {
		/* A SIPI sent right after the INIT may have arrived with it:
		 * the reset keeps it, as KVM's does. */
		bool sipi = a->sipi_pending;

		lapic_init_signal(a);
		a->sipi_pending = sipi;
		*wait_sipi = !(a->apic_base & LAPIC_BASE_BSP);
		done |= LAPIC_ACCEPT_INIT;
	}
	if (a->sipi_pending) {
		a->sipi_pending = false;
		if (*wait_sipi) {
			*wait_sipi = false;
			*vector = a->sipi_vector;
			done |= LAPIC_ACCEPT_SIPI;
		}
	}
	return done;
}

/* Does a message reach `to`: by its shorthand (relative to the sender
 * `from`), or else by its destination? */
static bool ipi_targets(const struct lapic *from, const struct lapic *to, unsigned shorthand,
			uint32_t dest, bool logical)
{
	if (!lapic_hw_enabled(to))
		return false;
	switch (shorthand) {
	case LAPIC_DEST_SELF:
		return to == from;
	case LAPIC_DEST_ALL:
		return true;
	case LAPIC_DEST_OTHERS:
		return to != from;
	default:
		return lapic_match_dest(to, dest, logical);
	}
}

bool lapic_lower_priority(const struct lapic *x, const struct lapic *y)
{
	uint32_t px = arbitration_priority(x), py = arbitration_priority(y);

	return px < py || (px == py && lapic_id(x) < lapic_id(y));
}

unsigned lapic_bus_deliver(struct lapic_bus *bus, const struct apic_msg *m)
{
	struct lapic *const *apics = bus ? bus->apic : &m->from;
	unsigned count = bus ? bus->count : m->from != NULL, accepted = 0;
	struct lapic *lowest = NULL;

	for (unsigned i = 0; i < count; i++) {
		struct lapic *to = apics[i];

		if (!ipi_targets(m->from, to, m->shorthand, m->dest, m->logical))
			continue;
		if (m->mode != LAPIC_DM_LOWEST)
			accepted += lapic_deliver(to, m->mode, m->vector, m->level);
		else if (lapic_sw_enabled(to) && (!lowest || lapic_lower_priority(to, lowest)))
			lowest = to;
	}
	if (lowest)
		accepted += lapic_deliver(lowest, LAPIC_DM_FIXED, m->vector, m->level);
	return accepted;
}

void send_ipi(struct lapic *from, uint32_t icr, uint32_t dest)
{
	struct apic_msg m = {
		.dest = dest,
		.vector = icr & 0xff,
		.mode = (enum lapic_delivery)((icr >> 8) & 7),
		.logical = icr & LAPIC_ICR_LOGICAL,
		.level = icr & LAPIC_ICR_LEVEL,
		.shorthand = (icr >> LAPIC_ICR_SHORTHAND_SHIFT) & 3,
		.from = from,
	};

	if ((m.mode == LAPIC_DM_FIXED || m.mode == LAPIC_DM_LOWEST) && m.vector < 16) {
		raise_error(from, LAPIC_ESR_SEND_ILLEGAL_VECTOR);
		return;
	}
	if (m.mode == LAPIC_DM_INIT && m.level && !(icr & LAPIC_ICR_ASSERT))
		return; /* INIT level de-assert: nothing to do */
	if (!lapic_x2apic_mode(from) && dest == XAPIC_BROADCAST)
		m.dest = X2APIC_BROADCAST; /* reaches x2APIC-mode APICs too */
	from->ipis_sent++;
	lapic_bus_deliver(from->bus, &m);
}

void send_self_ipi(struct lapic *a, uint8_t vector)
{
	if (vector < 16)
		raise_error(a, LAPIC_ESR_SEND_ILLEGAL_VECTOR);
	else
		lapic_set_irq(a, vector, false);
}

void lapic_lint(struct lapic *a, unsigned pin)
{
	uint32_t *lvt;
	unsigned mode;
	uint8_t vector;
	bool level;

	if (pin > 1)
		return;
	if (!lapic_hw_enabled(a)) {
		/* 10.4.3: without the APIC, LINT1 is the NMI pin (LINT0, INTR: not modelled) */
		if (pin == 1)
			nmi_arrived(a);
		return;
	}
	lvt = &a->lvt[LAPIC_LVT_LINT0 + pin];
	if (*lvt & LAPIC_LVT_MASKED)
		return;
	mode = (*lvt >> 8) & 7;
	vector = *lvt & 0xff;
	level = mode == LAPIC_DM_FIXED && (*lvt & LAPIC_LVT_LEVEL); /* NMI, INIT: always edge */
	if (level) {
		if (*lvt & LAPIC_LVT_REMOTE_IRR)
			return; /* still in service */
		if (vector >= 16)
			*lvt |= LAPIC_LVT_REMOTE_IRR;
	}
	lapic_deliver(a, (enum lapic_delivery)mode, vector, level);
}
