/* The 16550A UART model: see dev/uart16550.h for the choices. */
#include "dev/uart16550.h"
#include "lib/print.h"

#define IER_BITS 0x0f
#define MCR_BITS 0x1f
#define MSR_DELTAS 0x0f

static const uint8_t trigger_bytes[4] = { 1, 4, 8, 14 };

static unsigned rx_capacity(const struct uart16550 *u)
{
	return u->fifos ? UART16550_FIFO_BYTES : 1;
}

static unsigned rx_trigger(const struct uart16550 *u)
{
	return u->fifos ? trigger_bytes[u->fcr_trigger & 3] : 1;
}

/* The modem inputs as MSR bits 7:4: a ready terminal, or in loopback the
 * modem outputs wired back. */
static uint8_t modem_inputs(const struct uart16550 *u)
{
	if (!(u->mcr & UART_MCR_LOOP))
		return UART_MSR_DCD | UART_MSR_DSR | UART_MSR_CTS;
	return (u->mcr & UART_MCR_RTS ? UART_MSR_CTS : 0) |
	       (u->mcr & UART_MCR_DTR ? UART_MSR_DSR : 0) |
	       (u->mcr & UART_MCR_OUT1 ? UART_MSR_RI : 0) |
	       (u->mcr & UART_MCR_OUT2 ? UART_MSR_DCD : 0);
}

/* The highest-priority interrupt the IER lets through, as IIR bits 3:0. */
static uint8_t pending_id(const struct uart16550 *u)
{
	if ((u->ier & UART_IER_RLS) && u->overrun)
		return UART_IIR_RLS;
	if (u->ier & UART_IER_RDA) {
		if (u->rx_count >= rx_trigger(u))
			return UART_IIR_RDA;
		if (u->fifos && u->rx_count && u->rx_idle)
			return UART_IIR_TIMEOUT;
	}
	if ((u->ier & UART_IER_THRE) && u->thre_pending)
		return UART_IIR_THRE;
	if ((u->ier & UART_IER_MS) && u->msr_deltas)
		return UART_IIR_MS;
	return UART_IIR_NONE;
}

static void rx_clear(struct uart16550 *u)
{
	u->rx_head = 0;
	u->rx_count = 0;
}

static uint8_t rx_pop(struct uart16550 *u)
{
	uint8_t c;

	if (!u->rx_count)
		return 0; /* an empty RBR reads as it was left; 0 here */
	c = u->rx[u->rx_head];
	u->rx_head = (uint8_t)((u->rx_head + 1) % UART16550_FIFO_BYTES);
	u->rx_count--;
	return c;
}

/* Into the receiver: a full FIFO loses the new byte, a full holding
 * register (no FIFOs) loses the old one; either is an overrun. */
static bool rx_push(struct uart16550 *u, uint8_t c)
{
	u->rx_idle = false;
	if (u->rx_count >= rx_capacity(u)) {
		u->overrun = true;
		if (!u->fifos)
			u->rx[u->rx_head] = c;
		return false;
	}
	u->rx[(u->rx_head + u->rx_count) % UART16550_FIFO_BYTES] = c;
	u->rx_count++;
	return true;
}

static void write_mcr(struct uart16550 *u, uint8_t val)
{
	uint8_t before = modem_inputs(u), after, changed;

	u->mcr = val & MCR_BITS;
	after = modem_inputs(u);
	changed = before ^ after;
	if (changed & UART_MSR_CTS)
		u->msr_deltas |= UART_MSR_DCTS;
	if (changed & UART_MSR_DSR)
		u->msr_deltas |= UART_MSR_DDSR;
	if ((before & UART_MSR_RI) && !(after & UART_MSR_RI))
		u->msr_deltas |= UART_MSR_TERI;
	if (changed & UART_MSR_DCD)
		u->msr_deltas |= UART_MSR_DDCD;
}

/* FCR: bit 0 must be set for the other bits to count; turning the FIFOs on
 * or off empties them. */
static void write_fcr(struct uart16550 *u, uint8_t val)
{
	bool on = val & UART_FCR_ENABLE;

	if (on != u->fifos)
		rx_clear(u);
	u->fifos = on;
	if (!on)
		return;
	if (val & UART_FCR_CLEAR_RX)
		rx_clear(u);
	u->fcr_trigger = val >> 6;
}

uint8_t uart16550_read(struct uart16550 *u, unsigned reg)
{
	bool dlab = u->lcr & UART_LCR_DLAB;
	uint8_t v;

	switch (reg & 7) {
	case UART_RBR_THR:
		return dlab ? u->dll : rx_pop(u);
	case UART_IER:
		return dlab ? u->dlm : u->ier;
	case UART_IIR_FCR:
		v = pending_id(u);
		if (v == UART_IIR_THRE)
			u->thre_pending = false;
		return v | (u->fifos ? UART_IIR_FIFOS : 0);
	case UART_LCR:
		return u->lcr;
	case UART_MCR:
		return u->mcr;
	case UART_LSR:
		v = (u->rx_count ? UART_LSR_DR : 0) | (u->overrun ? UART_LSR_OE : 0) |
		    UART_LSR_THRE | UART_LSR_TEMT;
		u->overrun = false;
		return v;
	case UART_MSR:
		v = modem_inputs(u) | u->msr_deltas;
		u->msr_deltas = 0;
		return v;
	default:
		return u->scr;
	}
}

