/* The console for fuzz targets: none, so that kprintf output (the parsers'
 * messages about what they skipped) does not slow fuzzing down; with
 * FUZZ_VERBOSE=1 in the environment, host_env.c's stdout, for looking at one
 * input. Runs after host_env.c's constructor. */
#include "lib/print.h"
#include "tests/fuzz/fuzz.h"

static void __attribute__((constructor)) fuzz_console_choose(void)
{
	if (!fuzz_verbose())
		register_console(NULL);
}
