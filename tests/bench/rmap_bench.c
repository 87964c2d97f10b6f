/* Reverse-map benchmark: add, count and remove on chains of 1 to 1000 SPTEs,
 * for each descriptor layout (ext3, ext14, counted), and removal from counted
 * chains by back-reference against removal by scan.
 *
 * A row builds `heads` chains of `chain` SPTEs each (about TOTAL SPTEs in all,
 * so short chains are measured over many heads), in the order clones map the
 * frames they share: SPTE k of every head, then SPTE k + 1; counts every head a
 * few times; then removes the SPTEs clone by clone in a seeded random order
 * (the same for every layout). The SPTEs sit in tables laid out as the MMU lays
 * them out (entries, then their back-references). Times are per operation:
 * the median over RUNS interleaved runs (every layout of a chain length runs
 * once before any runs twice), with the spread (max - min) / median.
 * Instructions per add and per removal (callgrind, one run of each row over
 * INSTR_TOTAL SPTEs) follow, with removal also in the order of the adds: the
 * fork workload's, whose clones are torn down oldest first. */
#include "mm/mmu_config.h"
#include "mm/rmap.h"
#include "tests/bench/bench.h"
#include "tests/rng.h"
#include "tests/targets.h"
#include "tests/unit/host_mem.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MiB (1ull << 20)
#define TOTAL 65536
#define SMOKE_TOTAL 4096
#define RUNS 9
#define SMOKE_RUNS 3
#define COUNT_PASSES 4
#define INSTR_TOTAL 16384
#define CHILD_ARG "rmap:instructions"
#define TABLE_WORDS (2 * RMAP_BACKREF_DISTANCE)

static const unsigned chains[] = { 1, 2, 3, 4, 8, 14, 16, 32, 64, 128, 256, 512, 1000 };
#define N_CHAINS (sizeof(chains) / sizeof(chains[0]))

/* The layouts measured: the three of the switch, and counted removing by scan. */
struct config {
	int layout;
	bool by_backref;
};
static const struct config configs[] = {
	{ RMAP_DESC_EXT3, false },
	{ RMAP_DESC_EXT14, false },
	{ RMAP_DESC_COUNTED, true },
	{ RMAP_DESC_COUNTED, false },
};
#define N_CONFIGS (sizeof(configs) / sizeof(configs[0]))
#define COUNTED_SCAN 3

enum phase { ADD, COUNT, REMOVE, PHASES };
/* Removal orders of the instruction counts: random, then as added. */
#define ORDERS 2

static struct {
	uint64_t *tables;
	uint64_t *heads;
	unsigned *order;
} b;

static uint64_t *spte(unsigned i)
{
	return &b.tables[(i / RMAP_BACKREF_DISTANCE) * TABLE_WORDS + i % RMAP_BACKREF_DISTANCE];
}

/* One run of one row: ns per operation of each phase. Removal in the order
 * of the adds when in_order; `counting` brackets add and removal for
 * callgrind. */
