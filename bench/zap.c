/* `bench zap PATTERN ...`: the leaf-empty hint in a guest. The churn guest
 * (guests/churn.c) keeps faulting, writing and checking its memory while
 * sprig zaps the pattern's ranges of it, hint off and on.
 *
 * One vCPU (`[discard] [every=N] [touches=N]`): one zap every N exits of the
 * guest, once each way. Exits are counted, not time, so that both runs see
 * the same schedule; interrupt exits, which come by wall time, do not count.
 * With `discard` the ranges lose their backing too (vm_discard) and the guest,
 * told through HC_LOST_RANGES, checks that exactly those pages read zero.
 *
 * Several vCPUs (`vcpus=N [every_us=N] [touches=N] [reps=R]`): the proposal's
 * experiment, its MADV_DONTNEED thread on the console CPU. The guest runs on
 * N vCPUs, each churning its own share, on the other CPUs, while the console
 * CPU zaps every every_us microseconds by the TSC from the VM's watch hook
 * (which comes about once a millisecond: it does every zap due by then). The
 * faults' waits for mmu_lock behind the zaps are the figure, beside how long
 * each zap held the lock for write. R runs each way, interleaved (off, on,
 * off, on, ...); each field is the median of the runs, with min and max in
 * the table.
 *
 * guest=linux (`[vcpus=N] [every_us=N] [reps=R] [ms=T]`): the same with a
 * Linux guest (bench/linux_guest.h) on lazy memory (4 KiB leaves, as
 * the churn guest's) whose sprig-bench threads, one a vCPU, touch
 * LINUX_AREA_MIB MiB for T ms a round; the zaps cover the 32 MiB window of
 * guest memory that holds most of it, as the workload finds from its page
 * map. One boot, 2R rounds alternating the hint; the table adds the
 * workload's own touches per second.
 *
 * Patterns, over the guest's data (32 MiB from 4 MiB): same16 and same4 zap its
 * first 16 / 4 MiB again and again; sweep16, sweep4, sweep2 and sweep1 zap
 * rolling 16/4/2/1 MiB chunks across it. */
#include "arch/x86/cpu.h"
#include "arch/x86/tsc.h"
#include "lib/parse.h"
#include "lib/print.h"
#include "lib/range.h"
#include "lib/sort.h"
#include "lib/string.h"
#include "mm/mmu_config.h"
#include "boot/boot_info.h"
#include "bench/scenario.h"
#include "shell/shell.h"
#include "virt/sched.h"
#include "virt/vm.h"
#include "bench/linux_guest.h"
#include "bench/zap_patterns.h"
#include "virt/bench_port.h"

#define MiB (1ull << 20)
#define GUEST_MEM (64 * MiB)
#define DATA_GPA (4 * MiB) /* the guest's GUEST_PLAYGROUND */
#define DATA_MIB 32
#define MAX_EVERY 1000000
#define MAX_EVERY_US 1000000
#define MAX_TOUCHES 1000000
#define MAX_REPS 15
#define DEFAULT_EVERY 16
#define DEFAULT_EVERY_US 1000
#define DEFAULT_TOUCHES 20000
/* Per vCPU: enough that the vCPUs refault the zapped ranges between zaps all
 * run long, as the proposal's continuously faulting vCPUs do. */
#define DEFAULT_VCPU_TOUCHES 200000
#define DEFAULT_REPS 5
#define RUN_TIMEOUT_MS (600 * 1000)
#define LINUX_MEM (512 * MiB)
#define LINUX_AREA_MIB 192 /* most of what Linux leaves free in LINUX_MEM */
#define DEFAULT_LINUX_MS 2000
#define MAX_LINUX_MS 60000

struct zap_schedule {
	const struct zap_pattern *p;
	bool discard;
	uint64_t every;    /* exits per zap; 0: by time */
	uint64_t exits;    /* counted exits so far */
	uint64_t period;   /* TSC cycles per zap, by time */
	uint64_t next_tsc; /* when the next zap is due, by time */
	uint64_t base;     /* the guest-physical start of the zapped data */
	uint64_t next_off; /* of the next zap, in the guest's data */
};

static void zap_next(struct vm *vm, struct zap_schedule *z)
{
	uint64_t gpa = z->base + z->next_off;

	if (z->p->sweep)
		z->next_off = (z->next_off + z->p->chunk) % (DATA_MIB * MiB);
	if (z->discard) {
		vm_discard(vm, gpa, z->p->chunk);
		return;
	}
	mmu_zap(&vm->mmu, gpa, z->p->chunk);
}

