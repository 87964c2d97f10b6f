/* The smp guest: starts every CPU the way a PC kernel does (rt/smp.c: the
 * MADT, INIT-SIPI-SIPI, a trampoline below 1 MiB), runs work on each and
 * sends IPIs between them, one line per check, for tests/e2e/e2e_smp_guest.py.
 * Bare under `qemu -smp N` it is the reference; under sprig, a VM with N
 * vCPUs must print the same. Lines:
 *   smp: N CPUs online
 *   PASS: NAME            FAIL: NAME (detail)            SKIP: NAME (why)
 *   info: ...             (APIC IDs, timings; never compared)
 * then "smp: N passed, N failed, N skipped" and exit status 0 when nothing
 * failed, 1 otherwise.
 *
 * Arguments:
 *   cpus=N     the number of CPUs that must come up (default: as many as
 *              the MADT lists as enabled)
 *   rounds=N   IPIs each sender sends each receiver (default 100)
 *   mib=N      MiB of memory each CPU fills in smp-slices (default 1)
 *   x2apic=1   every APIC in x2APIC mode, where CPUID.1:ECX[21] offers it
 *   snapshot=1 after smp-atomic, the last CPU calls HC_SNAPSHOT_POINT
 *              (clone=1: HC_CLONE_POINT) while every other spins: under
 *              sprig the VM pauses there with its CPUs in the middle of
 *              their work, to be snapshotted or cloned
 *              (tests/e2e/e2e_vcpus_snap.py)
 *
 * Checks, in order:
 *   smp-madt      the MADT exists and lists this CPU as enabled
 *   smp-start     every CPU the MADT lists came up (and cpus=N of them)
 *   smp-apic-ids  each CPU's APIC ID register, its CPUID initial APIC ID
 *                 (leaf 1) and x2APIC ID (leaf 0xB) equal the MADT's ID;
 *                 all distinct
 *   smp-slices    each CPU fills its own slice of memory and sums it; the
 *                 next CPU and the BSP sum it again
 *   smp-atomic    every CPU adds to one counter with LOCK XADD: no add lost
 *   smp-ipi-ring  fixed IPIs from each CPU to the next (vector 0x40 + the
 *                 sender's index), each counted by the receiver before the
 *                 next is sent
 *   smp-ipi-all   the same from every CPU to every other at once
 *   smp-nmi       NMI IPIs from the BSP to each AP, counted there
 *   smp-point     (snapshot=1 or clone=1; reported only when it fails)
 *                 every other CPU spun before the call and spins on after
 *                 it; an info: line gives the call's return value
 *   unexpected-interrupts (only when one came)
 * With one CPU, the checks that need two SKIP. */
#include "arch/x86/msr.h"
#include "guests/rt/acpi.h"
#include "guests/rt/cpu.h"
#include "guests/rt/idt.h"
#include "guests/rt/lapic.h"
#include "guests/rt/report.h"
#include "guests/rt/rt.h"
#include "guests/rt/smp.h"
#include "guests/rt/tsc.h"
#include "virt/hypercall.h"

#define VEC_IPI 0x40		/* + the sender's index */
#define IPI_WAIT_US 1000000	/* for one IPI to be counted */
#define ATOMIC_ADDS 100000u
#define CPUID_X2APIC (1u << 21)

static unsigned long rounds;
static uint64_t slice_bytes;

/* The CPUs that came up, by index: live[0] is the BSP. */
static unsigned int live[SMP_CPU_MAX], n_live;

/* ------------------------------------------------------------------ */
/* Interrupts */

static volatile unsigned int received[SMP_CPU_MAX][SMP_CPU_MAX];	/* [receiver][sender] */
static volatile unsigned int nmis[SMP_CPU_MAX];
static volatile unsigned int unexpected_irqs, last_unexpected;

static void smp_dispatch(struct frame *f)
{
	unsigned int v = (unsigned int)f->vector, me = smp_index();

	if (v == 2) {
		nmis[me]++;
		return;
	}
	if (v < 32) {
		fail("exception", "cpu %u: vector %u, error 0x%lx at RIP 0x%lx", me, v, f->error,
		     f->rip);
		exit(report_summary("smp"));
	}
	if (v == SPURIOUS_VEC)
		return;	/* a spurious interrupt takes no EOI */
	if (v >= VEC_IPI && v < VEC_IPI + SMP_CPU_MAX)
		received[me][v - VEC_IPI]++;
	else
		unexpected_irqs++, last_unexpected = v;
	apic_eoi();
}

