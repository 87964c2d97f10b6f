/* The 8254 PIT model (dev/pit.c) against the Intel 8254 datasheet, and the
 * calibration sequences Linux and SeaBIOS run on it. */
#include "check.h"
#include "record_check.h"
#include "dev/firmware.h"
#include "dev/pit.h"
#include "tests/rng.h"
#include <stdint.h>
#include <string.h>

/* TSC rates: Bochs' 200 MHz, odd measured rates, a round one. */
static const uint64_t rates[] = { 200000, 2993000, 2445312, 2000000 };
#define NRATES (sizeof rates / sizeof rates[0])

/* TSC cycles from a count's load until PIT tick d begins (exact, rounded up). */
static uint64_t tick_tsc(uint64_t khz, uint64_t d)
{
	unsigned __int128 n = (unsigned __int128)d * khz * 1000;
	return (uint64_t)((n + PIT_HZ - 1) / PIT_HZ);
}

static void outb(struct pit *p, uint16_t port, uint8_t v, uint64_t now)
{
	pit_port_write(p, port, v, now);
}

static uint8_t inb(struct pit *p, uint16_t port, uint64_t now)
{
	return pit_port_read(p, port, now);
}

/* Linux pit_calibrate_tsc(): channel 2, mode 0, gate on via 0x61, speaker
 * off, a 10 ms count (PIT_TICK_RATE / 100), poll OUT2 (0x61 bit 5). */
TEST(pit_linux_calibrate_tsc)
{
	for (unsigned i = 0; i < NRATES; i++) {
		struct pit p;
		uint64_t khz = rates[i], t0 = 123456789, latch = PIT_HZ / 100, end;

		pit_init(&p, khz);
		outb(&p, 0x61, (uint8_t)((inb(&p, 0x61, t0 - 10) & ~0x02) | 0x01), t0 - 5);
		outb(&p, 0x43, 0xb0, t0 - 2);
		outb(&p, 0x42, latch & 0xff, t0 - 1);
		outb(&p, 0x42, (uint8_t)(latch >> 8), t0);
		end = t0 + tick_tsc(khz, latch);
		CHECK((inb(&p, 0x61, t0) & 0x20) == 0);
		CHECK((inb(&p, 0x61, end - 1) & 0x20) == 0);
		CHECK((inb(&p, 0x61, end) & 0x20) != 0);
		CHECK((inb(&p, 0x61, end + 1000000) & 0x20) != 0); /* stays high */
		/* what Linux computes: tsc delta / 10 ms = tsc_khz, to within a tick */
		uint64_t measured = (end - t0) / 10;
		CHECK(measured + khz / 1000 >= khz && measured <= khz + khz / 1000);
	}
}

/* Linux quick_pit_calibrate(): mode 0, count 0xffff, reads lsb then msb of the
 * running counter (no latch) and expects msb to count down 0xff, 0xfe, ... */
TEST(pit_linux_quick_calibrate)
{
	for (unsigned i = 0; i < NRATES; i++) {
		struct pit p;
		uint64_t khz = rates[i], t0 = 1000;

		pit_init(&p, khz);
		outb(&p, 0x61, (uint8_t)((inb(&p, 0x61, 0) & ~0x02) | 0x01), 0);
		outb(&p, 0x43, 0xb0, 0);
		outb(&p, 0x42, 0xff, 0);
		outb(&p, 0x42, 0xff, t0);
		for (unsigned k = 1; k < 255; k++) {
			/* tick d = 256 k: counter 0xffff - 256 k, msb 0xff - k */
			uint64_t t = t0 + tick_tsc(khz, 256 * k);
			uint8_t lsb = inb(&p, 0x42, t), msb = inb(&p, 0x42, t);
			CHECK_EQ_U64(lsb, 0xff);
			CHECK_EQ_U64(msb, 0xff - k);
			/* one TSC cycle earlier it was still the tick before */
			inb(&p, 0x42, t - 1);
			CHECK_EQ_U64(inb(&p, 0x42, t - 1), 0xff - k + 1);
		}
	}
}

/* SeaBIOS tsctimer_setup(): channel 2 mode 0, count 0x800, poll OUT2; then
 * pit_setup(): channel 0 mode 2, count 0 (65536): 18.2 Hz IRQ 0. */
TEST(pit_seabios_setup)
{
	for (unsigned i = 0; i < NRATES; i++) {
		struct pit p;
		uint64_t khz = rates[i], t0 = 5000, t1;

		pit_init(&p, khz);
		outb(&p, 0x61, (uint8_t)((inb(&p, 0x61, 0) & ~0x02) | 0x01), t0);
		outb(&p, 0x43, 0xb0, t0);
		outb(&p, 0x42, 0x00, t0);
		outb(&p, 0x42, 0x08, t0);
		CHECK((inb(&p, 0x61, t0 + tick_tsc(khz, 0x800) - 1) & 0x20) == 0);
		CHECK((inb(&p, 0x61, t0 + tick_tsc(khz, 0x800)) & 0x20) != 0);

		t1 = 10000000;
		outb(&p, 0x43, 0x34, t1);
		outb(&p, 0x40, 0, t1);
		outb(&p, 0x40, 0, t1);
		pit_irq0_edges(&p, t1); /* drop the power-on square wave's edges */
		CHECK_EQ_U64(pit_next_irq0(&p, t1), t1 + tick_tsc(khz, 65536));
		CHECK_EQ_U64(pit_irq0_edges(&p, t1 + tick_tsc(khz, 65536) - 1), 0);
		CHECK_EQ_U64(pit_irq0_edges(&p, t1 + tick_tsc(khz, 65536)), 1);
		CHECK_EQ_U64(pit_irq0_edges(&p, t1 + tick_tsc(khz, 65536 * 19)), 18);
		CHECK_EQ_U64(pit_next_irq0(&p, t1 + tick_tsc(khz, 65536 * 19)), t1 + tick_tsc(khz, 65536 * 20));
	}
}

