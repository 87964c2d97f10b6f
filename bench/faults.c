/* `bench faults`: the nested page fault path's throughput against the number
 * of vCPUs, and its cost per exit against the cheapest exit.
 *
 * Throughput: for each count N of `vcpus=LIST` (default 1,2,4,8,16), the
 * probe guest (guests/probe.c, mode=faults) on N vCPUs writes one
 * word into every 4 KiB page of its share, `mib=M` MiB per vCPU (default 16),
 * all at once; on lazy memory with prefetch off every page is one fault that
 * allocates and maps a frame, as a new VM's first touch. The host times the
 * writes by its TSC between the guest's two pauses (its boot left out) and
 * counts the faults and exits. N * M MiB is the
 * work, so a path that scales takes the same time at every N up to the CPUs
 * there are, and beyond them (overcommitted: the vCPUs share the CPUs, the
 * console's left out as vm_place_vcpus spreads them) no more than linearly
 * longer. `runs=R` (default 3) runs of each count, interleaved over the
 * list; each row is the median with min..max.
 *
 * Cost per exit: the probe guest's CPUIDs (mode=cpuid), `exits=N` (default 100000),
 * each one exit to sprig and back with nothing to do but CPUID's answer; the
 * one-vCPU fault rate is set against it here, and against the emulator's own
 * limit (the same guest bare, a VMRUN/VMMCALL loop) by `make report`. */
#include "arch/x86/cpu.h"
#include "arch/x86/smp.h"
#include "arch/x86/tsc.h"
#include "lib/parse.h"
#include "lib/print.h"
#include "lib/sort.h"
#include "lib/string.h"
#include "mm/mmu_config.h"
#include "bench/guest.h"
#include "bench/scenario.h"
#include "shell/shell.h"
#include "virt/vm.h"

#define MiB (1ull << 20)
#define GUEST_BASE (4 * MiB) /* the guests' GUEST_PLAYGROUND */
#define MAX_TOTAL (1ull << 30)
#define MAX_COUNTS 8
#define MAX_RUNS 15
#define RUN_TIMEOUT_MS (600 * 1000)

struct faults_args {
	uint64_t counts[MAX_COUNTS], mib, runs, exits;
	unsigned n_counts;
};

/* One guest run to a pause: what it took. */
struct fill {
	uint64_t cycles, faults, exits;
	bool ok;
};

static unsigned host_cpus(const struct vm *vm)
{
	bool used[CPU_MAX] = { false };
	unsigned n = 0;

	for (unsigned i = 0; i < vm->nr_vcpus; i++)
		if (!used[vm->vcpus[i]->kick.cpu]) {
			used[vm->vcpus[i]->kick.cpu] = true;
			n++;
		}
	return n;
}

/* Run to the guest's next pause; what the run took. */
static struct fill run_to_pause(struct vm *vm)
{
	uint64_t faults = vm->mmu.stats.pf_taken, exits = bench_vm_exits(vm), t = rdtsc();
	struct fill f;

	vm_run(vm, RUN_TIMEOUT_MS);
	f.cycles = rdtsc() - t;
	f.faults = vm->mmu.stats.pf_taken - faults;
	f.exits = bench_vm_exits(vm) - exits;
	f.ok = bench_guest_at_point(vm);
	return f;
}

static bool audit_and_destroy(struct vm *vm)
{
	struct mmu_audit_report audit;
	bool ok = mmu_audit(&vm->mmu, &audit);

	if (!ok)
		mmu_audit_print(&audit);
	vm_destroy(vm);
	return ok;
}

/* The probe from its first pause to its second: the loop alone. */
static bool probe_run(const char *args, uint64_t mem, unsigned vcpus, enum backing_kind backing,
		      struct fill *f, unsigned *cpus)
{
	struct vm *vm = bench_guest_create("faults", "faults-bench", "probe", args, mem, vcpus,
					   backing);

	if (!vm)
		return false;
	*f = run_to_pause(vm);
	if (f->ok)
		*f = run_to_pause(vm);
	*cpus = host_cpus(vm);
	f->ok &= audit_and_destroy(vm);
	return true;
}

/* The probe's writes on vcpus vCPUs, mib MiB each. */
static bool fill_run(unsigned vcpus, uint64_t mib, struct fill *f, unsigned *cpus)
{
	uint64_t total = vcpus * mib * MiB;
	char args[64];

	ksnprintf(args, sizeof(args), "mode=faults mib=%llu cpus=%u",
		  (unsigned long long)(vcpus * mib), vcpus);
	return probe_run(args, GUEST_BASE + total + 2 * MiB, vcpus, BACKING_LAZY, f, cpus);
}

static bool exit_loop(uint64_t exits, struct fill *f)
{
	char args[40];
	unsigned cpus;

	ksnprintf(args, sizeof(args), "mode=cpuid exits=%llu", (unsigned long long)exits);
	if (!probe_run(args, 16 * MiB, 1, BACKING_EAGER, f, &cpus))
		return false;
	f->ok &= f->exits >= exits;
	return true;
}

static bool parse_args(int argc, char **argv, struct faults_args *a)
{
	for (int i = 1; i < argc; i++) {
		const char *v = strchr(argv[i], '=');

		if (!v)
			return false;
		v++;
		if (strncmp(argv[i], "vcpus=", 6) == 0 ?
			    parse_u64_list(v, 1, VM_VCPUS_MAX, a->counts, MAX_COUNTS, &a->n_counts) :
		    strncmp(argv[i], "mib=", 4) == 0 ? parse_u64_in(v, 1, 256, &a->mib) :
		    strncmp(argv[i], "runs=", 5) == 0 ? parse_u64_in(v, 1, MAX_RUNS, &a->runs) :
		    strncmp(argv[i], "exits=", 6) == 0 ? parse_u64_in(v, 1000, 10000000, &a->exits) :
							  false)
			continue;
		return false;
	}
	for (unsigned c = 0; c < a->n_counts; c++)
		if (a->counts[c] * a->mib * MiB > MAX_TOTAL)
			return false;
	return true;
}

