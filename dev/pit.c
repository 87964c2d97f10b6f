/* The 8254 PIT model: see dev/pit.h for the choices. */
#include "dev/pit.h"
#include "lib/print.h"
#include "lib/string.h"

static uint64_t tsc_hz(const struct pit *p)
{
	return p->tsc_khz * 1000;
}

/* PIT ticks in `delta` TSC cycles, rounded down. */
static uint64_t ticks(const struct pit *p, uint64_t delta)
{
	return (uint64_t)((unsigned __int128)delta * PIT_HZ / tsc_hz(p));
}

/* TSC cycles until tick `t` begins: the least delta with ticks(delta) >= t. */
static uint64_t tsc_of_tick(const struct pit *p, uint64_t t)
{
	unsigned __int128 n = (unsigned __int128)t * tsc_hz(p);
	return (uint64_t)((n + PIT_HZ - 1) / PIT_HZ);
}

static uint32_t modulus(const struct pit_channel *c)
{
	return c->bcd ? 10000 : 65536;
}

static uint32_t bcd_to_bin(uint16_t v)
{
	return (v & 0xf) + ((v >> 4) & 0xf) * 10 + ((v >> 8) & 0xf) * 100 + ((v >> 12) & 0xf) * 1000u;
}

static uint16_t bin_to_bcd(uint32_t v)
{
	return (uint16_t)((v % 10) | (v / 10 % 10) << 4 | (v / 100 % 10) << 8 | (v / 1000 % 10) << 12);
}

/* Ticks into the current counting period. */
static uint64_t ch_d(const struct pit *p, const struct pit_channel *c, uint64_t now)
{
	if (!c->loaded || c->waiting)
		return 0;
	if (!c->running)
		return c->frozen_d;
	return ticks(p, now > c->t0 ? now - c->t0 : 0) - c->d_skip;
}

static uint16_t ch_counter(const struct pit *p, const struct pit_channel *c, uint64_t now)
{
	uint32_t m = modulus(c), cnt = c->count, v;
	uint64_t d;

	if (!c->loaded)
		return c->held;
	if (c->waiting) {
		v = cnt % m;
	} else {
		d = ch_d(p, c, now);
		switch (c->mode) {
		case 2:
			v = cnt - (uint32_t)(d % cnt);
			break;
		case 3:
			v = cnt - (uint32_t)(d % cnt * 2 % cnt);
			break;
		default:
			v = (cnt + m - (uint32_t)(d % m)) % m;
			break;
		}
		v %= m;
	}
	return c->bcd ? bin_to_bcd(v) : (uint16_t)v;
}

static bool ch_out(const struct pit *p, const struct pit_channel *c, uint64_t now)
{
	uint64_t d, cnt = c->count;

	if (!c->loaded)
		return c->mode != 0;
	if (c->waiting)
		return true;
	if ((c->mode == 2 || c->mode == 3) && !c->gate)
		return true;
	d = ch_d(p, c, now);
	switch (c->mode) {
	case 0:
	case 1:
		return d >= cnt;
	case 2:
		return cnt < 2 || d % cnt != cnt - 1;
	case 3:
		return cnt < 2 || d % cnt < (cnt + 1) / 2;
	default: /* 4, 5 */
		return d != cnt;
	}
}

/* Rising edges of OUT in ticks (0, d] of a counting period. */
static uint64_t ch_edges(const struct pit_channel *c, uint64_t d)
{
	uint64_t cnt = c->count;

	switch (c->mode) {
	case 0:
	case 1:
		return d >= cnt;
	case 2:
	case 3:
		return cnt < 2 ? 0 : d / cnt;
	default:
		return d >= cnt + 1;
	}
}

/* The tick of rising edge k (from 1) of a counting period; false when there is none. */
static bool ch_edge_tick(const struct pit_channel *c, uint64_t k, uint64_t *d)
{
	uint64_t cnt = c->count;

	switch (c->mode) {
	case 0:
	case 1:
		*d = cnt;
		return k == 1;
	case 2:
	case 3:
		*d = k * cnt;
		return cnt >= 2;
	default:
		*d = cnt + 1;
		return k == 1;
	}
}

/* Around every change of a channel's state: edges of the old state up to now
 * are accounted for, and a low -> high step of OUT made by the change itself
 * counts as an edge. */
static bool change_begin(struct pit *p, struct pit_channel *c, uint64_t now)
{
	if (c->loaded && !c->waiting) {
		uint64_t n = ch_edges(c, ch_d(p, c, now));
		if (n > c->edges_done)
			c->edges_pending += n - c->edges_done;
	}
	return ch_out(p, c, now);
}