static void zap_on_exit(struct vm *vm, const struct vexit *e, void *ctx)
{
	struct zap_schedule *z = ctx;

	if (e->kind != VEXIT_INTR && ++z->exits % z->every == 0)
		zap_next(vm, z);
}

/* On the console CPU: every zap due by now. Zaps that take longer than the
 * period leave the next ones overdue: the schedule starts again from the end
 * of the last rather than make them up, which would never catch up. */
static void zap_on_watch(struct vm *vm, void *ctx)
{
	struct zap_schedule *z = ctx;
	uint64_t now = rdtsc();

	for (; z->next_tsc <= now; z->next_tsc += z->period)
		zap_next(vm, z);
	if (z->next_tsc <= (now = rdtsc()))
		z->next_tsc = now + z->period;
}

static const struct vm_observer zap_by_exits = { .on_exit = zap_on_exit };
static const struct vm_observer zap_by_time = { .on_watch = zap_on_watch };

/* Run the churn guest under the schedule, on vcpus vCPUs (zaps by time) or,
 * vcpus 0, on one (zaps by exits). The VM once its run ended, for the caller
 * to read and destroy; NULL if it could not be created. */
static struct vm *run_churn(const struct boot_module *mod, struct zap_schedule *z,
			    uint64_t touches, unsigned vcpus, bool hint)
{
	static char cmdline[96], args[80];
	char name[16], err[128];
	struct vm *vm;

	ksnprintf(args, sizeof(args), "mib=%u touches=%llu", DATA_MIB, (unsigned long long)touches);
	if (vcpus)
		ksnprintf(args + strlen(args), sizeof(args) - strlen(args), " cpus=%u", vcpus);
	ksnprintf(cmdline, sizeof(cmdline), "churn %s", args);
	ksnprintf(name, sizeof(name), "zap-%s", hint ? "on" : "off");
	struct vm_create_args a = {
		.name = name, .image = (const void *)(uintptr_t)mod->start,
		.image_size = mod->end - mod->start, .cmdline = cmdline, .args = args,
		.mem_bytes = GUEST_MEM, .backing = BACKING_LAZY, .chunk_pages = 1,
		.vcpus = vcpus,
	};
	if (!(vm = vm_create(&a, err, sizeof(err)))) {
		kprintf("bench zap: cannot create the guest: %s\n", err);
		return NULL;
	}
	mmu_config.leaf_hint = hint;
	z->exits = 0;
	z->base = DATA_GPA;
	z->next_off = 0;
	if (vcpus) {
		vm_observe(vm, &zap_by_time, z);
		z->next_tsc = rdtsc() + z->period;
	} else {
		vm_observe(vm, &zap_by_exits, z);
	}
	vm_run(vm, RUN_TIMEOUT_MS);
	return vm;
}

/* The guest found its data intact, and the MMU's invariants hold after the
 * faults and zaps that raced each other. */
static bool churn_ok(struct vm *vm)
{
	struct mmu_audit_report audit;

	if (!mmu_audit(&vm->mmu, &audit)) {
		mmu_audit_print(&audit);
		return false;
	}
	return vm->state == VM_EXITED && vm->exit_status == 0;
}

struct zap_result {
	struct zap_stats zs;
	uint64_t guest_faults;
	bool data_ok;
};

