/* `bench share`: how evenly vCPUs with equal work share their CPUs.
 *
 * The probe guest (guests/probe.c, mode=spin) on `vcpus=N` vCPUs (default
 * 16) computes on every vCPU for `ms=T` milliseconds (default 2000) without
 * an exit of its own, so that only sprig's scheduler decides who runs: the
 * vCPUs are placed as vm_place_vcpus spreads them (the console's CPU left
 * out) and take 1 ms slices in turn. From each vCPU's run time in the spin
 * (struct vcpu_stats run_tsc, what `stats` reports as vcpuN_run_us):
 *   - its share of its host CPU: its run time against an equal part of what
 *     its CPU's vCPUs ran in all (100: exactly equal); the scheduler's
 *     fairness, judged by the targets `share_cpu_min_pct`/`_max_pct`;
 *   - its share of the VM, against an equal part of all vCPUs' run time (as
 *     `stats` prints cpu_share_min_pct/max_pct): with more vCPUs than CPUs,
 *     a CPU with more vCPUs gives each less, as placement decides.
 * `runs=R` (default 3) runs; each figure is the median with min..max. */
#include "arch/x86/cpu.h"
#include "arch/x86/smp.h"
#include "arch/x86/tsc.h"
#include "lib/parse.h"
#include "lib/print.h"
#include "lib/sort.h"
#include "lib/string.h"
#include "bench/guest.h"
#include "bench/scenario.h"
#include "shell/shell.h"
#include "virt/vm.h"

#define MiB (1ull << 20)
#define MAX_RUNS 15
#define RUN_TIMEOUT_MS (600 * 1000)

/* One run's least and most shares, percent. */
struct shares {
	uint64_t cpu_min, cpu_max, vm_min, vm_max;
	unsigned host_cpus;
	bool ok;
};

static bool run_to_pause(struct vm *vm)
{
	vm_run(vm, RUN_TIMEOUT_MS);
	return bench_guest_at_point(vm);
}

static void min_max(uint64_t v, bool first, uint64_t *min, uint64_t *max)
{
	if (first || v < *min)
		*min = v;
	if (first || v > *max)
		*max = v;
}

/* The shares from each vCPU's run time in the spin. */
static void shares_of(const struct vm *vm, const uint64_t *run, struct shares *s)
{
	uint64_t cpu_run[CPU_MAX] = { 0 }, total = 0;
	unsigned on_cpu[CPU_MAX] = { 0 };

	for (unsigned i = 0; i < vm->nr_vcpus; i++) {
		unsigned c = vm->vcpus[i]->kick.cpu;

		s->host_cpus += !on_cpu[c];
		on_cpu[c]++;
		cpu_run[c] += run[i];
		total += run[i];
	}
	for (unsigned i = 0; i < vm->nr_vcpus; i++) {
		unsigned c = vm->vcpus[i]->kick.cpu;
		uint64_t cpu_equal = cpu_run[c] / on_cpu[c], vm_equal = total / vm->nr_vcpus;

		min_max(cpu_equal ? run[i] * 100 / cpu_equal : 0, i == 0, &s->cpu_min, &s->cpu_max);
		min_max(vm_equal ? run[i] * 100 / vm_equal : 0, i == 0, &s->vm_min, &s->vm_max);
	}
}

static bool share_run(unsigned vcpus, uint64_t ms, struct shares *s)
{
	static uint64_t run[VM_VCPUS_MAX];
	static char args[48];
	struct mmu_audit_report audit;
	struct vm *vm;

	*s = (struct shares){ 0 };
	ksnprintf(args, sizeof(args), "mode=spin cpus=%u ms=%llu", vcpus, (unsigned long long)ms);
	if (!(vm = bench_guest_create("share", "share-bench", "probe", args, 16 * MiB, vcpus,
				      BACKING_EAGER)))
		return false;
	s->ok = run_to_pause(vm);
	for (unsigned i = 0; i < vm->nr_vcpus; i++)
		run[i] = vm->vcpus[i]->stats.run_tsc;
	s->ok = s->ok && run_to_pause(vm);
	for (unsigned i = 0; i < vm->nr_vcpus; i++)
		run[i] = vm->vcpus[i]->stats.run_tsc - run[i];
	shares_of(vm, run, s);
	for (unsigned i = 0; i < vm->nr_vcpus; i++)
		s->ok &= run[i] > 0;
	if (!mmu_audit(&vm->mmu, &audit)) {
		mmu_audit_print(&audit);
		s->ok = false;
	}
	vm_destroy(vm);
	return true;
}