/* The count read back at known times, in each access mode, live and latched. */
TEST(pit_read_access_modes)
{
	static const struct {
		uint8_t cw;        /* channel 0, mode 0 */
		uint16_t count;
		uint64_t d;        /* tick at which it is read */
		uint16_t expect;   /* as read (both bytes for lo/hi) */
	} t[] = {
		{ 0x10, 200, 7, 193 },                 /* lo only */
		{ 0x20, 0x3000, 0x123, 0x2e },         /* hi only: (0x3000 - 0x123) >> 8 */
		{ 0x30, 0x3000, 0x123, 0x2edd },       /* lo/hi */
		{ 0x30, 0, 1, 0xffff },                /* 0 = 65536 */
		{ 0x30, 5, 9, (uint16_t)(5 - 9) },     /* mode 0 wraps after 0 */
		{ 0x31, 0x1000, 1, 0x0999 },           /* BCD: 1000 - 1 */
		{ 0x31, 0x0000, 3, 0x9997 },           /* BCD 0 = 10000 */
	};
	for (unsigned r = 0; r < NRATES; r++) {
		for (unsigned i = 0; i < sizeof t / sizeof t[0]; i++) {
			struct pit p;
			uint64_t khz = rates[r], t0 = 777, at = t0 + tick_tsc(khz, t[i].d);
			unsigned rw = (t[i].cw >> 4) & 3;
			uint16_t v;

			pit_init(&p, khz);
			outb(&p, 0x43, t[i].cw, t0);
			if (rw == 1 || rw == 3)
				outb(&p, 0x40, (uint8_t)t[i].count, t0);
			if (rw == 2 || rw == 3)
				outb(&p, 0x40, (uint8_t)(t[i].count >> 8), t0);
			/* live */
			v = inb(&p, 0x40, at);
			if (rw == 3)
				v |= (uint16_t)(inb(&p, 0x40, at) << 8);
			CHECK_EQ_U64(v, t[i].expect);
			/* latched at `at`, read much later */
			outb(&p, 0x43, 0x00, at);
			outb(&p, 0x43, 0x00, at + 500000); /* ignored: already latched */
			v = inb(&p, 0x40, at + 1000000);
			if (rw == 3)
				v |= (uint16_t)(inb(&p, 0x40, at + 2000000) << 8);
			CHECK_EQ_U64(v, t[i].expect);
		}
	}
}

/* Lo/hi live reads take each byte when it is read; the latch takes both at once. */
TEST(pit_latch_vs_live)
{
	struct pit p;
	uint64_t khz = 2993000, t0 = 0;

	pit_init(&p, khz);
	outb(&p, 0x43, 0x30, t0);
	outb(&p, 0x40, 0x00, t0);
	outb(&p, 0x40, 0x10, t0); /* 0x1000 */
	/* lo at tick 0x10 (0xff0 -> 0xf0), hi at tick 0x110 (0xef0 -> 0x0e) */
	CHECK_EQ_U64(inb(&p, 0x40, tick_tsc(khz, 0x10)), 0xf0);
	CHECK_EQ_U64(inb(&p, 0x40, tick_tsc(khz, 0x110)), 0x0e);
	outb(&p, 0x43, 0x00, tick_tsc(khz, 0x10));
	CHECK_EQ_U64(inb(&p, 0x40, tick_tsc(khz, 0x110)), 0xf0);
	CHECK_EQ_U64(inb(&p, 0x40, tick_tsc(khz, 0x110)), 0x0f);
	/* then live again */
	CHECK_EQ_U64(inb(&p, 0x40, tick_tsc(khz, 0x110)), 0xf0);
	/* a latch mid-way; then a control word resets the flip-flops */
	outb(&p, 0x43, 0x00, tick_tsc(khz, 0x200));
	CHECK_EQ_U64(inb(&p, 0x40, tick_tsc(khz, 0x300)), 0x00); /* lo of 0xe00 */
	uint64_t t1 = tick_tsc(khz, 0x300);
	outb(&p, 0x43, 0x34, t1);
	outb(&p, 0x40, 100, t1);
	outb(&p, 0x40, 0, t1);
	CHECK_EQ_U64(inb(&p, 0x40, t1 + tick_tsc(khz, 1)), 99);
	CHECK_EQ_U64(inb(&p, 0x40, t1 + tick_tsc(khz, 1)), 0);
}

/* Read-back: status (OUT, null count, access, mode, BCD) and count. */
TEST(pit_read_back_status)
{
	struct pit p;
	uint64_t khz = 2445312;

	pit_init(&p, khz);
	CHECK_EQ_U64(p.ch[0].mode, 3);
	outb(&p, 0x43, 0xe2, 0); /* status of channel 0 only */
	CHECK_EQ_U64(inb(&p, 0x40, 0), 0xb6); /* OUT high (square wave), lo/hi, mode 3 */

	outb(&p, 0x43, 0x34, 100); /* mode 2 lo/hi: null count until written */
	outb(&p, 0x43, 0xe2, 100);
	CHECK_EQ_U64(inb(&p, 0x40, 100), 0xf4);
	outb(&p, 0x40, 0x10, 100);
	outb(&p, 0x43, 0xe2, 100);
	CHECK_EQ_U64(inb(&p, 0x40, 100), 0xf4); /* half written: still null */
	outb(&p, 0x40, 0x27, 100);               /* 0x2710 = 10000 */
	/* status and count of channel 0 at tick 5: status first, then lo, hi */
	uint64_t at = 100 + tick_tsc(khz, 5);
	outb(&p, 0x43, 0xc2, at);
	CHECK_EQ_U64(inb(&p, 0x40, at + 99999), 0xb4);
	CHECK_EQ_U64(inb(&p, 0x40, at + 99999), (10000 - 5) & 0xff);
	CHECK_EQ_U64(inb(&p, 0x40, at + 99999), (10000 - 5) >> 8);

	/* channel 1 mode 0 BCD, channel 2 mode 1 (waiting for its gate) */
	outb(&p, 0x43, 0x71, 200);
	outb(&p, 0x41, 0x00, 200);
	outb(&p, 0x41, 0x50, 200);
	outb(&p, 0x43, 0xb2, 200);
	outb(&p, 0x42, 0x10, 200);
	outb(&p, 0x42, 0x00, 200);
	outb(&p, 0x43, 0xec, 201); /* status of 1 and 2 */
	CHECK_EQ_U64(inb(&p, 0x41, 201), 0x31); /* OUT low, lo/hi, mode 0, BCD */
	CHECK_EQ_U64(inb(&p, 0x42, 201), 0xf2); /* OUT high, null count, mode 1 */
	/* mode 6 reads back as mode 2 */
	outb(&p, 0x43, 0x1c, 300);
	outb(&p, 0x43, 0xe2, 300);
	CHECK_EQ_U64(inb(&p, 0x40, 300) & 0x0e, 0x04);
}

