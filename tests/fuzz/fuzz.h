/* Shared by the fuzz targets: FUZZ_ASSERT reports a broken property and
 * aborts, which libFuzzer records as a crash (with the input that caused it). */
#pragma once
#include <stdio.h>
#include <stdlib.h>

#define FUZZ_ASSERT(cond)                                                           \
	do {                                                                        \
		if (!(cond)) {                                                      \
			fprintf(stderr, "fuzz: %s:%d: property failed: %s\n", __FILE__, \
				__LINE__, #cond);                                   \
			abort();                                                    \
		}                                                                   \
	} while (0)

/* FUZZ_VERBOSE=1 in the environment: targets say what they did with an input
 * (and the parsers' kprintf messages are printed, see fuzz_env.c). */
static inline int fuzz_verbose(void)
{
	static int verbose = -1;

	if (verbose < 0)
		verbose = getenv("FUZZ_VERBOSE") != NULL;
	return verbose;
}
