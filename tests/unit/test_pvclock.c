/* virt/pvclock.c: the TSC scale for several rates, read back as Linux reads
 * it (pvclock_scale_delta for time, pvclock_tsc_khz for the rate), and the
 * structures' layouts (Linux's struct pvclock_vcpu_time_info and
 * pvclock_wall_clock). */
#include "check.h"
#include "virt/pvclock.h"
#include <string.h>

/* Linux's pvclock_tsc_khz(): the TSC rate a guest derives from the scale. */
static uint64_t guest_tsc_khz(const struct pvclock_scale *s)
{
	uint64_t khz = (1000000ull << 32) / s->mul;

	return s->shift < 0 ? khz << -s->shift : khz >> s->shift;
}

/* Linux's pvclock_scale_delta(), with a 128-bit product. */
static uint64_t guest_ns(uint64_t delta, const struct pvclock_scale *s)
{
	delta = s->shift < 0 ? delta >> -s->shift : delta << s->shift;
	return (uint64_t)(((unsigned __int128)delta * s->mul) >> 32);
}

TEST(pvclock_scale)
{
	static const uint64_t rates_khz[] = { 1000, 999999, 1000000, 1000001, 2445402, 2993000,
					      3600000, 5000000, 10000000 };

	for (size_t i = 0; i < sizeof(rates_khz) / sizeof(rates_khz[0]); i++) {
		uint64_t khz = rates_khz[i], one_s = khz * 1000, hour = one_s * 3600;
		struct pvclock_scale s;

		pvclock_scale_for(khz, &s);
		CHECK(s.mul >= 1u << 31);
		/* One second of ticks is 1e9 ns within 1 ppm; an hour's within 1 ppm. */
		CHECK(guest_ns(one_s, &s) <= 1000000000ull + 1000 &&
		      guest_ns(one_s, &s) >= 1000000000ull - 1000);
		CHECK(guest_ns(hour, &s) / 1000 >= 3600000000ull - 3600 &&
		      guest_ns(hour, &s) / 1000 <= 3600000000ull + 3600);
		CHECK_EQ_U64(pvclock_scaled_ns(hour, &s), guest_ns(hour, &s));
		CHECK_EQ_U64(pvclock_scaled_ns(~0ull >> 8, &s), guest_ns(~0ull >> 8, &s));
		/* The rate the guest derives is the TSC's within 0.01 %. */
		CHECK(guest_tsc_khz(&s) * 10000 >= khz * 9999 && guest_tsc_khz(&s) * 10000 <= khz * 10001);
	}
}

TEST(pvclock_structures)
{
	struct pvclock_scale s = { .mul = 0x9a3b2c1d, .shift = -1 };
	uint8_t ti[PVCLOCK_TIME_INFO_SIZE], wc[PVCLOCK_WALL_CLOCK_SIZE];
	uint32_t u32;
	uint64_t u64;

	memset(ti, 0xcc, sizeof(ti));
	pvclock_time_info(ti, 7, &s);
	memcpy(&u32, ti, 4);
	CHECK_EQ_U64(u32, 7);                     /* version */
	memcpy(&u64, ti + 8, 8);
	CHECK_EQ_U64(u64, 0);                     /* tsc_timestamp */
	memcpy(&u64, ti + 16, 8);
	CHECK_EQ_U64(u64, 0);                     /* system_time */
	memcpy(&u32, ti + 24, 4);
	CHECK_EQ_U64(u32, 0x9a3b2c1d);            /* tsc_to_system_mul */
	CHECK_EQ_U64((int8_t)ti[28], -1);         /* tsc_shift */
	CHECK_EQ_U64(ti[29], PVCLOCK_TSC_STABLE_BIT); /* flags */
	CHECK(ti[4] == 0 && ti[30] == 0 && ti[31] == 0);
	pvclock_wall_clock(wc, 2, 1796087655, 5);
	memcpy(&u32, wc, 4);
	CHECK_EQ_U64(u32, 2);
	memcpy(&u32, wc + 4, 4);
	CHECK_EQ_U64(u32, 1796087655);
	memcpy(&u32, wc + 8, 4);
	CHECK_EQ_U64(u32, 5);
}
