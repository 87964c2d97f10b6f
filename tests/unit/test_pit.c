/* The 8254 PIT model (dev/pit.c) against the Intel 8254 datasheet, and the
 * calibration sequences Linux and SeaBIOS run on it. */
#include "check.h"
#include "dev/pit.h"
#include <stdint.h>

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