static void print_results(const struct zap_schedule *z, const struct zap_result res[2])
{
	kprintf("bench zap %s%s: one zap every %llu exits, hint off and on\n", z->p->name,
		z->discard ? " discard" : "", (unsigned long long)z->every);
	kprintf("%-5s %6s %12s %12s %12s %12s %7s %8s %8s %s\n", "hint", "zaps", "median cyc",
		"p99.9 cyc", "spte visits", "leaf visits", "skips", "checks", "faults", "data");
	for (int h = 0; h < 2; h++) {
		const struct zap_stats *zs = &res[h].zs;
		uint64_t median = zap_latency_percentile(zs, 500);
		uint64_t p999 = zap_latency_percentile(zs, 999);

		kprintf("%-5s %6llu %12llu %12llu %12llu %12llu %7llu %8llu %8llu %s\n",
			h ? "on" : "off", (unsigned long long)zs->zaps, (unsigned long long)median,
			(unsigned long long)p999, (unsigned long long)zs->zap_spte_visits,
			(unsigned long long)zs->zap_leaf_visits,
			(unsigned long long)zs->tdp_zap_skip_child,
			(unsigned long long)zs->zap_hint_checks,
			(unsigned long long)res[h].guest_faults, res[h].data_ok ? "ok" : "FAILED");
	}
	for (int h = 0; h < 2; h++) {
		const struct zap_stats *zs = &res[h].zs;
		uint64_t median = zap_latency_percentile(zs, 500);
		uint64_t p999 = zap_latency_percentile(zs, 999);

		kprintf("@bench bench=zap in=guest pattern=%s discard=%d every=%llu leaf_hint=%s "
			"zaps=%llu zap_median_ns=%llu zap_p999_ns=%llu zap_median_cycles=%llu "
			"zap_p999_cycles=%llu zap_spte_visits=%llu zap_leaf_visits=%llu skips=%llu "
			"hint_checks=%llu guest_faults=%llu data=%s\n",
			z->p->name, z->discard, (unsigned long long)z->every, h ? "on" : "off",
			(unsigned long long)zs->zaps, (unsigned long long)tsc_to_ns(median),
			(unsigned long long)tsc_to_ns(p999), (unsigned long long)median,
			(unsigned long long)p999, (unsigned long long)zs->zap_spte_visits,
			(unsigned long long)zs->zap_leaf_visits,
			(unsigned long long)zs->tdp_zap_skip_child,
			(unsigned long long)zs->zap_hint_checks,
			(unsigned long long)res[h].guest_faults, res[h].data_ok ? "ok" : "FAILED");
	}
}

static int zap_one_vcpu(const struct boot_module *mod, struct zap_schedule *z, uint64_t touches)
{
	struct zap_result res[2];

	for (int h = 0; h < 2; h++) {
		struct vm *vm = run_churn(mod, z, touches, 0, h);

		if (!vm)
			return 1;
		res[h].zs = vm->mmu.zap_stats;
		res[h].guest_faults = vm->mmu.stats.pf_taken;
		res[h].data_ok = churn_ok(vm);
		vm_destroy(vm);
	}
	print_results(z, res);
	return res[0].data_ok && res[1].data_ok ? 0 : 1;
}

/* The fields of a several-vCPU run, in the order of its @bench line; each
 * histogram's p50, p99, p99.9 and max follow each other (read_tail_ns). */
enum vcpus_field {
	ZAPS, ZAP_MEDIAN_NS, ZAP_P999_NS, ZAP_MEDIAN_CYCLES, ZAP_P999_CYCLES, ZAP_SPTE_VISITS,
	ZAP_LEAF_VISITS, SKIPS, FAULT_WAITS, FAULT_WAIT_P50_NS, FAULT_WAIT_P99_NS,
	FAULT_WAIT_P999_NS, FAULT_WAIT_MAX_NS, GUEST_FAULTS, ZAP_HOLD_P50_NS, ZAP_HOLD_P99_NS,
	ZAP_HOLD_P999_NS, ZAP_HOLD_MAX_NS,
	/* The Linux workload's own figure, from inside the guest: */
	TOUCHES_PER_S, N_VCPUS_FIELDS
};
#define N_CHURN_FIELDS TOUCHES_PER_S

static const char *const vcpus_field_names[N_VCPUS_FIELDS] = {
	"zaps", "zap_median_ns", "zap_p999_ns", "zap_median_cycles", "zap_p999_cycles",
	"zap_spte_visits", "zap_leaf_visits", "skips", "fault_waits", "fault_wait_p50_ns",
	"fault_wait_p99_ns", "fault_wait_p999_ns", "fault_wait_max_ns", "guest_faults",
	"zap_hold_p50_ns", "zap_hold_p99_ns", "zap_hold_p999_ns", "zap_hold_max_ns",
	"touches_per_s",
};

/* A histogram's p50, p99, p99.9 and max, in nanoseconds, into tail[0..3]. */
static void read_tail_ns(const struct latency_hist *h, uint64_t tail[4])
{
	tail[0] = tsc_to_ns(latency_percentile(h, 500));
	tail[1] = tsc_to_ns(latency_percentile(h, 990));
	tail[2] = tsc_to_ns(latency_percentile(h, 999));
	tail[3] = tsc_to_ns(h->max);
}