/* OUT of each mode, at the first and last TSC cycle of chosen ticks. */
TEST(pit_out_timing)
{
	static const struct {
		uint8_t mode;
		uint16_t count;
		uint64_t d;
		bool out;
	} t[] = {
		{ 0, 100, 0, false }, { 0, 100, 99, false }, { 0, 100, 100, true }, { 0, 100, 70000, true },
		{ 2, 100, 0, true },  { 2, 100, 98, true },  { 2, 100, 99, false }, { 2, 100, 100, true },
		{ 2, 100, 199, false }, { 2, 100, 200, true },
		{ 3, 100, 0, true },  { 3, 100, 49, true },  { 3, 100, 50, false }, { 3, 100, 99, false },
		{ 3, 100, 100, true },
		{ 3, 5, 2, true },    { 3, 5, 3, false },    { 3, 5, 4, false },    { 3, 5, 5, true },
		{ 4, 100, 0, true },  { 4, 100, 99, true },  { 4, 100, 100, false }, { 4, 100, 101, true },
		{ 4, 100, 200, true },
	};
	for (unsigned r = 0; r < NRATES; r++) {
		for (unsigned i = 0; i < sizeof t / sizeof t[0]; i++) {
			struct pit p;
			uint64_t khz = rates[r], t0 = 31337;

			pit_init(&p, khz);
			outb(&p, 0x43, (uint8_t)(0x30 | t[i].mode << 1), t0);
			outb(&p, 0x40, (uint8_t)t[i].count, t0);
			outb(&p, 0x40, (uint8_t)(t[i].count >> 8), t0);
			CHECK(pit_out(&p, 0, t0 + tick_tsc(khz, t[i].d)) == t[i].out);
			CHECK(pit_out(&p, 0, t0 + tick_tsc(khz, t[i].d + 1) - 1) == t[i].out);
		}
	}
}

/* Periodic IRQ 0 over 10^6 periods: every edge where computed from the load,
 * seen exactly once, pit_next_irq0 exact. */
TEST(pit_irq0_no_drift)
{
	static const struct {
		uint8_t mode;
		uint32_t count;
	} t[] = { { 2, 1193 }, { 3, 11932 }, { 2, 65536 } };
	for (unsigned r = 0; r < NRATES; r++) {
		for (unsigned i = 0; i < sizeof t / sizeof t[0]; i++) {
			struct pit p;
			uint64_t khz = rates[r], t0 = 999999, now = t0, total = 0;
			unsigned bad = 0;

			pit_init(&p, khz);
			outb(&p, 0x43, (uint8_t)(0x30 | t[i].mode << 1), t0);
			outb(&p, 0x40, (uint8_t)t[i].count, t0);
			outb(&p, 0x40, (uint8_t)(t[i].count >> 8), t0);
			pit_irq0_edges(&p, t0); /* the power-on wave's, and the control word's */
			for (uint64_t k = 1; k <= 1000000; k++) {
				uint64_t next = pit_next_irq0(&p, now), want = t0 + tick_tsc(khz, k * t[i].count);
				unsigned before = pit_irq0_edges(&p, next - 1), at = pit_irq0_edges(&p, next);
				if (next != want || before != 0 || at != 1)
					bad++;
				total += at;
				now = next;
			}
			CHECK_EQ_U64(bad, 0);
			CHECK_EQ_U64(total, 1000000);
		}
	}
}

/* Edges collected late are all counted; one-shot modes give one edge. */
TEST(pit_irq0_oneshot_and_batch)
{
	struct pit p;
	uint64_t khz = 2993000;

	pit_init(&p, khz);
	/* the power-on mode 3, count 65536 from TSC 0 */
	CHECK_EQ_U64(pit_next_irq0(&p, 0), tick_tsc(khz, 65536));
	CHECK_EQ_U64(pit_irq0_edges(&p, tick_tsc(khz, 65536 * 10)), 10);
	/* mode 4 (Linux oneshot): edge at count + 1 */
	outb(&p, 0x43, 0x38, 10000000000ull);
	pit_irq0_edges(&p, 10000000000ull); /* OUT may have stepped up */
	CHECK_EQ_U64(pit_irq0_edges(&p, 10000000000ull), 0);
	outb(&p, 0x40, 0xe8, 10000000000ull);
	outb(&p, 0x40, 0x03, 10000000000ull); /* 1000 */
	CHECK_EQ_U64(pit_next_irq0(&p, 10000000000ull), 10000000000ull + tick_tsc(khz, 1001));
	CHECK_EQ_U64(pit_irq0_edges(&p, 10000000000ull + tick_tsc(khz, 1001) - 1), 0);
	CHECK_EQ_U64(pit_irq0_edges(&p, 10000000000ull + tick_tsc(khz, 5000)), 1);
	CHECK_EQ_U64(pit_next_irq0(&p, 10000000000ull + tick_tsc(khz, 5000)), 0);
	/* mode 0: edge at count; a control word to mode 2 while OUT is low raises OUT: an edge */
	uint64_t t1 = 20000000000ull;
	outb(&p, 0x43, 0x30, t1);
	outb(&p, 0x40, 0x00, t1);
	outb(&p, 0x40, 0x01, t1); /* 256 */
	CHECK_EQ_U64(pit_next_irq0(&p, t1), t1 + tick_tsc(khz, 256));
	CHECK_EQ_U64(pit_irq0_edges(&p, t1 + tick_tsc(khz, 100000)), 1);
	CHECK_EQ_U64(pit_next_irq0(&p, t1 + tick_tsc(khz, 100000)), 0);
	outb(&p, 0x43, 0x30, t1 + tick_tsc(khz, 100000)); /* OUT low again */
	CHECK_EQ_U64(pit_irq0_edges(&p, t1 + tick_tsc(khz, 100001)), 0);
	outb(&p, 0x43, 0x34, t1 + tick_tsc(khz, 100001)); /* mode 2: OUT high */
	CHECK_EQ_U64(pit_next_irq0(&p, t1 + tick_tsc(khz, 100001)), t1 + tick_tsc(khz, 100001));
	CHECK_EQ_U64(pit_irq0_edges(&p, t1 + tick_tsc(khz, 100001)), 1);
	/* mode 1 on channel 0 never starts: its gate is tied high */
	outb(&p, 0x43, 0x32, t1 + tick_tsc(khz, 200000));
	outb(&p, 0x40, 10, t1 + tick_tsc(khz, 200000));
	outb(&p, 0x40, 0, t1 + tick_tsc(khz, 200000));
	CHECK_EQ_U64(pit_next_irq0(&p, t1 + tick_tsc(khz, 200000)), 0);
	CHECK_EQ_U64(pit_irq0_edges(&p, t1 + tick_tsc(khz, 300000)), 0);
}

/* ---- reinjection: channel 0 in modes 2 and 3 (pit.h) ---- */

/* Channel 0 in `mode` with `count` from t; the edges and interrupts before
 * it collected. */
static void irq0_program(struct pit *p, uint8_t mode, uint16_t count, uint64_t t)
{
	outb(p, 0x43, (uint8_t)(0x30 | mode << 1), t);
	outb(p, 0x40, (uint8_t)count, t);
	outb(p, 0x40, (uint8_t)(count >> 8), t);
	pit_irq0_raise(p, PIT_IRQ0_IDLE, t);
	pit_irq0_raise(p, PIT_IRQ0_IDLE, t);
}

/* Channel 0 in `mode` with `count` from t0, its first n periods passed
 * unseen: one in flight, n - 1 owed. That moment. */