static void run_row(const struct config *cfg, unsigned chain, unsigned total, uint64_t seed,
		    bool in_order, bool counting, uint64_t ns[PHASES])
{
	unsigned heads = total / chain ? total / chain : 1;
	volatile unsigned sink = 0;
	struct rng rng = rng_seeded(seed);
	uint64_t t;

	mmu_config.rmap_desc = cfg->layout;
	mmu_config.rmap_backref = cfg->by_backref;
	memset(b.heads, 0, heads * sizeof(*b.heads));
	for (unsigned k = 0; k < chain; k++)
		b.order[k] = k;
	for (unsigned k = chain; k > 1 && !in_order; k--) {
		unsigned j = (unsigned)rng_below(&rng, k), x = b.order[k - 1];

		b.order[k - 1] = b.order[j];
		b.order[j] = x;
	}

	t = bench_now_ns();
	if (counting)
		bench_count_begin();
	for (unsigned k = 0; k < chain; k++)
		for (unsigned h = 0; h < heads; h++)
			if (!rmap_add(&b.heads[h], spte(k * heads + h)))
				abort();
	if (counting)
		bench_count_end("add");
	ns[ADD] = (bench_now_ns() - t) * 1000 / ((uint64_t)chain * heads);

	t = bench_now_ns();
	for (unsigned p = 0; p < COUNT_PASSES; p++)
		for (unsigned h = 0; h < heads; h++)
			sink += rmap_count(&b.heads[h]);
	ns[COUNT] = (bench_now_ns() - t) * 1000 / ((uint64_t)COUNT_PASSES * heads);

	t = bench_now_ns();
	if (counting)
		bench_count_begin();
	for (unsigned k = 0; k < chain; k++)
		for (unsigned h = 0; h < heads; h++)
			if (!rmap_remove(&b.heads[h], spte(b.order[k] * heads + h)))
				abort();
	if (counting)
		bench_count_end("remove");
	ns[REMOVE] = (bench_now_ns() - t) * 1000 / ((uint64_t)chain * heads);
	(void)sink;
}

/* Per-op times are kept in thousandths of a ns so that medians of fast rows
 * keep their digits. */
static double spread_pct(const struct bench_spread *s)
{
	return s->median ? 100.0 * (double)(s->max - s->min) / (double)s->median : 0;
}

/* The child of bench_count_instructions: every row once, each removal order,
 * add and removal counted. */
static void count_child(void)
{
	for (unsigned c = 0; c < N_CHAINS; c++)
		for (unsigned v = 0; v < N_CONFIGS; v++)
			for (int o = 0; o < ORDERS; o++) {
				uint64_t ns[PHASES];

				run_row(&configs[v], chains[c], INSTR_TOTAL, 1234 + c, o, true, ns);
			}
	exit(0);
}

/* Per operation: add, removal in random order, removal in the order added. */
static void print_instructions(void)
{
	static uint64_t instr[N_CHAINS][N_CONFIGS][ORDERS][2];

	bench_count_instructions(CHILD_ARG, N_CHAINS * N_CONFIGS * ORDERS * 2, &instr[0][0][0][0]);
	if (!instr[0][0][0][0])
		return; /* no valgrind */
	printf("Rmap instructions per op (callgrind, ~%u SPTEs per row): add / remove in random "
	       "order / remove in the order added\n", INSTR_TOTAL);
	printf("%5s %22s %22s %22s %22s\n", "chain", "ext3", "ext14", "counted", "counted by scan");
	for (unsigned c = 0; c < N_CHAINS; c++) {
		uint64_t ops = (uint64_t)chains[c] * (INSTR_TOTAL / chains[c]), per[N_CONFIGS][3];

		printf("%5u", chains[c]);
		for (unsigned v = 0; v < N_CONFIGS; v++) {
			char cell[40];

			per[v][0] = instr[c][v][0][0] / ops;
			per[v][1] = instr[c][v][0][1] / ops;
			per[v][2] = instr[c][v][1][1] / ops;
			snprintf(cell, sizeof cell, "%llu / %llu / %llu", (unsigned long long)per[v][0],
				 (unsigned long long)per[v][1], (unsigned long long)per[v][2]);
			printf(" %22s", cell);
		}
		printf("\n");
		for (unsigned v = 0; v < N_CONFIGS; v++)
			printf("@bench bench=rmap_instructions rmap_desc=%s by_backref=%d chain=%u "
			       "add=%llu remove_random=%llu remove_in_order=%llu\n",
			       rmap_desc_names[configs[v].layout], configs[v].by_backref, chains[c],
			       (unsigned long long)per[v][0], (unsigned long long)per[v][1],
			       (unsigned long long)per[v][2]);
	}
}

