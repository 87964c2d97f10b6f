/* The CMOS RTC model (dev/rtc.c) against the MC146818A datasheet and the
 * CMOS bytes QEMU's pc machine sets. */
#include "check.h"
#include "record_check.h"
#include "lib/civil.h"
#include "dev/rtc.h"
#include "tests/rng.h"
#include <stdint.h>
#include <string.h>

static uint8_t cmos_rd(struct rtc *r, uint8_t i, uint64_t now)
{
	rtc_port_write(r, 0x70, i, now);
	return rtc_port_read(r, 0x71, now);
}

static void cmos_wr(struct rtc *r, uint8_t i, uint8_t v, uint64_t now)
{
	rtc_port_write(r, 0x70, i, now);
	rtc_port_write(r, 0x71, v, now);
}

TEST(rtc_unix_to_civil_table)
{
	static const struct {
		int64_t secs;
		int64_t y;
		unsigned mo, d, h, mi, s, wday;
	} t[] = {
		{ 0, 1970, 1, 1, 0, 0, 0, 4 },
		{ 951782400, 2000, 2, 29, 0, 0, 0, 2 },
		{ 946684799, 1999, 12, 31, 23, 59, 59, 5 },
		{ 1700000000, 2023, 11, 14, 22, 13, 20, 2 },
		{ 4102444800, 2100, 1, 1, 0, 0, 0, 5 },
		{ 4107542400, 2100, 3, 1, 0, 0, 0, 1 }, /* 2100 is not a leap year */
		{ 253402300799, 9999, 12, 31, 23, 59, 59, 5 },
		{ -1, 1969, 12, 31, 23, 59, 59, 3 },
	};
	for (unsigned i = 0; i < sizeof t / sizeof t[0]; i++) {
		struct civil_time c;
		civil_from_unix(t[i].secs, &c);
		CHECK_EQ_U64(c.year, t[i].y);
		CHECK_EQ_U64(c.month, t[i].mo);
		CHECK_EQ_U64(c.day, t[i].d);
		CHECK_EQ_U64(c.hour, t[i].h);
		CHECK_EQ_U64(c.min, t[i].mi);
		CHECK_EQ_U64(c.sec, t[i].s);
		CHECK_EQ_U64(c.wday, t[i].wday);
		CHECK_EQ_U64(civil_to_unix(&c), t[i].secs);
	}
	/* round trip over a range, day by day plus an odd time */
	unsigned bad = 0;
	for (int64_t s = -86400LL * 1000; s < 86400LL * 200000; s += 86400 * 7 + 3607) {
		struct civil_time c;
		civil_from_unix(s, &c);
		if (civil_to_unix(&c) != s || c.month < 1 || c.month > 12 || c.day < 1 || c.day > 31)
			bad++;
	}
	CHECK_EQ_U64(bad, 0);
}

/* 2023-11-14 22:13:20 UTC (a Tuesday) at TSC 0; read 5 s later. */
TEST(rtc_time_bcd_binary)
{
	static const uint64_t rates[] = { 200000, 2993000, 2445312 };
	for (unsigned i = 0; i < 3; i++) {
		struct rtc r;
		uint64_t hz = rates[i] * 1000, now = 5 * hz + 12345;

		rtc_init(&r, rates[i], 1700000000, 128ull << 20);
		static const uint8_t reg[] = { 0, 2, 4, 6, 7, 8, 9, 0x32 };
		static const uint8_t bcd[] = { 0x25, 0x13, 0x22, 3, 0x14, 0x11, 0x23, 0x20 };
		static const uint8_t bin[] = { 25, 13, 22, 3, 14, 11, 23, 20 };
		CHECK_EQ_U64(cmos_rd(&r, 0x0b, 0), 0x02);
		for (unsigned k = 0; k < 8; k++)
			CHECK_EQ_U64(cmos_rd(&r, reg[k], now), bcd[k]);
		CHECK_EQ_U64(cmos_rd(&r, 0, 5 * hz - 1), 0x24);
		cmos_wr(&r, 0x0b, 0x06, now);
		for (unsigned k = 0; k < 8; k++)
			CHECK_EQ_U64(cmos_rd(&r, reg[k], now), bin[k]);
		/* across midnight and a month end: 1 h 46 min 40 s later is 00:00:00 Nov 15 */
		CHECK_EQ_U64(cmos_rd(&r, 4, (6400 - 1) * hz), 23);
		CHECK_EQ_U64(cmos_rd(&r, 4, 6400 * hz), 0);
		CHECK_EQ_U64(cmos_rd(&r, 7, 6400 * hz), 15);
		CHECK_EQ_U64(cmos_rd(&r, 6, 6400 * hz), 4);
	}
}

