/* The stats command: a VM's exits and MMU counters, one 'name value' a line. */
#include "arch/x86/tsc.h"
#include "lib/print.h"
#include "lib/string.h"
#include "shell/shell.h"
#include "virt/vm.h"

/* The vCPUs' counters summed (maxima: the largest), their port tallies merged. */
static void sum_vcpu_stats(const struct vm *vm, struct vcpu_stats *t)
{
	memset(t, 0, sizeof(*t));
	for (unsigned i = 0; i < vm->nr_vcpus; i++) {
		const struct vcpu_stats *s = &vm->vcpus[i]->stats;

		t->exits += s->exits;
		for (int k = 0; k < VEXIT_KINDS; k++)
			t->exits_by_kind[k] += s->exits_by_kind[k];
		t->hypercalls += s->hypercalls;
		t->io_other += s->io_other;
		t->msr_unknown += s->msr_unknown;
		t->msr_refused += s->msr_refused;
		t->irq_injected += s->irq_injected;
		t->nmi_injected += s->nmi_injected;
		t->events_requeued += s->events_requeued;
		t->irq_window_exits += s->irq_window_exits;
		if (s->timer_late_max_ns > t->timer_late_max_ns)
			t->timer_late_max_ns = s->timer_late_max_ns;
		t->mmio_exits += s->mmio_exits;
		t->mmio_unclaimed += s->mmio_unclaimed;
		t->decode_failures += s->decode_failures;
		t->pv_send_ipi += s->pv_send_ipi;
		t->pv_ipi_delivered += s->pv_ipi_delivered;
		t->pv_kick_cpu += s->pv_kick_cpu;
		t->directed_yield_attempted += s->directed_yield_attempted;
		t->directed_yield_successful += s->directed_yield_successful;
		t->steal_records += s->steal_records;
		t->pv_tlb_flushes += s->pv_tlb_flushes;
		t->pv_eois += s->pv_eois;
		t->run_tsc += s->run_tsc;
		for (int p = 0; p < VCPU_IO_PORTS_TRACKED && s->io_ports[p].count; p++) {
			int q = 0;

			while (q < VCPU_IO_PORTS_TRACKED && t->io_ports[q].count &&
			       t->io_ports[q].port != s->io_ports[p].port)
				q++;
			if (q == VCPU_IO_PORTS_TRACKED)
				continue;
			t->io_ports[q].port = s->io_ports[p].port;
			t->io_ports[q].count += s->io_ports[p].count;
		}
	}
}

/* Each vCPU's time on its host CPU, and its share of the VM's (percent of
 * an equal share: 100 each when all ran alike), the least and the most. */
static void print_cpu_shares(const struct vm *vm, uint64_t total_tsc)
{
	uint64_t khz = tsc_khz(), equal = total_tsc / vm->nr_vcpus, min = 0, max = 0;

	for (unsigned i = 0; i < vm->nr_vcpus; i++) {
		uint64_t run = vm->vcpus[i]->stats.run_tsc;
		uint64_t share = equal ? run * 100 / equal : 0;

		kprintf("  vcpu%u_run_us%-*s %llu\n", i, i < 10 ? 14 : i < 100 ? 13 : 12, "",
			(unsigned long long)(khz ? run * 1000 / khz : 0));
		if (i == 0 || share < min)
			min = share;
		if (share > max)
			max = share;
	}
	kprintf("  %-26s %llu\n", "cpu_share_min_pct", (unsigned long long)min);
	kprintf("  %-26s %llu\n", "cpu_share_max_pct", (unsigned long long)max);
}

