/* The machine's own CMOS clock (MC146818 at ports 0x70/0x71), read once for
 * the wall-clock time the guests' RTCs start from. */
#pragma once
#include <stdint.h>

/* Seconds since 1970-01-01 00:00 UTC as the CMOS clock reads now (taken as
 * UTC, as QEMU's default -rtc base=utc keeps it); 0 if it reads nonsense. */
uint64_t cmos_unix_seconds(void);