TEST(rtc_12_hour)
{
	static const struct {
		uint64_t secs;
		uint8_t b, hour;
	} t[] = {
		{ 1700000000, 0x00, 0x90 },  /* 22:13 -> 10 PM, BCD */
		{ 1700000000, 0x04, 0x8a },  /* binary */
		{ 1699920000, 0x00, 0x12 },  /* 00:00 -> 12 AM */
		{ 1699963200, 0x00, 0x92 },  /* 12:00 -> 12 PM */
		{ 1699966800, 0x04, 0x81 },  /* 13:00 -> 1 PM */
		{ 1699923600, 0x04, 0x01 },  /* 01:00 -> 1 AM */
	};
	for (unsigned i = 0; i < sizeof t / sizeof t[0]; i++) {
		struct rtc r;
		rtc_init(&r, 2000000, t[i].secs, 0);
		cmos_wr(&r, 0x0b, t[i].b, 0);
		CHECK_EQ_U64(cmos_rd(&r, 4, 0), t[i].hour);
	}
	/* setting 12-hour time: 11 PM */
	struct rtc r;
	rtc_init(&r, 2000000, 1700000000, 0);
	cmos_wr(&r, 0x0b, 0x80, 0);
	cmos_wr(&r, 4, 0x91, 0);
	cmos_wr(&r, 0x0b, 0x00, 0);
	cmos_wr(&r, 0x0b, 0x02, 0);
	CHECK_EQ_U64(cmos_rd(&r, 4, 0), 0x23);
}

TEST(rtc_set_freezes_and_sets)
{
	struct rtc r;
	uint64_t khz = 2993000, hz = khz * 1000;

	rtc_init(&r, khz, 1700000000, 0);
	cmos_wr(&r, 0x0b, 0x82, 3 * hz); /* SET at 22:13:23 */
	CHECK_EQ_U64(cmos_rd(&r, 0, 100 * hz), 0x23);
	CHECK_EQ_U64(cmos_rd(&r, 0x0a, hz - 1) & 0x80, 0); /* no UIP while SET */
	/* set 2024-02-29 08:00:00 */
	cmos_wr(&r, 0, 0x00, 100 * hz);
	cmos_wr(&r, 2, 0x00, 100 * hz);
	cmos_wr(&r, 4, 0x08, 100 * hz);
	cmos_wr(&r, 7, 0x29, 100 * hz);
	cmos_wr(&r, 8, 0x02, 100 * hz);
	cmos_wr(&r, 9, 0x24, 100 * hz);
	CHECK_EQ_U64(cmos_rd(&r, 4, 200 * hz), 0x08);
	cmos_wr(&r, 0x0b, 0x02, 200 * hz); /* runs from here */
	CHECK_EQ_U64(cmos_rd(&r, 0, 203 * hz), 0x03);
	CHECK_EQ_U64(cmos_rd(&r, 4, 203 * hz), 0x08);
	CHECK_EQ_U64(cmos_rd(&r, 6, 203 * hz), 5); /* Thursday */
	CHECK_EQ_U64(cmos_rd(&r, 7, 203 * hz + 86400 * hz), 0x01);
	CHECK_EQ_U64(cmos_rd(&r, 8, 203 * hz + 86400 * hz), 0x03);
	/* a write with SET = 0 moves the clock too */
	cmos_wr(&r, 9, 0x30, 300 * hz);
	CHECK_EQ_U64(cmos_rd(&r, 9, 301 * hz), 0x30);
	CHECK_EQ_U64(cmos_rd(&r, 0, 301 * hz), 0x41); /* 08:01:41 */
	CHECK_EQ_U64(cmos_rd(&r, 2, 301 * hz), 0x01);
	CHECK_EQ_U64(cmos_rd(&r, 0x32, 301 * hz), 0x20);
}

