/* The smallest guest: proves loading, the command line, the memory size and
 * the console. Its output is the same bare and under sprig. */
#include "guests/rt/rt.h"

int main(const struct mb1_info *mbi)
{
	/* SeaBIOS under bare QEMU keeps the top 128 KiB of RAM (mem_upper is
	 * 129920 KiB with -m 128M, not 130048): RAM rounded up to whole MiB is
	 * what both hosts agree on. */
	unsigned long ram_kib = KIB + mbi->mem_upper;

	printf("hello from a multiboot guest\n");
	printf("args: \"%s\"\n", mbi->args);
	printf("memory: %lu MiB\n", (ram_kib + KIB - 1) / KIB);
	return 0;
}