static uint64_t per_second(uint64_t n, uint64_t cycles)
{
	return cycles ? n * tsc_khz() * 1000 / cycles : 0;
}

/* Cycles per event; 0 for a run that had none (a guest that failed early). */
static uint64_t cycles_per(uint64_t cycles, uint64_t n)
{
	return n ? cycles / n : 0;
}

static int faults_scenario(int argc, char **argv)
{
	static uint64_t cycles[MAX_COUNTS][MAX_RUNS];
	struct faults_args a = { .counts = { 1, 2, 4, 8, 16 }, .n_counts = 5, .mib = 16, .runs = 3,
				 .exits = 100000 };
	struct fill fills[MAX_COUNTS], loop;
	unsigned cpus[MAX_COUNTS];
	bool ok[MAX_COUNTS], all_ok = true;
	struct mmu_config saved = mmu_config;

	if (!parse_args(argc, argv, &a))
		return shell_usage_error("bench", "bad arguments (vcpus=N[,N...] up to %d counts of "
					 "1..%llu, mib=1..256 per vCPU, at most 1 GiB in all; "
					 "runs=1..%d; exits=1000..10000000)", MAX_COUNTS,
					 (unsigned long long)VM_VCPUS_MAX, MAX_RUNS);
	mmu_config.prefetch = PREFETCH_OFF;
	for (unsigned c = 0; c < a.n_counts; c++)
		ok[c] = true;
	for (uint64_t r = 0; r < a.runs; r++)
		for (unsigned c = 0; c < a.n_counts; c++) {
			if (!fill_run((unsigned)a.counts[c], a.mib, &fills[c], &cpus[c])) {
				mmu_config = saved;
				return 1;
			}
			cycles[c][r] = fills[c].cycles;
			ok[c] &= fills[c].ok;
		}
	mmu_config = saved;
	if (!exit_loop(a.exits, &loop))
		return 1;

	kprintf("bench faults: one write to every 4 KiB page of %llu MiB per vCPU, all vCPUs at "
		"once (lazy memory, prefetch=off: a fault a page); median (min..max) of %llu "
		"interleaved runs\n", (unsigned long long)a.mib, (unsigned long long)a.runs);
	kprintf("%5s %9s %8s %22s %10s %12s %4s\n", "vcpus", "host cpus", "faults",
		"ms", "faults/s", "cycles/fault", "ok");
	for (unsigned c = 0; c < a.n_counts; c++) {
		struct spread s = spread_of(cycles[c], a.runs);

		kprintf("%5llu %9u %8llu %8llu (%llu..%llu) %10llu %12llu %4s\n",
			(unsigned long long)a.counts[c],
			cpus[c], (unsigned long long)fills[c].faults,
			(unsigned long long)(tsc_to_ns(s.median) / 1000000),
			(unsigned long long)(tsc_to_ns(s.min) / 1000000),
			(unsigned long long)(tsc_to_ns(s.max) / 1000000),
			(unsigned long long)per_second(fills[c].faults, s.median),
			(unsigned long long)cycles_per(s.median, fills[c].faults), ok[c] ? "ok" : "BAD");
	}
	kprintf("exit loop: %llu CPUIDs, %llu exits, %llu cycles per exit, %llu exits/s%s\n",
		(unsigned long long)a.exits, (unsigned long long)loop.exits,
		(unsigned long long)cycles_per(loop.cycles, loop.exits),
		(unsigned long long)per_second(loop.exits, loop.cycles), loop.ok ? "" : " BAD");
	for (unsigned c = 0; c < a.n_counts; c++) {
		struct spread s = spread_of(cycles[c], a.runs);

		all_ok &= ok[c];
		kprintf("@bench bench=faults in=guest vcpus=%llu host_cpus=%u mib_per_vcpu=%llu "
			"runs=%llu faults=%llu exits=%llu time_ns=%llu ns_min=%llu ns_max=%llu "
			"faults_per_s=%llu cycles_per_fault=%llu tsc_khz=%llu ok=%s\n",
			(unsigned long long)a.counts[c], cpus[c], (unsigned long long)a.mib,
			(unsigned long long)a.runs, (unsigned long long)fills[c].faults,
			(unsigned long long)fills[c].exits, (unsigned long long)tsc_to_ns(s.median),
			(unsigned long long)tsc_to_ns(s.min), (unsigned long long)tsc_to_ns(s.max),
			(unsigned long long)per_second(fills[c].faults, s.median),
			(unsigned long long)cycles_per(s.median, fills[c].faults),
			(unsigned long long)tsc_khz(), ok[c] ? "yes" : "no");
	}
	kprintf("@bench bench=exitloop in=guest mode=cpuid exits=%llu cycles=%llu "
		"cycles_per_exit=%llu tsc_khz=%llu exits_per_s=%llu ok=%s\n",
		(unsigned long long)loop.exits, (unsigned long long)loop.cycles,
		(unsigned long long)cycles_per(loop.cycles, loop.exits), (unsigned long long)tsc_khz(),
		(unsigned long long)per_second(loop.exits, loop.cycles), loop.ok ? "yes" : "no");
	return all_ok && loop.ok ? 0 : 1;
}
SCENARIO(faults, .name = "faults", .run = faults_scenario,
	 .usage = "[vcpus=N[,N...]] [mib=N] [runs=R] [exits=N]",
	 .help = "fault throughput against vCPUs (a fault a page), and the cheapest exit's cost");