static uint64_t irq0_starved(struct pit *p, uint8_t mode, uint16_t count, uint64_t t0, uint64_t n)
{
	uint64_t at = t0 + tick_tsc(p->tsc_khz, n * count);

	irq0_program(p, mode, count, t0);
	CHECK(pit_irq0_raise(p, PIT_IRQ0_IDLE, at));
	CHECK(!pit_irq0_raise(p, PIT_IRQ0_BUSY, at));
	CHECK_EQ_U64(p->irq0_backlog, n - 1);
	return at;
}

/* Interrupts raised at `now` by a guest that acknowledges each at once,
 * up to `limit`. */
static unsigned irq0_taken(struct pit *p, uint64_t now, unsigned limit)
{
	unsigned n = 0;

	while (n < limit && pit_irq0_raise(p, PIT_IRQ0_IDLE, now))
		n++;
	return n;
}

/* A guest whose CPU was starved for N periods gets N interrupts, one per
 * acknowledgement, none while one is in service; then the period's pace. */
TEST(pit_reinject_starved)
{
	static const struct {
		uint8_t mode;
		uint16_t count;
	} t[] = { { 2, 11932 }, { 3, 11932 }, { 2, 1193 }, { 3, 2 } };
	for (unsigned r = 0; r < NRATES; r++) {
		for (unsigned i = 0; i < sizeof t / sizeof t[0]; i++) {
			struct pit p;
			uint64_t khz = rates[r], t0 = 777777, cnt = t[i].count;

			for (uint64_t starved = 1; starved <= 40; starved += 13) {
				uint64_t at = t0 + tick_tsc(khz, starved * cnt), next;

				pit_init(&p, khz);
				irq0_program(&p, t[i].mode, t[i].count, t0);
				CHECK_EQ_U64(pit_next_irq0(&p, t0), t0 + tick_tsc(khz, cnt));
				/* the first, then the others only as each is acknowledged */
				CHECK(pit_irq0_raise(&p, PIT_IRQ0_IDLE, at));
				CHECK_EQ_U64(pit_next_irq0(&p, at), 0); /* waits for the EOI */
				for (unsigned k = 1; k < starved; k++) {
					CHECK(!pit_irq0_raise(&p, PIT_IRQ0_BUSY, at));
					CHECK(!pit_irq0_raise(&p, PIT_IRQ0_BUSY, at + k));
					CHECK(pit_irq0_raise(&p, PIT_IRQ0_IDLE, at + k));
				}
				CHECK(!pit_irq0_raise(&p, PIT_IRQ0_IDLE, at + starved));
				/* back to one a period */
				next = pit_next_irq0(&p, at + starved);
				CHECK_EQ_U64(next, t0 + tick_tsc(khz, (starved + 1) * cnt));
				CHECK(!pit_irq0_raise(&p, PIT_IRQ0_IDLE, next - 1));
				CHECK(pit_irq0_raise(&p, PIT_IRQ0_IDLE, next));
				CHECK(!pit_irq0_raise(&p, PIT_IRQ0_IDLE, next));
			}
		}
	}
}

/* Interrupts over many periods, collected at random times by a guest that
 * acknowledges at random: none lost, none early, at most one in flight. */
TEST(pit_reinject_none_lost)
{
	struct rng r = rng_seeded(8254);
	struct pit p;
	uint64_t khz = 2993000, t0 = 1000, now = t0, cnt = 1193, raised = 0, most = 0;
	bool busy = false;

	pit_init(&p, khz);
	irq0_program(&p, 2, (uint16_t)cnt, t0);
	for (unsigned k = 0; k < 200000; k++) {
		uint64_t due = (now - t0) * PIT_HZ / (khz * 1000) / cnt;
		bool ack = rng_below(&r, 3) != 0;

		if (pit_irq0_raise(&p, busy && !ack ? PIT_IRQ0_BUSY : PIT_IRQ0_IDLE, now)) {
			raised++;
			busy = true;
		} else if (ack) {
			busy = false;
		}
		CHECK(raised <= due);
		CHECK(p.irq0_in_flight == busy);
		if (p.irq0_backlog > most)
			most = p.irq0_backlog;
		/* mostly a little later; now and then a starved stretch */
		now += rng_below(&r, 100) ? rng_below(&r, 600000) : rng_below(&r, 60000000);
	}
	CHECK(most > 10); /* starved stretches were owed */
	now += tick_tsc(khz, cnt) * 2;
	raised += irq0_taken(&p, now, 2000000);
	CHECK_EQ_U64(raised, (now - t0) * PIT_HZ / (khz * 1000) / cnt);
}

/* A guest that never acknowledges is owed one second of periods at most:
 * no more once it takes them, and the record refuses more. */
TEST(pit_reinject_bound)
{
	static const uint16_t counts[] = { 11932, 1193, 65535, 2 };
	for (unsigned i = 0; i < sizeof counts / sizeof counts[0]; i++) {
		struct pit p;
		uint64_t khz = 2445312, t0 = 5000, cnt = counts[i], max = PIT_HZ / cnt, at;

		pit_init(&p, khz);
		irq0_program(&p, 3, counts[i], t0);
		CHECK(pit_irq0_raise(&p, PIT_IRQ0_IDLE, t0 + tick_tsc(khz, cnt)));
		for (uint64_t sec = 2; sec <= 10; sec++) {
			at = t0 + tick_tsc(khz, sec * PIT_HZ + 7);
			CHECK(!pit_irq0_raise(&p, PIT_IRQ0_BUSY, at));
			CHECK_EQ_U64(p.irq0_backlog, max);
			CHECK(record_saved_ok(&pit_record, &p));
		}
		/* the one in flight, then a second's worth, then the period's pace */
		CHECK_EQ_U64(irq0_taken(&p, at, 2000000), max);
		CHECK(!pit_irq0_raise(&p, PIT_IRQ0_IDLE, at));
		CHECK_EQ_U64(pit_next_irq0(&p, at), t0 + tick_tsc(khz, ((10 * PIT_HZ + 7) / cnt + 1) * cnt));
	}
}

/* Reprogramming channel 0 (a count, a control word, another mode) drops
 * what is owed and what is in flight, as KVM's create_pit_timer; the old
 * programming's edges not yet collected give one interrupt. */