static int share_scenario(int argc, char **argv)
{
	static uint64_t fields[4][MAX_RUNS];
	static const char *const names[4] = { "cpu_min_pct", "cpu_max_pct", "vm_min_pct",
					       "vm_max_pct" };
	uint64_t vcpus = 16, ms = 2000, runs = 3;
	struct spread sp[4];
	struct shares s = { 0 };
	bool ok = true;

	for (int i = 1; i < argc; i++) {
		const char *v = strchr(argv[i], '=');

		if (!v || !(strncmp(argv[i], "vcpus=", 6) == 0 ?
			    parse_u64_in(v + 1, 1, VM_VCPUS_MAX, &vcpus) :
			    strncmp(argv[i], "ms=", 3) == 0 ? parse_u64_in(v + 1, 100, 60000, &ms) :
			    strncmp(argv[i], "runs=", 5) == 0 &&
			    parse_u64_in(v + 1, 1, MAX_RUNS, &runs)))
			return shell_usage_error("bench", "bad argument '%s' (vcpus=1..%llu, "
						 "ms=100..60000, runs=1..%d)", argv[i],
						 (unsigned long long)VM_VCPUS_MAX, MAX_RUNS);
	}
	for (uint64_t r = 0; r < runs; r++) {
		if (!share_run((unsigned)vcpus, ms, &s))
			return 1;
		fields[0][r] = s.cpu_min;
		fields[1][r] = s.cpu_max;
		fields[2][r] = s.vm_min;
		fields[3][r] = s.vm_max;
		ok &= s.ok;
	}
	for (int f = 0; f < 4; f++)
		sp[f] = spread_of(fields[f], runs);
	kprintf("bench share: %llu vCPUs computing for %llu ms on %u host CPUs, 1 ms slices; "
		"percent of an equal share, median (min..max) of %llu runs%s\n",
		(unsigned long long)vcpus, (unsigned long long)ms, s.host_cpus,
		(unsigned long long)runs, ok ? "" : ": BAD (a run failed or a vCPU never ran)");
	kprintf("  of its host CPU: least %llu (%llu..%llu), most %llu (%llu..%llu)\n",
		(unsigned long long)sp[0].median, (unsigned long long)sp[0].min,
		(unsigned long long)sp[0].max, (unsigned long long)sp[1].median,
		(unsigned long long)sp[1].min, (unsigned long long)sp[1].max);
	kprintf("  of the VM:       least %llu (%llu..%llu), most %llu (%llu..%llu)\n",
		(unsigned long long)sp[2].median, (unsigned long long)sp[2].min,
		(unsigned long long)sp[2].max, (unsigned long long)sp[3].median,
		(unsigned long long)sp[3].min, (unsigned long long)sp[3].max);
	kprintf("@bench bench=share in=guest vcpus=%llu host_cpus=%u ms=%llu runs=%llu",
		(unsigned long long)vcpus, s.host_cpus, (unsigned long long)ms,
		(unsigned long long)runs);
	for (int f = 0; f < 4; f++)
		kprintf(" %s=%llu %s_min=%llu %s_max=%llu", names[f],
			(unsigned long long)sp[f].median, names[f], (unsigned long long)sp[f].min,
			names[f], (unsigned long long)sp[f].max);
	kprintf(" ok=%s\n", ok ? "yes" : "no");
	return ok ? 0 : 1;
}
SCENARIO(share, .name = "share", .run = share_scenario,
	 .usage = "[vcpus=N] [ms=T] [runs=R]",
	 .help = "how evenly vCPUs with equal work share their host CPUs");
