/* `bench pv guest=linux`: what KVM's paravirtual features save a Linux guest.
 *
 * For pv=off and on, interleaved over `runs=R` (default 2): Debian's kernel
 * boots on `vcpus=N` vCPUs (default 4: spread over the CPUs other than the
 * console's, so that with 3 of them two vCPUs share one and get preempted),
 * with virt/kvm_pv.h's features in CPUID 0x40000101 or without them (KVM's
 * clock either way), and `sprig-bench ipi threads=N ms=T` (default 2000)
 * maps, writes and unmaps a page over and over on every vCPU: each unmap
 * flushes the other vCPUs' TLBs. Between the workload's BEGIN and END the
 * host counts the exits, the IPIs sent through the ICR, the KVM_HC_SEND_IPI
 * calls and the IPIs they delivered, the flushes preempted vCPUs took from
 * their steal-time record instead of an IPI (PV TLB flush), KVM_HC_KICK_CPU
 * calls (PV unhalt), directed yields, PAUSE exits (spins) and HLT exits; the
 * workload counts its unmaps. Each row is one setting's medians over the
 * runs. */
#include "arch/x86/cpu.h"
#include "arch/x86/tsc.h"
#include "lib/parse.h"
#include "lib/print.h"
#include "lib/sort.h"
#include "lib/string.h"
#include "bench/linux_guest.h"
#include "bench/scenario.h"
#include "shell/shell.h"
#include "virt/bench_port.h"
#include "virt/vm.h"

#define MiB (1ull << 20)
#define MAX_RUNS 9

enum pv_field {
	PV_UNMAPS, PV_NS, PV_EXITS, PV_IPIS, PV_SEND_IPI, PV_SEND_IPI_DELIVERED, PV_TLB_FLUSHES,
	PV_KICK_CPU, PV_YIELDS, PV_SPINS, PV_HALTS, PV_FIELDS
};

static const char *const pv_field_names[PV_FIELDS] = {
	"unmaps", "ns", "exits", "ipis_sent", "pv_send_ipi", "pv_ipi_delivered",
	"pv_tlb_flushes", "pv_kick_cpu", "directed_yields", "spin_exits", "hlt_exits",
};

/* The VM's counters now, in enum pv_field's order (the workload's two left 0). */
static void vm_counts(const struct vm *vm, uint64_t *c)
{
	for (int f = 0; f < PV_FIELDS; f++)
		c[f] = 0;
	for (unsigned i = 0; i < vm->nr_vcpus; i++) {
		const struct vcpu *v = vm->vcpus[i];

		c[PV_EXITS] += v->stats.exits;
		c[PV_IPIS] += v->apic->ipis_sent;
		c[PV_SEND_IPI] += v->stats.pv_send_ipi;
		c[PV_SEND_IPI_DELIVERED] += v->stats.pv_ipi_delivered;
		c[PV_TLB_FLUSHES] += v->stats.pv_tlb_flushes;
		c[PV_KICK_CPU] += v->stats.pv_kick_cpu;
		c[PV_YIELDS] += v->stats.directed_yield_attempted;
		c[PV_SPINS] += v->stats.exits_by_kind[VEXIT_PAUSE];
		c[PV_HALTS] += v->stats.exits_by_kind[VEXIT_HLT];
	}
}

/* One boot with PV on or off: the counts of the workload's span. */
static bool pv_run(unsigned vcpus, uint64_t ms, bool pv, uint64_t *c)
{
	uint64_t before[PV_FIELDS];
	struct linux_run r;
	char workload[48];

	ksnprintf(workload, sizeof(workload), "ipi threads=%u ms=%llu", vcpus,
		  (unsigned long long)ms);
	if (!linux_run_create(&r, vcpus, 256 * MiB, BACKING_LAZY, pv ? 0 : LINUX_RUN_NO_KVM_PV,
			      workload))
		return false;
	if (linux_run_until(&r, BENCH_CMD_BEGIN)) {
		vm_counts(r.vm, before);
		if (linux_run_until(&r, BENCH_CMD_END)) {
			vm_counts(r.vm, c);
			for (int f = PV_EXITS; f < PV_FIELDS; f++)
				c[f] -= before[f];
			c[PV_UNMAPS] = linux_word64(&r, 0);
			c[PV_NS] = linux_word64(&r, 2);
			r.ok &= c[PV_UNMAPS] > 0;
		}
	}
	return linux_run_finish(&r, "pv");
}

