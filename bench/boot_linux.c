/* `bench boot guest=linux`: Linux's boot time against its vCPUs.
 *
 * For each count N of `vcpus=LIST` (default 1,2,4,8), Debian's kernel boots
 * on N vCPUs in `mem=SIZE` (default 256M) of lazy memory, and its init runs
 * `sprig-bench boot`, which stops at BEGIN at once with the CPUs it found
 * online: the host times the boot from vm_create to that stop by its TSC, and
 * counts the exits and faults on the way. `runs=R` (default 3) boots of each
 * count, interleaved over the list; each row is the median with min..max. A
 * run counts only when Linux brought every vCPU online. */
#include "arch/x86/cpu.h"
#include "arch/x86/tsc.h"
#include "lib/parse.h"
#include "lib/print.h"
#include "lib/sort.h"
#include "lib/string.h"
#include "bench/guest.h"
#include "bench/linux_guest.h"
#include "bench/scenario.h"
#include "shell/shell.h"
#include "virt/bench_port.h"
#include "virt/vm.h"

#define MiB (1ull << 20)
#define MAX_COUNTS 8
#define MAX_RUNS 15

struct boot_run {
	uint64_t cycles, exits, faults, online;
	bool ok;
};

static bool boot_once(unsigned vcpus, uint64_t mem, struct boot_run *b)
{
	struct linux_run r;
	uint64_t t = rdtsc();

	*b = (struct boot_run){ 0 };
	if (!linux_run_create(&r, vcpus, mem, BACKING_LAZY, 0, "boot"))
		return false;
	linux_run_until(&r, BENCH_CMD_BEGIN);
	b->cycles = rdtsc() - t;
	b->exits = bench_vm_exits(r.vm);
	b->faults = r.vm->mmu.stats.pf_taken;
	b->online = r.nwords ? r.words[0] : 0;
	r.ok &= b->online == vcpus;
	b->ok = linux_run_finish(&r, "boot");
	return true;
}

static int boot_scenario(int argc, char **argv)
{
	static uint64_t cycles[MAX_COUNTS][MAX_RUNS];
	uint64_t counts[MAX_COUNTS] = { 1, 2, 4, 8 }, runs = 3, mem = 256 * MiB;
	unsigned n_counts = 4;
	struct boot_run last[MAX_COUNTS];
	bool ok[MAX_COUNTS], in_linux = false, all_ok = true;

	for (int i = 1; i < argc; i++) {
		const char *v = strchr(argv[i], '=');

		if (strcmp(argv[i], "guest=linux") == 0)
			in_linux = true;
		else if (!v || !(strncmp(argv[i], "vcpus=", 6) == 0 ?
				 parse_u64_list(v + 1, 1, VM_VCPUS_MAX, counts, MAX_COUNTS,
						&n_counts) :
				 strncmp(argv[i], "runs=", 5) == 0 ?
				 parse_u64_in(v + 1, 1, MAX_RUNS, &runs) :
				 strncmp(argv[i], "mem=", 4) == 0 &&
				 parse_size_in(v + 1, 128 * MiB, 3ull << 30, &mem)))
			return shell_usage_error("bench", "bad argument '%s' (guest=linux "
						 "vcpus=N[,N...] up to %d counts of 1..%llu, "
						 "runs=1..%d, mem=128M..3G)", argv[i], MAX_COUNTS,
						 (unsigned long long)VM_VCPUS_MAX, MAX_RUNS);
	}
	if (!in_linux)
		return shell_usage_error("bench", "boot times Linux only: give guest=linux");
	for (unsigned c = 0; c < n_counts; c++)
		ok[c] = true;
	for (uint64_t r = 0; r < runs; r++)
		for (unsigned c = 0; c < n_counts; c++) {
			if (!boot_once((unsigned)counts[c], mem, &last[c]))
				return 1;
			cycles[c][r] = last[c].cycles;
			ok[c] &= last[c].ok;
		}

	kprintf("bench boot: Linux from vm_create to its init's first command, %llu MiB of lazy "
		"memory; median (min..max) of %llu interleaved boots\n",
		(unsigned long long)(mem >> 20), (unsigned long long)runs);
	kprintf("%5s %24s %10s %10s %7s %4s\n", "vcpus", "ms", "exits", "faults", "online", "ok");
	for (unsigned c = 0; c < n_counts; c++) {
		struct spread s = spread_of(cycles[c], runs);

		kprintf("%5llu %10llu (%llu..%llu) %10llu %10llu %7llu %4s\n",
			(unsigned long long)counts[c], (unsigned long long)(tsc_to_ns(s.median) / 1000000),
			(unsigned long long)(tsc_to_ns(s.min) / 1000000),
			(unsigned long long)(tsc_to_ns(s.max) / 1000000),
			(unsigned long long)last[c].exits, (unsigned long long)last[c].faults,
			(unsigned long long)last[c].online, ok[c] ? "ok" : "BAD");
	}
	for (unsigned c = 0; c < n_counts; c++) {
		struct spread s = spread_of(cycles[c], runs);

		all_ok &= ok[c];
		kprintf("@bench bench=boot in=linux vcpus=%llu runs=%llu mem_mib=%llu time_ns=%llu "
			"ns_min=%llu ns_max=%llu exits=%llu faults=%llu online=%llu ok=%s\n",
			(unsigned long long)counts[c], (unsigned long long)runs,
			(unsigned long long)(mem >> 20), (unsigned long long)tsc_to_ns(s.median),
			(unsigned long long)tsc_to_ns(s.min), (unsigned long long)tsc_to_ns(s.max),
			(unsigned long long)last[c].exits, (unsigned long long)last[c].faults,
			(unsigned long long)last[c].online, ok[c] ? "yes" : "no");
	}
	return all_ok ? 0 : 1;
}
SCENARIO(boot, .name = "boot", .run = boot_scenario,
	 .usage = "guest=linux [vcpus=N[,N...]] [runs=R] [mem=SIZE]",
	 .help = "Linux's boot time against its vCPUs");
