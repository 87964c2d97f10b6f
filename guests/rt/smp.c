/* Every CPU of the machine (smp.h). */
#include "guests/rt/smp.h"
#include "arch/x86/msr.h"
#include "guests/rt/acpi.h"
#include "guests/rt/cpu.h"
#include "guests/rt/idt.h"
#include "guests/rt/lapic.h"
#include "guests/rt/tsc.h"

#define BOOT_PAGE_MIN 0x1000	/* above the real-mode IVT and the BIOS data area */
#define BOOT_PAGE_END 0xa0000	/* SIPI vectors 0xa0-0xbf are reserved (MP spec B.4.2) */
#define AP_UP_US 1000000	/* how long an AP may take to report */
#define BARRIER_US 10000000
#define CPUID_APIC (1u << 9)
#define MB1_MMAP_RAM 1

/* Read by ap_boot.S. */
uint32_t ap_boot_slot, ap_boot_cr3;
extern const char ap_trampoline[], ap_trampoline_end[], ap_gdtr[];
void smp_ap_entry(unsigned int cpu);

unsigned int smp_cpu_count = 1;
struct smp_cpu smp_cpus[SMP_CPU_MAX];

/* What GS points to on each CPU: its index. */
static unsigned int percpu_index[SMP_CPU_MAX];
static void (*ap_main_fn)(unsigned int cpu);
static unsigned int online = 1;
static bool started;

unsigned int smp_index(void)
{
	unsigned int i;

	if (!started)
		return 0;
	asm volatile("movl %%gs:0, %0" : "=r"(i));
	return i;
}

int smp_index_of(uint32_t apic_id)
{
	for (unsigned int i = 0; i < smp_cpu_count; i++)
		if (smp_cpus[i].apic_id == apic_id)
			return (int)i;
	return -1;
}

static void set_gs(unsigned int cpu)
{
	percpu_index[cpu] = cpu;
	wrmsr(MSR_GS_BASE, (uint64_t)&percpu_index[cpu]);
}

/* Software-enables this CPU's APIC (spurious vector 0xff), TPR 0, in the
 * BSP's mode. */
static void apic_enable(void)
{
	if (x2apic_mode && !(rdmsr(MSR_APIC_BASE) & APIC_BASE_EXTD))
		wrmsr(MSR_APIC_BASE, rdmsr(MSR_APIC_BASE) | APIC_BASE_EXTD);
	apic_write(APIC_SVR, SVR_ENABLE | SPURIOUS_VEC);
	apic_write(APIC_TPR, 0);
}

static void read_ids(struct smp_cpu *c)
{
	uint32_t a, b, cx, d;

	c->apic_id_reg = apic_id();
	cpuid(1, 0, &a, &b, &cx, &d);
	c->cpuid_apic_id = b >> 24;
	c->cpuid_x2apic_id = ~0u;
	cpuid(0, 0, &a, &b, &cx, &d);
	if (a >= 0xb) {
		cpuid(0xb, 0, &a, &b, &cx, &d);
		if (b)	/* leaf 0xB is valid when EBX is not 0 at level 0 */
			c->cpuid_x2apic_id = d;
	}
}

void smp_ap_entry(unsigned int cpu)
{
	idt_load();
	set_gs(cpu);
	apic_enable();
	read_ids(&smp_cpus[cpu]);
	__atomic_store_n(&smp_cpus[cpu].state, SMP_ONLINE, __ATOMIC_RELEASE);
	ap_main_fn(cpu);
}

/* The enabled CPUs of the MADT into smp_cpus, this one first. */
static void find_cpus(uint64_t madt, uint32_t self)
{
	unsigned int n = 1;

	smp_cpus[0].apic_id = self;
	for (uint64_t e = madt_next(madt, 0); e; e = madt_next(madt, e)) {
		uint8_t type = *(const uint8_t *)e;
		uint32_t id, uid, flags;

		if (type == MADT_LAPIC) {
			uid = *(const uint8_t *)(e + 2);
			id = *(const uint8_t *)(e + 3);
			flags = rd32(e + 4);
		} else if (type == MADT_X2APIC) {
			id = rd32(e + 4);
			flags = rd32(e + 8);
			uid = rd32(e + 12);
		} else {
			continue;
		}
		if (!(flags & MADT_LAPIC_ENABLED))
			continue;
		if (id == self) {
			smp_cpus[0].acpi_uid = uid;
			smp_cpus[0].madt = true;
			continue;
		}
		if (smp_index_of(id) >= 0)
			continue;	/* listed twice (xAPIC and x2APIC entries) */
		if (n == SMP_CPU_MAX) {
			printf("info: smp: more than %u CPUs; APIC ID %u and up left out\n",
			       SMP_CPU_MAX, id);
			break;
		}
		smp_cpus[n].apic_id = id;
		smp_cpus[n].acpi_uid = uid;
		smp_cpus[n].madt = true;
		smp_cpu_count = ++n;
	}
}

/* A page below 1 MiB that the memory map says is RAM, for the trampoline;
 * 0 if there is none. */
static uint64_t boot_page(const struct mb1_info *mbi)
{
	for (unsigned int i = 0; i < mbi->mmap_count; i++) {
		const struct mb1_mmap_entry *m = &mbi->mmap[i];
		uint64_t start = (m->addr + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1);
		uint64_t end = m->addr + m->len;

		if (start < BOOT_PAGE_MIN)
			start = BOOT_PAGE_MIN;
		if (end > BOOT_PAGE_END)
			end = BOOT_PAGE_END;
		if (m->type == MB1_MMAP_RAM && start + PAGE_SIZE <= end)
			return start;
	}
	return 0;
}

