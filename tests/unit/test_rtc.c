/* The CMOS RTC model (dev/rtc.c) against the MC146818A datasheet and the
 * CMOS bytes QEMU's pc machine sets. */
#include "check.h"
#include "lib/civil.h"
#include "dev/rtc.h"
#include <stdint.h>

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