static void read_vcpus_run(struct vm *vm, uint64_t f[N_VCPUS_FIELDS])
{
	const struct zap_stats *zs = &vm->mmu.zap_stats;
	const struct latency_hist *w = mmu_fault_waits(&vm->mmu);

	f[ZAPS] = zs->zaps;
	f[ZAP_MEDIAN_CYCLES] = zap_latency_percentile(zs, 500);
	f[ZAP_P999_CYCLES] = zap_latency_percentile(zs, 999);
	f[ZAP_MEDIAN_NS] = tsc_to_ns(f[ZAP_MEDIAN_CYCLES]);
	f[ZAP_P999_NS] = tsc_to_ns(f[ZAP_P999_CYCLES]);
	f[ZAP_SPTE_VISITS] = zs->zap_spte_visits;
	f[ZAP_LEAF_VISITS] = zs->zap_leaf_visits;
	f[SKIPS] = zs->tdp_zap_skip_child;
	f[FAULT_WAITS] = w->count;
	read_tail_ns(w, &f[FAULT_WAIT_P50_NS]);
	f[GUEST_FAULTS] = vm->mmu.stats.pf_taken;
	read_tail_ns(&zs->zap_hold, &f[ZAP_HOLD_P50_NS]);
}

struct vcpus_bench {
	unsigned vcpus, reps;
	uint64_t every_us, touches;
	bool in_linux; /* guest=linux: the fields include TOUCHES_PER_S */
	/* [hint][field][rep] */
	uint64_t runs[2][N_VCPUS_FIELDS][MAX_REPS];
	bool data_ok[2];
};

static void print_vcpus_results(const struct zap_schedule *z, const struct vcpus_bench *b)
{
	unsigned n_fields = b->in_linux ? N_VCPUS_FIELDS : N_CHURN_FIELDS;
	struct spread s[2][N_VCPUS_FIELDS];
	char cell[2][48];

	for (int h = 0; h < 2; h++)
		for (unsigned f = 0; f < n_fields; f++)
			s[h][f] = spread_of(b->runs[h][f], b->reps);
	if (b->in_linux)
		kprintf("bench zap %s vcpus=%u guest=linux: one zap every %llu us from the console "
			"CPU over the %u MiB of guest memory holding most of the workload's, while "
			"%u threads touch its %u MiB, hint off and on, interleaved rounds each "
			"way: %u; median (min..max) of the rounds\n", z->p->name, b->vcpus,
			(unsigned long long)b->every_us, DATA_MIB, b->vcpus, LINUX_AREA_MIB, b->reps);
	else
		kprintf("bench zap %s vcpus=%u: one zap every %llu us from the console CPU while "
			"%u vCPUs churn %u MiB (%llu touches each), hint off and on, interleaved "
			"runs each way: %u; median (min..max) of the runs\n", z->p->name, b->vcpus,
			(unsigned long long)b->every_us, b->vcpus, DATA_MIB,
			(unsigned long long)b->touches, b->reps);
	kprintf("%-20s %-36s %s\n", "", "hint off", "hint on");
	for (unsigned f = 0; f < n_fields; f++) {
		for (int h = 0; h < 2; h++) {
			const struct spread *v = &s[h][f];

			ksnprintf(cell[h], sizeof(cell[h]), "%llu (%llu..%llu)",
				  (unsigned long long)v->median, (unsigned long long)v->min,
				  (unsigned long long)v->max);
		}
		kprintf("%-20s %-36s %s\n", vcpus_field_names[f], cell[0], cell[1]);
	}
	kprintf("%-20s %-36s %s\n", "data", b->data_ok[0] ? "ok" : "FAILED",
		b->data_ok[1] ? "ok" : "FAILED");
	for (int h = 0; h < 2; h++) {
		kprintf("@bench bench=zap in=%s pattern=%s vcpus=%u leaf_hint=%s reps=%u "
			"remote_flush=%s", b->in_linux ? "linux" : "guest", z->p->name, b->vcpus,
			h ? "on" : "off", b->reps, vm_remote_flush ? "on" : "off");
		for (unsigned f = 0; f < n_fields; f++)
			kprintf(" %s=%llu", vcpus_field_names[f],
				(unsigned long long)s[h][f].median);
		kprintf(" data=%s\n", b->data_ok[h] ? "ok" : "FAILED");
	}
}

static int zap_vcpus(const struct boot_module *mod, struct zap_schedule *z, struct vcpus_bench *b)
{
	z->period = tsc_from_us(b->every_us);
	b->data_ok[0] = b->data_ok[1] = true;
	for (unsigned r = 0; r < b->reps; r++)
		for (int h = 0; h < 2; h++) {
			struct vm *vm = run_churn(mod, z, b->touches, b->vcpus, h);
			uint64_t f[N_VCPUS_FIELDS];

			if (!vm)
				return 1;
			read_vcpus_run(vm, f);
			for (int i = 0; i < N_CHURN_FIELDS; i++)
				b->runs[h][i][r] = f[i];
			b->data_ok[h] &= churn_ok(vm);
			vm_destroy(vm);
		}
	print_vcpus_results(z, b);
	return b->data_ok[0] && b->data_ok[1] ? 0 : 1;
}

