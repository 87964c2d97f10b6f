/* memsum: a memory and clock workload for the Linux guest, to run across
 * snapshots, restores and clones (tests/e2e/e2e_linux_snap.py).
 *
 *   memsum MIB MS SEEDFILE
 *
 * Allocates MIB MiB and, every MS milliseconds of CLOCK_MONOTONIC (an
 * absolute timer, so a late generation does not shift the next), runs one
 * generation: checks that the area still holds the previous generation's
 * pattern word for word, writes the new one (generation number and seed
 * mixed into every word), then reads it back and compares the sum with the
 * one computed while writing. The seed is read from SEEDFILE at each
 * generation (a decimal number; 0 while there is none), so that clones of a
 * VM, which cannot be given new arguments, are told to write different data
 * by writing the file in each. One line a generation:
 *
 *   memsum: gen G seed S ok sum 0xSUM dt D max M
 *   memsum: gen G seed S BAD <what> ...
 *
 * D is the CLOCK_MONOTONIC time since the previous generation in ms, M the
 * largest D so far; a clock that went back prints `memsum: clock went back`
 * and counts as BAD. The area is never freed: memsum runs until killed. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

static uint64_t mix(uint64_t x)
{
	/* splitmix64's finaliser: every input bit reaches every output bit. */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Word i of generation gen with seed seed: one multiply a word, distinct
 * for every (seed, gen) and every word. */
static inline uint64_t word(uint64_t base, uint64_t i)
{
	return (base ^ i) * 0x9e3779b97f4a7c15ull;
}

static uint64_t gen_base(uint64_t seed, uint64_t gen)
{
	return mix(seed * 0x100000001b3ull ^ mix(gen));
}

static uint64_t read_seed(const char *path)
{
	FILE *f = fopen(path, "r");
	unsigned long long s = 0;

	if (f) {
		if (fscanf(f, "%llu", &s) != 1)
			s = 0;
		fclose(f);
	}
	return s;
}

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: memsum MIB MS SEEDFILE\n");
		return 2;
	}
	size_t words = (size_t)strtoul(argv[1], NULL, 0) << 20 >> 3;
	uint64_t period_ns = strtoull(argv[2], NULL, 0) * 1000000ull;
	const char *seedfile = argv[3];
	if (!words || !period_ns) {
		fprintf(stderr, "memsum: MIB and MS must be positive\n");
		return 2;
	}
	volatile uint64_t *a = mmap(NULL, words * 8, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (a == MAP_FAILED) {
		perror("memsum: mmap");
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);

	uint64_t prev_base = 0, last = now_ns(), max_dt = 0;
	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	for (uint64_t gen = 0;; gen++) {
		uint64_t seed = read_seed(seedfile), base = gen_base(seed, gen);
		uint64_t t = now_ns(), sum = 0, back = 0;

		if (t < last) {
			printf("memsum: gen %" PRIu64 " seed %" PRIu64 " BAD clock went back %" PRIu64
			       " ns\n", gen, seed, last - t);
		} else {
			uint64_t dt = (t - last) / 1000000;
			if (gen && dt > max_dt)
				max_dt = dt;
		}
		/* The previous generation's data, still there: the first bad word. */
		size_t bad = words;
		if (gen) {
			for (size_t i = 0; i < words; i++)
				if (a[i] != word(prev_base, i)) {
					bad = i;
					break;
				}
		}
		for (size_t i = 0; i < words; i++) {
			uint64_t v = word(base, i);
			a[i] = v;
			sum += v;
		}
		for (size_t i = 0; i < words; i++)
			back += a[i];
		if (bad < words)
			printf("memsum: gen %" PRIu64 " seed %" PRIu64 " BAD previous generation's "
			       "word %zu is 0x%" PRIx64 ", not 0x%" PRIx64 "\n", gen, seed, bad,
			       a[bad], word(prev_base, bad));
		else if (back != sum)
			printf("memsum: gen %" PRIu64 " seed %" PRIu64 " BAD sum 0x%" PRIx64
			       " read back 0x%" PRIx64 "\n", gen, seed, sum, back);
		else if (t >= last)
			printf("memsum: gen %" PRIu64 " seed %" PRIu64 " ok sum 0x%016" PRIx64
			       " dt %" PRIu64 " max %" PRIu64 "\n", gen, seed, sum,
			       (t - last) / 1000000, max_dt);
		last = t;
		prev_base = base;

		next.tv_nsec += period_ns % 1000000000ull;
		next.tv_sec += period_ns / 1000000000ull + next.tv_nsec / 1000000000;
		next.tv_nsec %= 1000000000;
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL))
			;
		/* Late by more than a period (a pause): start the beat from now. */
		if (now_ns() > (uint64_t)next.tv_sec * 1000000000ull + next.tv_nsec + period_ns)
			clock_gettime(CLOCK_MONOTONIC, &next);
	}
}