TEST(rtc_uip_and_flags)
{
	static const uint64_t rates[] = { 200000, 2993000, 2445312 };
	for (unsigned i = 0; i < 3; i++) {
		struct rtc r;
		uint64_t khz = rates[i], hz = khz * 1000;
		/* UIP from frac >= hz * 32760 / 32768 (rounded up) to the second's end */
		uint64_t first = (uint64_t)(((unsigned __int128)hz * 32760 + 32767) / 32768);

		rtc_init(&r, khz, 1700000000, 0);
		CHECK_EQ_U64(cmos_rd(&r, 0x0a, 0), 0x26);
		CHECK_EQ_U64(cmos_rd(&r, 0x0a, 7 * hz + first - 1), 0x26);
		CHECK_EQ_U64(cmos_rd(&r, 0x0a, 7 * hz + first), 0xa6);
		CHECK_EQ_U64(cmos_rd(&r, 0x0a, 8 * hz - 1), 0xa6);
		CHECK_EQ_U64(cmos_rd(&r, 0x0a, 8 * hz), 0x26);
		/* about 244 us */
		CHECK((hz - first) * 1000000 / hz >= 243 && (hz - first) * 1000000 / hz <= 245);
		CHECK_EQ_U64(cmos_rd(&r, 0x0d, 0), 0x80);
		cmos_wr(&r, 0x0d, 0, 0);
		CHECK_EQ_U64(cmos_rd(&r, 0x0d, 0), 0x80);

		/* register C: UF once a second passed, cleared by the read */
		cmos_wr(&r, 0x0a, 0x20, 0); /* RS = 0: no periodic flag */
		cmos_rd(&r, 0x0c, 8 * hz);
		CHECK_EQ_U64(cmos_rd(&r, 0x0c, 8 * hz + 5), 0);
		CHECK_EQ_U64(cmos_rd(&r, 0x0c, 9 * hz), 0x10);
		CHECK_EQ_U64(cmos_rd(&r, 0x0c, 9 * hz), 0);
		cmos_wr(&r, 0x0b, 0x12, 9 * hz); /* UIE */
		CHECK_EQ_U64(cmos_rd(&r, 0x0c, 10 * hz), 0x90);
		/* periodic: RS = 6 (1024 Hz) */
		cmos_wr(&r, 0x0a, 0x26, 10 * hz);
		cmos_wr(&r, 0x0b, 0x42, 10 * hz);
		CHECK_EQ_U64(cmos_rd(&r, 0x0c, 10 * hz + hz / 1024 + 1), 0xc0);
		CHECK_EQ_U64(cmos_rd(&r, 0x0c, 10 * hz + hz / 1024 + 2), 0);
		/* alarm at 22:13:20 + 15 s = 22:13:35 (BCD) */
		cmos_wr(&r, 0x0b, 0x22, 10 * hz);
		cmos_wr(&r, 0x0a, 0x20, 10 * hz); /* RS = 0: no periodic flag */
		cmos_wr(&r, 1, 0x35, 10 * hz);
		cmos_wr(&r, 3, 0xc0, 10 * hz); /* don't care */
		cmos_wr(&r, 5, 0x22, 10 * hz);
		cmos_rd(&r, 0x0c, 14 * hz);
		CHECK_EQ_U64(cmos_rd(&r, 0x0c, 15 * hz), 0xb0);
		CHECK_EQ_U64(cmos_rd(&r, 0x0c, 16 * hz), 0x10);
	}
}

