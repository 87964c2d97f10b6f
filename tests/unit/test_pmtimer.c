/* The ACPI PM timer model (dev/pmtimer.c). */
#include "check.h"
#include "dev/pmtimer.h"
#include <stdint.h>

TEST(pmtimer_rate_and_wrap)
{
	static const uint64_t rates[] = { 200000, 2993000, 2445312, 2000000 };
	for (unsigned i = 0; i < sizeof rates / sizeof rates[0]; i++) {
		struct pmtimer t;
		uint64_t hz = rates[i] * 1000;

		pmtimer_init(&t, rates[i]);
		CHECK_EQ_U64(pmtimer_read(&t, 0), 0);
		CHECK_EQ_U64(pmtimer_read(&t, hz), PMTIMER_HZ);          /* one second */
		CHECK_EQ_U64(pmtimer_read(&t, hz / 1000), PMTIMER_HZ / 1000); /* 1 ms, rounded down */
		/* tick n begins at TSC ceil(n * hz / PMTIMER_HZ) */
		uint64_t n = (1u << 24) + 5;
		uint64_t at = (uint64_t)(((unsigned __int128)n * hz + PMTIMER_HZ - 1) / PMTIMER_HZ);
		CHECK_EQ_U64(pmtimer_read(&t, at), 5);
		CHECK_EQ_U64(pmtimer_read(&t, at - 1), 4);
		n = (1u << 24);
		at = (uint64_t)(((unsigned __int128)n * hz + PMTIMER_HZ - 1) / PMTIMER_HZ);
		CHECK_EQ_U64(pmtimer_read(&t, at - 1), 0xffffff);
		CHECK_EQ_U64(pmtimer_read(&t, at), 0);
		/* an hour in, no drift: 3600 * 3579545 mod 2^24 */
		CHECK_EQ_U64(pmtimer_read(&t, 3600 * hz), (3600ull * PMTIMER_HZ) & 0xffffff);
		/* never more than 24 bits */
		CHECK_EQ_U64(pmtimer_read(&t, ~0ull) >> 24, 0);
	}
}
