/* The invalidation patterns of the leaf-empty hint's experiment (the KVM RFC
 * "Skip empty TDP leaf page tables"), shared by the console scenario
 * (bench/zap.c) and the host benchmark (tests/bench/zap_bench.c):
 * `same` zaps one range again and again, `sweep` zaps rolling chunks across
 * the memory. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

struct zap_pattern {
	const char *name;
	uint64_t chunk; /* bytes per zap */
	bool sweep;
};

static const struct zap_pattern zap_patterns[] = {
	{ "same16", 16ull << 20, false }, { "same4", 4ull << 20, false },
	{ "sweep16", 16ull << 20, true }, { "sweep4", 4ull << 20, true },
	{ "sweep2", 2ull << 20, true },   { "sweep1", 1ull << 20, true },
};
#define N_ZAP_PATTERNS (sizeof(zap_patterns) / sizeof(zap_patterns[0]))
