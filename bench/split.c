/* `bench exec` and `bench dirty`: split on fault, in guests (KVM's
 * execute_perf_test and dirty_log_perf_test, one vCPU).
 *
 * exec: the exec guest, on eager memory mapped by 2 MiB (and 1 GiB where the
 * memory allows) pages, writes a RET into every 4 KiB page (populate), then
 * calls every page (execute), with nx_huge_pages=on so that every huge page
 * it calls must give way; split_on_fault off (zap and refault) and on.
 *
 * dirty: the dirty guest fills its memory (populate), the scenario enables
 * dirty logging, the guest touches every page once writing writes=P percent
 * (iteration 1), the scenario reads the log and compares it with the guest's
 * own log of what it wrote: every written page must be set; any other page set
 * must be one the guest's image, stack, page tables or log occupy. Then the
 * guest checks its data and the audit runs. Columns: eager_page_split off with
 * split_on_fault off and on, and eager_page_split on.
 *
 * Both run with prefetch=off, as KVM maps nothing around a TDP fault: forward
 * prefetch would map the rest of a zapped 2 MiB region at the first refault
 * of these forward walks and hide what zapping costs.
 *
 * With `vcpus=N` the guest runs on N vCPUs (`cpus=N`: each CPU takes its own
 * share of the memory, all at once; the pauses come once all are done), as
 * KVM's tests run one vCPU thread per share; the @bench lines then carry
 * vcpus=N.
 *
 * With `guest=linux` both run inside a Linux guest instead
 * (bench/linux_split.c). */
#include "arch/x86/cpu.h"
#include "arch/x86/tsc.h"
#include "lib/parse.h"
#include "lib/print.h"
#include "lib/string.h"
#include "mm/dirty_log.h"
#include "mm/mmu_config.h"
#include "bench/guest.h"
#include "bench/linux_split.h"
#include "bench/scenario.h"
#include "shell/shell.h"
#include "virt/vm.h"

#define MiB (1ull << 20)
#define GUEST_BASE (4 * MiB) /* the guests' GUEST_PLAYGROUND */
#define MAX_MEM (3ull << 30)
#define RUN_TIMEOUT_MS (600 * 1000)

/* One phase of a guest run: from one pause (or the start) to the next. */
struct phase {
	uint64_t ns, faults;
};

struct guest_run {
	struct vm *vm;
	bool ok; /* the guest reached every pause and exited 0; the audit passed */
};

/* The guest's size and shape, from the arguments. vcpus 0: not given (one). */
struct guest_shape {
	uint64_t mib, mem; /* mem 0: not given */
	unsigned vcpus;
	bool in_linux; /* guest=linux (bench/linux_split.c) */
};

static bool create(struct guest_run *g, const char *module, const struct guest_shape *s,
		   const char *args)
{
	g->vm = bench_guest_create(module, "split-bench", module, args, s->mem, s->vcpus,
				   BACKING_EAGER);
	g->ok = true;
	return g->vm != NULL;
}

/* Run to the next snapshot point (or, last, to the exit). */
static struct phase run_phase(struct guest_run *g, bool last)
{
	uint64_t faults = g->vm->mmu.stats.pf_taken, t = rdtsc();
	struct phase p;

	vm_run(g->vm, RUN_TIMEOUT_MS);
	p.ns = tsc_to_ns(rdtsc() - t);
	p.faults = g->vm->mmu.stats.pf_taken - faults;
	if (last)
		g->ok &= g->vm->state == VM_EXITED && g->vm->exit_status == 0;
	else
		g->ok &= bench_guest_at_point(g->vm);
	return p;
}

static void finish(struct guest_run *g)
{
	struct mmu_audit_report audit;

	if (!mmu_audit(&g->vm->mmu, &audit)) {
		mmu_audit_print(&audit);
		g->ok = false;
	}
	vm_destroy(g->vm);
}

