/* Prefetch benchmark: touch 128 MiB of restore-backed memory (filled from an
 * image on first touch, chunk pages at a time: the userfaultfd handler) forwards,
 * backwards and in random order, for each chunk size, prefetch mode and
 * adaptive setting. Per setting: nested page faults taken, time (median and
 * spread of interleaved runs), prefetch counters; for the 4 KiB-chunk target,
 * also instructions counted by callgrind, which the machine's noise does not
 * move. A touch is a software walk (the hardware's TLB miss) and, if that finds
 * nothing, a fault. */
#include "mm/mmu_config.h"
#include "mm/mmu_internal.h"
#include "mm/tdp_mmu.h"
#include "svm/npt.h"
#include "tests/bench/bench.h"
#include "tests/targets.h"
#include "tests/unit/host_mem.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MiB (1ull << 20)
#define GiB (1ull << 30)
#define RUNS 11
#define SMOKE_RUNS 2

static const struct { const char *name; uint32_t pages; } chunks[] = {
	{ "4K", 1 }, { "64K", 16 }, { "512K", 128 }, { "2M", 512 },
};
enum order { ORDER_FORWARD, ORDER_BACKWARD, ORDER_RANDOM, N_ORDERS };
static const char *const order_names[N_ORDERS] = { "forward", "backward", "random" };
static const char *const mode_names[] = { "off", "forward", "both" };
#define N_CHUNKS (sizeof(chunks) / sizeof(chunks[0]))
#define N_MODES 3
#define N_SETTINGS (N_CHUNKS * N_ORDERS * N_MODES * 2)

struct setting {
	unsigned chunk;
	enum order order;
	int mode;
	bool adaptive;
};

struct result {
	uint64_t ns, faults, called, pages, mapped;
};

static uint8_t *image;
static uint32_t *random_pages; /* one permutation, the same for every setting */
static uint64_t bench_bytes;

static struct setting setting_of(unsigned i)
{
	return (struct setting){ .chunk = i / (N_ORDERS * N_MODES * 2),
				 .order = (enum order)(i / (N_MODES * 2) % N_ORDERS),
				 .mode = (int)(i / 2 % N_MODES), .adaptive = i % 2 == 0 };
}

static void no_flush(void *ctx)
{
	(void)ctx;
}

static void prepare(uint64_t bytes)
{
	uint64_t pages = bytes / PAGE_SIZE, seed = 88172645463325252ull;

	if (bench_bytes == bytes)
		return;
	free(image);
	free(random_pages);
	image = malloc(bytes);
	random_pages = malloc(pages * sizeof(*random_pages));
	if (!image || !random_pages) {
		fprintf(stderr, "bench: no memory for a %llu MiB image\n",
			(unsigned long long)(bytes >> 20));
		exit(1);
	}
	for (uint64_t i = 0; i < bytes / 8; i++)
		((uint64_t *)image)[i] = i * 0x9E3779B97F4A7C15ull;
	for (uint64_t i = 0; i < pages; i++)
		random_pages[i] = (uint32_t)i;
	for (uint64_t i = pages - 1; i > 0; i--) {
		uint64_t j;
		uint32_t t;

		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		j = seed % (i + 1);
		t = random_pages[i];
		random_pages[i] = random_pages[j];
		random_pages[j] = t;
	}
	bench_bytes = bytes;
}

static uint64_t page_at(enum order o, uint64_t i, uint64_t pages)
{
	return o == ORDER_FORWARD ? i : o == ORDER_BACKWARD ? pages - 1 - i : random_pages[i];
}

static void touch(struct mmu *mmu, uint64_t gpa)
{
	paddr_t hpa;
	unsigned rights;
	int level;
	bool mapped;

	read_lock(&mmu->lock);
	mapped = tdp_translate(mmu, gpa, &hpa, &level, &rights);
	read_unlock(&mmu->lock);
	if (!mapped && tdp_map(mmu, gpa, TDP_ACC_READ) != TDP_FIXED) {
		fprintf(stderr, "bench: fault at %#llx failed\n", (unsigned long long)gpa);
		exit(1);
	}
}