TEST(rtc_memory_bytes)
{
	static const struct {
		uint64_t ram;
		uint8_t b15, b16, b17, b18, b34, b35, b5b, b5c, b5d;
	} t[] = {
		{ 128ull << 20, 0x80, 0x02, 0xff, 0xff, 0x00, 0x07, 0, 0, 0 },
		{ 3ull << 30, 0x80, 0x02, 0xff, 0xff, 0x00, 0xbf, 0, 0, 0 },
		{ 6ull << 30, 0x80, 0x02, 0xff, 0xff, 0x00, 0xbf, 0x00, 0xc0, 0x00 },
		{ 32ull << 20, 0x80, 0x02, 0x00, 0x7c, 0x00, 0x01, 0, 0, 0 }, /* 31 MiB = 0x7c00 KiB */
	};
	for (unsigned i = 0; i < sizeof t / sizeof t[0]; i++) {
		struct rtc r;
		rtc_init(&r, 2000000, 0, t[i].ram);
		CHECK_EQ_U64(cmos_rd(&r, 0x15, 0), t[i].b15);
		CHECK_EQ_U64(cmos_rd(&r, 0x16, 0), t[i].b16);
		CHECK_EQ_U64(cmos_rd(&r, 0x17, 0), t[i].b17);
		CHECK_EQ_U64(cmos_rd(&r, 0x18, 0), t[i].b18);
		CHECK_EQ_U64(cmos_rd(&r, 0x30, 0), t[i].b17);
		CHECK_EQ_U64(cmos_rd(&r, 0x31, 0), t[i].b18);
		CHECK_EQ_U64(cmos_rd(&r, 0x34, 0), t[i].b34);
		CHECK_EQ_U64(cmos_rd(&r, 0x35, 0), t[i].b35);
		CHECK_EQ_U64(cmos_rd(&r, 0x5b, 0), t[i].b5b);
		CHECK_EQ_U64(cmos_rd(&r, 0x5c, 0), t[i].b5c);
		CHECK_EQ_U64(cmos_rd(&r, 0x5d, 0), t[i].b5d);
	}
}

TEST(rtc_index_port)
{
	struct rtc r;

	rtc_init(&r, 2000000, 0, 0);
	rtc_port_write(&r, 0x70, 0x8d, 0); /* NMI masked, register D */
	CHECK(r.nmi_masked);
	CHECK_EQ_U64(rtc_port_read(&r, 0x71, 0), 0x80);
	CHECK_EQ_U64(rtc_port_read(&r, 0x70, 0), 0xff);
	cmos_wr(&r, 0x40, 0x5a, 0); /* plain CMOS storage */
	CHECK_EQ_U64(cmos_rd(&r, 0x40, 0), 0x5a);
	CHECK(!r.nmi_masked);
}

/* ---- the state record (rtc_record) ---- */

#define REC_KHZ 2000000ull
#define REC_HZ (REC_KHZ * 1000)
#define REC_T0 1700000000ull /* 2023-11-14 22:13:20 UTC at TSC 0 */
#define REC_RAM (256ull << 20)

/* Both RTCs read the same at `now`: the data port at the saved index, then
 * every CMOS byte (register C's flags consumed alike). */
static void check_same_now(struct rtc *a, struct rtc *b, uint64_t now, unsigned k)
{
	CHECK_EQ_U64(rtc_port_read(a, 0x71, now) + 0x100 * k, rtc_port_read(b, 0x71, now) + 0x100 * k);
	for (unsigned i = 0; i < 128; i++)
		if (cmos_rd(a, (uint8_t)i, now) != cmos_rd(b, (uint8_t)i, now))
			CHECK_EQ_U64(k * 0x1000 + i, 0); /* names the step and byte */
}

/* ... and go on alike over seconds, minutes and days, through a time set
 * under SET, a time set while running and a change to binary mode. */