static bool parse_args(int argc, char **argv, struct guest_shape *s, uint64_t *writes)
{
	for (int i = 1; i < argc; i++) {
		const char *v = strchr(argv[i], '=');
		uint64_t n;

		if (v && strncmp(argv[i], "mib=", 4) == 0 &&
		    parse_u64_in(v + 1, 1, MAX_MEM / MiB, &s->mib))
			continue;
		if (v && strncmp(argv[i], "mem=", 4) == 0 &&
		    parse_size_in(v + 1, 2 * MiB, MAX_MEM, &s->mem) && !(s->mem & (2 * MiB - 1)))
			continue;
		if (writes && v && strncmp(argv[i], "writes=", 7) == 0 &&
		    parse_u64_in(v + 1, 1, 100, writes))
			continue;
		if (strcmp(argv[i], "guest=linux") == 0) {
			s->in_linux = true;
			continue;
		}
		if (v && strncmp(argv[i], "vcpus=", 6) == 0 &&
		    parse_u64_in(v + 1, 1, VM_VCPUS_MAX, &n)) {
			s->vcpus = (unsigned)n;
			continue;
		}
		return false;
	}
	if (!s->mem)
		s->mem = s->in_linux ? LINUX_SPLIT_MEM : 128 * MiB;
	/* Linux: the workload's area and what Linux needs to hold it. The
	 * other guests: the region, the guest's log and their first 4 MiB. */
	if (s->in_linux)
		return s->mib * MiB <= s->mem / 2 && s->mem >= LINUX_SPLIT_MEM_MIN;
	return GUEST_BASE + s->mib * MiB + s->mib * MiB / 4096 / 8 + 4096 <= s->mem;
}

/* The guest's CPUs, after its other arguments; nothing when vcpus= was not given. */
static void add_cpus_arg(char *args, size_t size, const struct guest_shape *s)
{
	if (s->vcpus)
		ksnprintf(args + strlen(args), size - strlen(args), " cpus=%u", s->vcpus);
}

/* " vcpus=N" for the @bench lines of a run with vcpus=, else "". */
static const char *vcpus_field(const struct guest_shape *s)
{
	static char field[16];

	field[0] = 0;
	if (s->vcpus)
		ksnprintf(field, sizeof(field), " vcpus=%u", s->vcpus);
	return field;
}

struct exec_row {
	struct phase populate, execute;
	uint64_t splits, nx_splits, pages_1g;
	bool ok;
};

static int exec_scenario(int argc, char **argv)
{
	struct mmu_config saved = mmu_config;
	struct guest_shape s = { .mib = 64 };
	struct exec_row rows[2];
	char args[48];
	bool all_ok = true;

	if (!parse_args(argc, argv, &s, NULL))
		return shell_usage_error("bench", "bad arguments (mib=N mem=SIZE, 2 MiB multiple up "
					 "to 3G, holding 4 MiB + N MiB, or with guest=linux at "
					 "least 256M and twice N MiB; vcpus=1..%llu)",
					 (unsigned long long)VM_VCPUS_MAX);
	if (s.in_linux)
		return exec_linux(s.mib, s.mem, s.vcpus);
	ksnprintf(args, sizeof(args), "mib=%llu pause=1", (unsigned long long)s.mib);
	add_cpus_arg(args, sizeof(args), &s);
	mmu_config.nx_huge_pages = NX_HUGE_ON;
	mmu_config.prefetch = PREFETCH_OFF;
	for (int on = 0; on < 2; on++) {
		struct exec_row *r = &rows[on];
		struct guest_run g;

		mmu_config.split_on_fault = on;
		if (!create(&g, "exec", &s, args)) {
			mmu_config = saved;
			return 1;
		}
		r->populate = run_phase(&g, false);
		r->pages_1g = g.vm->mmu.stats.pages_1g;
		r->execute = run_phase(&g, false);
		r->splits = g.vm->mmu.stats.huge_page_splits_fault;
		r->nx_splits = g.vm->mmu.stats.nx_lpage_splits;
		run_phase(&g, true);
		finish(&g);
		r->ok = g.ok;
		all_ok &= g.ok;
	}
	mmu_config = saved;

	kprintf("bench exec: %llu MiB written then called, one 4 KiB page at a time, %llu MiB eager "
		"memory, nx_huge_pages=on, prefetch=off", (unsigned long long)s.mib,
		(unsigned long long)(s.mem >> 20));
	if (s.vcpus)
		kprintf(", %u vCPUs each on its share", s.vcpus);
	kprintf("\n");
	kprintf("%-14s %12s %12s %10s %10s %8s %8s %4s\n", "split_on_fault", "populate ms",
		"execute ms", "pop faults", "exec faults", "splits", "1g pages", "ok");
	for (int on = 0; on < 2; on++)
		kprintf("%-14s %12llu %12llu %10llu %10llu %8llu %8llu %4s\n", on ? "on" : "off",
			(unsigned long long)(rows[on].populate.ns / 1000000),
			(unsigned long long)(rows[on].execute.ns / 1000000),
			(unsigned long long)rows[on].populate.faults,
			(unsigned long long)rows[on].execute.faults,
			(unsigned long long)rows[on].splits, (unsigned long long)rows[on].pages_1g,
			rows[on].ok ? "ok" : "BAD");
	for (int on = 0; on < 2; on++)
		kprintf("@bench bench=exec in=guest split_on_fault=%s faults=%llu time_ns=%llu "
			"populate_faults=%llu populate_ns=%llu huge_page_splits=%llu "
			"nx_lpage_splits=%llu pages_1g=%llu mib=%llu%s ok=%s\n",
			on ? "on" : "off", (unsigned long long)rows[on].execute.faults,
			(unsigned long long)rows[on].execute.ns,
			(unsigned long long)rows[on].populate.faults,
			(unsigned long long)rows[on].populate.ns, (unsigned long long)rows[on].splits,
			(unsigned long long)rows[on].nx_splits, (unsigned long long)rows[on].pages_1g,
			(unsigned long long)s.mib, vcpus_field(&s), rows[on].ok ? "yes" : "no");
	return all_ok ? 0 : 1;
}
SCENARIO(exec, .name = "exec", .run = exec_scenario,
	 .usage = "[mib=N] [mem=SIZE] [vcpus=N] [guest=linux]",
	 .help = "write then call every 4 KiB page of huge-page memory, split_on_fault off/on");