static void change_end(struct pit *p, struct pit_channel *c, uint64_t now, bool out_before)
{
	c->edges_done = c->loaded && !c->waiting ? ch_edges(c, ch_d(p, c, now)) : 0;
	if (!out_before && ch_out(p, c, now))
		c->edges_pending++;
}

/* The modes whose counting a rising gate starts (and a low gate does not stop). */
static bool gate_triggered(const struct pit_channel *c)
{
	return c->mode == 1 || c->mode == 5;
}

/* Channel 0 in a periodic mode: its interrupts are reinjected (pit.h). */
static bool reinjecting(const struct pit *p)
{
	return p->ch[0].mode == 2 || p->ch[0].mode == 3;
}

/* The periods a reinjecting channel 0 may owe: one second's (at least one). */
static uint32_t backlog_max(const struct pit_channel *c)
{
	uint32_t n = PIT_HZ / c->count;

	return n ? n : 1;
}

/* Channel 0 reprogrammed (a control word or a count), as KVM's
 * create_pit_timer: nothing owed or in flight; the old programming's edges
 * not yet collected give one interrupt. */
static void irq0_restart(struct pit *p)
{
	if (p->ch[0].edges_pending > 1)
		p->ch[0].edges_pending = 1;
	p->irq0_backlog = 0;
	p->irq0_in_flight = false;
}

static void start(struct pit_channel *c, uint64_t now)
{
	c->running = true;
	c->waiting = false;
	c->t0 = now;
	c->d_skip = 0;
	c->frozen_d = 0;
}

static void load_count(struct pit *p, struct pit_channel *c, uint16_t raw, uint64_t now)
{
	bool ob = change_begin(p, c, now);
	uint32_t m = modulus(c);
	uint32_t v = c->bcd ? bcd_to_bin(raw) % m : raw;

	c->count = v ? v : m;
	c->loaded = true;
	c->running = false;
	c->waiting = false;
	c->frozen_d = 0;
	if (gate_triggered(c))
		c->waiting = true; /* until a rising gate edge */
	else if (c->gate)
		start(c, now);
	change_end(p, c, now, ob);
	if (c == &p->ch[0])
		irq0_restart(p);
}

static void set_gate(struct pit *p, struct pit_channel *c, bool gate, uint64_t now)
{
	bool ob;

	if (c->gate == gate)
		return;
	ob = change_begin(p, c, now);
	if (c->loaded) {
		if (!gate) {
			/* Modes 0, 2, 3, 4 stop counting (2 and 3 force OUT high);
			 * 1 and 5 ignore a low gate. */
			if (c->running && !gate_triggered(c)) {
				c->frozen_d = ch_d(p, c, now);
				c->running = false;
			}
		} else if (c->mode == 0 || c->mode == 4) {
			/* resume where it stopped */
			c->running = true;
			c->t0 = now;
			c->d_skip = 0 - c->frozen_d;
		} else {
			start(c, now); /* trigger: reload the count */
		}
	}
	c->gate = gate;
	change_end(p, c, now, ob);
}

static void latch_count(struct pit *p, struct pit_channel *c, uint64_t now)
{
	if (c->latch_state)
		return;
	c->latched = ch_counter(p, c, now);
	c->latch_state = c->rw_mode;
}

static void latch_status(struct pit *p, struct pit_channel *c, uint64_t now)
{
	if (c->status_latched)
		return;
	c->status = (uint8_t)((ch_out(p, c, now) ? 0x80 : 0) | (!c->loaded || c->waiting ? 0x40 : 0) |
			      c->rw_mode << 4 | c->mode << 1 | (c->bcd ? 1 : 0));
	c->status_latched = true;
}

static void control_word(struct pit *p, uint8_t val, uint64_t now)
{
	unsigned sel = val >> 6, rw = (val >> 4) & 3;
	struct pit_channel *c;
	bool ob;

	if (sel == 3) { /* read-back */
		for (unsigned i = 0; i < 3; i++) {
			if (!(val & (2u << i)))
				continue;
			/* status first: it reports the state before this latch */
			if (!(val & 0x10))
				latch_status(p, &p->ch[i], now);
			if (!(val & 0x20))
				latch_count(p, &p->ch[i], now);
		}
		return;
	}
	c = &p->ch[sel];
	if (rw == PIT_RW_LATCH) {
		latch_count(p, c, now);
		return;
	}
	ob = change_begin(p, c, now);
	c->held = ch_counter(p, c, now);
	c->rw_mode = (uint8_t)rw;
	c->read_state = c->write_state = (uint8_t)rw;
	c->mode = (val >> 1) & 7;
	if (c->mode > 5)
		c->mode -= 4; /* 6, 7 are 2, 3 */
	c->bcd = val & 1;
	c->latch_state = 0;
	c->status_latched = false;
	c->loaded = c->running = c->waiting = false;
	change_end(p, c, now, ob);
	if (sel == 0)
		irq0_restart(p);
}

