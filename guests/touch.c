/* Writes a pattern into `mib=N` MiB (default 16) from 4 MiB up, one 8-byte
 * word every `stride=S` bytes (default 4096), reads it back and prints the
 * pages touched and an FNV-1a checksum of what it read. The checksum depends
 * only on N and S, so bare and sprig outputs match. Exit 0, or 1 on a
 * mismatch or bad arguments. */
#include "guests/rt/rt.h"

#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

/* A different value for every address, and never zero (zeroed pages must
 * not pass for written ones). */
static uint64_t pattern(uint64_t addr)
{
	return (addr * 0x9e3779b97f4a7c15ull) ^ 0x5a5a5a5a00000001ull;
}

static uint64_t fnv1a_word(uint64_t hash, uint64_t word)
{
	for (int i = 0; i < 8; i++) {
		hash ^= (word >> (8 * i)) & 0xff;
		hash *= FNV_PRIME;
	}
	return hash;
}

int main(const struct mb1_info *mbi)
{
	unsigned long mib = arg_ulong(mbi, "mib", 16);
	unsigned long stride = arg_ulong(mbi, "stride", PAGE_SIZE);
	uint64_t start = GUEST_PLAYGROUND, end = start + mib * MIB;
	uint64_t hash = FNV_OFFSET, last_page = ~0ull;
	unsigned long pages = 0, mismatches = 0;

	if (stride < 8 || stride % 8) {
		printf("touch: stride %lu is not a positive multiple of 8\n", stride);
		return 1;
	}
	if (!playground_fits(mbi, mib * MIB)) {
		printf("touch: %lu MiB at 0x%lx does not fit in memory\n", mib, start);
		return 1;
	}
	printf("touch: %lu MiB at 0x%lx, stride %lu\n", mib, start, stride);

	for (uint64_t a = start; a < end; a += stride)
		*(volatile uint64_t *)a = pattern(a);
	for (uint64_t a = start; a < end; a += stride) {
		uint64_t v = *(volatile uint64_t *)a;

		if (a / PAGE_SIZE != last_page) {
			last_page = a / PAGE_SIZE;
			pages++;
		}
		hash = fnv1a_word(hash, v);
		if (v != pattern(a) && mismatches++ == 0)
			printf("touch: 0x%lx reads 0x%lx, expected 0x%lx\n",
			       a, v, pattern(a));
	}
	printf("touch: %lu pages, checksum 0x%016lx\n", pages, hash);
	if (mismatches) {
		printf("touch: %lu mismatches\n", mismatches);
		return 1;
	}
	printf("touch ok\n");
	return 0;
}