static const struct { bool eager, split; const char *name; } dirty_columns[] = {
	{ false, false, "eps=N split_on_fault=off" },
	{ false, true, "eps=N split_on_fault=on" },
	{ true, true, "eps=Y" },
};
#define N_DIRTY_COLUMNS 3

struct dirty_row {
	struct phase iteration;
	uint64_t enable_ns, logged, written, missed, unexpected, splits_fault, splits_eager;
	bool ok;
};

/* The host's log against the guest's: a written page missing from the host's
 * log would be lost by a migration; an extra one must be the guest's own
 * (below its region: image, stack, page tables; or its log). */
static void compare_logs(const uint64_t *host, const uint64_t *guest, uint64_t mib,
			 uint64_t npages, struct dirty_row *r)
{
	uint64_t first = GUEST_BASE >> 12, region = mib * MiB >> 12;
	uint64_t log_end = first + region + (region / 8 + 4095) / 4096;

	for (uint64_t g = 0; g < npages; g++) {
		bool set = host[g / 64] & (1ull << (g % 64));
		bool wrote = g >= first && g < first + region &&
			     (guest[(g - first) / 64] & (1ull << ((g - first) % 64)));

		r->written += wrote;
		r->missed += wrote && !set;
		r->unexpected += set && !wrote && g >= first && g < first + region;
		r->unexpected += set && g >= log_end;
	}
}

static bool dirty_run(const struct guest_shape *s, uint64_t writes, int column, struct dirty_row *r)
{
	static uint64_t host_log[MAX_MEM / 4096 / 64], guest_log[MAX_MEM / 4096 / 64];
	uint64_t region = s->mib * MiB >> 12;
	struct guest_run g;
	char args[64];
	uint64_t t;

	*r = (struct dirty_row){ 0 };
	mmu_config.eager_page_split = dirty_columns[column].eager;
	mmu_config.split_on_fault = dirty_columns[column].split;
	ksnprintf(args, sizeof(args), "mib=%llu writes=%llu seed=7", (unsigned long long)s->mib,
		  (unsigned long long)writes);
	add_cpus_arg(args, sizeof(args), s);
	if (!create(&g, "dirty", s, args))
		return false;
	run_phase(&g, false);
	t = rdtsc();
	g.ok &= mmu_dirty_log_enable(&g.vm->mmu, 0, true) == 0;
	r->enable_ns = tsc_to_ns(rdtsc() - t);
	r->iteration = run_phase(&g, false);
	r->logged = (uint64_t)mmu_dirty_log_get(&g.vm->mmu, 0, host_log);
	g.ok &= mmu_read_guest(&g.vm->mmu, GUEST_BASE + s->mib * MiB, guest_log,
			       (region + 7) / 8) == 0;
	compare_logs(host_log, guest_log, s->mib, s->mem >> 12, r);
	r->splits_fault = g.vm->mmu.stats.huge_page_splits_fault;
	r->splits_eager = g.vm->mmu.stats.huge_page_splits_eager;
	run_phase(&g, true); /* the guest checks its data */
	finish(&g);
	r->ok = g.ok && !r->missed && !r->unexpected && r->written;
	return true;
}