static void check_same_future(struct rtc *a, struct rtc *b, uint64_t now)
{
	static const uint64_t steps[] = { REC_HZ / 4, REC_HZ / 3, REC_HZ, 59 * REC_HZ, 3600 * REC_HZ, 86400 * REC_HZ };
	struct rtc *both[2] = { a, b };

	for (unsigned k = 0; k < 18; k++) {
		check_same_now(a, b, now, k);
		for (unsigned i = 0; i < 2; i++) {
			struct rtc *r = both[i];

			switch (k) {
			case 3: cmos_wr(r, RTC_REG_B, cmos_rd(r, RTC_REG_B, now) | RTC_B_SET, now); break;
			case 5: cmos_wr(r, RTC_HOUR, 0x07, now); break;
			case 7: cmos_wr(r, RTC_REG_B, cmos_rd(r, RTC_REG_B, now) & ~RTC_B_SET, now); break;
			case 9: cmos_wr(r, RTC_YEAR, 0x31, now); break;
			case 11: cmos_wr(r, RTC_REG_B, cmos_rd(r, RTC_REG_B, now) | RTC_B_DM_BINARY, now); break;
			case 13: cmos_wr(r, RTC_REG_A, 0x2f, now); break;
			default: break;
			}
		}
		now += steps[k % (sizeof steps / sizeof steps[0])];
	}
}

/* The guest moved the clock (minutes set while running), enabled all three
 * flags with a 64 Hz periodic rate and a minute alarm, wrote user bytes,
 * read C a while ago and left the index at C with NMIs masked. */
static uint64_t busy_rtc(struct rtc *r)
{
	uint64_t t = 10 * REC_HZ + 12345;

	rtc_init(r, REC_KHZ, REC_T0, REC_RAM);
	cmos_wr(r, RTC_REG_B, RTC_B_24H | RTC_B_PIE | RTC_B_AIE | RTC_B_UIE, t);
	cmos_wr(r, RTC_REG_A, 0x2a, t);
	cmos_wr(r, RTC_MIN, 0x44, t); /* 22:44:30 */
	cmos_wr(r, RTC_SEC_ALARM, 0xc0, t);
	cmos_wr(r, RTC_MIN_ALARM, 0x45, t);
	cmos_wr(r, RTC_HOUR_ALARM, 0xff, t);
	cmos_wr(r, 0x40, 0x5a, t);
	cmos_wr(r, 0x7f, 0xa5, t);
	CHECK_EQ_U64(cmos_rd(r, RTC_REG_C, t) & RTC_C_UF, RTC_C_UF);
	rtc_port_write(r, 0x70, 0x80 | RTC_REG_C, t);
	return t + 1000;
}

TEST(rtc_record_round_trip_running)
{
	struct rtc a, b;
	uint64_t now = busy_rtc(&a);

	rtc_init(&b, REC_KHZ, REC_T0, REC_RAM);
	record_copy(&rtc_record, &a, &b);
	CHECK(b.tsc_khz == REC_KHZ && b.unix_at_tsc0 == REC_T0);
	for (unsigned i = 0; i < 2; i++) {
		struct rtc *r = i ? &b : &a;

		CHECK_EQ_U64(rtc_port_read(r, 0x71, now), 0); /* the same period as the last read */
		CHECK_EQ_U64(rtc_port_read(r, 0x71, now + REC_HZ / 64), RTC_C_IRQF | RTC_C_PF);
		CHECK_EQ_U64(rtc_port_read(r, 0x71, now + REC_HZ), RTC_C_IRQF | RTC_C_PF | RTC_C_UF);
	}
	now += REC_HZ * 3 / 2;
	for (unsigned i = 0; i < 2; i++) {
		struct rtc *r = i ? &b : &a;

		CHECK_EQ_U64(cmos_rd(r, RTC_MIN, now), 0x44);
		/* the alarm goes off at 22:45:00 */
		CHECK_EQ_U64(cmos_rd(r, RTC_REG_C, now + 28 * REC_HZ) & RTC_C_AF, 0);
		CHECK_EQ_U64(cmos_rd(r, RTC_REG_C, now + 29 * REC_HZ) & RTC_C_AF, RTC_C_AF);
	}
	now += 29 * REC_HZ;
	check_same_future(&a, &b, now);
}

