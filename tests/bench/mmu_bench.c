/* TDP MMU benchmark: fault in, zap and tear down 1 GiB of guest memory mapped at
 * 4 KiB and at 2 MiB. Per phase: SPTEs visited, time (median and spread of
 * interleaved runs: the machine is shared and noisy), and instructions counted
 * by callgrind when valgrind is installed (the program re-runs itself under
 * callgrind once per variant, with collection switched on around each phase). */
#include "mm/mmu_config.h"
#include "mm/mmu_internal.h"
#include "mm/tdp_mmu.h"
#include "svm/npt.h"
#include "tests/bench/bench.h"
#include "tests/unit/host_mem.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MiB (1ull << 20)
#define GiB (1ull << 30)
#define RUNS 9
#define SMOKE_RUNS 3

/* 2 MiB- but not 1 GiB-aligned, so the eager blocks allow 2 MiB mappings at most. */
#define SLOT_GPA (1 * GiB + 2 * MiB)

enum phase { PH_FAULT, PH_ZAP, PH_TEARDOWN, N_PHASES };
static const char *const phase_names[N_PHASES] = { "fault", "zap", "teardown" };

struct variant {
	const char *name;
	uint64_t step;  /* one fault per step */
	uint32_t flags; /* memslot flags */
};

static const struct variant variants[] = {
	{ "4k", 4096, MEMSLOT_NO_HUGE },
	{ "2m", 2 * MiB, 0 },
};
#define N_VARIANTS (sizeof(variants) / sizeof(variants[0]))

struct sample {
	uint64_t ns[N_PHASES];
	uint64_t visited[N_PHASES];
	uint64_t ops[N_PHASES];
	uint64_t tables, table_min;
};

/* Fewest tables that can map [gpa, gpa + size): at each level from `lowest` up,
 * one table per region of that table's span the range touches, and the root. */
static uint64_t min_tables(uint64_t gpa, uint64_t size, int lowest)
{
	uint64_t n = 1;

	for (int level = lowest; level < TDP_ROOT_LEVEL; level++) {
		uint64_t span = tdp_level_pages(level + 1) << 12;

		n += (gpa + size - 1) / span - gpa / span + 1;
	}
	return n;
}

static void no_flush(void *ctx)
{
	(void)ctx;
}

static void fault_all(struct mmu *mmu, uint64_t size, uint64_t step)
{
	for (uint64_t gpa = SLOT_GPA; gpa < SLOT_GPA + size; gpa += step)
		if (tdp_map(mmu, gpa, TDP_ACC_WRITE) != TDP_FIXED) {
			fprintf(stderr, "bench: fault at %#llx failed\n", (unsigned long long)gpa);
			exit(1);
		}
}

/* One run of one variant; `counting` brackets the phases for callgrind. */
static struct sample run_once(const struct variant *v, uint64_t size, bool counting)
{
	struct memslot_config cfg = { .gpa = SLOT_GPA, .size = size, .flags = v->flags,
				      .backing = { .kind = BACKING_EAGER, .no_zero = true } };
	struct sample s = { 0 };
	struct mmu mmu;
	uint64_t t, visited;

	if (mmu_init(&mmu, &npt_format, no_flush, NULL) || mmu_slot_add(&mmu, &cfg)) {
		fprintf(stderr, "bench: no memory for the VM\n");
		exit(1);
	}
	t = bench_now_ns();
	if (counting)
		bench_count_begin();
	fault_all(&mmu, size, v->step);
	if (counting)
		bench_count_end(phase_names[PH_FAULT]);
	s.ns[PH_FAULT] = bench_now_ns() - t;
	s.visited[PH_FAULT] = visited = mmu.stats.spte_visited;
	s.ops[PH_FAULT] = size / v->step;
	s.tables = mmu.stats.mmu_tables;
	s.table_min = min_tables(SLOT_GPA, size, v->step == 4096 ? 1 : 2);

	t = bench_now_ns();
	if (counting)
		bench_count_begin();
	write_lock(&mmu.lock);
	if (tdp_zap_range(&mmu, SLOT_GPA >> 12, (SLOT_GPA + size) >> 12))
		mmu_flush_tlb(&mmu);
	write_unlock(&mmu.lock);
	if (counting)
		bench_count_end(phase_names[PH_ZAP]);
	s.ns[PH_ZAP] = bench_now_ns() - t;
	s.visited[PH_ZAP] = mmu.stats.spte_visited - visited;
	s.ops[PH_ZAP] = mmu.stats.leaves_zapped;