static uint8_t counter_read(struct pit *p, struct pit_channel *c, uint64_t now)
{
	uint16_t v;
	uint8_t *state;

	if (c->status_latched) {
		c->status_latched = false;
		return c->status;
	}
	if (c->latch_state) {
		v = c->latched;
		state = &c->latch_state;
	} else {
		v = ch_counter(p, c, now);
		state = &c->read_state;
	}
	switch (*state) {
	case PIT_RW_LO:
		if (state == &c->latch_state)
			*state = 0;
		return (uint8_t)v;
	case PIT_RW_HI:
		if (state == &c->latch_state)
			*state = 0;
		return (uint8_t)(v >> 8);
	case PIT_RW_LOHI:
		*state = PIT_RW_LOHI_2ND;
		return (uint8_t)v;
	default: /* PIT_RW_LOHI_2ND */
		*state = state == &c->latch_state ? 0 : PIT_RW_LOHI;
		return (uint8_t)(v >> 8);
	}
}

static void counter_write(struct pit *p, struct pit_channel *c, uint8_t val, uint64_t now)
{
	switch (c->write_state) {
	case PIT_RW_LO:
		load_count(p, c, val, now);
		break;
	case PIT_RW_HI:
		load_count(p, c, (uint16_t)(val << 8), now);
		break;
	case PIT_RW_LOHI:
		c->write_lo = val;
		c->write_state = PIT_RW_LOHI_2ND;
		if (c->mode == 0 && c->loaded) {
			/* the first byte stops counting, OUT low at once */
			bool ob = change_begin(p, c, now);
			c->held = ch_counter(p, c, now);
			c->loaded = c->running = false;
			change_end(p, c, now, ob);
		}
		break;
	default:
		c->write_state = PIT_RW_LOHI;
		load_count(p, c, (uint16_t)(c->write_lo | val << 8), now);
		break;
	}
}

void pit_init(struct pit *p, uint64_t tsc_khz)
{
	memset(p, 0, sizeof *p);
	p->tsc_khz = tsc_khz ? tsc_khz : 1;
	for (unsigned i = 0; i < 3; i++) {
		struct pit_channel *c = &p->ch[i];
		c->mode = 3;
		c->rw_mode = c->read_state = c->write_state = PIT_RW_LOHI;
		c->gate = i != 2;
		c->count = 65536;
		c->loaded = true;
		if (c->gate)
			start(c, 0);
	}
}

uint8_t pit_port_read(struct pit *p, uint16_t port, uint64_t now)
{
	if (port >= PIT_PORT_CH0 && port < PIT_PORT_CH0 + 3)
		return counter_read(p, &p->ch[port - PIT_PORT_CH0], now);
	if (port == PIT_PORT_CMD)
		return 0;
	if (port == PIT_PORT_61) {
		p->refresh ^= PIT_61_REFRESH;
		return (uint8_t)((p->ch[2].gate ? PIT_61_GATE2 : 0) | (p->speaker ? PIT_61_SPEAKER : 0) | p->refresh |
				 (ch_out(p, &p->ch[2], now) ? PIT_61_OUT2 : 0));
	}
	return 0xff;
}

void pit_port_write(struct pit *p, uint16_t port, uint8_t val, uint64_t now)
{
	if (port >= PIT_PORT_CH0 && port < PIT_PORT_CH0 + 3) {
		counter_write(p, &p->ch[port - PIT_PORT_CH0], val, now);
	} else if (port == PIT_PORT_CMD) {
		control_word(p, val, now);
	} else if (port == PIT_PORT_61) {
		p->speaker = val & PIT_61_SPEAKER;
		set_gate(p, &p->ch[2], val & PIT_61_GATE2, now);
	}
}

unsigned pit_irq0_edges(struct pit *p, uint64_t now)
{
	struct pit_channel *c = &p->ch[0];
	uint64_t total = c->edges_pending;

	c->edges_pending = 0;
	if (c->loaded && !c->waiting) {
		uint64_t n = ch_edges(c, ch_d(p, c, now));
		if (n > c->edges_done) {
			total += n - c->edges_done;
			c->edges_done = n;
		}
	}
	return total > 0xffffffffu ? 0xffffffffu : (unsigned)total;
}