/* ------------------------------------------------------------------ */
/* smp-madt, smp-start, smp-apic-ids */

static void check_start(unsigned long want)
{
	if (!acpi_find_table("APIC"))
		fail("smp-madt", "no MADT");
	else if (!smp_cpus[0].madt)
		fail("smp-madt", "this CPU (APIC ID %u) is not listed as enabled",
		     smp_cpus[0].apic_id);
	else
		pass("smp-madt");

	printf("info: MADT: %u enabled CPUs, APIC IDs", smp_cpu_count);
	for (unsigned int i = 0; i < smp_cpu_count; i++)
		printf(" %u%s", smp_cpus[i].apic_id,
		       smp_cpus[i].state == SMP_ONLINE ? "" : " (failed)");
	printf("\n");
	if (n_live != smp_cpu_count)
		fail("smp-start", "%u of %u CPUs came up", n_live, smp_cpu_count);
	else if (want && n_live != want)
		fail("smp-start", "%u CPUs came up, %lu expected", n_live, want);
	else
		pass("smp-start");
}

static void check_apic_ids(void)
{
	for (unsigned int a = 0; a < n_live; a++) {
		const struct smp_cpu *c = &smp_cpus[live[a]];

		if (c->apic_id_reg != c->apic_id) {
			fail("smp-apic-ids", "cpu %u: APIC ID register %u, MADT %u", live[a],
			     c->apic_id_reg, c->apic_id);
			return;
		}
		if (c->cpuid_apic_id != (c->apic_id & 0xff)) {
			fail("smp-apic-ids", "cpu %u: CPUID.1 initial APIC ID %u, MADT %u", live[a],
			     c->cpuid_apic_id, c->apic_id);
			return;
		}
		if (c->cpuid_x2apic_id != ~0u && c->cpuid_x2apic_id != c->apic_id) {
			fail("smp-apic-ids", "cpu %u: CPUID.0xB x2APIC ID %u, MADT %u", live[a],
			     c->cpuid_x2apic_id, c->apic_id);
			return;
		}
		for (unsigned int b = 0; b < a; b++)
			if (smp_cpus[live[b]].apic_id_reg == c->apic_id_reg) {
				fail("smp-apic-ids", "cpus %u and %u both have APIC ID %u", live[b],
				     live[a], c->apic_id_reg);
				return;
			}
	}
	pass("smp-apic-ids");
}

/* ------------------------------------------------------------------ */
/* Work on every CPU: smp-slices, smp-atomic */

/* Where cpu is in live[]. */
static unsigned int position(unsigned int cpu)
{
	for (unsigned int p = 0; p < n_live; p++)
		if (live[p] == cpu)
			return p;
	return 0;
}

static uint64_t pattern(uint64_t addr, unsigned int cpu)
{
	uint64_t x = addr * 0x9e3779b97f4a7c15ull + cpu;

	return x ^ (x >> 29);
}

static uint64_t slice(unsigned int pos)
{
	return GUEST_PLAYGROUND + pos * slice_bytes;
}

static uint64_t slice_sum(unsigned int pos)
{
	uint64_t sum = 0;

	for (uint64_t a = slice(pos); a < slice(pos) + slice_bytes; a += 8)
		sum += *(volatile uint64_t *)a;
	return sum;
}

static uint64_t sums[SMP_CPU_MAX], next_sums[SMP_CPU_MAX];
static volatile bool barrier_failed;

/* Fills this CPU's slice, sums it; once all have, sums the next CPU's. */
static void fill_slice(unsigned int cpu)
{
	unsigned int pos = position(cpu), next = (pos + 1) % n_live;
	uint64_t sum = 0;

	for (uint64_t a = slice(pos); a < slice(pos) + slice_bytes; a += 8) {
		uint64_t v = pattern(a, cpu);

		*(volatile uint64_t *)a = v;
		sum += v;
	}
	sums[pos] = sum;
	if (!smp_barrier())
		barrier_failed = true;
	next_sums[next] = slice_sum(next);
}

