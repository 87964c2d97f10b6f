/* Host benchmarks: each BENCH() registers a function that prints its rows, for
 * people and as `@bench key=value ...` lines for scripts. `bench --smoke` runs
 * every benchmark small and fast (the test suite does); `bench NAME...` runs the
 * benchmarks whose names start with one of the arguments. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

struct bench {
	const char *name;
	void (*fn)(bool smoke);
	struct bench *next;
};

void bench_register(struct bench *b);

#define BENCH(name_)                                                           \
	static void bench_##name_(bool smoke);                                 \
	static struct bench bench_reg_##name_ = { #name_, bench_##name_, 0 };  \
	__attribute__((constructor)) static void bench_ctor_##name_(void)      \
	{                                                                      \
		bench_register(&bench_reg_##name_);                            \
	}                                                                      \
	static void bench_##name_(bool smoke)

uint64_t bench_now_ns(void);

/* Median, min and max of n samples (sorted in place). */
struct bench_spread {
	uint64_t median, min, max;
};
struct bench_spread bench_spread(uint64_t *samples, unsigned n);

/* TSC cycles per ns, measured against the monotonic clock (20 ms). */
double bench_tsc_per_ns(void);

/* The slope k of the least-squares line through (log x, log y) of n points:
 * the cost y grows as x^k. Rounded to three decimals, as printed and judged. */
double bench_loglog_slope(const double *x, const double *y, unsigned n);

/* The benchmark program was started with --instructions-child ARG: the
 * argument, else NULL (see mmu_bench.c). */
extern const char *bench_child_arg;

/* Instruction counts: the program re-runs itself under callgrind with
 * --instructions-child CHILD_ARG (bench_child_arg), and the child brackets each
 * measured phase with bench_count_begin() / bench_count_end(NAME). Fills
 * instr[0..phases) with the phases' totals in order; 0s without valgrind. */
void bench_count_instructions(const char *child_arg, unsigned phases, uint64_t *instr);
void bench_count_begin(void);
void bench_count_end(const char *phase);