static void print_vm_stats(struct vm *vm)
{
	static struct vcpu_stats t;
	uint64_t timer_fires = 0, ipis_sent = 0, steal_ns = 0;

	sum_vcpu_stats(vm, &t);
	for (unsigned i = 0; i < vm->nr_vcpus; i++) {
		timer_fires += vm->vcpus[i]->apic->timer_fires;
		ipis_sent += vm->vcpus[i]->apic->ipis_sent;
		steal_ns += vm->vcpus[i]->steal.waited_ns;
	}
	kprintf("vm %s (%s)\n", vm->name, vm_state_name(vm->state));
	kprintf("  %-26s %llu\n", "exits", (unsigned long long)t.exits);
	for (unsigned i = 0; i < vm->nr_vcpus; i++)
		kprintf("  vcpu%u_exits%-*s %llu\n", i, i < 10 ? 15 : i < 100 ? 14 : 13, "",
			(unsigned long long)vm->vcpus[i]->stats.exits);
	for (int k = 0; k < VEXIT_KINDS; k++)
		if (t.exits_by_kind[k])
			kprintf("  exits_%-20s %llu\n", vexit_kind_names[k],
				(unsigned long long)t.exits_by_kind[k]);
	kprintf("  %-26s %llu\n", "hypercalls", (unsigned long long)t.hypercalls);
	kprintf("  %-26s %llu\n", "io_other", (unsigned long long)t.io_other);
	for (int i = 0; i < VCPU_IO_PORTS_TRACKED && t.io_ports[i].count; i++)
		kprintf("  io_port_0x%-15x %llu\n", t.io_ports[i].port,
			(unsigned long long)t.io_ports[i].count);
	kprintf("  %-26s %llu\n", "msr_unknown", (unsigned long long)t.msr_unknown);
	kprintf("  %-26s %llu\n", "msr_refused", (unsigned long long)t.msr_refused);
	kprintf("  %-26s %llu\n", "irq_injected", (unsigned long long)t.irq_injected);
	kprintf("  %-26s %llu\n", "nmi_injected", (unsigned long long)t.nmi_injected);
	kprintf("  %-26s %llu\n", "host_nmis", (unsigned long long)vm->host_nmis);
	kprintf("  %-26s %llu\n", "halt_polls_ok", (unsigned long long)vm->halt_polls_ok);
	kprintf("  %-26s %llu\n", "halt_polls_failed", (unsigned long long)vm->halt_polls_failed);
	kprintf("  %-26s %llu\n", "events_requeued", (unsigned long long)t.events_requeued);
	kprintf("  %-26s %llu\n", "irq_window_exits", (unsigned long long)t.irq_window_exits);
	kprintf("  %-26s %llu\n", "timer_fires", (unsigned long long)timer_fires);
	kprintf("  %-26s %llu\n", "ipis_sent", (unsigned long long)ipis_sent);
	kprintf("  %-26s %llu\n", "timer_late_max_ns", (unsigned long long)t.timer_late_max_ns);
	kprintf("  %-26s %llu\n", "mmio_exits", (unsigned long long)t.mmio_exits);
	kprintf("  %-26s %llu\n", "mmio_unclaimed", (unsigned long long)t.mmio_unclaimed);
	kprintf("  %-26s %llu\n", "decode_failures", (unsigned long long)t.decode_failures);
	kprintf("  %-26s %llu\n", "pv_send_ipi", (unsigned long long)t.pv_send_ipi);
	kprintf("  %-26s %llu\n", "pv_ipi_delivered", (unsigned long long)t.pv_ipi_delivered);
	kprintf("  %-26s %llu\n", "pv_kick_cpu", (unsigned long long)t.pv_kick_cpu);
	kprintf("  %-26s %llu\n", "directed_yield_attempted",
		(unsigned long long)t.directed_yield_attempted);
	kprintf("  %-26s %llu\n", "directed_yield_successful",
		(unsigned long long)t.directed_yield_successful);
	kprintf("  %-26s %llu\n", "steal_time_ns", (unsigned long long)steal_ns);
	kprintf("  %-26s %llu\n", "steal_records", (unsigned long long)t.steal_records);
	kprintf("  %-26s %llu\n", "pv_tlb_flushes", (unsigned long long)t.pv_tlb_flushes);
	kprintf("  %-26s %llu\n", "pv_eois", (unsigned long long)t.pv_eois);
	/* Every PAUSE exit ends its vCPU's slice. */
	kprintf("  %-26s %llu\n", "spin_yields", (unsigned long long)t.exits_by_kind[VEXIT_PAUSE]);
	print_cpu_shares(vm, t.run_tsc);
	platform_print_stats(vm);
	mmu_stats_print(&vm->mmu);
}

static int cmd_stats(int argc, char **argv)
{
	if (argc > 2)
		return shell_usage_error("stats", "unexpected argument '%s'", argv[2]);
	if (argc == 2) {
		struct vm *vm = vm_find(argv[1]);
		if (!vm) {
			kprintf("stats: no VM named '%s' (see 'vm list')\n", argv[1]);
			return 1;
		}
		print_vm_stats(vm);
		return 0;
	}
	if (!vm_next(NULL))
		kprintf("no VMs\n");
	for (struct vm *vm = vm_next(NULL); vm; vm = vm_next(vm))
		print_vm_stats(vm);
	return 0;
}
SHELL_COMMAND(stats, "stats", cmd_stats, "[NAME]", "VM exits and MMU counters, one 'name value' per line");
