/* Host benchmark runner (see bench.h). */
#include "tests/bench/bench.h"
#include "mm/latency.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define HAVE_CALLGRIND 1
#else
#define HAVE_CALLGRIND 0
#endif

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

double bench_tsc_per_ns(void)
{
	uint64_t ns0 = bench_now_ns(), c0 = latency_clock();

	while (bench_now_ns() - ns0 < 20000000)
		;
	return (double)(latency_clock() - c0) / (double)(bench_now_ns() - ns0);
}

double bench_loglog_slope(const double *x, const double *y, unsigned n)
{
	double sx = 0, sy = 0, sxx = 0, sxy = 0;

	for (unsigned i = 0; i < n; i++) {
		double lx = log(x[i]), ly = log(y[i]);

		sx += lx;
		sy += ly;
		sxx += lx * lx;
		sxy += lx * ly;
	}
	return round(1000 * (n * sxy - sx * sy) / (n * sxx - sx * sx)) / 1000;
}

void bench_count_begin(void)
{
#if HAVE_CALLGRIND
	CALLGRIND_ZERO_STATS;
	CALLGRIND_TOGGLE_COLLECT;
#endif
}

void bench_count_end(const char *phase)
{
#if HAVE_CALLGRIND
	CALLGRIND_TOGGLE_COLLECT;
	CALLGRIND_DUMP_STATS_AT(phase);
#else
	(void)phase;
#endif
}

/* Read the `totals:` line of each phase's dump. */
void bench_count_instructions(const char *child_arg, unsigned phases, uint64_t *instr)
{
	char dir[] = "/tmp/sprig-bench-XXXXXX", cmd[512], path[300], exe[256], line[256];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	memset(instr, 0, phases * sizeof(*instr));
	if (!HAVE_CALLGRIND || n <= 0 || system("valgrind --version >/dev/null 2>&1") != 0 ||
	    !mkdtemp(dir))
		return;
	exe[n] = 0;
	snprintf(cmd, sizeof cmd,
		 "valgrind --tool=callgrind --collect-atstart=no --callgrind-out-file=%s/cg "
		 "%s --instructions-child %s >/dev/null 2>&1",
		 dir, exe, child_arg);
	if (system(cmd) == 0) {
		for (unsigned p = 0; p < phases; p++) {
			FILE *f;

			snprintf(path, sizeof path, "%s/cg.%u", dir, p + 1);
			f = fopen(path, "r");
			while (f && fgets(line, sizeof line, f))
				if (!strncmp(line, "totals:", 7))
					instr[p] = strtoull(line + 7, NULL, 10);
			if (f)
				fclose(f);
		}
	}
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "bench: could not remove %s\n", dir);
}

/* The child of bench_count_instructions runs the benchmark its argument
 * names before the colon, and only that one ("rmap_fork:..." is not rmap's). */
static bool names_child(const char *name)
{
	size_t n = strlen(name);

	return !strncmp(bench_child_arg, name, n) && bench_child_arg[n] == ':';
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
		if (bench_child_arg ? names_child(b->name) : selected(b->name, argc, argv))
			b->fn(smoke);
	return 0;
}