TEST(pit_reinject_reprogram)
{
	uint64_t khz = 2000000, t0 = 100000, cnt = 11932;
	struct pit p;
	uint64_t at;

	for (unsigned how = 0; how < 4; how++) {
		pit_init(&p, khz);
		at = irq0_starved(&p, 2, (uint16_t)cnt, t0, 10);
		at += tick_tsc(khz, 5 * cnt); /* 5 more, not yet collected */
		switch (how) {
		case 0: /* the same count again */
			outb(&p, 0x40, (uint8_t)cnt, at);
			outb(&p, 0x40, (uint8_t)(cnt >> 8), at);
			break;
		case 1: /* a control word for mode 3, then its count */
			outb(&p, 0x43, 0x36, at);
			CHECK_EQ_U64(p.irq0_backlog, 0);
			outb(&p, 0x40, (uint8_t)cnt, at);
			outb(&p, 0x40, (uint8_t)(cnt >> 8), at);
			break;
		case 2: /* lo-only access: a count in one byte */
			outb(&p, 0x43, 0x14, at);
			outb(&p, 0x40, 200, at);
			break;
		default: /* mode 4, Linux's one-shot */
			outb(&p, 0x43, 0x38, at);
			outb(&p, 0x40, 100, at);
			outb(&p, 0x40, 0, at);
			break;
		}
		CHECK_EQ_U64(p.irq0_backlog, 0);
		CHECK(!p.irq0_in_flight);
		CHECK(record_saved_ok(&pit_record, &p));
		/* the 5 uncollected edges: one interrupt, though one was in service */
		CHECK_EQ_U64(pit_next_irq0(&p, at), at);
		CHECK(pit_irq0_raise(&p, PIT_IRQ0_BUSY, at));
		CHECK_EQ_U64(irq0_taken(&p, at, 100), 0);
		CHECK(!pit_irq0_raise(&p, PIT_IRQ0_IDLE, at + 1));
	}
	/* mode 4 is not reinjected: edges raise as they come */
	CHECK_EQ_U64(pit_next_irq0(&p, at), at + tick_tsc(khz, 101));
	CHECK(pit_irq0_raise(&p, PIT_IRQ0_BUSY, at + tick_tsc(khz, 101)));
	CHECK_EQ_U64(p.irq0_backlog, 0);
	CHECK(!p.irq0_in_flight);
}

/* While IRQ 0 reaches no CPU nothing is owed: edges raise as they come (a
 * masked PIC latches one); the periods until the unmask give one interrupt,
 * as KVM's reset when the guest unmasks IRQ 0; then one per period again. */
TEST(pit_reinject_masked)
{
	uint64_t khz = 200000, t0 = 0, cnt = 1193, at;
	struct pit p;

	pit_init(&p, khz);
	at = irq0_starved(&p, 2, (uint16_t)cnt, t0, 7);
	CHECK(!pit_irq0_raise(&p, PIT_IRQ0_MASKED, at)); /* the guest masks IRQ 0 */
	CHECK_EQ_U64(p.irq0_backlog, 0);
	CHECK(!p.irq0_in_flight);
	CHECK(record_saved_ok(&pit_record, &p));
	CHECK_EQ_U64(pit_next_irq0(&p, at), t0 + tick_tsc(khz, 8 * cnt));
	CHECK(pit_irq0_raise(&p, PIT_IRQ0_MASKED, t0 + tick_tsc(khz, 20 * cnt)));
	CHECK(!pit_irq0_raise(&p, PIT_IRQ0_MASKED, t0 + tick_tsc(khz, 20 * cnt)));
	CHECK(pit_irq0_raise(&p, PIT_IRQ0_MASKED, t0 + tick_tsc(khz, 21 * cnt)));
	/* 30 periods pass; the guest unmasks: one for them */
	at = t0 + tick_tsc(khz, 51 * cnt);
	CHECK(pit_irq0_raise(&p, PIT_IRQ0_IDLE, at));
	CHECK_EQ_U64(irq0_taken(&p, at, 100), 0);
	CHECK_EQ_U64(pit_next_irq0(&p, at), t0 + tick_tsc(khz, 52 * cnt));
	/* then starved for 4: 4 */
	CHECK_EQ_U64(irq0_taken(&p, t0 + tick_tsc(khz, 55 * cnt), 100), 4);
}

/* A VM that resumes after a pause (or a snapshot's restore) is owed
 * nothing for the time it did not run: one interrupt for its edges, what
 * was owed before dropped, and none waits for an acknowledgement. */
TEST(pit_reinject_resumed)
{
	uint64_t khz = 2993000, t0 = 4242, cnt = 11932, at;
	struct pit p;

	pit_init(&p, khz);
	irq0_starved(&p, 3, (uint16_t)cnt, t0, 4);
	at = t0 + tick_tsc(khz, 504 * cnt); /* paused for 5 s */
	pit_irq0_resumed(&p, at);
	CHECK_EQ_U64(p.irq0_backlog, 0);
	CHECK(!p.irq0_in_flight);
	CHECK(record_saved_ok(&pit_record, &p));
	CHECK_EQ_U64(pit_next_irq0(&p, at), at);
	CHECK(pit_irq0_raise(&p, PIT_IRQ0_BUSY, at));
	CHECK_EQ_U64(irq0_taken(&p, at, 1000), 0);
	/* then one a period, and a starved vCPU's owed again */
	CHECK_EQ_U64(pit_next_irq0(&p, at), t0 + tick_tsc(khz, 505 * cnt));
	CHECK_EQ_U64(irq0_taken(&p, t0 + tick_tsc(khz, 510 * cnt), 1000), 6);
	/* resumed with nothing passed: nothing to raise */
	pit_irq0_resumed(&p, t0 + tick_tsc(khz, 510 * cnt));
	CHECK_EQ_U64(pit_next_irq0(&p, t0 + tick_tsc(khz, 510 * cnt)), t0 + tick_tsc(khz, 511 * cnt));
}

/* Ticks the model counts in dt TSC cycles from a (re)start. */
static uint64_t ticks_in(uint64_t khz, uint64_t dt)
{
	return (uint64_t)((unsigned __int128)dt * PIT_HZ / (khz * 1000));
}

