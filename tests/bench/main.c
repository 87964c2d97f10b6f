/* Host benchmark runner (see bench.h). */
#include "tests/bench/bench.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct bench *benches;
const char *bench_child_arg;

void bench_register(struct bench *b)
{
	struct bench **p = &benches;

	while (*p)
		p = &(*p)->next;
	*p = b;
}

uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

struct bench_spread bench_spread(uint64_t *s, unsigned n)
{
	qsort(s, n, sizeof(*s), cmp_u64);
	return (struct bench_spread){ s[n / 2], s[0], s[n - 1] };
}

static bool selected(const char *name, int argc, char **argv)
{
	bool any = false;

	for (int i = 1; i < argc; i++) {
		if (argv[i][0] == '-')
			continue;
		any = true;
		if (!strncmp(name, argv[i], strlen(argv[i])))
			return true;
	}
	return !any;
}

int main(int argc, char **argv)
{
	bool smoke = false;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--smoke"))
			smoke = true;
		if (!strcmp(argv[i], "--instructions-child") && i + 1 < argc)
			bench_child_arg = argv[++i];
	}
	for (struct bench *b = benches; b; b = b->next)
		if (bench_child_arg ? !strncmp(bench_child_arg, b->name, strlen(b->name))
				    : selected(b->name, argc, argv))
			b->fn(smoke);
	return 0;
}
