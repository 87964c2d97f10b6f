/* The CMOS RTC model: see dev/rtc.h for the choices. */
#include "dev/rtc.h"
#include "lib/civil.h"
#include "lib/print.h"
#include "lib/string.h"

static uint64_t tsc_hz(const struct rtc *r)
{
	return r->tsc_khz * 1000;
}

static bool binary(const struct rtc *r)
{
	return r->cmos[RTC_REG_B] & RTC_B_DM_BINARY;
}

static uint8_t enc(const struct rtc *r, unsigned v)
{
	v %= 100;
	return (uint8_t)(binary(r) ? v : (v / 10) << 4 | v % 10);
}

static unsigned dec(const struct rtc *r, uint8_t v)
{
	return binary(r) ? v : (v >> 4) * 10u + (v & 0xf);
}

static uint8_t enc_hour(const struct rtc *r, unsigned h)
{
	if (r->cmos[RTC_REG_B] & RTC_B_24H)
		return enc(r, h);
	return (uint8_t)(enc(r, h % 12 ? h % 12 : 12) | (h >= 12 ? 0x80 : 0));
}

static unsigned dec_hour(const struct rtc *r, uint8_t v)
{
	unsigned h;

	if (r->cmos[RTC_REG_B] & RTC_B_24H)
		return dec(r, v);
	h = dec(r, v & 0x7f) % 12;
	return v & 0x80 ? h + 12 : h;
}

static int64_t clock_now(const struct rtc *r, uint64_t now)
{
	return (int64_t)r->unix_at_tsc0 + r->offset + (int64_t)(now / tsc_hz(r));
}

/* The time registers as they read at `now` (SET = 0). */
static void fill_time(struct rtc *r, uint64_t now)
{
	struct civil_time t;

	civil_from_unix(clock_now(r, now), &t);
	r->cmos[RTC_SEC] = enc(r, t.sec);
	r->cmos[RTC_MIN] = enc(r, t.min);
	r->cmos[RTC_HOUR] = enc_hour(r, t.hour);
	r->cmos[RTC_WDAY] = enc(r, t.wday + 1);
	r->cmos[RTC_MDAY] = enc(r, t.day);
	r->cmos[RTC_MONTH] = enc(r, t.month);
	r->cmos[RTC_YEAR] = enc(r, (unsigned)(t.year % 100));
	r->cmos[RTC_CENTURY] = enc(r, (unsigned)(t.year / 100));
}

/* Run the clock from the time registers' value, from `now`. */
static void set_from_regs(struct rtc *r, uint64_t now)
{
	struct civil_time t = {
		.year = (int64_t)dec(r, r->cmos[RTC_CENTURY]) * 100 + dec(r, r->cmos[RTC_YEAR]),
		.month = dec(r, r->cmos[RTC_MONTH]),
		.day = dec(r, r->cmos[RTC_MDAY]),
		.hour = dec_hour(r, r->cmos[RTC_HOUR]),
		.min = dec(r, r->cmos[RTC_MIN]),
		.sec = dec(r, r->cmos[RTC_SEC]),
	};

	r->offset = civil_to_unix(&t) - (int64_t)r->unix_at_tsc0 - (int64_t)(now / tsc_hz(r));
}

static bool is_time_reg(unsigned i)
{
	return i == RTC_SEC || i == RTC_MIN || i == RTC_HOUR || (i >= RTC_WDAY && i <= RTC_YEAR) || i == RTC_CENTURY;
}

static bool frozen(const struct rtc *r)
{
	return r->cmos[RTC_REG_B] & RTC_B_SET;
}

static bool uip(const struct rtc *r, uint64_t now)
{
	uint64_t hz = tsc_hz(r), frac = now % hz;

	return !frozen(r) && (unsigned __int128)frac * 32768 >= (unsigned __int128)hz * (32768 - 8);
}