/* Channel 2's gate: mode 0 pauses, mode 2 restarts on the rising edge, mode 1 triggers. */
TEST(pit_gate_channel2)
{
	struct pit p;
	uint64_t khz = 200000, a = 100000, b = 180000, c = 900000, e = 950000;

	pit_init(&p, khz);
	CHECK_EQ_U64(inb(&p, 0x61, 0) & 0x01, 0);
	outb(&p, 0x43, 0xb0, 0);
	outb(&p, 0x42, 0xe8, 0);
	outb(&p, 0x42, 0x03, 0); /* 1000, gate low: held */
	CHECK_EQ_U64(inb(&p, 0x42, a), 0xe8);
	inb(&p, 0x42, 0);
	outb(&p, 0x61, 0x01, a); /* counts from here */
	outb(&p, 0x61, 0x00, b); /* paused */
	outb(&p, 0x61, 0x01, c); /* resumes */
	uint64_t done = ticks_in(khz, b - a);
	CHECK(done > 400 && done < 500);
	outb(&p, 0x43, 0x80, e);
	uint16_t v = inb(&p, 0x42, 0);
	v |= (uint16_t)(inb(&p, 0x42, 0) << 8);
	CHECK_EQ_U64(v, 1000 - done - ticks_in(khz, e - c));
	CHECK((inb(&p, 0x61, c + tick_tsc(khz, 1000 - done) - 1) & 0x20) == 0);
	CHECK((inb(&p, 0x61, c + tick_tsc(khz, 1000 - done)) & 0x20) != 0);

	/* mode 2: gate low forces OUT high and stops; rising edge reloads */
	uint64_t t = 10000000, r = t + 5000;
	outb(&p, 0x43, 0xb4, t);
	outb(&p, 0x42, 10, t);
	outb(&p, 0x42, 0, t);
	CHECK(!pit_out(&p, 2, t + tick_tsc(khz, 9)));
	outb(&p, 0x61, 0x00, t + tick_tsc(khz, 9));
	CHECK(pit_out(&p, 2, t + tick_tsc(khz, 9)));
	CHECK(pit_out(&p, 2, r));
	outb(&p, 0x61, 0x01, r);
	CHECK_EQ_U64(inb(&p, 0x42, r + tick_tsc(khz, 3)), 7);
	inb(&p, 0x42, 0);
	CHECK(!pit_out(&p, 2, r + tick_tsc(khz, 9)));

	/* mode 1: waits for the gate's rising edge, OUT low while counting */
	outb(&p, 0x43, 0xb2, t);
	outb(&p, 0x42, 50, t);
	outb(&p, 0x42, 0, t);
	CHECK(pit_out(&p, 2, t + 1000000));
	outb(&p, 0x61, 0x00, t + 1000000);
	outb(&p, 0x61, 0x01, t + 1000000);
	CHECK(!pit_out(&p, 2, t + 1000000));
	CHECK(!pit_out(&p, 2, t + 1000000 + tick_tsc(khz, 50) - 1));
	CHECK(pit_out(&p, 2, t + 1000000 + tick_tsc(khz, 50)));
}

/* Port 0x61: gate, speaker data, refresh toggle, OUT2. */
TEST(pit_port61)
{
	struct pit p;

	pit_init(&p, 2000000);
	outb(&p, 0x61, 0xff, 0);
	uint8_t a = inb(&p, 0x61, 0), b = inb(&p, 0x61, 0);
	CHECK_EQ_U64(a & 0x03, 0x03);
	CHECK_EQ_U64((a ^ b) & 0x10, 0x10);
	CHECK_EQ_U64(a & 0xcc, 0);
	CHECK_EQ_U64(inb(&p, 0x43, 0), 0);
	outb(&p, 0x61, 0x00, 0);
	CHECK_EQ_U64(inb(&p, 0x61, 0) & 0x03, 0);
}

/* ---- the state record (pit_record) ---- */

#define REC_KHZ 2000000 /* 2 GHz: 1676 TSC cycles a PIT tick */

/* Both PITs read the same and give the same IRQ 0 edges at `now`. */
static void check_same_now(struct pit *a, struct pit *b, uint64_t now, unsigned k)
{
	CHECK_EQ_U64(pit_next_irq0(b, now) + k, pit_next_irq0(a, now) + k);
	for (unsigned ch = 0; ch < 3; ch++)
		CHECK_EQ_U64(pit_out(a, ch, now) + 0x10 * k, pit_out(b, ch, now) + 0x10 * k);
	for (uint16_t port = 0x40; port <= 0x43; port++)
		CHECK_EQ_U64(inb(a, port, now) + 0x1000 * k, inb(b, port, now) + 0x1000 * k);
	CHECK_EQ_U64(inb(a, 0x61, now) + 0x1000 * k, inb(b, 0x61, now) + 0x1000 * k);
	CHECK_EQ_U64(pit_irq0_edges(a, now) + 0x1000 * k, pit_irq0_edges(b, now) + 0x1000 * k);
}

/* ... and go on alike through the same port accesses, from one IRQ 0 edge
 * to the next. */
static void check_same_future(struct pit *a, struct pit *b, uint64_t now)
{
	struct pit *both[2] = { a, b };

	for (unsigned k = 0; k < 40; k++) {
		uint64_t next = pit_next_irq0(a, now);

		check_same_now(a, b, now, k);
		for (unsigned i = 0; i < 2; i++) {
			struct pit *p = both[i];

			switch (k % 8) {
			case 1: outb(p, 0x61, (uint8_t)(k >> 3 & 3), now); break; /* gate 2, speaker */
			case 3: outb(p, 0x43, 0xe0 | (k & 0xe), now); break;    /* read-back */
			case 5: outb(p, 0x43, (uint8_t)(k & 0x40), now); break; /* latch 0 or 1 */
			case 7: outb(p, 0x42, (uint8_t)k, now); break;
			default: break;
			}
		}
		/* to the next IRQ 0 edge, or a while on */
		now = next > now ? next : now + 3000 + 1000 * k;
	}
}

/* Channel 0 a rate generator reprogrammed with edges pending; channel 1 in
 * BCD mode 3 with a count and a status latched and a read half done;
 * channel 2 in mode 0 stopped by its gate, the speaker on; refresh toggled. */
static uint64_t busy_pit(struct pit *p)
{
	uint64_t t = 1000000;

	pit_init(p, REC_KHZ);
	outb(p, 0x43, 0x34, t); /* ch0 mode 2, lo/hi */
	outb(p, 0x40, 0xa9, t);
	outb(p, 0x40, 0x04, t); /* 1193: 1 kHz */
	t += 3500 * 1676;       /* 3.5 periods */
	CHECK_EQ_U64(pit_irq0_edges(p, t), 2); /* ticks 1193 and 2386 */
	outb(p, 0x43, 0x77, t); /* ch1 mode 3, BCD */
	outb(p, 0x41, 0x00, t);
	outb(p, 0x41, 0x25, t); /* 2500 */
	outb(p, 0x43, 0xb0, t); /* ch2 mode 0 */
	outb(p, 0x42, 0x10, t);
	outb(p, 0x42, 0x27, t); /* 10000 */
	outb(p, 0x61, 0x03, t); /* gate and speaker on */
	t += 300 * 1676;
	outb(p, 0x61, 0x02, t); /* gate off: stopped near 9700 */
	outb(p, 0x43, 0x40, t + 100);
	outb(p, 0x43, 0xe4, t + 200); /* ch1: status and count */
	CHECK_EQ_U64(inb(p, 0x41, t + 300), 0xb7); /* the status: OUT high, count loaded */
	inb(p, 0x41, t + 300);                     /* the latched count's low byte */
	inb(p, 0x61, t);
	t += 2 * 1193 * 1676;
	outb(p, 0x40, 0x00, t); /* ch0: 1024 from now; the 3 edges before it give one */
	outb(p, 0x40, 0x04, t);
	return t;
}