int uart16550_write(struct uart16550 *u, unsigned reg, uint8_t val)
{
	bool dlab = u->lcr & UART_LCR_DLAB;

	switch (reg & 7) {
	case UART_RBR_THR:
		if (dlab) {
			u->dll = val;
			return -1;
		}
		/* The byte leaves at once and THR is empty again: the THRE
		 * interrupt's condition, whatever it was before. */
		u->thre_pending = true;
		if (!(u->mcr & UART_MCR_LOOP))
			return val;
		rx_push(u, val);
		u->rx_idle = true;
		return -1;
	case UART_IER:
		if (dlab) {
			u->dlm = val;
		} else {
			/* Turning ETBEI on while THR is empty interrupts at once
			 * (Linux's 8250 driver tests for it). */
			if ((val & UART_IER_THRE) && !(u->ier & UART_IER_THRE))
				u->thre_pending = true;
			u->ier = val & IER_BITS;
		}
		return -1;
	case UART_IIR_FCR:
		write_fcr(u, val);
		return -1;
	case UART_LCR:
		u->lcr = val;
		return -1;
	case UART_MCR:
		write_mcr(u, val);
		return -1;
	case UART_SCR:
		u->scr = val;
		return -1;
	default:
		return -1; /* LSR and MSR: the factory-test writes are not modelled */
	}
}

unsigned uart16550_rx_room(const struct uart16550 *u)
{
	if (u->mcr & UART_MCR_LOOP)
		return 0;
	return rx_capacity(u) - u->rx_count;
}

bool uart16550_receive(struct uart16550 *u, uint8_t c)
{
	if (u->mcr & UART_MCR_LOOP)
		return false;
	return rx_push(u, c);
}

void uart16550_rx_idle(struct uart16550 *u)
{
	u->rx_idle = true;
}

bool uart16550_irq(const struct uart16550 *u)
{
	if ((u->mcr & (UART_MCR_OUT2 | UART_MCR_LOOP)) != UART_MCR_OUT2)
		return false;
	return pending_id(u) != UART_IIR_NONE;
}

/* Saved: every register the guest set (IER, LCR, MCR, SCR, the divisor
 * latch, FCR's enable and trigger), the receiver (the FIFO, its head and
 * count) and what makes interrupts pending (overrun, MSR deltas, THRE, a
 * quiet line for the character timeout); IIR, LSR and MSR are derived from
 * these. The model has no clock and no transmit FIFO, so nothing else.
 * Checked: the registers hold only the bits their writes keep, the FIFO
 * head is an index into rx and the count fits the receiver as FCR has it
 * (16 bytes with FIFOs, the holding register's one without). */
static void uart16550_fields(void *model, struct field_io *io)
{
	struct uart16550 *u = model;

	FIELD(io, u->ier);
	FIELD(io, u->lcr);
	FIELD(io, u->mcr);
	FIELD(io, u->scr);
	FIELD(io, u->dll);
	FIELD(io, u->dlm);
	FIELD_BOOL(io, u->fifos);
	FIELD(io, u->fcr_trigger);
	FIELD_BOOL(io, u->overrun);
	FIELD(io, u->msr_deltas);
	FIELD_BOOL(io, u->thre_pending);
	FIELD_BOOL(io, u->rx_idle);
	FIELD(io, u->rx);
	FIELD(io, u->rx_head);
	FIELD(io, u->rx_count);
}

static bool within(const char *name, uint8_t v, uint8_t bits, char *err, size_t errlen)
{
	if (!(v & ~bits))
		return true;
	ksnprintf(err, errlen, "%s 0x%x sets bits outside 0x%x", name, v, bits);
	return false;
}

static bool uart16550_state_check(const void *model, const struct record_limits *lim, char *err,
				  size_t errlen)
{
	const struct uart16550 *u = model;

	(void)lim;
	if (!within("ier", u->ier, IER_BITS, err, errlen) ||
	    !within("mcr", u->mcr, MCR_BITS, err, errlen) ||
	    !within("fcr_trigger", u->fcr_trigger, 3, err, errlen) ||
	    !within("msr_deltas", u->msr_deltas, MSR_DELTAS, err, errlen))
		return false;
	if (u->rx_head >= UART16550_FIFO_BYTES) {
		ksnprintf(err, errlen, "rx_head %u is not 0-%u", u->rx_head, UART16550_FIFO_BYTES - 1);
		return false;
	}
	if (u->rx_count > rx_capacity(u)) {
		ksnprintf(err, errlen, "rx_count %u is beyond the receiver's %u bytes (FIFOs %s)",
			  u->rx_count, rx_capacity(u), u->fifos ? "on" : "off");
		return false;
	}
	return true;
}

const struct record_type uart16550_record = {
	.id = REC_UART,
	.version = 1,
	.name = "uart",
	.model_bytes = sizeof(struct uart16550),
	.fields = uart16550_fields,
	.check = uart16550_state_check,
};