	fault_all(&mmu, size, v->step);
	visited = mmu.stats.spte_visited;
	t = bench_now_ns();
	if (counting)
		bench_count_begin();
	mmu_destroy(&mmu);
	if (counting)
		bench_count_end(phase_names[PH_TEARDOWN]);
	s.ns[PH_TEARDOWN] = bench_now_ns() - t;
	s.visited[PH_TEARDOWN] = mmu.stats.spte_visited - visited;
	s.ops[PH_TEARDOWN] = size / v->step;
	return s;
}

/* Instructions per phase of one variant, counted by callgrind. */
static void count_instructions(const struct variant *v, uint64_t instr[N_PHASES])
{
	char arg[64];

	snprintf(arg, sizeof arg, "tdp_1g:%s", v->name);
	bench_count_instructions(arg, N_PHASES, instr);
}

BENCH(tdp_1g)
{
	uint64_t size = smoke ? 64 * MiB : 1 * GiB;
	unsigned runs = smoke ? SMOKE_RUNS : RUNS;
	static struct sample samples[N_VARIANTS][RUNS];
	uint64_t instr[N_VARIANTS][N_PHASES];
	struct mmu_config saved = mmu_config;

	/* One fault per page is what this measures: prefetch (prefetch_bench.c)
	 * would map the 4 KiB variant's neighbours, which are all backed. */
	mmu_config.prefetch = PREFETCH_OFF;
	host_mem_init(2 * GiB);
	if (bench_child_arg) {
		for (unsigned v = 0; v < N_VARIANTS; v++)
			if (!strcmp(strchr(bench_child_arg, ':') + 1, variants[v].name))
				run_once(&variants[v], size, true);
		exit(0);
	}
	/* Interleaved: a burst of noise hits every variant alike. */
	for (unsigned r = 0; r < runs; r++)
		for (unsigned v = 0; v < N_VARIANTS; v++)
			samples[v][r] = run_once(&variants[v], size, false);
	for (unsigned v = 0; v < N_VARIANTS; v++) {
		if (smoke)
			memset(instr[v], 0, sizeof(instr[v]));
		else
			count_instructions(&variants[v], instr[v]);
	}

	printf("TDP MMU, npt, %llu MiB of eager guest memory, %u interleaved runs\n",
	       (unsigned long long)(size >> 20), runs);
	printf("%-9s %-4s %8s %10s %12s %12s %12s %14s\n", "phase", "map", "ops", "sptes",
	       "median ms", "min ms", "max ms", "instructions");
	for (unsigned v = 0; v < N_VARIANTS; v++) {
		for (int p = 0; p < N_PHASES; p++) {
			uint64_t ns[RUNS];
			struct bench_spread sp;
			const struct sample *s0 = &samples[v][0];

			for (unsigned r = 0; r < runs; r++)
				ns[r] = samples[v][r].ns[p];
			sp = bench_spread(ns, runs);
			printf("%-9s %-4s %8llu %10llu %12.3f %12.3f %12.3f %14llu\n", phase_names[p],
			       variants[v].name, (unsigned long long)s0->ops[p],
			       (unsigned long long)s0->visited[p], sp.median / 1e6, sp.min / 1e6,
			       sp.max / 1e6, (unsigned long long)instr[v][p]);
			printf("@bench bench=tdp_%s variant=%s fmt=npt mib=%llu runs=%u ops=%llu "
			       "spte_visited=%llu ns_median=%llu ns_min=%llu ns_max=%llu "
			       "instructions=%llu\n",
			       phase_names[p], variants[v].name, (unsigned long long)(size >> 20), runs,
			       (unsigned long long)s0->ops[p], (unsigned long long)s0->visited[p],
			       (unsigned long long)sp.median, (unsigned long long)sp.min,
			       (unsigned long long)sp.max, (unsigned long long)instr[v][p]);
		}
		printf("  %s: %llu page tables held when mapped (%llu KiB; minimum %llu)\n",
		       variants[v].name, (unsigned long long)samples[v][0].tables,
		       (unsigned long long)(samples[v][0].tables * 4),
		       (unsigned long long)samples[v][0].table_min);
		printf("@bench bench=tdp_tables variant=%s mib=%llu tables=%llu tables_min=%llu\n",
		       variants[v].name, (unsigned long long)(size >> 20),
		       (unsigned long long)samples[v][0].tables,
		       (unsigned long long)samples[v][0].table_min);
	}
	mmu_config = saved;
}