static struct result run_once(const struct setting *s, bool counting)
{
	struct memslot_config cfg = { .gpa = 0, .size = bench_bytes,
				      .backing = { .kind = BACKING_RESTORE, .image = image,
						   .image_bytes = bench_bytes,
						   .chunk_pages = chunks[s->chunk].pages } };
	uint64_t pages = bench_bytes / PAGE_SIZE, t;
	struct result r;
	struct mmu mmu;

	mmu_config.prefetch = s->mode;
	mmu_config.prefetch_adaptive = s->adaptive;
	if (mmu_init(&mmu, &npt_format, no_flush, NULL) || mmu_slot_add(&mmu, &cfg)) {
		fprintf(stderr, "bench: no memory for the VM\n");
		exit(1);
	}
	if (counting)
		bench_count_begin();
	t = bench_now_ns();
	for (uint64_t i = 0; i < pages; i++)
		touch(&mmu, page_at(s->order, i, pages) << PAGE_SHIFT);
	r.ns = bench_now_ns() - t;
	if (counting)
		bench_count_end("touch");
	r.faults = mmu.stats.pf_taken;
	r.called = mmu.stats.pf_prefetch_called;
	r.pages = mmu.stats.pf_prefetch_pages;
	r.mapped = mmu.stats.pf_prefetch_mapped;
	mmu_destroy(&mmu);
	return r;
}

/* The settings whose instructions are counted: 4 KiB chunks, forward, prefetch
 * off, adaptive forward (the target), and forward without adaptive. */
static bool counted(const struct setting *s)
{
	return s->chunk == 0 && s->order == ORDER_FORWARD &&
	       (s->mode == PREFETCH_OFF ? s->adaptive : s->mode == PREFETCH_FORWARD);
}

static unsigned index_of(unsigned chunk, enum order o, int mode, bool adaptive)
{
	return ((chunk * N_ORDERS + (unsigned)o) * N_MODES + (unsigned)mode) * 2 + !adaptive;
}

