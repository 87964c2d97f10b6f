/* Split-on-fault benchmarks, the host analogues of KVM's execute_perf_test and
 * dirty_log_perf_test (one vCPU), npt, prefetch off (KVM maps nothing around a
 * TDP fault; forward prefetch would hide the cost of a zap in these forward
 * walks).
 *
 * exec: 1 GiB of eager memory (one 1 GiB leaf; 64 MiB of 2 MiB leaves in
 * smoke mode), nx_huge_pages=on: write every 4 KiB page (populate), then
 * execute every page; the execute pass is timed, split_on_fault off and on.
 *
 * dirty: the same memory, populated by writes, dirty logging enabled, then
 * iteration 1 touches every page once, writing 5% or 100% of them (a fixed
 * seeded choice) and reading the rest; timed: the iteration. eager_page_split
 * off with split_on_fault off and on, and eager_page_split on.
 *
 * A touch is a software walk (the TLB miss) and a fault where the walk finds
 * no mapping with the right. Medians of interleaved runs, with the spread. */
#include "mm/mmu_config.h"
#include "mm/mmu_internal.h"
#include "svm/npt.h"
#include "tests/bench/bench.h"
#include "tests/guest_access.h"
#include "tests/rng.h"
#include "tests/targets.h"
#include "tests/unit/host_mem.h"
#include <stdio.h>
#include <stdlib.h>

#define MiB (1ull << 20)
#define GiB (1ull << 30)
#define RUNS 9
#define SMOKE_RUNS 2

struct setting {
	const char *bench; /* "exec" or "dirty" */
	unsigned writes;   /* dirty: percent of pages written */
	bool eager, split;
};

static const struct setting settings[] = {
	{ "exec", 0, false, false },  { "exec", 0, false, true },
	{ "dirty", 5, false, false }, { "dirty", 5, false, true }, { "dirty", 5, true, true },
	{ "dirty", 100, false, false }, { "dirty", 100, false, true }, { "dirty", 100, true, true },
};
#define N_SETTINGS (sizeof(settings) / sizeof(settings[0]))

struct result {
	uint64_t ns, faults;
};

static void no_flush(void *ctx)
{
	(void)ctx;
}

/* One guest access; a fault that fails ends the benchmark. */
static uint64_t touch(struct mmu *mmu, uint64_t gpa, unsigned access)
{
	int r = guest_access(mmu, gpa, access);

	if (r < 0)
		abort();
	return (uint64_t)r;
}

static struct result run_once(const struct setting *s, uint64_t gpa, uint64_t bytes)
{
	struct memslot_config slot = { .gpa = gpa, .size = bytes,
				       .backing = { .kind = BACKING_EAGER, .no_zero = true } };
	bool exec = s->writes == 0;
	struct result r = { 0 };
	struct mmu mmu;
	uint64_t t;

	mmu_config.prefetch = PREFETCH_OFF;
	mmu_config.nx_huge_pages = exec ? NX_HUGE_ON : NX_HUGE_OFF;
	mmu_config.split_on_fault = s->split;
	mmu_config.eager_page_split = s->eager;
	if (mmu_init(&mmu, &npt_format, no_flush, NULL) || mmu_slot_add(&mmu, &slot))
		abort();
	for (uint64_t a = gpa; a < gpa + bytes; a += 4096)
		touch(&mmu, a, TDP_ACC_WRITE);
	if (!exec && mmu_dirty_log_enable(&mmu, gpa, true))
		abort();
	t = bench_now_ns();
	for (uint64_t a = gpa, i = 0; a < gpa + bytes; a += 4096, i++) {
		unsigned access = exec ? TDP_ACC_EXEC
			: rng_mix(i + 1) % 100 < s->writes ? TDP_ACC_WRITE : TDP_ACC_READ;

		r.faults += touch(&mmu, a, access);
	}
	r.ns = bench_now_ns() - t;
	mmu_destroy(&mmu);
	return r;
}

