/* Range checks on addresses a guest supplies, safe against wrapping. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

/* [base, base + len) lies in [0, limit): no base near 2^64 wraps past the
 * check, as base + len <= limit would let it. */
static inline bool range_within(uint64_t base, uint64_t len, uint64_t limit)
{
	return len <= limit && base <= limit - len;
}