BENCH(rmap)
{
	unsigned runs = smoke ? SMOKE_RUNS : RUNS, total = smoke ? SMOKE_TOTAL : TOTAL;
	static uint64_t samples[N_CHAINS][N_CONFIGS][PHASES][RUNS];
	struct bench_spread s[PHASES];
	double remove16 = 0, remove1000 = 0;

	host_mem_init(256 * MiB);
	b.tables = aligned_alloc(8192, (size_t)(TOTAL / RMAP_BACKREF_DISTANCE + 2) * TABLE_WORDS * 8);
	b.heads = calloc(TOTAL, sizeof(*b.heads));
	b.order = calloc(1024, sizeof(*b.order));
	memset(b.tables, 0, (size_t)(TOTAL / RMAP_BACKREF_DISTANCE + 2) * TABLE_WORDS * 8);
	if (bench_child_arg)
		count_child();

	for (unsigned r = 0; r < runs; r++)
		for (unsigned c = 0; c < N_CHAINS; c++)
			for (unsigned v = 0; v < N_CONFIGS; v++) {
				uint64_t ns[PHASES];

				run_row(&configs[v], chains[c], total, 1234 + c, false, false, ns);
				for (int p = 0; p < PHASES; p++)
					samples[c][v][p][r] = ns[p];
			}

	printf("Rmap: ~%u SPTEs per row in chains of 1..1000, %u interleaved runs, ns per op "
	       "(median, spread); counted descriptors hold %u entries (%u bytes)\n",
	       total, runs, RMAP_COUNTED_EXT, rmap_desc_bytes(RMAP_DESC_COUNTED));
	printf("%-8s %5s %16s %16s %16s\n", "layout", "chain", "add", "remove", "count");
	for (unsigned c = 0; c < N_CHAINS; c++) {
		struct bench_spread scan;

		for (unsigned v = 0; v < N_CONFIGS; v++) {
			if (v == COUNTED_SCAN)
				continue;
			for (int p = 0; p < PHASES; p++)
				s[p] = bench_spread(samples[c][v][p], runs);
			printf("%-8s %5u %9.2f (%3.0f%%) %9.2f (%3.0f%%) %9.2f (%3.0f%%)\n",
			       rmap_desc_names[configs[v].layout], chains[c], s[ADD].median / 1e3,
			       spread_pct(&s[ADD]), s[REMOVE].median / 1e3, spread_pct(&s[REMOVE]),
			       s[COUNT].median / 1e3, spread_pct(&s[COUNT]));
			printf("@bench bench=rmap rmap_desc=%s chain=%u add_ns=%.2f remove_ns=%.2f "
			       "count_ns=%.2f add_spread_pct=%.0f remove_spread_pct=%.0f "
			       "count_spread_pct=%.0f\n",
			       rmap_desc_names[configs[v].layout], chains[c], s[ADD].median / 1e3,
			       s[REMOVE].median / 1e3, s[COUNT].median / 1e3, spread_pct(&s[ADD]),
			       spread_pct(&s[REMOVE]), spread_pct(&s[COUNT]));
		}
		if (chains[c] == 16)
			remove16 = s[REMOVE].median / 1e3;
		if (chains[c] == 1000)
			remove1000 = s[REMOVE].median / 1e3;
		scan = bench_spread(samples[c][COUNTED_SCAN][REMOVE], runs);
		printf("@bench bench=rmap_remove rmap_desc=counted chain=%u backref_ns=%.2f scan_ns=%.2f "
		       "scan_spread_pct=%.0f\n",
		       chains[c], s[REMOVE].median / 1e3, scan.median / 1e3, spread_pct(&scan));
	}
	if (remove16 > 0) {
		const struct target *t = bench_target("rmap_remove_chain_growth");

		printf("target counted removal by back-reference: chain 1000 / chain 16 %.2fx "
		       "(%s %.1f: %s)\n", remove1000 / remove16, t->test, t->figure,
		       target_verdict(t, remove1000 / remove16));
	}
	if (!smoke)
		print_instructions();
	mmu_config.rmap_desc = RMAP_DESC_COUNTED;
	mmu_config.rmap_backref = true;
	free(b.tables);
	free(b.heads);
	free(b.order);
}
