/* `bench reporting`: the leaf-empty hint on the churn its proposal names,
 * for real. A Linux guest with a virtio balloon (dev/balloon.h) whose
 * driver reports free memory (VIRTIO_BALLOON_F_REPORTING) runs
 * `sprig-bench report` (guests/linux-bench/sprig-bench.c): in each cycle of
 * a round, one process a vCPU maps, touches, checks and frees MIB MiB, then
 * all wait while Linux reports the freed 2 MiB blocks and sprig discards each
 * one (mmu_discard: the range zapped, its frames freed), as a host's
 * madvise(MADV_DONTNEED) would; the next cycle refaults them. One boot, 2R
 * rounds alternating the hint; each field is the median of a way's rounds,
 * with min and max. */
#include "arch/x86/smp.h"
#include "arch/x86/tsc.h"
#include "bench/linux_guest.h"
#include "bench/scenario.h"
#include "lib/parse.h"
#include "lib/print.h"
#include "lib/sort.h"
#include "lib/string.h"
#include "mm/mmu_config.h"
#include "shell/shell.h"
#include "virt/bench_port.h"

#define MiB (1ull << 20)
#define LINUX_MEM (512 * MiB)
#define MAX_REPS 15
#define DEFAULT_REPS 3
#define DEFAULT_VCPUS 2
#define DEFAULT_MIB 64
#define MAX_AREA_MIB 320 /* all processes together: what Linux leaves free in LINUX_MEM */
#define DEFAULT_CYCLES 3
#define MAX_CYCLES 50
/* Linux reports 2 s after the frees (PAGE_REPORTING_DELAY); a second more
 * lets the report's discards finish before the next cycle. */
#define DEFAULT_WAIT_MS 3000
#define MAX_WAIT_MS 60000

enum report_field {
	REPORTED_RANGES, REPORTED_MIB, ZAPS, ZAP_MEDIAN_NS, ZAP_P999_NS, ZAP_MEDIAN_CYCLES,
	ZAP_P999_CYCLES, ZAP_SPTE_VISITS, ZAP_LEAF_VISITS, HINT_CHECKS, SKIPS, GUEST_FAULTS,
	TOUCHES_PER_S, N_FIELDS
};

static const char *const field_names[N_FIELDS] = {
	"reported_ranges", "reported_mib", "zaps", "zap_median_ns", "zap_p999_ns",
	"zap_median_cycles", "zap_p999_cycles", "zap_spte_visits", "zap_leaf_visits",
	"hint_checks", "skips", "guest_faults", "touches_per_s",
};

struct report_bench {
	unsigned vcpus, reps, mib, cycles, wait_ms;
	uint64_t runs[2][N_FIELDS][MAX_REPS]; /* [hint][field][rep] */
	bool data_ok[2];
};

/* One round, from the workload's BEGIN to its END, with the hint as given.
 * False if the round went wrong. */
static bool report_round(struct linux_run *r, bool hint, uint64_t f[N_FIELDS])
{
	struct vm *vm = r->vm;
	const struct virtio_balloon *b = &vm->platform.balloon.b;
	const struct zap_stats *zs = &vm->mmu.zap_stats;
	uint64_t ranges, bytes, faults, ns;

	if (!linux_run_until(r, BENCH_CMD_BEGIN))
		return false;
	mmu_config.leaf_hint = hint;
	vm->mmu.zap_stats = (struct zap_stats){ 0 };
	ranges = b->reported_ranges;
	bytes = b->reported_bytes;
	faults = vm->mmu.stats.pf_taken;
	if (!linux_run_until(r, BENCH_CMD_END))
		return false;
	f[REPORTED_RANGES] = b->reported_ranges - ranges;
	f[REPORTED_MIB] = (b->reported_bytes - bytes) / MiB;
	f[ZAPS] = zs->zaps;
	f[ZAP_MEDIAN_CYCLES] = zap_latency_percentile(zs, 500);
	f[ZAP_P999_CYCLES] = zap_latency_percentile(zs, 999);
	f[ZAP_MEDIAN_NS] = tsc_to_ns(f[ZAP_MEDIAN_CYCLES]);
	f[ZAP_P999_NS] = tsc_to_ns(f[ZAP_P999_CYCLES]);
	f[ZAP_SPTE_VISITS] = zs->zap_spte_visits;
	f[ZAP_LEAF_VISITS] = zs->zap_leaf_visits;
	f[HINT_CHECKS] = zs->zap_hint_checks;
	f[SKIPS] = zs->tdp_zap_skip_child;
	f[GUEST_FAULTS] = vm->mmu.stats.pf_taken - faults;
	ns = linux_word64(r, 2);
	f[TOUCHES_PER_S] = ns ? linux_word64(r, 0) * 1000000000ull / ns : 0;
	/* Every page read zero when first touched, and what was written after. */
	return r->nwords == 5 && r->words[4] == 0;
}