/* a per b, in thousandths. */
static uint64_t per_mille(uint64_t a, uint64_t b)
{
	return b ? a * 1000 / b : 0;
}

static int pv_scenario(int argc, char **argv)
{
	static uint64_t runs_of[2][PV_FIELDS][MAX_RUNS];
	uint64_t vcpus = 4, ms = 2000, runs = 2, med[2][PV_FIELDS];
	bool in_linux = false, ok = true;

	for (int i = 1; i < argc; i++) {
		const char *v = strchr(argv[i], '=');

		if (strcmp(argv[i], "guest=linux") == 0)
			in_linux = true;
		else if (!v || !(strncmp(argv[i], "vcpus=", 6) == 0 ?
				 parse_u64_in(v + 1, 2, 64, &vcpus) :
				 strncmp(argv[i], "ms=", 3) == 0 ? parse_u64_in(v + 1, 100, 60000, &ms) :
				 strncmp(argv[i], "runs=", 5) == 0 &&
				 parse_u64_in(v + 1, 1, MAX_RUNS, &runs)))
			return shell_usage_error("bench", "bad argument '%s' (guest=linux vcpus=2..64 "
						 "ms=100..60000 runs=1..%d)", argv[i], MAX_RUNS);
	}
	if (!in_linux)
		return shell_usage_error("bench", "pv measures Linux only: give guest=linux");
	for (uint64_t r = 0; r < runs; r++)
		for (int pv = 0; pv < 2; pv++) {
			uint64_t c[PV_FIELDS] = { 0 };

			ok &= pv_run((unsigned)vcpus, ms, pv, c);
			for (int f = 0; f < PV_FIELDS; f++)
				runs_of[pv][f][r] = c[f];
		}
	for (int pv = 0; pv < 2; pv++)
		for (int f = 0; f < PV_FIELDS; f++)
			med[pv][f] = spread_of(runs_of[pv][f], runs).median;

	kprintf("bench pv: Linux on %llu vCPUs, sprig-bench ipi (map, write, unmap a page on every "
		"vCPU) for %llu ms, KVM's PV features off and on; medians of %llu runs\n",
		(unsigned long long)vcpus, (unsigned long long)ms, (unsigned long long)runs);
	kprintf("%-3s %9s %10s %12s %12s %10s %10s %10s\n", "pv", "unmaps/s", "exits",
		"exits/unmap", "IPIs/unmap", "send_ipi", "tlb_flush", "spins");
	for (int pv = 0; pv < 2; pv++) {
		const uint64_t *m = med[pv];

		kprintf("%-3s %9llu %10llu %8llu.%03llu %8llu.%03llu %10llu %10llu %10llu\n",
			pv ? "on" : "off", (unsigned long long)(m[PV_NS] ?
				m[PV_UNMAPS] * 1000000000ull / m[PV_NS] : 0),
			(unsigned long long)m[PV_EXITS],
			(unsigned long long)(per_mille(m[PV_EXITS], m[PV_UNMAPS]) / 1000),
			(unsigned long long)(per_mille(m[PV_EXITS], m[PV_UNMAPS]) % 1000),
			(unsigned long long)(per_mille(m[PV_IPIS] + m[PV_SEND_IPI_DELIVERED],
						       m[PV_UNMAPS]) / 1000),
			(unsigned long long)(per_mille(m[PV_IPIS] + m[PV_SEND_IPI_DELIVERED],
						       m[PV_UNMAPS]) % 1000),
			(unsigned long long)m[PV_SEND_IPI], (unsigned long long)m[PV_TLB_FLUSHES],
			(unsigned long long)m[PV_SPINS]);
	}
	for (int pv = 0; pv < 2; pv++) {
		kprintf("@bench bench=pv in=linux pv=%s vcpus=%llu ms=%llu runs=%llu", pv ? "on" : "off",
			(unsigned long long)vcpus, (unsigned long long)ms, (unsigned long long)runs);
		for (int f = 0; f < PV_FIELDS; f++)
			kprintf(" %s=%llu", pv_field_names[f], (unsigned long long)med[pv][f]);
		kprintf(" exits_per_unmap_milli=%llu ok=%s\n",
			(unsigned long long)per_mille(med[pv][PV_EXITS], med[pv][PV_UNMAPS]),
			ok ? "yes" : "no");
	}
	return ok ? 0 : 1;
}
SCENARIO(pv, .name = "pv", .run = pv_scenario,
	 .usage = "guest=linux [vcpus=N] [ms=T] [runs=R]",
	 .help = "Linux's TLB-flush IPIs with KVM's PV features off and on");