static void check_slices(const struct mb1_info *mbi)
{
	if (!playground_fits(mbi, n_live * slice_bytes)) {
		fail("smp-slices", "%u slices of %lu KiB do not fit in memory", n_live,
		     slice_bytes / KIB);
		return;
	}
	barrier_failed = false;
	if (!smp_run(fill_slice) || barrier_failed) {
		fail("smp-slices", "a CPU did not finish (info: lines above)");
		return;
	}
	for (unsigned int pos = 0; pos < n_live; pos++) {
		uint64_t want = 0, bsp = slice_sum(pos);

		for (uint64_t a = slice(pos); a < slice(pos) + slice_bytes; a += 8)
			want += pattern(a, live[pos]);
		if (sums[pos] != want || next_sums[pos] != want || bsp != want) {
			fail("smp-slices", "cpu %u's slice: sum 0x%lx by itself, 0x%lx by the next "
			     "CPU, 0x%lx by the BSP, 0x%lx expected", live[pos], sums[pos],
			     next_sums[pos], bsp, want);
			return;
		}
	}
	pass("smp-slices");
}

static unsigned int atomic_counter;

static void add_atomically(unsigned int cpu)
{
	(void)cpu;
	if (!smp_barrier())
		barrier_failed = true;
	for (unsigned int i = 0; i < ATOMIC_ADDS; i++)
		__atomic_fetch_add(&atomic_counter, 1, __ATOMIC_RELAXED);
}

static void check_atomic(void)
{
	atomic_counter = 0;
	barrier_failed = false;
	if (!smp_run(add_atomically) || barrier_failed)
		fail("smp-atomic", "a CPU did not finish (info: lines above)");
	else if (atomic_counter != n_live * ATOMIC_ADDS)
		fail("smp-atomic", "counter %u after %u CPUs added %u each", atomic_counter, n_live,
		     ATOMIC_ADDS);
	else
		pass("smp-atomic");
}

/* ------------------------------------------------------------------ */
/* smp-point: a snapshot or clone point with every AP at work */

static volatile unsigned int spins[SMP_CPU_MAX];
static volatile bool point_done;
static unsigned long point_call;
static long point_ret;
static volatile bool point_failed;

/* The last CPU makes the call (an AP, where there is one: the VM's first
 * vCPU is not the only one a call can come from) once every other has spun,
 * and goes on once every other has spun again after it; they spin until it
 * is past the call. */
static void spin_at_point(unsigned int cpu)
{
	unsigned int caller = live[n_live - 1];

	if (!smp_barrier())
		barrier_failed = true;
	if (cpu != caller) {
		while (!point_done)
			spins[cpu]++;
		return;
	}
	for (unsigned int p = 0; p + 1 < n_live; p++)
		if (!wait_count(&spins[live[p]], 1, IPI_WAIT_US))
			point_failed = true;
	point_ret = hypercall(point_call, 0, 0, 0, 0);
	for (unsigned int p = 0; p + 1 < n_live; p++)
		if (!wait_count(&spins[live[p]], spins[live[p]] + 1, IPI_WAIT_US))
			point_failed = true;
	point_done = true;
}

static void check_point(unsigned long call)
{
	point_call = call;
	point_done = point_failed = barrier_failed = false;
	if (!smp_run(spin_at_point) || barrier_failed)
		fail("smp-point", "a CPU did not finish (info: lines above)");
	else if (point_failed)
		fail("smp-point", "a CPU did not spin on both sides of the call");
	printf("info: smp-point: %s returned %ld\n",
	       call == HC_CLONE_POINT ? "HC_CLONE_POINT" : "HC_SNAPSHOT_POINT", point_ret);
}

/* ------------------------------------------------------------------ */
/* IPIs: smp-ipi-ring, smp-ipi-all, smp-nmi */

static volatile unsigned int ipi_timeouts;

/* Sends round r of fixed IPIs from cpu to each of the n CPUs at to[]. */
static void send_round(unsigned int cpu, const unsigned int *to, unsigned int n, unsigned int r)
{
	for (unsigned int i = 0; i < n; i++)
		apic_icr(smp_cpus[to[i]].apic_id, ICR_FIXED | ICR_ASSERT | (VEC_IPI + cpu));
	for (unsigned int i = 0; i < n; i++)
		if (!wait_count(&received[to[i]][cpu], r, IPI_WAIT_US)) {
			__atomic_fetch_add(&ipi_timeouts, 1, __ATOMIC_RELAXED);
			return;
		}
}

/* The IPIs of one check, interrupts on from the first barrier to the last. */
static void send_ipis(unsigned int cpu, const unsigned int *to, unsigned int n)
{
	sti();
	if (!smp_barrier())
		barrier_failed = true;
	for (unsigned int r = 1; r <= rounds && !ipi_timeouts; r++)
		send_round(cpu, to, n, r);
	if (!smp_barrier())
		barrier_failed = true;
	cli();
}

