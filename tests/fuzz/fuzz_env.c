/* The console for fuzz targets: kprintf output (the parsers' messages about
 * what they skipped) is dropped, so that fuzzing is not slowed down by it.
 * FUZZ_VERBOSE=1 in the environment prints it, for looking at one input. */
#include "lib/print.h"
#include "tests/fuzz/fuzz.h"

void console_write(const char *s, size_t n)
{
	if (fuzz_verbose())
		fwrite(s, 1, n, stdout);
}

void console_lock(void)
{
	flockfile(stdout);
}

void console_unlock(void)
{
	funlockfile(stdout);
}
