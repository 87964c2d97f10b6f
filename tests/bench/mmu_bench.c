/* TDP MMU benchmark: fault in, zap and tear down 1 GiB of guest memory mapped at
 * 4 KiB and at 2 MiB. Per phase: SPTEs visited, time (median and spread of
 * interleaved runs: the machine is shared and noisy), and instructions counted
 * by callgrind when valgrind is installed (the program re-runs itself under
 * callgrind once per variant, with collection switched on around each phase). */
#include "mm/mmu_internal.h"
#include "svm/npt.h"
#include "tests/bench/bench.h"
#include "tests/unit/host_mem.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define HAVE_CALLGRIND 1
#else
#define HAVE_CALLGRIND 0
#endif

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

static void callgrind_begin(void)
{
#if HAVE_CALLGRIND
	CALLGRIND_ZERO_STATS;
	CALLGRIND_TOGGLE_COLLECT;
#endif
}

static void callgrind_end(enum phase p)
{
#if HAVE_CALLGRIND
	CALLGRIND_TOGGLE_COLLECT;
	CALLGRIND_DUMP_STATS_AT(phase_names[p]);
#else
	(void)p;
#endif
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
		callgrind_begin();
	fault_all(&mmu, size, v->step);
	if (counting)
		callgrind_end(PH_FAULT);
	s.ns[PH_FAULT] = bench_now_ns() - t;
	s.visited[PH_FAULT] = visited = mmu.stats.spte_visited;
	s.ops[PH_FAULT] = size / v->step;
	s.tables = mmu.stats.mmu_tables;
	s.table_min = min_tables(SLOT_GPA, size, v->step == 4096 ? 1 : 2);

	t = bench_now_ns();
	if (counting)
		callgrind_begin();
	write_lock(&mmu.lock);
	if (tdp_zap_range(&mmu, SLOT_GPA >> 12, (SLOT_GPA + size) >> 12))
		mmu_flush_tlb(&mmu);
	write_unlock(&mmu.lock);
	if (counting)
		callgrind_end(PH_ZAP);
	s.ns[PH_ZAP] = bench_now_ns() - t;
	s.visited[PH_ZAP] = mmu.stats.spte_visited - visited;
	s.ops[PH_ZAP] = mmu.stats.leaves_zapped;

	fault_all(&mmu, size, v->step);
	visited = mmu.stats.spte_visited;
	t = bench_now_ns();
	if (counting)
		callgrind_begin();
	mmu_destroy(&mmu);
	if (counting)
		callgrind_end(PH_TEARDOWN);
	s.ns[PH_TEARDOWN] = bench_now_ns() - t;
	s.visited[PH_TEARDOWN] = mmu.stats.spte_visited - visited;
	s.ops[PH_TEARDOWN] = size / v->step;
	return s;
}

/* Instructions per phase: run this program under callgrind for one variant and
 * read the `totals:` line of each phase's dump. 0s if valgrind is missing. */
static void count_instructions(const struct variant *v, uint64_t instr[N_PHASES])
{
	char dir[] = "/tmp/sprig-bench-XXXXXX", cmd[512], path[300], exe[256], line[256];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	memset(instr, 0, N_PHASES * sizeof(*instr));
	if (!HAVE_CALLGRIND || n <= 0 || system("valgrind --version >/dev/null 2>&1") != 0 ||
	    !mkdtemp(dir))
		return;
	exe[n] = 0;
	snprintf(cmd, sizeof cmd,
		 "valgrind --tool=callgrind --collect-atstart=no --callgrind-out-file=%s/cg "
		 "%s --instructions-child tdp_1g:%s >/dev/null 2>&1",
		 dir, exe, v->name);
	if (system(cmd) == 0) {
		for (int p = 0; p < N_PHASES; p++) {
			FILE *f;

			snprintf(path, sizeof path, "%s/cg.%d", dir, p + 1);
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

BENCH(tdp_1g)
{
	uint64_t size = smoke ? 64 * MiB : 1 * GiB;
	unsigned runs = smoke ? SMOKE_RUNS : RUNS;
	static struct sample samples[N_VARIANTS][RUNS];
	uint64_t instr[N_VARIANTS][N_PHASES];

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
}