/* Frozen (SET) with a time written: the restored clock runs from it. */
TEST(rtc_record_round_trip_frozen)
{
	struct rtc a, b;
	uint64_t now = 5 * REC_HZ;

	rtc_init(&a, REC_KHZ, REC_T0, REC_RAM);
	cmos_wr(&a, RTC_REG_B, RTC_B_SET | RTC_B_24H | RTC_B_DM_BINARY, now);
	cmos_wr(&a, RTC_YEAR, 30, now);
	cmos_wr(&a, RTC_MONTH, 2, now);
	cmos_wr(&a, RTC_MDAY, 28, now);
	cmos_wr(&a, RTC_HOUR, 23, now);
	cmos_wr(&a, RTC_MIN, 59, now);
	rtc_port_write(&a, 0x70, RTC_MIN, now);
	rtc_init(&b, REC_KHZ, REC_T0, REC_RAM);
	record_copy(&rtc_record, &a, &b);
	now += 100 * REC_HZ;
	check_same_now(&a, &b, now, 0);
	for (unsigned i = 0; i < 2; i++) {
		struct rtc *r = i ? &b : &a;

		CHECK_EQ_U64(cmos_rd(r, RTC_MIN, now), 59); /* frozen */
		cmos_wr(r, RTC_REG_B, RTC_B_24H | RTC_B_DM_BINARY, now);
		CHECK_EQ_U64(cmos_rd(r, RTC_MDAY, now + 61 * REC_HZ), 1); /* 2030-03-01 00:00 */
		CHECK_EQ_U64(cmos_rd(r, RTC_MONTH, now + 61 * REC_HZ), 3);
	}
	now += 61 * REC_HZ;
	check_same_future(&a, &b, now);
}

TEST(rtc_record_check_accepts)
{
	struct rtc r;
	uint64_t now;

	rtc_init(&r, REC_KHZ, REC_T0, REC_RAM);
	CHECK(record_saved_ok(&rtc_record, &r));
	now = busy_rtc(&r);
	CHECK(record_saved_ok(&rtc_record, &r));
	/* the furthest times the registers can set, either way */
	cmos_wr(&r, RTC_REG_B, RTC_B_24H | RTC_B_DM_BINARY, now);
	cmos_wr(&r, RTC_CENTURY, 0xff, now);
	cmos_wr(&r, RTC_YEAR, 0xff, now);
	cmos_wr(&r, RTC_MONTH, 0xff, now);
	cmos_wr(&r, RTC_MDAY, 0xff, now);
	cmos_wr(&r, RTC_HOUR, 0xff, now);
	CHECK(record_saved_ok(&rtc_record, &r));
	cmos_wr(&r, RTC_CENTURY, 0, ~0ull);
	cmos_wr(&r, RTC_YEAR, 0, ~0ull);
	cmos_wr(&r, RTC_MONTH, 0, ~0ull);
	cmos_wr(&r, RTC_MDAY, 0, ~0ull);
	CHECK(record_saved_ok(&rtc_record, &r));
	rtc_init(&r, 1, REC_T0, REC_RAM); /* the slowest TSC: the most seconds */
	cmos_wr(&r, RTC_YEAR, 0, ~0ull);
	cmos_wr(&r, RTC_CENTURY, 0, ~0ull);
	CHECK(r.offset < -((int64_t)1 << 53));
	CHECK(record_saved_ok(&rtc_record, &r));
}

