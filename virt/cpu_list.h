/* The host CPUs of `vm create ... cpus=LIST`: numbers and ranges separated by
 * commas, as `1,3`, `1-3` or `0,2-3`. Pure, built for the host
 * (tests/unit/test_cpu_list.c); whether each CPU exists and is online is the
 * caller's to check (vm_place_vcpus). */
#pragma once
#include <stddef.h>
#include <stdint.h>

/* Parse s into list[] in the order written, each CPU below limit and named
 * once; returns the count (at most cap), or 0 with a reason in err. */
unsigned cpu_list_parse(const char *s, unsigned limit, uint8_t *list, unsigned cap, char *err,
			size_t errlen);