BENCH(split)
{
	static struct result results[N_SETTINGS][RUNS];
	uint64_t bytes = smoke ? 64 * MiB : 1 * GiB, gpa = smoke ? 0 : 1 * GiB;
	unsigned runs = smoke ? SMOKE_RUNS : RUNS;
	struct mmu_config saved = mmu_config;
	uint64_t median[N_SETTINGS];

	host_mem_init(4 * GiB);
	/* Interleaved: a burst of noise hits every setting alike. */
	for (unsigned r = 0; r < runs; r++)
		for (unsigned i = 0; i < N_SETTINGS; i++)
			results[i][r] = run_once(&settings[i], gpa, bytes);
	mmu_config = saved;

	printf("Split on fault: %llu MiB of eager memory at %llu MiB, npt, prefetch off, "
	       "%u interleaved runs\n", (unsigned long long)(bytes >> 20),
	       (unsigned long long)(gpa >> 20), runs);
	printf("%-5s %-6s %-16s %-14s %9s %10s %10s %10s\n", "bench", "writes", "eager_page_split",
	       "split_on_fault", "faults", "median ms", "min ms", "max ms");
	for (unsigned i = 0; i < N_SETTINGS; i++) {
		const struct setting *s = &settings[i];
		uint64_t ns[RUNS];
		struct bench_spread sp;
		char writes[16] = "-";

		for (unsigned r = 0; r < runs; r++)
			ns[r] = results[i][r].ns;
		sp = bench_spread(ns, runs);
		median[i] = sp.median;
		if (s->writes)
			snprintf(writes, sizeof writes, "%u%%", s->writes);
		printf("%-5s %-6s %-16s %-14s %9llu %10.3f %10.3f %10.3f\n", s->bench, writes,
		       s->eager ? "on" : "off", s->split ? "on" : "off",
		       (unsigned long long)results[i][0].faults, sp.median / 1e6, sp.min / 1e6,
		       sp.max / 1e6);
		if (s->writes)
			printf("@bench bench=dirty writes=%u eager_page_split=%s split_on_fault=%s "
			       "faults=%llu time_ns=%llu ns_min=%llu ns_max=%llu runs=%u mib=%llu\n",
			       s->writes, s->eager ? "on" : "off", s->split ? "on" : "off",
			       (unsigned long long)results[i][0].faults, (unsigned long long)sp.median,
			       (unsigned long long)sp.min, (unsigned long long)sp.max, runs,
			       (unsigned long long)(bytes >> 20));
		else
			printf("@bench bench=exec split_on_fault=%s faults=%llu time_ns=%llu "
			       "ns_min=%llu ns_max=%llu runs=%u mib=%llu\n", s->split ? "on" : "off",
			       (unsigned long long)results[i][0].faults, (unsigned long long)sp.median,
			       (unsigned long long)sp.min, (unsigned long long)sp.max, runs,
			       (unsigned long long)(bytes >> 20));
	}
	/* The targets, from the rows above (settings[] order). */
	double exec_ratio = (double)results[0][0].faults / (double)results[1][0].faults;
	double dirty5_ratio = (double)results[2][0].faults / (double)results[3][0].faults;
	double dirty100_ratio = (double)results[5][0].faults / (double)results[6][0].faults;

	const struct target *te = bench_target("split_exec_fault_ratio");
	const struct target *t5 = bench_target("split_dirty5_fault_ratio");
	const struct target *t100 = bench_target("split_dirty100_fault_ratio");

	printf("target exec: %.0fx fewer faults with split (%s %.0f: %s), time %.1fx\n",
	       exec_ratio, te->test, te->figure, target_verdict(te, exec_ratio),
	       (double)median[0] / (double)median[1]);
	printf("target dirty 5%%: %.1fx fewer faults (%s %.0f: %s), time %.1fx\n", dirty5_ratio,
	       t5->test, t5->figure, target_verdict(t5, dirty5_ratio),
	       (double)median[2] / (double)median[3]);
	printf("target dirty 100%%: %.2fx fewer faults (%s %.0f: %s), time %.2fx\n",
	       dirty100_ratio, t100->test, t100->figure, target_verdict(t100, dirty100_ratio),
	       (double)median[5] / (double)median[6]);
	printf("@bench bench=split_targets exec_fault_ratio=%.1f dirty5_fault_ratio=%.1f "
	       "dirty100_fault_ratio=%.2f\n", exec_ratio, dirty5_ratio, dirty100_ratio);
}
