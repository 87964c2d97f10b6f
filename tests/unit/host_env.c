/* The environment that kernel code expects, for host programs: the console is stdout. */
#include "lib/print.h"
#include <stdio.h>

void console_write(const char *s, size_t n)
{
	fwrite(s, 1, n, stdout);
}

/* stdio's own lock on stdout: recursive, as the kernel's console lock. */
void console_lock(void)
{
	flockfile(stdout);
}

void console_unlock(void)
{
	funlockfile(stdout);
}