/* INIT, 10 ms, SIPI, 200 us, SIPI, 200 us (SDM vol. 3A 9.4.4.1), then up to
 * AP_UP_US for the AP to report. */
static bool start_ap(unsigned int cpu, uint64_t page)
{
	struct smp_cpu *c = &smp_cpus[cpu];
	uint64_t end;

	__atomic_store_n(&ap_boot_slot, cpu, __ATOMIC_RELEASE);
	if (!x2apic_mode)
		apic_write(APIC_ESR, 0);
	apic_icr(c->apic_id, ICR_INIT | ICR_ASSERT);
	delay_us(10000);
	for (int i = 0; i < 2; i++) {
		apic_icr(c->apic_id, ICR_STARTUP | ICR_ASSERT | (uint32_t)(page >> 12));
		delay_us(200);
	}
	end = rdtsc() + us_to_tsc(AP_UP_US);
	while (__atomic_load_n(&c->state, __ATOMIC_ACQUIRE) != SMP_ONLINE) {
		if (rdtsc() > end) {
			/* Taken back, unless the AP has just taken it: then it
			 * gets as long again. */
			if (__atomic_exchange_n(&ap_boot_slot, 0, __ATOMIC_ACQ_REL) == cpu ||
			    !wait_count(&c->state, SMP_ONLINE, AP_UP_US))
				return false;
			break;
		}
		cpu_relax();
	}
	return true;
}

unsigned int smp_start(const struct mb1_info *mbi, void (*ap_main)(unsigned int cpu))
{
	uint32_t a, b, c, d;
	uint64_t madt, page;

	if (started)
		return online;
	started = true;
	set_gs(0);
	smp_cpus[0].state = SMP_ONLINE;
	cpuid(1, 0, &a, &b, &c, &d);
	if (!(d & CPUID_APIC)) {
		printf("info: smp: no local APIC (CPUID.1:EDX[9]): one CPU\n");
		read_ids(&smp_cpus[0]);
		return online;
	}
	x2apic_mode = rdmsr(MSR_APIC_BASE) & APIC_BASE_EXTD;
	apic_enable();
	read_ids(&smp_cpus[0]);
	madt = acpi_find_table("APIC");
	if (!madt) {
		printf("info: smp: no MADT: one CPU\n");
		smp_cpus[0].apic_id = smp_cpus[0].apic_id_reg;
		return online;
	}
	find_cpus(madt, smp_cpus[0].apic_id_reg);
	if (smp_cpu_count == 1)
		return online;
	page = boot_page(mbi);
	if (!page) {
		printf("info: smp: no RAM page below 1 MiB for the trampoline: one CPU\n");
		for (unsigned int i = 1; i < smp_cpu_count; i++)
			smp_cpus[i].state = SMP_FAILED;
		return online;
	}
	if (!tsc_khz)
		tsc_calibrate();
	for (const char *s = ap_trampoline; s < ap_trampoline_end; s++)
		((volatile char *)page)[s - ap_trampoline] = *s;
	asm volatile("sgdt %0" : "=m"(*(struct table_pointer *)(page + (ap_gdtr - ap_trampoline))));
	ap_boot_cr3 = (uint32_t)read_cr3();
	ap_main_fn = ap_main;
	for (unsigned int i = 1; i < smp_cpu_count; i++) {
		if (start_ap(i, page)) {
			online++;
			continue;
		}
		smp_cpus[i].state = SMP_FAILED;
		apic_icr(smp_cpus[i].apic_id, ICR_INIT | ICR_ASSERT);
		printf("info: smp: cpu %u (APIC ID %u) did not come up\n", i, smp_cpus[i].apic_id);
	}
	return online;
}

bool smp_barrier(void)
{
	static unsigned int arrived, generation;
	unsigned int g = __atomic_load_n(&generation, __ATOMIC_ACQUIRE);
	bool all;

	if (__atomic_add_fetch(&arrived, 1, __ATOMIC_ACQ_REL) == online) {
		__atomic_store_n(&arrived, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&generation, g + 1, __ATOMIC_RELEASE);
		return true;
	}
	all = wait_count(&generation, g + 1, BARRIER_US);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return all;
}

static void (*run_fn)(unsigned int cpu);
static unsigned int run_gen;
static unsigned int run_done[SMP_CPU_MAX];

void smp_serve(unsigned int cpu)
{
	unsigned int seen = 0;

	for (;;) {
		while (__atomic_load_n(&run_gen, __ATOMIC_ACQUIRE) == seen)
			cpu_relax();
		seen = run_gen;
		run_fn(cpu);
		__atomic_store_n(&run_done[cpu], seen, __ATOMIC_RELEASE);
	}
}

bool smp_run(void (*fn)(unsigned int cpu))
{
	uint64_t t0 = rdtsc(), end;
	unsigned int gen = run_gen + 1;
	bool all = true;

	run_fn = fn;
	__atomic_store_n(&run_gen, gen, __ATOMIC_RELEASE);
	fn(0);
	end = rdtsc() + (rdtsc() - t0) * 10 + us_to_tsc(BARRIER_US);
	for (unsigned int i = 1; i < smp_cpu_count; i++) {
		if (smp_cpus[i].state != SMP_ONLINE)
			continue;
		while (__atomic_load_n(&run_done[i], __ATOMIC_ACQUIRE) != gen && rdtsc() < end)
			cpu_relax();
		if (run_done[i] != gen) {
			printf("info: smp: cpu %u did not finish its run\n", i);
			all = false;
		}
	}
	return all;
}