TEST(rtc_record_check_refuses)
{
	static const struct {
		unsigned field;
		const char *reason;
	} cases[] = {
		{ 0, "index 0x80 is not a CMOS byte" },
		{ 1, "cmos[0x0a] 0xaa sets UIP" },
		{ 2, "cmos[0x0c] 0x10 is not 0" },
		{ 3, "cmos[0x0d] 0x0 is not 0x80" },
		{ 4, "offset 1099511627776 s is beyond" },
		{ 5, "offset -36028797018963968 s is beyond" },
	};
	struct rtc r, z;
	char err[160];

	busy_rtc(&r);
	for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		record_loaded(&rtc_record, &r, &z);
		switch (cases[i].field) {
		case 0: z.index = 0x80; break;
		case 1: z.cmos[RTC_REG_A] |= RTC_A_UIP; break;
		case 2: z.cmos[RTC_REG_C] = RTC_C_UF; break;
		case 3: z.cmos[RTC_REG_D] = 0; break;
		case 4: z.offset = (int64_t)1 << 40; break;
		default: z.offset = -((int64_t)1 << 55); break;
		}
		err[0] = 0;
		CHECK(!rtc_record.check(&z, NULL, err, sizeof err));
		if (!strstr(err, cases[i].reason)) {
			fprintf(stderr, "  case %u: \"%s\", not \"%s\"\n", i, err, cases[i].reason);
			CHECK(!"the refusal names the field");
		}
	}
}

TEST(rtc_record_bool_byte)
{
	struct rtc r;
	uint8_t off[256], on[256];
	uint32_t n;

	rtc_init(&r, REC_KHZ, REC_T0, REC_RAM);
	n = record_save(&rtc_record, &r, off, sizeof off);
	rtc_port_write(&r, 0x70, 0x80, 0); /* NMI mask, same index */
	CHECK(record_save(&rtc_record, &r, on, sizeof on) == n);
	rtc_init(&r, REC_KHZ, REC_T0, REC_RAM);
	record_bool_byte_refused(&rtc_record, off, on, n, &r, "nmi_masked");
	CHECK(!r.nmi_masked);
}

/* Records with random bytes changed: whatever the check accepts, the model
 * runs on without fault (the sanitizers abort on an index out of bounds or
 * a signed overflow). */
TEST(rtc_record_checked_records_run)
{
	static const uint8_t edge[] = { 0, 1, 0x7f, 0x80, 0xc0, 0xff };
	struct rng r = rng_seeded(27);
	struct rtc m, z;
	uint8_t good[256], buf[256];
	struct field_io out = field_saver(good, sizeof good), in;
	char err[160];
	unsigned accepted = 0;

	busy_rtc(&m);
	rtc_record.fields(&m, &out);
	REQUIRE(!out.overrun);
	for (unsigned i = 0; i < 20000; i++) {
		memcpy(buf, good, out.pos);
		for (unsigned n = 1 + (unsigned)rng_below(&r, 3); n; n--) {
			unsigned v = (unsigned)rng_below(&r, sizeof edge + 1);
			/* mostly the fields after the CMOS bytes */
			uint64_t at = rng_below(&r, 2) ? 128 + rng_below(&r, out.pos - 128) : rng_below(&r, out.pos);

			buf[at] = v < sizeof edge ? edge[v] : (uint8_t)rng_next(&r);
		}
		memset(&z, 0, sizeof z);
		in = field_loader(buf, out.pos);
		rtc_record.fields(&z, &in);
		if (in.bad || !rtc_record.check(&z, NULL, err, sizeof err))
			continue;
		accepted++;
		rtc_init(&m, i & 1 ? 1 : REC_KHZ, REC_T0, REC_RAM);
		in = field_loader(buf, out.pos);
		rtc_record.fields(&m, &in);
		for (unsigned k = 0; k < 4; k++) {
			uint64_t now = rng_next(&r) >> rng_below(&r, 64);

			rtc_port_read(&m, 0x71, now);
			cmos_rd(&m, (uint8_t)rng_below(&r, 14), now);
			cmos_wr(&m, (uint8_t)rng_below(&r, 14), (uint8_t)rng_next(&r), now);
		}
	}
	CHECK(accepted > 1000);
}
