/* The environment that kernel code expects, for host programs: the console
 * is stdout, registered before main runs (and before other constructors, so
 * that a program's own may choose another: tests/fuzz/fuzz_env.c). */
#include "lib/print.h"
#include <stdio.h>

static void stdout_write(const char *s, size_t n)
{
	fwrite(s, 1, n, stdout);
}

/* stdio's own lock on stdout: recursive, as the kernel's console lock. */
static void stdout_lock(void)
{
	flockfile(stdout);
}

static void stdout_unlock(void)
{
	funlockfile(stdout);
}

static const struct console stdout_console = { stdout_write, stdout_lock, stdout_unlock };

static void __attribute__((constructor(101))) stdout_console_register(void)
{
	register_console(&stdout_console);
}
