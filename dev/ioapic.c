/* The I/O APIC model (ioapic.h), after the Intel 82093AA datasheet (register
 * descriptions) and the ICH IOxAPIC's EOI register; routing of messages per
 * the Intel SDM vol. 3A 10.6 (destinations) and 10.8.5 (EOI). */
#include "dev/ioapic.h"
#include "dev/lapic.h"
#include "lib/print.h"
#include "lib/string.h"

#define ID_SHIFT 24
#define ID_MASK 0xfu
#define RTE_READONLY (IOAPIC_RTE_DELIVS | IOAPIC_RTE_REMOTE_IRR)
#define XAPIC_BROADCAST 0xffu
#define X2APIC_BROADCAST 0xffffffffu

void ioapic_init(struct ioapic *io, struct lapic_bus *bus)
{
	memset(io, 0, sizeof *io);
	io->bus = bus;
	for (unsigned i = 0; i < IOAPIC_PINS; i++)
		io->redir[i] = IOAPIC_RTE_MASKED;
}

static unsigned rte_mode(uint64_t e)
{
	return (e >> IOAPIC_RTE_MODE_SHIFT) & 7;
}

/* Level-triggered in effect: NMI, INIT, SMI and ExtINT are edge whatever the
 * trigger mode bit says (82093AA, IOREDTBL "Delivery Mode"). */
static bool rte_level(uint64_t e)
{
	unsigned mode = rte_mode(e);

	return (e & IOAPIC_RTE_LEVEL) && (mode == LAPIC_DM_FIXED || mode == LAPIC_DM_LOWEST);
}

/* Send pin's interrupt message to the APICs its entry names. */
static void send(struct ioapic *io, unsigned pin)
{
	uint64_t e = io->redir[pin];
	struct apic_msg m = {
		.dest = (uint32_t)(e >> IOAPIC_RTE_DEST_SHIFT),
		.vector = e & IOAPIC_RTE_VECTOR,
		.mode = (enum lapic_delivery)rte_mode(e),
		.logical = e & IOAPIC_RTE_LOGICAL,
		.level = rte_level(e),
	};

	if (m.mode == LAPIC_DM_SMI || m.mode == LAPIC_DM_EXTINT || m.mode == LAPIC_DM_SIPI ||
	    m.mode == 3)
		return; /* not modelled (SMI, ExtINT) or reserved (3, 6): nothing is sent */
	io->delivered[pin]++;
	if (m.level)
		io->redir[pin] |= IOAPIC_RTE_REMOTE_IRR; /* until the EOI */
	/* An 8-bit all-ones destination is broadcast, x2APIC-mode APICs included. */
	if (m.dest == XAPIC_BROADCAST)
		m.dest = X2APIC_BROADCAST;
	lapic_bus_deliver(io->bus, &m);
}

/* A level-triggered pin sends while asserted, unmasked and not in service. */
static void service_level(struct ioapic *io, unsigned pin)
{
	uint64_t e = io->redir[pin];

	if (rte_level(e) && (io->line >> pin & 1) && !(e & (IOAPIC_RTE_MASKED | IOAPIC_RTE_REMOTE_IRR)))
		send(io, pin);
}

void ioapic_set_irq(struct ioapic *io, unsigned pin, bool level)
{
	uint32_t bit;
	bool was;

	if (pin >= IOAPIC_PINS)
		return;
	bit = 1u << pin;
	was = io->line & bit;
	if (level)
		io->line |= bit;
	else
		io->line &= ~bit;
	if (rte_level(io->redir[pin]))
		service_level(io, pin);
	else if (level && !was && !(io->redir[pin] & IOAPIC_RTE_MASKED))
		send(io, pin); /* a rising edge; on a masked pin it is lost */
}

void ioapic_eoi(struct ioapic *io, uint8_t vector)
{
	for (unsigned pin = 0; pin < IOAPIC_PINS; pin++) {
		uint64_t e = io->redir[pin];

		if ((e & IOAPIC_RTE_VECTOR) != vector || !(e & IOAPIC_RTE_LEVEL) ||
		    !(e & IOAPIC_RTE_REMOTE_IRR))
			continue;
		io->redir[pin] = e & ~IOAPIC_RTE_REMOTE_IRR;
		service_level(io, pin); /* still asserted: in again */
	}
}

void ioapic_level_eoi(void *ctx, uint8_t vector)
{
	ioapic_eoi(ctx, vector);
}

/* ---- registers ---- */

/* The redirection entry IOREGSEL names: its index, or -1. */
static int redir_index(uint8_t regsel)
{
	if (regsel < IOAPIC_REG_REDTBL || regsel >= IOAPIC_REG_REDTBL + 2 * IOAPIC_PINS)
		return -1;
	return (regsel - IOAPIC_REG_REDTBL) / 2;
}