/* guest=linux: the schedule zaps by time while the workload's data words go
 * on to its run. */
struct zap_linux {
	struct zap_schedule *z;
	struct linux_run *r;
};

static void zap_linux_watch(struct vm *vm, void *ctx)
{
	zap_on_watch(vm, ((struct zap_linux *)ctx)->z);
}

static void zap_linux_word(struct vm *vm, uint32_t word, void *ctx)
{
	(void)vm;
	linux_run_add_word(((struct zap_linux *)ctx)->r, word);
}

static const struct vm_observer zap_linux_observer = {
	.on_watch = zap_linux_watch, .on_bench_word = zap_linux_word,
};

/* One round of the Linux workload, from its BEGIN to its END: the window it
 * names zapped under the schedule. False if the round went wrong. */
static bool zap_linux_round(struct linux_run *r, struct zap_schedule *z, bool hint,
			    uint64_t f[N_VCPUS_FIELDS])
{
	struct vm *vm = r->vm;
	struct zap_linux zl = { z, r };
	uint64_t faults, ns;

	if (!linux_run_until(r, BENCH_CMD_BEGIN))
		return false;
	z->base = linux_word64(r, 0);
	if (r->nwords != 2 || z->base % (DATA_MIB * MiB) || !range_within(z->base, DATA_MIB * MiB, LINUX_MEM)) {
		kprintf("bench zap: the workload named no 32 MiB window of its memory\n");
		return r->ok = false;
	}
	mmu_config.leaf_hint = hint;
	vm->mmu.zap_stats = (struct zap_stats){ 0 };
	mmu_fault_waits_reset(&vm->mmu);
	faults = vm->mmu.stats.pf_taken;
	z->next_off = 0;
	z->next_tsc = rdtsc() + z->period;
	vm_observe(vm, &zap_linux_observer, &zl);
	bool ended = linux_run_until(r, BENCH_CMD_END);
	linux_run_keep_words(r);
	if (!ended)
		return false;
	read_vcpus_run(vm, f);
	f[GUEST_FAULTS] -= faults;
	ns = linux_word64(r, 2);
	f[TOUCHES_PER_S] = ns ? linux_word64(r, 0) * 1000000000ull / ns : 0;
	/* The workload checks that every touch read what the last one wrote. */
	return r->nwords == 5 && r->words[4] == 0;
}

/* guest=linux: the same experiment with Debian's kernel as the guest and
 * sprig-bench's threads as the vCPUs' load: one boot, then reps rounds each
 * way, interleaved, the hint switched between rounds. */
static int zap_linux(struct zap_schedule *z, struct vcpus_bench *b, uint64_t ms)
{
	struct linux_run r;
	char workload[96];

	ksnprintf(workload, sizeof(workload), "zap threads=%u mib=%u rounds=%u ms=%llu", b->vcpus,
		  LINUX_AREA_MIB, 2 * b->reps, (unsigned long long)ms);
	if (!linux_run_create(&r, b->vcpus, LINUX_MEM, BACKING_LAZY, 0, workload))
		return 1;
	z->period = tsc_from_us(b->every_us);
	b->data_ok[0] = b->data_ok[1] = true;
	for (unsigned rep = 0; rep < b->reps && r.ok; rep++)
		for (int h = 0; h < 2 && r.ok; h++) {
			uint64_t f[N_VCPUS_FIELDS];

			b->data_ok[h] &= zap_linux_round(&r, z, h, f);
			for (int i = 0; i < N_VCPUS_FIELDS; i++)
				b->runs[h][i][rep] = f[i];
		}
	if (!linux_run_finish(&r, "zap"))
		return 1;
	print_vcpus_results(z, b);
	return b->data_ok[0] && b->data_ok[1] ? 0 : 1;
}