static int dirty_scenario(int argc, char **argv)
{
	static const uint64_t default_writes[] = { 5, 100 };
	struct mmu_config saved = mmu_config;
	struct guest_shape s = { .mib = 64 };
	uint64_t one_writes = 0;
	struct dirty_row rows[2][N_DIRTY_COLUMNS];
	unsigned n_writes = 2;
	bool all_ok = true;

	if (!parse_args(argc, argv, &s, &one_writes))
		return shell_usage_error("bench", "bad arguments (mib=N mem=SIZE writes=1..100 "
					 "vcpus=1..%llu guest=linux)", (unsigned long long)VM_VCPUS_MAX);
	if (s.in_linux)
		return dirty_linux(s.mib, s.mem, s.vcpus, one_writes ? one_writes : 5);
	if (one_writes)
		n_writes = 1;
	mmu_config.prefetch = PREFETCH_OFF;
	for (unsigned w = 0; w < n_writes; w++)
		for (int c = 0; c < N_DIRTY_COLUMNS; c++)
			if (!dirty_run(&s, one_writes ? one_writes : default_writes[w], c,
				       &rows[w][c])) {
				mmu_config = saved;
				return 1;
			}
	mmu_config = saved;

	kprintf("bench dirty: %llu MiB, every 4 KiB page touched once in iteration 1, "
		"prefetch=off", (unsigned long long)s.mib);
	if (s.vcpus)
		kprintf(", %u vCPUs each on its share", s.vcpus);
	kprintf("\n");
	kprintf("%-6s %-26s %10s %10s %10s %9s %7s %7s %7s %4s\n", "writes", "config", "iter ms",
		"iter faults", "enable ms", "logged", "missed", "extra", "splits", "ok");
	for (unsigned w = 0; w < n_writes; w++)
		for (int c = 0; c < N_DIRTY_COLUMNS; c++) {
			const struct dirty_row *r = &rows[w][c];

			all_ok &= r->ok;
			kprintf("%5llu%% %-26s %10llu %10llu %10llu %9llu %7llu %7llu %7llu %4s\n",
				(unsigned long long)(one_writes ? one_writes : default_writes[w]),
				dirty_columns[c].name, (unsigned long long)(r->iteration.ns / 1000000),
				(unsigned long long)r->iteration.faults,
				(unsigned long long)(r->enable_ns / 1000000),
				(unsigned long long)r->logged, (unsigned long long)r->missed,
				(unsigned long long)r->unexpected,
				(unsigned long long)(r->splits_fault + r->splits_eager),
				r->ok ? "ok" : "BAD");
		}
	for (unsigned w = 0; w < n_writes; w++)
		for (int c = 0; c < N_DIRTY_COLUMNS; c++) {
			const struct dirty_row *r = &rows[w][c];

			kprintf("@bench bench=dirty in=guest writes=%llu eager_page_split=%s "
				"split_on_fault=%s faults=%llu time_ns=%llu enable_ns=%llu logged=%llu "
				"written=%llu missed=%llu unexpected=%llu huge_page_splits_fault=%llu "
				"huge_page_splits_eager=%llu mib=%llu%s ok=%s\n",
				(unsigned long long)(one_writes ? one_writes : default_writes[w]),
				dirty_columns[c].eager ? "on" : "off",
				dirty_columns[c].split ? "on" : "off",
				(unsigned long long)r->iteration.faults,
				(unsigned long long)r->iteration.ns, (unsigned long long)r->enable_ns,
				(unsigned long long)r->logged, (unsigned long long)r->written,
				(unsigned long long)r->missed, (unsigned long long)r->unexpected,
				(unsigned long long)r->splits_fault,
				(unsigned long long)r->splits_eager, (unsigned long long)s.mib,
				vcpus_field(&s), r->ok ? "yes" : "no");
		}
	return all_ok ? 0 : 1;
}
SCENARIO(dirty, .name = "dirty", .run = dirty_scenario,
	 .usage = "[mib=N] [mem=SIZE] [writes=P] [vcpus=N] [guest=linux]",
	 .help = "dirty logging, iteration 1 with 5% and 100% writes: eps=N split off/on, eps=Y");