TEST(pit_record_round_trip_busy)
{
	struct pit a, b;
	uint64_t now = busy_pit(&a);

	CHECK_EQ_U64(pit_next_irq0(&a, now), now); /* edges pending */
	pit_init(&b, REC_KHZ);
	record_copy(&pit_record, &a, &b);
	CHECK_EQ_U64(b.tsc_khz, REC_KHZ);
	CHECK_EQ_U64(pit_irq0_edges(&b, now), 1); /* ticks 3579, 4772, 5965: reprogrammed, one */
	CHECK_EQ_U64(inb(&b, 0x41, now), 0x19);   /* the latched count's high byte: 2500 - 2 * 300 */
	CHECK_EQ_U64(inb(&b, 0x61, now), 0x02);   /* gate off, refresh back to 0, OUT2 low */
	pit_irq0_edges(&a, now);
	inb(&a, 0x41, now);
	inb(&a, 0x61, now);
	check_same_now(&a, &b, now, 0);
	outb(&a, 0x61, 0x01, now);
	outb(&b, 0x61, 0x01, now); /* ch2 resumes where it stopped */
	check_same_future(&a, &b, now);
}

/* Channel 0 in mode 4 (lsb only) armed with its status latched, channel 1
 * with half a lo/hi count written, channel 2 in mode 1 waiting for its gate
 * and half read. */
TEST(pit_record_round_trip_armed)
{
	struct pit a, b;
	uint64_t now = 5000;

	pit_init(&a, REC_KHZ);
	outb(&a, 0x43, 0x18, now); /* ch0 mode 4, lsb */
	outb(&a, 0x40, 0x80, now); /* 128 */
	pit_irq0_edges(&a, now);
	outb(&a, 0x43, 0xe2, now); /* ch0 status */
	outb(&a, 0x43, 0x70, now); /* ch1 mode 0 */
	outb(&a, 0x41, 0x34, now);
	outb(&a, 0x43, 0xb2, now); /* ch2 mode 1 */
	outb(&a, 0x42, 0x64, now);
	outb(&a, 0x42, 0x00, now);
	inb(&a, 0x42, now);
	CHECK(a.ch[2].waiting);
	pit_init(&b, REC_KHZ);
	record_copy(&pit_record, &a, &b);
	CHECK_EQ_U64(pit_next_irq0(&b, now), now + tick_tsc(REC_KHZ, 129)); /* mode 4: count + 1 */
	check_same_now(&a, &b, now + 5, 0);
	outb(&a, 0x41, 0x12, now + 10);
	outb(&b, 0x41, 0x12, now + 10); /* ch1: 0x1234 */
	outb(&a, 0x61, 0x01, now + 10);
	outb(&b, 0x61, 0x01, now + 10); /* ch2 triggered */
	check_same_future(&a, &b, now + 10);
}

/* Channel 2 in mode 0 paused by its gate and resumed, running; channel 0
 * from power-on, its first edge collected. */
static uint64_t resumed_pit(struct pit *p)
{
	uint64_t t = 200000000; /* 119300 ticks */

	pit_init(p, REC_KHZ);
	outb(p, 0x43, 0xb0, 100);
	outb(p, 0x42, 0x00, 100);
	outb(p, 0x42, 0x10, 100); /* 4096 */
	outb(p, 0x61, 0x01, 1000);
	outb(p, 0x61, 0x00, 1000 + 1000 * 1676);
	outb(p, 0x61, 0x01, t);
	CHECK_EQ_U64(pit_irq0_edges(p, t), 1);
	return t + 500 * 1676;
}

TEST(pit_record_round_trip_resumed)
{
	struct pit a, b;
	uint64_t now = resumed_pit(&a);

	pit_init(&b, REC_KHZ);
	record_copy(&pit_record, &a, &b);
	CHECK(b.ch[2].running && b.ch[2].gate);
	check_same_now(&a, &b, now, 0);
	for (uint64_t t = now; t < now + 3000 * 1676; t += 200 * 1676) {
		CHECK(pit_out(&a, 2, t) == pit_out(&b, 2, t));
		outb(&a, 0x43, 0x80, t);
		outb(&b, 0x43, 0x80, t);
		check_same_now(&a, &b, t, (unsigned)(t - now));
	}
	CHECK(pit_out(&b, 2, now + 2600 * 1676)); /* 4096 - 1000 - 500 ticks on */
	check_same_future(&a, &b, now);
}

/* Channel 0 owing periods with one in flight: the copy raises, waits and
 * drains alike. */
TEST(pit_record_round_trip_reinject)
{
	struct pit a, b;
	uint64_t now;
	bool busy = true;

	pit_init(&a, REC_KHZ);
	now = irq0_starved(&a, 2, 1193, 1000, 25);
	pit_init(&b, REC_KHZ);
	record_copy(&pit_record, &a, &b);
	CHECK_EQ_U64(b.irq0_backlog, 24);
	CHECK(b.irq0_in_flight);
	for (unsigned k = 0; k < 200; k++) {
		enum pit_irq0_state s = k % 5 == 4 ? PIT_IRQ0_MASKED : busy && k % 3 ? PIT_IRQ0_BUSY : PIT_IRQ0_IDLE;
		bool ra = pit_irq0_raise(&a, s, now), rb = pit_irq0_raise(&b, s, now);

		CHECK(ra == rb);
		CHECK_EQ_U64(pit_next_irq0(&a, now), pit_next_irq0(&b, now));
		busy = ra || (busy && s == PIT_IRQ0_BUSY);
		now += k < 100 ? 50000 : 3000000;
	}
	CHECK(!memcmp(&a, &b, sizeof a));
}

TEST(pit_record_check_accepts)
{
	struct pit p;

	pit_init(&p, REC_KHZ);
	CHECK(record_saved_ok(&pit_record, &p));
	busy_pit(&p);
	CHECK(record_saved_ok(&pit_record, &p));
	resumed_pit(&p);
	CHECK(record_saved_ok(&pit_record, &p));
	outb(&p, 0x43, 0x92, 1); /* ch2 mode 1, lsb: waiting for a count */
	CHECK(record_saved_ok(&pit_record, &p));
	outb(&p, 0x42, 0x05, 2);
	CHECK(record_saved_ok(&pit_record, &p)); /* and for the gate */
	outb(&p, 0x61, 0x00, 3);
	outb(&p, 0x61, 0x01, 4);
	CHECK(record_saved_ok(&pit_record, &p)); /* counting */
	outb(&p, 0x61, 0x00, 5);
	CHECK(record_saved_ok(&pit_record, &p)); /* a low gate does not stop mode 1 */
}