/* Periodic interrupt rate (Hz) for RS, 0 for none. */
static uint64_t periodic_hz(const struct rtc *r)
{
	unsigned rs = r->cmos[RTC_REG_A] & 0xf;

	if (rs == 0)
		return 0;
	if (rs <= 2)
		return rs == 1 ? 256 : 128;
	return 65536u >> rs;
}

static bool alarm_field(uint8_t alarm, uint8_t cur)
{
	return (alarm & 0xc0) == 0xc0 || alarm == cur;
}

static uint8_t read_c(struct rtc *r, uint64_t now)
{
	uint64_t sec = now / tsc_hz(r), hz = periodic_hz(r), period = 0;
	uint8_t c = 0, b = r->cmos[RTC_REG_B];

	if (hz) {
		period = (uint64_t)((unsigned __int128)now * hz / tsc_hz(r));
		if (period != r->c_period)
			c |= RTC_C_PF;
	}
	if (sec != r->c_second && !frozen(r)) {
		c |= RTC_C_UF;
		fill_time(r, now);
		if (alarm_field(r->cmos[RTC_SEC_ALARM], r->cmos[RTC_SEC]) &&
		    alarm_field(r->cmos[RTC_MIN_ALARM], r->cmos[RTC_MIN]) &&
		    alarm_field(r->cmos[RTC_HOUR_ALARM], r->cmos[RTC_HOUR]))
			c |= RTC_C_AF;
	}
	if (c & b & (RTC_C_PF | RTC_C_AF | RTC_C_UF))
		c |= RTC_C_IRQF;
	r->c_second = sec;
	r->c_period = period;
	return c;
}

static void set_memory(struct rtc *r, uint64_t ram_bytes)
{
	uint64_t below = ram_bytes >= 0xe0000000ull ? 0xc0000000ull : ram_bytes;
	uint64_t above = ram_bytes - below, v;

	r->cmos[0x15] = 640 & 0xff;
	r->cmos[0x16] = 640 >> 8;
	v = below > (1u << 20) ? (below - (1u << 20)) / 1024 : 0;
	if (v > 0xffff)
		v = 0xffff;
	r->cmos[0x17] = r->cmos[0x30] = (uint8_t)v;
	r->cmos[0x18] = r->cmos[0x31] = (uint8_t)(v >> 8);
	v = below > (16u << 20) ? (below - (16u << 20)) / 65536 : 0;
	if (v > 0xffff)
		v = 0xffff;
	r->cmos[0x34] = (uint8_t)v;
	r->cmos[0x35] = (uint8_t)(v >> 8);
	v = above / 65536;
	r->cmos[0x5b] = (uint8_t)v;
	r->cmos[0x5c] = (uint8_t)(v >> 8);
	r->cmos[0x5d] = (uint8_t)(v >> 16);
}

void rtc_init(struct rtc *r, uint64_t tsc_khz, uint64_t unix_seconds_at_tsc0, uint64_t ram_bytes)
{
	memset(r, 0, sizeof *r);
	r->tsc_khz = tsc_khz ? tsc_khz : 1;
	r->unix_at_tsc0 = unix_seconds_at_tsc0;
	r->cmos[RTC_REG_A] = 0x26;
	r->cmos[RTC_REG_B] = RTC_B_24H;
	r->cmos[RTC_REG_D] = RTC_D_VRT;
	set_memory(r, ram_bytes);
	fill_time(r, 0);
}

uint8_t rtc_port_read(struct rtc *r, uint16_t port, uint64_t now)
{
	unsigned i = r->index;

	if (port != RTC_PORT_DATA)
		return 0xff;
	if (is_time_reg(i) && !frozen(r))
		fill_time(r, now);
	switch (i) {
	case RTC_REG_A:
		return (uint8_t)((r->cmos[i] & 0x7f) | (uip(r, now) ? RTC_A_UIP : 0));
	case RTC_REG_C:
		return read_c(r, now);
	case RTC_REG_D:
		return RTC_D_VRT;
	default:
		return r->cmos[i];
	}
}

