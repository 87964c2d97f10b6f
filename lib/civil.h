/* Civil dates and Unix time (UTC, proleptic Gregorian calendar), after
 * H. Hinnant's days-from-civil algorithm. Used for the host's CMOS clock
 * (arch/x86/cmos.c) and the guests' RTC (dev/rtc.c). */
#pragma once
#include <stdint.h>

struct civil_time {
	int64_t year;
	unsigned month; /* 1-12 */
	unsigned day;   /* 1-31 */
	unsigned hour, min, sec;
	unsigned wday;  /* 0 = Sunday */
};

/* Unix seconds -> date and time. */
void civil_from_unix(int64_t secs, struct civil_time *t);
/* Date and time -> Unix seconds; months outside 1-12 are clamped, other
 * fields may overflow (day 32 is the next month's 1st). wday is ignored. */
int64_t civil_to_unix(const struct civil_time *t);