bool pit_irq0_raise(struct pit *p, enum pit_irq0_state irq0, uint64_t now)
{
	unsigned n = pit_irq0_edges(p, now);
	bool unmasked = p->irq0_masked && irq0 != PIT_IRQ0_MASKED;
	uint64_t owed;

	p->irq0_masked = irq0 == PIT_IRQ0_MASKED;
	if (!reinjecting(p))
		return n > 0;
	if (irq0 == PIT_IRQ0_MASKED) {
		/* into the masked controllers as they come (a PIC latches one) */
		p->irq0_backlog = 0;
		p->irq0_in_flight = false;
		return n > 0;
	}
	if (irq0 == PIT_IRQ0_IDLE)
		p->irq0_in_flight = false;
	if (unmasked)
		n = n > 0; /* the periods until the unmask are not owed */
	owed = (uint64_t)p->irq0_backlog + n;
	p->irq0_backlog = (uint32_t)(owed < backlog_max(&p->ch[0]) ? owed : backlog_max(&p->ch[0]));
	if (p->irq0_in_flight || !p->irq0_backlog)
		return false;
	p->irq0_backlog--;
	p->irq0_in_flight = true;
	return true;
}

void pit_irq0_resumed(struct pit *p, uint64_t now)
{
	p->ch[0].edges_pending = pit_irq0_edges(p, now);
	irq0_restart(p);
}

uint64_t pit_next_irq0(const struct pit *p, uint64_t now)
{
	const struct pit_channel *c = &p->ch[0];
	uint64_t d, t;

	if (reinjecting(p) && p->irq0_in_flight)
		return 0; /* the acknowledgement comes first */
	if (c->edges_pending || (reinjecting(p) && p->irq0_backlog))
		return now ? now : 1;
	if (!c->loaded || c->waiting || !c->running)
		return 0;
	if (!ch_edge_tick(c, c->edges_done + 1, &d))
		return 0;
	t = c->t0 + tsc_of_tick(p, d + c->d_skip);
	return t ? t : 1;
}

bool pit_out(const struct pit *p, unsigned ch, uint64_t now)
{
	return ch < 3 && ch_out(p, &p->ch[ch], now);
}

/* ---- state record ----
 *
 * Saved: each channel's programming, count, read/write/latch flip-flops,
 * counting period (t0, d_skip, frozen_d: guest TSC values and ticks, kept as
 * they are) and OUT edge accounting, gate 2, the speaker and refresh bits,
 * and channel 0's reinjection (the periods owed, one in flight, IRQ 0 masked).
 * Not saved: tsc_khz, the loading machine's, which pit_init sets.
 * Checked: what the functions above divide or switch by (mode, count, the
 * flip-flops), and the links between the counting flags, the gate and the
 * edges accounted for that the port writes keep: a state outside them would
 * count, stop or raise IRQ 0 unlike an 8254; and the reinjection's bound, and
 * nothing owed or in flight unless channel 0 is in a periodic mode. */
static void pit_fields(void *model, struct field_io *io)
{
	struct pit *p = model;

	for (unsigned i = 0; i < 3; i++) {
		struct pit_channel *c = &p->ch[i];

		FIELD(io, c->mode);
		FIELD(io, c->rw_mode);
		FIELD_BOOL(io, c->bcd);
		FIELD(io, c->read_state);
		FIELD(io, c->write_state);
		FIELD(io, c->write_lo);
		FIELD(io, c->count);
		FIELD_BOOL(io, c->loaded);
		FIELD_BOOL(io, c->running);
		FIELD_BOOL(io, c->waiting);
		FIELD(io, c->t0);
		FIELD(io, c->d_skip);
		FIELD(io, c->frozen_d);
		FIELD(io, c->held);
		FIELD_BOOL(io, c->gate);
		FIELD(io, c->latch_state);
		FIELD(io, c->latched);
		FIELD_BOOL(io, c->status_latched);
		FIELD(io, c->status);
		FIELD(io, c->edges_done);
		FIELD(io, c->edges_pending);
	}
	FIELD_BOOL(io, p->speaker);
	FIELD(io, p->refresh);
	FIELD(io, p->irq0_backlog);
	FIELD_BOOL(io, p->irq0_in_flight);
	FIELD_BOOL(io, p->irq0_masked);
}

/* A read/write flip-flop: the access mode, or its second byte for lo/hi. */
static bool flip_flop_ok(const struct pit_channel *c, uint8_t state)
{
	return state == c->rw_mode || (c->rw_mode == PIT_RW_LOHI && state == PIT_RW_LOHI_2ND);
}