static void ring(unsigned int cpu)
{
	unsigned int next = live[(position(cpu) + 1) % n_live];

	send_ipis(cpu, &next, 1);
}

static void all_to_all(unsigned int cpu)
{
	unsigned int to[SMP_CPU_MAX], n = 0;

	for (unsigned int p = 0; p < n_live; p++)
		if (live[p] != cpu)
			to[n++] = live[p];
	send_ipis(cpu, to, n);
}

static void check_ipis(const char *name, void (*fn)(unsigned int cpu), bool ring_only)
{
	uint64_t t0 = rdtsc();

	if (n_live < 2) {
		skip(name, "one CPU");
		return;
	}
	for (unsigned int i = 0; i < SMP_CPU_MAX; i++)
		for (unsigned int j = 0; j < SMP_CPU_MAX; j++)
			received[i][j] = 0;
	ipi_timeouts = 0;
	barrier_failed = false;
	if (!smp_run(fn) || barrier_failed) {
		fail(name, "a CPU did not finish (info: lines above)");
		return;
	}
	printf("info: %s: %lu rounds in %ld us\n", name, rounds,
	       tsc_to_us((int64_t)(rdtsc() - t0)));
	for (unsigned int p = 0; p < n_live; p++)
		for (unsigned int q = 0; q < n_live; q++) {
			unsigned int want = rounds;
			unsigned int got = received[live[q]][live[p]];

			if (p == q || (ring_only && q != (p + 1) % n_live))
				want = 0;
			if (got != want) {
				fail(name, "cpu %u counted %u IPIs from cpu %u, %u sent", live[q], got,
				     live[p], want);
				return;
			}
		}
	pass(name);
}

static void check_nmi(void)
{
	for (unsigned int i = 0; i < SMP_CPU_MAX; i++)
		nmis[i] = 0;
	if (n_live < 2) {
		skip("smp-nmi", "one CPU");
		return;
	}
	for (unsigned int p = 1; p < n_live; p++)
		for (unsigned int r = 1; r <= rounds; r++) {
			apic_icr(smp_cpus[live[p]].apic_id, ICR_NMI | ICR_ASSERT);
			if (!wait_count(&nmis[live[p]], r, IPI_WAIT_US)) {
				fail("smp-nmi", "cpu %u counted %u of %u NMIs", live[p], nmis[live[p]],
				     r);
				return;
			}
		}
	if (nmis[0])
		fail("smp-nmi", "the BSP took %u NMIs, sent none", nmis[0]);
	else
		pass("smp-nmi");
}

/* ------------------------------------------------------------------ */

int main(const struct mb1_info *mbi)
{
	unsigned long want = arg_ulong(mbi, "cpus", 0);
	uint32_t a, b, c, d;

	if (!under_sprig())
		serial_setup();	/* GRUB under Bochs leaves COM1 at 5 data bits */
	rounds = arg_ulong(mbi, "rounds", 100);
	slice_bytes = arg_ulong(mbi, "mib", 1) * MIB;
	/* The 8259s masked: nothing but the local APICs interrupt us. */
	outb(0x21, 0xff);
	outb(0xa1, 0xff);
	idt_install(smp_dispatch);
	tsc_calibrate();
	cpuid(1, 0, &a, &b, &c, &d);
	if (arg_ulong(mbi, "x2apic", 0)) {
		if (c & CPUID_X2APIC)
			wrmsr(MSR_APIC_BASE, rdmsr(MSR_APIC_BASE) | APIC_BASE_EXTD);
		else
			printf("info: no x2APIC (CPUID.1:ECX[21]): xAPIC mode\n");
	}

	smp_start(mbi, smp_serve);
	for (unsigned int i = 0; i < smp_cpu_count; i++)
		if (smp_cpus[i].state == SMP_ONLINE)
			live[n_live++] = i;
	printf("smp: %u CPUs online%s\n", n_live, x2apic_mode ? " (x2APIC mode)" : "");

	check_start(want);
	check_apic_ids();
	check_slices(mbi);
	check_atomic();
	if (arg_ulong(mbi, "snapshot", 0))
		check_point(HC_SNAPSHOT_POINT);
	if (arg_ulong(mbi, "clone", 0))
		check_point(HC_CLONE_POINT);
	check_ipis("smp-ipi-ring", ring, true);
	check_ipis("smp-ipi-all", all_to_all, false);
	check_nmi();
	if (unexpected_irqs)
		fail("unexpected-interrupts", "%u, the last vector 0x%x", unexpected_irqs,
		     last_unexpected);
	return report_summary("smp");
}
