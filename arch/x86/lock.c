/* What a failed lock assertion does (arch/x86/lock.h): says which lock and
 * where, then traps. Kernel and host tests alike. */
#include "arch/x86/lock.h"
#include "lib/print.h"

void rwlock_assert_failed(const struct rwlock *l, const char *what, const char *file, int line)
{
	kprintf("lock %p not %s at %s:%d\n", (const void *)l, what, file, line);
	__builtin_trap();
}