static bool channel_check(const struct pit_channel *c, unsigned i, char *err, size_t errlen)
{
	uint64_t d;

	if (c->mode > 5)
		ksnprintf(err, errlen, "ch[%u].mode %u is not 0-5", i, c->mode);
	else if (c->rw_mode < PIT_RW_LO || c->rw_mode > PIT_RW_LOHI)
		ksnprintf(err, errlen, "ch[%u].rw_mode %u is not 1-3", i, c->rw_mode);
	else if (!flip_flop_ok(c, c->read_state))
		ksnprintf(err, errlen, "ch[%u].read_state %u does not go with rw_mode %u", i, c->read_state, c->rw_mode);
	else if (!flip_flop_ok(c, c->write_state))
		ksnprintf(err, errlen, "ch[%u].write_state %u does not go with rw_mode %u", i, c->write_state, c->rw_mode);
	else if (c->latch_state && !flip_flop_ok(c, c->latch_state))
		ksnprintf(err, errlen, "ch[%u].latch_state %u does not go with rw_mode %u", i, c->latch_state, c->rw_mode);
	else if (c->status_latched && (c->status & 0x3f) != (c->rw_mode << 4 | c->mode << 1 | c->bcd))
		ksnprintf(err, errlen, "ch[%u].status 0x%x is not the latched channel's mode", i, c->status);
	else if (c->count < 1 || c->count > 65536 || (c->loaded && c->count > modulus(c)))
		ksnprintf(err, errlen, "ch[%u].count %u is not 1-%u", i, c->count, c->loaded ? modulus(c) : 65536);
	else if (i < 2 && !c->gate)
		ksnprintf(err, errlen, "ch[%u].gate is low (channels 0 and 1 have theirs tied high)", i);
	else if (c->waiting && (!c->loaded || c->running || !gate_triggered(c)))
		ksnprintf(err, errlen, "ch[%u].waiting for the gate in mode %u (loaded %u, running %u)", i, c->mode,
			  c->loaded, c->running);
	else if (c->running && !c->loaded)
		ksnprintf(err, errlen, "ch[%u].running without a count loaded", i);
	else if (c->running && (gate_triggered(c) ? i < 2 : !c->gate))
		ksnprintf(err, errlen, "ch[%u].running in mode %u with no gate to start it", i, c->mode);
	else if (c->loaded && !c->running && !c->waiting && (c->gate || gate_triggered(c)))
		ksnprintf(err, errlen, "ch[%u].running is 0 (stopped) in mode %u with gate %u", i, c->mode, c->gate);
	else if (c->edges_done && (!c->loaded || c->waiting || !ch_edge_tick(c, c->edges_done, &d)))
		ksnprintf(err, errlen, "ch[%u].edges_done %llu: the counting period has no such OUT edge", i,
			  (unsigned long long)c->edges_done);
	else if (c->loaded && !c->running && !c->waiting && c->edges_done != ch_edges(c, c->frozen_d))
		ksnprintf(err, errlen, "ch[%u].edges_done %llu is not the %llu edges before tick %llu, where it stopped",
			  i, (unsigned long long)c->edges_done, (unsigned long long)ch_edges(c, c->frozen_d),
			  (unsigned long long)c->frozen_d);
	else
		return true;
	return false;
}

static bool pit_state_check(const void *model, const struct record_limits *lim, char *err, size_t errlen)
{
	const struct pit *p = model;

	(void)lim;
	for (unsigned i = 0; i < 3; i++)
		if (!channel_check(&p->ch[i], i, err, errlen))
			return false;
	if (p->refresh & ~PIT_61_REFRESH)
		ksnprintf(err, errlen, "refresh 0x%x is not 0 or 0x%x", p->refresh, PIT_61_REFRESH);
	else if (!reinjecting(p) && (p->irq0_backlog || p->irq0_in_flight))
		ksnprintf(err, errlen, "irq0_backlog %u, irq0_in_flight %u with channel 0 in mode %u (not periodic)",
			  p->irq0_backlog, p->irq0_in_flight, p->ch[0].mode);
	else if (p->irq0_backlog > backlog_max(&p->ch[0]))
		ksnprintf(err, errlen, "irq0_backlog %u is over a second of periods (%u)", p->irq0_backlog,
			  backlog_max(&p->ch[0]));
	else
		return true;
	return false;
}

const struct record_type pit_record = {
	.id = REC_PIT,
	.version = 2,
	.name = "pit",
	.model_bytes = sizeof(struct pit),
	.fields = pit_fields,
	.check = pit_state_check,
};