static void print_results(const struct report_bench *rb)
{
	char cell[2][48];

	kprintf("bench reporting vcpus=%u: Linux with free page reporting; each round %u "
		"cycles of %u processes touching and freeing %u MiB each, then %u ms for the "
		"report and its discards; hint off and on, interleaved rounds each way: %u; "
		"median (min..max) of the rounds\n", rb->vcpus, rb->cycles, rb->vcpus, rb->mib,
		rb->wait_ms, rb->reps);
	kprintf("%-20s %-36s %s\n", "", "hint off", "hint on");
	for (unsigned f = 0; f < N_FIELDS; f++) {
		for (int h = 0; h < 2; h++) {
			struct spread s = spread_of(rb->runs[h][f], rb->reps);

			ksnprintf(cell[h], sizeof(cell[h]), "%llu (%llu..%llu)",
				  (unsigned long long)s.median, (unsigned long long)s.min,
				  (unsigned long long)s.max);
		}
		kprintf("%-20s %-36s %s\n", field_names[f], cell[0], cell[1]);
	}
	kprintf("%-20s %-36s %s\n", "data", rb->data_ok[0] ? "ok" : "FAILED",
		rb->data_ok[1] ? "ok" : "FAILED");
	for (int h = 0; h < 2; h++) {
		kprintf("@bench bench=reporting in=linux vcpus=%u mib=%u cycles=%u "
			"leaf_hint=%s reps=%u", rb->vcpus, rb->mib, rb->cycles, h ? "on" : "off",
			rb->reps);
		for (unsigned f = 0; f < N_FIELDS; f++)
			kprintf(" %s=%llu", field_names[f],
				(unsigned long long)spread_of(rb->runs[h][f], rb->reps).median);
		kprintf(" data=%s\n", rb->data_ok[h] ? "ok" : "FAILED");
	}
}

static int run_reporting(struct report_bench *rb)
{
	struct linux_run r;
	char workload[96];

	ksnprintf(workload, sizeof(workload), "report threads=%u mib=%u rounds=%u cycles=%u ms=%u",
		  rb->vcpus, rb->mib, 2 * rb->reps, rb->cycles, rb->wait_ms);
	if (!linux_run_create(&r, rb->vcpus, LINUX_MEM, BACKING_LAZY, LINUX_RUN_BALLOON, workload))
		return 1;
	rb->data_ok[0] = rb->data_ok[1] = true;
	for (unsigned rep = 0; rep < rb->reps && r.ok; rep++)
		for (int h = 0; h < 2 && r.ok; h++) {
			uint64_t f[N_FIELDS] = { 0 };

			rb->data_ok[h] &= report_round(&r, h, f);
			for (unsigned i = 0; i < N_FIELDS; i++)
				rb->runs[h][i][rep] = f[i];
		}
	if (!linux_run_finish(&r, "reporting"))
		return 1;
	print_results(rb);
	return rb->data_ok[0] && rb->data_ok[1] ? 0 : 1;
}

static int reporting_scenario(int argc, char **argv)
{
	static struct report_bench rb;
	uint64_t vcpus = DEFAULT_VCPUS, reps = DEFAULT_REPS, mib = DEFAULT_MIB;
	uint64_t cycles = DEFAULT_CYCLES, wait_ms = DEFAULT_WAIT_MS;
	uint64_t max_vcpus = VM_VCPUS_MAX;
	bool saved = mmu_config.leaf_hint;
	int rc;

	for (int i = 1; i < argc; i++) {
		if (strncmp(argv[i], "vcpus=", 6) == 0 &&
		    parse_u64_in(argv[i] + 6, 1, max_vcpus, &vcpus))
			continue;
		if (strncmp(argv[i], "reps=", 5) == 0 &&
		    parse_u64_in(argv[i] + 5, 1, MAX_REPS, &reps))
			continue;
		if (strncmp(argv[i], "mib=", 4) == 0 &&
		    parse_u64_in(argv[i] + 4, 2, MAX_AREA_MIB, &mib))
			continue;
		if (strncmp(argv[i], "cycles=", 7) == 0 &&
		    parse_u64_in(argv[i] + 7, 1, MAX_CYCLES, &cycles))
			continue;
		if (strncmp(argv[i], "wait_ms=", 8) == 0 &&
		    parse_u64_in(argv[i] + 8, 1, MAX_WAIT_MS, &wait_ms))
			continue;
		return shell_usage_error("bench", "bad argument '%s' (vcpus=1..%llu, reps=1..%u, "
					 "mib=2..%u, cycles=1..%u, wait_ms=1..%u)", argv[i],
					 (unsigned long long)max_vcpus, MAX_REPS, MAX_AREA_MIB,
					 MAX_CYCLES, MAX_WAIT_MS);
	}
	if (vcpus * mib > MAX_AREA_MIB)
		return shell_usage_error("bench", "%llu processes of %llu MiB: more than the "
					 "guest's %u MiB to spare", (unsigned long long)vcpus,
					 (unsigned long long)mib, MAX_AREA_MIB);
	rb = (struct report_bench){ .vcpus = (unsigned)vcpus, .reps = (unsigned)reps,
				    .mib = (unsigned)mib, .cycles = (unsigned)cycles,
				    .wait_ms = (unsigned)wait_ms };
	rc = run_reporting(&rb);
	mmu_config.leaf_hint = saved;
	return rc;
}
SCENARIO(reporting, .name = "reporting", .run = reporting_scenario,
	 .usage = "[vcpus=N] [reps=R] [mib=N] [cycles=C] [wait_ms=T]",
	 .help = "Linux's free page reporting discards the memory its processes free, "
		 "leaf-empty hint off and on");