static int zap_scenario(int argc, char **argv)
{
	static struct vcpus_bench b;
	struct zap_schedule z = { .every = DEFAULT_EVERY };
	uint64_t touches = 0, vcpus = 0, max_vcpus, reps = DEFAULT_REPS;
	uint64_t every_us = DEFAULT_EVERY_US, ms = 0;
	bool by_exits = false, by_time = false, in_linux = false;
	const struct boot_module *mod;
	bool saved = mmu_config.leaf_hint;
	int rc;

	if (argc < 2)
		return shell_usage_error("bench", "zap needs a PATTERN");
	for (size_t i = 0; i < N_ZAP_PATTERNS; i++)
		if (strcmp(argv[1], zap_patterns[i].name) == 0)
			z.p = &zap_patterns[i];
	if (!z.p)
		return shell_usage_error("bench", "unknown zap pattern '%s'", argv[1]);
	max_vcpus = VM_VCPUS_MAX; /* guests/rt/smp.h's SMP_CPU_MAX too */
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "discard") == 0)
			z.discard = by_exits = true;
		else if (strncmp(argv[i], "every=", 6) == 0 &&
			 parse_u64_in(argv[i] + 6, 1, MAX_EVERY, &z.every))
			by_exits = true;
		else if (strncmp(argv[i], "touches=", 8) == 0 &&
			 parse_u64_in(argv[i] + 8, 1, MAX_TOUCHES, &touches))
			continue;
		else if (strncmp(argv[i], "vcpus=", 6) == 0 &&
			 parse_u64_in(argv[i] + 6, 1, max_vcpus, &vcpus))
			continue;
		else if (strncmp(argv[i], "every_us=", 9) == 0 &&
			 parse_u64_in(argv[i] + 9, 1, MAX_EVERY_US, &every_us))
			by_time = true;
		else if (strncmp(argv[i], "reps=", 5) == 0 &&
			 parse_u64_in(argv[i] + 5, 1, MAX_REPS, &reps))
			by_time = true;
		else if (strcmp(argv[i], "guest=linux") == 0)
			in_linux = by_time = true;
		else if (strncmp(argv[i], "ms=", 3) == 0 &&
			 parse_u64_in(argv[i] + 3, 1, MAX_LINUX_MS, &ms))
			continue;
		else
			return shell_usage_error("bench", "bad argument '%s' (every=1..%u, "
						 "touches=1..%u, vcpus=1..%llu, every_us=1..%u, "
						 "reps=1..%u, guest=linux, ms=1..%u)", argv[i],
						 MAX_EVERY, MAX_TOUCHES,
						 (unsigned long long)max_vcpus, MAX_EVERY_US,
						 MAX_REPS, MAX_LINUX_MS);
	}
	if (in_linux && !vcpus)
		vcpus = 1;
	if (ms && !in_linux)
		return shell_usage_error("bench", "ms= is for guest=linux");
	if (in_linux && touches)
		return shell_usage_error("bench", "guest=linux touches for ms= milliseconds, "
					 "not touches=");
	/* discard needs the guest to learn its losses, which churn does on one CPU only. */
	if (vcpus && by_exits)
		return shell_usage_error("bench", "discard and every= are for one vCPU, "
					 "without vcpus=");
	if (!vcpus && by_time)
		return shell_usage_error("bench", "every_us= and reps= need vcpus=");
	if (in_linux) {
		b = (struct vcpus_bench){ .vcpus = (unsigned)vcpus, .reps = (unsigned)reps,
					  .every_us = every_us, .in_linux = true };
		rc = zap_linux(&z, &b, ms ? ms : DEFAULT_LINUX_MS);
		mmu_config.leaf_hint = saved;
		return rc;
	}
	if (!(mod = boot_module_find("churn"))) {
		kprintf("bench zap: no module 'churn' (the ISO carries it)\n");
		return 1;
	}
	if (!touches)
		touches = vcpus ? DEFAULT_VCPU_TOUCHES : DEFAULT_TOUCHES;
	if (vcpus) {
		b = (struct vcpus_bench){ .vcpus = (unsigned)vcpus, .reps = (unsigned)reps,
					  .every_us = every_us, .touches = touches };
		rc = zap_vcpus(mod, &z, &b);
	} else {
		rc = zap_one_vcpu(mod, &z, touches);
	}
	mmu_config.leaf_hint = saved;
	return rc;
}
SCENARIO(zap, .name = "zap", .run = zap_scenario,
	 .usage = "same16|same4|sweep16|sweep4|sweep2|sweep1 [discard] [every=N] [touches=N] | "
		  "PATTERN vcpus=N [every_us=N] [touches=N] [reps=R] | "
		  "PATTERN guest=linux [vcpus=N] [every_us=N] [reps=R] [ms=T]",
	 .help = "zap a churning guest's memory, leaf-empty hint off and on");