void rtc_port_write(struct rtc *r, uint16_t port, uint8_t val, uint64_t now)
{
	unsigned i = r->index;

	if (port == RTC_PORT_INDEX) {
		r->index = val & 0x7f;
		r->nmi_masked = val & 0x80;
		return;
	}
	if (port != RTC_PORT_DATA)
		return;
	if (is_time_reg(i)) {
		if (!frozen(r))
			fill_time(r, now);
		r->cmos[i] = val;
		if (!frozen(r))
			set_from_regs(r, now);
		return;
	}
	switch (i) {
	case RTC_REG_A:
		r->cmos[i] = val & 0x7f;
		break;
	case RTC_REG_B:
		if ((val & RTC_B_SET) && !frozen(r)) {
			fill_time(r, now); /* freeze what reads now */
			r->cmos[i] = val;
		} else if (!(val & RTC_B_SET) && frozen(r)) {
			r->cmos[i] = val;
			set_from_regs(r, now); /* run from the set time */
		} else {
			r->cmos[i] = val;
		}
		break;
	case RTC_REG_C:
	case RTC_REG_D:
		break;
	default:
		r->cmos[i] = val;
		break;
	}
}

/* ---- state record ----
 *
 * Saved: the 128 CMOS bytes (the time registers as last filled or as the
 * guest set them under SET, the alarm, A and B, user bytes), the index and
 * NMI mask, the guest's clock offset, and where register C was last read
 * (guest TSC seconds and periods, kept as they are). Not saved: tsc_khz and
 * unix_at_tsc0, the loading machine's clock, which rtc_init sets: a restored
 * RTC reads that machine's time plus the offset the guest set.
 * Checked: the index (it indexes cmos[]), the bytes no write changes (A's
 * UIP, C and D), and an offset no register value can make: set from the
 * registers it is below 2^40 s (year 25755 at most) and above -2^55 s (less
 * than a 64-bit TSC at 1 kHz), which keeps the clock's sums from overflowing. */
static void rtc_fields(void *model, struct field_io *io)
{
	struct rtc *r = model;

	FIELD(io, r->cmos);
	FIELD(io, r->index);
	FIELD_BOOL(io, r->nmi_masked);
	FIELD(io, r->offset);
	FIELD(io, r->c_second);
	FIELD(io, r->c_period);
}

static bool rtc_state_check(const void *model, const struct record_limits *lim, char *err, size_t errlen)
{
	const struct rtc *r = model;

	(void)lim;
	if (r->index > 0x7f)
		ksnprintf(err, errlen, "index 0x%x is not a CMOS byte (0-0x7f)", r->index);
	else if (r->cmos[RTC_REG_A] & RTC_A_UIP)
		ksnprintf(err, errlen, "cmos[0x0a] 0x%x sets UIP (register A keeps bits 6:0)", r->cmos[RTC_REG_A]);
	else if (r->cmos[RTC_REG_C])
		ksnprintf(err, errlen, "cmos[0x0c] 0x%x is not 0 (register C is computed on reads)", r->cmos[RTC_REG_C]);
	else if (r->cmos[RTC_REG_D] != RTC_D_VRT)
		ksnprintf(err, errlen, "cmos[0x0d] 0x%x is not 0x80 (VRT)", r->cmos[RTC_REG_D]);
	else if (r->offset >= (int64_t)1 << 40 || r->offset <= -((int64_t)1 << 55))
		ksnprintf(err, errlen, "offset %lld s is beyond any time the registers can set", (long long)r->offset);
	else
		return true;
	return false;
}

const struct record_type rtc_record = {
	.id = REC_RTC,
	.version = 1,
	.name = "rtc",
	.model_bytes = sizeof(struct rtc),
	.fields = rtc_fields,
	.check = rtc_state_check,
};