/* Case i: break one field of the busy PIT's record; the refusal, NULL past the last. */
static const char *break_pit(unsigned i, struct pit *p)
{
	struct pit_channel *c0 = &p->ch[0], *c1 = &p->ch[1], *c2 = &p->ch[2];

	switch (i) {
	case 0: c1->mode = 6; return "ch[1].mode 6 is not 0-5";
	case 1: c0->rw_mode = 0; return "ch[0].rw_mode 0 is not 1-3";
	case 2: c0->read_state = PIT_RW_HI; return "ch[0].read_state 2 does not go with rw_mode 3";
	case 3: c2->write_state = 5; return "ch[2].write_state 5";
	case 4: c1->latch_state = PIT_RW_LO; return "ch[1].latch_state 1";
	case 5: c1->status_latched = true; c1->status = 0x34; return "ch[1].status 0x34 is not the latched";
	case 6: c0->count = 0; return "ch[0].count 0 is not 1-65536";
	case 7: c1->count = 10001; return "ch[1].count 10001 is not 1-10000";
	case 8: c1->gate = false; return "ch[1].gate is low";
	case 9: c2->waiting = true; return "ch[2].waiting for the gate in mode 0";
	case 10: c2->loaded = false; c2->running = true; return "ch[2].running without a count loaded";
	case 11: c0->mode = 1; c0->status_latched = false; return "ch[0].running in mode 1 with no gate";
	case 12: c2->running = true; return "ch[2].running in mode 0 with no gate";
	case 13: c0->running = false; return "ch[0].running is 0 (stopped) in mode 2 with gate 1";
	case 14: c2->edges_done = 2; return "ch[2].edges_done 2: the counting period has no such OUT edge";
	case 15: c2->frozen_d = 20000; return "ch[2].edges_done 0 is not the 1 edges before tick 20000";
	case 16: p->refresh = 0x11; return "refresh 0x11";
	case 17: p->irq0_backlog = 1166; return "irq0_backlog 1166 is over a second of periods (1165)";
	case 18: c0->mode = 0; p->irq0_in_flight = true; return "irq0_in_flight 1 with channel 0 in mode 0";
	case 19: c0->mode = 4; c0->edges_done = 0; p->irq0_backlog = 1; return "irq0_backlog 1, irq0_in_flight 0";
	}
	return NULL;
}

TEST(pit_record_check_refuses)
{
	struct pit p, z;
	char err[160];
	const char *reason;

	busy_pit(&p);
	for (unsigned i = 0; record_loaded(&pit_record, &p, &z), (reason = break_pit(i, &z)); i++) {
		err[0] = 0;
		CHECK(!pit_record.check(&z, NULL, err, sizeof err));
		if (!strstr(err, reason)) {
			fprintf(stderr, "  case %u: \"%s\", not \"%s\"\n", i, err, reason);
			CHECK(!"the refusal names the field");
		}
	}
}

TEST(pit_record_bool_byte)
{
	struct pit p;
	uint8_t off[512], on[512];
	uint32_t n;

	busy_pit(&p);
	n = record_save(&pit_record, &p, off, sizeof off);
	p.ch[2].waiting = true;
	CHECK(record_save(&pit_record, &p, on, sizeof on) == n);
	pit_init(&p, REC_KHZ);
	record_bool_byte_refused(&pit_record, off, on, n, &p, "waiting");
	CHECK(!p.ch[2].waiting);
}

/* Records with random bytes changed: whatever the check accepts, the model
 * runs on without fault (the sanitizers abort on a division by zero, an
 * overflow or a bad shift). */
TEST(pit_record_checked_records_run)
{
	struct rng r = rng_seeded(27);
	struct pit p, z;
	uint8_t good[512], buf[512];
	struct field_io out = field_saver(good, sizeof good), in;
	char err[160];
	unsigned accepted = 0;

	busy_pit(&p);
	pit_record.fields(&p, &out);
	REQUIRE(!out.overrun);
	for (unsigned i = 0; i < 20000; i++) {
		memcpy(buf, good, out.pos);
		for (unsigned n = 1 + (unsigned)rng_below(&r, 3); n; n--) {
			static const uint8_t edge[] = { 0, 1, 2, 3, 4, 5, 6, 7, 0x10, 0x80, 0xff };
			unsigned v = (unsigned)rng_below(&r, sizeof edge + 1);

			buf[rng_below(&r, out.pos)] = v < sizeof edge ? edge[v] : (uint8_t)rng_next(&r);
		}
		memset(&z, 0, sizeof z);
		in = field_loader(buf, out.pos);
		pit_record.fields(&z, &in);
		if (in.bad || !pit_record.check(&z, NULL, err, sizeof err))
			continue;
		accepted++;
		pit_init(&p, REC_KHZ);
		in = field_loader(buf, out.pos);
		pit_record.fields(&p, &in);
		for (unsigned k = 0; k < 6; k++) {
			uint64_t now = rng_next(&r) >> rng_below(&r, 64);

			pit_next_irq0(&p, now);
			pit_irq0_edges(&p, now);
			for (unsigned ch = 0; ch < 3; ch++)
				pit_out(&p, ch, now);
			for (uint16_t port = 0x40; port <= 0x43; port++)
				inb(&p, port, now);
			inb(&p, 0x61, now);
			outb(&p, k & 1 ? 0x61 : (uint16_t)(0x40 + rng_below(&r, 4)), (uint8_t)rng_next(&r), now);
		}
	}
	CHECK(accepted > 1000);
}

/* As SeaBIOS leaves it for a kernel (dev/firmware.c): channel 0 in mode 2
 * with count 65536 from the firmware's TSC, 18.2 Hz; channels 1 and 2 as at
 * power-on. */
TEST(pit_firmware_state)
{
	for (unsigned i = 0; i < NRATES; i++) {
		struct pit p, reset;
		uint64_t khz = rates[i], t0 = 123456789;

		pit_init(&p, khz);
		firmware_pit(&p, t0);
		pit_init(&reset, khz);
		outb(&p, 0x43, 0xe2, t0); /* read-back: channel 0's status */
		CHECK_EQ_U64(inb(&p, 0x40, t0), 0xb4); /* OUT high, lo/hi, mode 2, binary */
		for (unsigned ch = 1; ch < 3; ch++) {
			outb(&p, 0x43, (uint8_t)(0xe0 | 2u << ch), t0);
			outb(&reset, 0x43, (uint8_t)(0xe0 | 2u << ch), t0);
			CHECK_EQ_U64(inb(&p, (uint16_t)(0x40 + ch), t0), inb(&reset, (uint16_t)(0x40 + ch), t0));
		}
		pit_irq0_edges(&p, t0); /* drop the power-on square wave's edges */
		CHECK_EQ_U64(pit_next_irq0(&p, t0), t0 + tick_tsc(khz, 65536));
		CHECK_EQ_U64(pit_irq0_edges(&p, t0 + tick_tsc(khz, 65536) - 1), 0);
		CHECK_EQ_U64(pit_irq0_edges(&p, t0 + tick_tsc(khz, 65536 * 3)), 3);
		CHECK(pit_out(&p, 0, t0 + tick_tsc(khz, 65536 * 3)));
		CHECK(!pit_out(&p, 0, t0 + tick_tsc(khz, 65536 * 3 - 1)));
	}
}
