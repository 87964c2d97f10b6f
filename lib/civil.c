/* Civil dates and Unix time (civil.h). */
#include "lib/civil.h"

static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (int64_t)(m > 2 ? m - 3 : m + 9) + 2) / 5 + (int64_t)d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

void civil_from_unix(int64_t secs, struct civil_time *t)
{
	int64_t days = secs / 86400, rem = secs % 86400, z, era, doe, yoe, doy, mp;

	if (rem < 0) {
		rem += 86400;
		days--;
	}
	t->hour = (unsigned)(rem / 3600);
	t->min = (unsigned)(rem / 60 % 60);
	t->sec = (unsigned)(rem % 60);
	t->wday = (unsigned)(((days % 7) + 11) % 7); /* 1970-01-01 was a Thursday */
	z = days + 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	t->day = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
	t->month = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
	t->year = yoe + era * 400 + (t->month <= 2);
}

int64_t civil_to_unix(const struct civil_time *t)
{
	unsigned m = t->month < 1 ? 1 : t->month > 12 ? 12 : t->month;

	return days_from_civil(t->year, m, 1) * 86400 + ((int64_t)t->day - 1) * 86400 + (int64_t)t->hour * 3600 +
	       (int64_t)t->min * 60 + t->sec;
}