BENCH(prefetch)
{
	static struct result results[N_SETTINGS][RUNS];
	static uint64_t median_ns[N_SETTINGS], instr[N_SETTINGS];
	uint64_t bytes = smoke ? 16 * MiB : 128 * MiB;
	unsigned runs = smoke ? SMOKE_RUNS : RUNS;
	struct mmu_config saved = mmu_config;

	host_mem_init(1 * GiB);
	prepare(bytes);
	if (bench_child_arg) {
		unsigned i = (unsigned)strtoul(strchr(bench_child_arg, ':') + 1, NULL, 10);
		struct setting s = setting_of(i < N_SETTINGS ? i : 0);

		run_once(&s, true);
		exit(0);
	}
	/* Interleaved: a burst of noise hits every setting alike. */
	for (unsigned r = 0; r < runs; r++)
		for (unsigned i = 0; i < N_SETTINGS; i++) {
			struct setting s = setting_of(i);

			results[i][r] = run_once(&s, false);
		}
	mmu_config = saved;

	printf("Prefetch: touching %llu MiB of restore-backed memory, npt, %u interleaved runs\n",
	       (unsigned long long)(bytes >> 20), runs);
	printf("%-5s %-8s %-8s %-8s %8s %10s %10s %10s %9s %9s %14s\n", "chunk", "order",
	       "prefetch", "adaptive", "faults", "median ms", "min ms", "max ms", "called",
	       "mapped", "instructions");
	for (unsigned i = 0; i < N_SETTINGS; i++) {
		struct setting s = setting_of(i);
		const struct result *r0 = &results[i][0];
		uint64_t ns[RUNS];
		struct bench_spread sp;

		for (unsigned r = 0; r < runs; r++)
			ns[r] = results[i][r].ns;
		sp = bench_spread(ns, runs);
		median_ns[i] = sp.median;
		if (!smoke && counted(&s)) {
			char arg[32];

			snprintf(arg, sizeof arg, "prefetch:%u", i);
			bench_count_instructions(arg, 1, &instr[i]);
		}
		printf("%-5s %-8s %-8s %-8s %8llu %10.3f %10.3f %10.3f %9llu %9llu %14llu\n",
		       chunks[s.chunk].name, order_names[s.order], mode_names[s.mode],
		       s.adaptive ? "on" : "off", (unsigned long long)r0->faults, sp.median / 1e6,
		       sp.min / 1e6, sp.max / 1e6, (unsigned long long)r0->called,
		       (unsigned long long)r0->mapped, (unsigned long long)instr[i]);
		printf("@bench bench=prefetch chunk=%s order=%s prefetch=%s adaptive=%s faults=%llu "
		       "time_ns=%llu ns_min=%llu ns_max=%llu runs=%u mib=%llu pf_prefetch_called=%llu "
		       "pf_prefetch_pages=%llu pf_prefetch_mapped=%llu instructions=%llu\n",
		       chunks[s.chunk].name, order_names[s.order], mode_names[s.mode],
		       s.adaptive ? "on" : "off", (unsigned long long)r0->faults,
		       (unsigned long long)sp.median, (unsigned long long)sp.min,
		       (unsigned long long)sp.max, runs, (unsigned long long)(bytes >> 20),
		       (unsigned long long)r0->called, (unsigned long long)r0->pages,
		       (unsigned long long)r0->mapped, (unsigned long long)instr[i]);
	}

	/* The two targets, from the rows above. */
	unsigned off2m = index_of(N_CHUNKS - 1, ORDER_FORWARD, PREFETCH_OFF, true);
	unsigned fwd2m = index_of(N_CHUNKS - 1, ORDER_FORWARD, PREFETCH_FORWARD, true);
	unsigned off4k = index_of(0, ORDER_FORWARD, PREFETCH_OFF, true);
	unsigned fwd4k = index_of(0, ORDER_FORWARD, PREFETCH_FORWARD, true);
	double ratio = (double)results[off2m][0].faults / (double)results[fwd2m][0].faults;
	double dt = 100.0 * ((double)median_ns[fwd4k] / (double)median_ns[off4k] - 1);
	double di = instr[off4k] ? 100.0 * ((double)instr[fwd4k] / (double)instr[off4k] - 1) : 0;

	const struct target *t2m = bench_target("prefetch_2m_fault_ratio");
	const struct target *t4k = bench_target("prefetch_4k_fault_ratio");
	const struct target *ti = bench_target("prefetch_4k_instructions_pct");
	double r4k = (double)results[fwd4k][0].faults / (double)results[off4k][0].faults;

	printf("target 2M chunks: %.0fx fewer faults with forward prefetch (%s %.0f: %s)\n", ratio,
	       t2m->test, t2m->figure, target_verdict(t2m, ratio));
	printf("target 4K chunks, adaptive: faults %llu vs %llu off, %.3fx (%s %.0f: %s); time "
	       "%+.2f%%; instructions %+.3f%% (%s +%.0f%%: %s)\n",
	       (unsigned long long)results[fwd4k][0].faults,
	       (unsigned long long)results[off4k][0].faults, r4k, t4k->test, t4k->figure,
	       target_verdict(t4k, r4k), dt, di, ti->test, ti->figure,
	       instr[off4k] ? target_verdict(ti, di) : "not measured (no valgrind)");
	printf("@bench bench=prefetch_targets fault_ratio_2m=%.1f faults_4k_adaptive=%llu "
	       "faults_4k_off=%llu time_pct_4k=%.2f instructions_pct_4k=%.3f\n",
	       ratio, (unsigned long long)results[fwd4k][0].faults,
	       (unsigned long long)results[off4k][0].faults, dt, di);
}