static uint32_t reg_read(const struct ioapic *io)
{
	int n;

	switch (io->regsel) {
	case IOAPIC_REG_ID:
	case IOAPIC_REG_ARB: /* the arbitration ID is loaded from the ID (as QEMU) */
		return (uint32_t)io->id << ID_SHIFT;
	case IOAPIC_REG_VERSION:
		return IOAPIC_VERSION;
	default:
		n = redir_index(io->regsel);
		if (n < 0)
			return 0; /* no register */
		return io->regsel & 1 ? (uint32_t)(io->redir[n] >> 32) : (uint32_t)io->redir[n];
	}
}

static void reg_write(struct ioapic *io, uint32_t val)
{
	uint64_t e, keep;
	int n;

	switch (io->regsel) {
	case IOAPIC_REG_ID:
		io->id = (val >> ID_SHIFT) & ID_MASK;
		return;
	case IOAPIC_REG_VERSION:
	case IOAPIC_REG_ARB:
		return; /* read-only */
	}
	n = redir_index(io->regsel);
	if (n < 0)
		return;
	e = io->redir[n];
	keep = e & RTE_READONLY;
	if (io->regsel & 1)
		e = (e & 0xffffffffull) | (uint64_t)val << 32;
	else
		e = (e & ~0xffffffffull) | val;
	e = (e & ~RTE_READONLY) | keep;
	/* An edge entry has no remote IRR: Linux EOIs an I/O APIC without the EOI
	 * register by flipping the (masked) entry to edge and back (as QEMU, KVM). */
	if (!(e & IOAPIC_RTE_LEVEL))
		e &= ~IOAPIC_RTE_REMOTE_IRR;
	io->redir[n] = e;
	/* Unmasked, or made level, while asserted: a level pin sends now. */
	service_level(io, (unsigned)n);
}

uint32_t ioapic_mmio_read(struct ioapic *io, unsigned offset, unsigned size)
{
	switch (offset & 0xff) {
	case IOAPIC_IOREGSEL:
		return size == 1 || size == 2 || size == 4 || size == 8 ? io->regsel : 0;
	case IOAPIC_IOWIN:
		return size == 4 || size == 8 ? reg_read(io) : 0;
	default:
		return 0; /* EOI is write-only; nothing else decodes */
	}
}

void ioapic_mmio_write(struct ioapic *io, unsigned offset, unsigned size, uint32_t val)
{
	bool dword = size == 4 || size == 8;

	switch (offset & 0xff) {
	case IOAPIC_IOREGSEL:
		if (size == 1 || size == 2 || dword)
			io->regsel = (uint8_t)val;
		break;
	case IOAPIC_IOWIN:
		if (dword)
			reg_write(io, val);
		break;
	case IOAPIC_EOI:
		if (dword)
			ioapic_eoi(io, (uint8_t)val);
		break;
	default:
		break;
	}
}

/* ---- state record ----
 *
 * Saved: the ID, IOREGSEL, the redirection table (remote IRR included) and
 * the pins' levels. Not saved: the lapic_bus (the loading VM's) and the
 * delivered counts (statistics).
 * Checked: the ID's 4 bits, pins that do not exist, the read-only bits no
 * write sets (delivery status; remote IRR on an edge entry), and a level
 * pin asserted, unmasked and not in service: it would have been sent, and
 * restored so it would wait for an EOI that never comes. */
static void ioapic_fields(void *model, struct field_io *io)
{
	struct ioapic *a = model;

	FIELD(io, a->id);
	FIELD(io, a->regsel);
	FIELD(io, a->redir);
	FIELD(io, a->line);
}

static bool ioapic_state_check(const void *model, const struct record_limits *lim, char *err, size_t errlen)
{
	const struct ioapic *a = model;

	(void)lim;
	if (a->id > ID_MASK) {
		ksnprintf(err, errlen, "id 0x%x is wider than 4 bits", a->id);
		return false;
	}
	if (a->line >> IOAPIC_PINS) {
		ksnprintf(err, errlen, "line 0x%x asserts pins above %u", a->line, IOAPIC_PINS - 1);
		return false;
	}
	for (unsigned pin = 0; pin < IOAPIC_PINS; pin++) {
		uint64_t e = a->redir[pin];

		if (e & IOAPIC_RTE_DELIVS)
			ksnprintf(err, errlen, "redir[%u] 0x%llx sets the delivery status", pin, (unsigned long long)e);
		else if ((e & IOAPIC_RTE_REMOTE_IRR) && !(e & IOAPIC_RTE_LEVEL))
			ksnprintf(err, errlen, "redir[%u] 0x%llx sets remote IRR in an edge entry", pin,
				  (unsigned long long)e);
		else if (rte_level(e) && (a->line >> pin & 1) &&
			 !(e & (IOAPIC_RTE_MASKED | IOAPIC_RTE_REMOTE_IRR)))
			ksnprintf(err, errlen, "redir[%u] 0x%llx: pin asserted and unmasked, but not sent (no remote IRR)",
				  pin, (unsigned long long)e);
		else
			continue;
		return false;
	}
	return true;
}

const struct record_type ioapic_record = {
	.id = REC_IOAPIC,
	.version = 1,
	.name = "ioapic",
	.model_bytes = sizeof(struct ioapic),
	.fields = ioapic_fields,
	.check = ioapic_state_check,
};
