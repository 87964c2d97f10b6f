/* Every CPU (arch/x86/smp.h). The MADT's enabled processors get ids in its
 * order after the bootstrap CPU; each AP is started in turn with the SDM's
 * INIT-SIPI-SIPI sequence (vol. 3A, 9.4.4.1) into the trampoline
 * (arch/x86/trampoline.h) with a per-CPU area and a stack of its own (from the
 * memory smp_init's caller gives), sets up its descriptor tables and local
 * APIC, runs the online hook its client registered (virtualization), then
 * idles with interrupts on until smp_call hands it a function. A CPU that
 * does not report back in time, or whose hook fails, is sent INIT and left
 * there. */
#include "arch/x86/smp.h"
#include "arch/x86/acpi.h"
#include "arch/x86/apic.h"
#include "arch/x86/cpu.h"
#include "arch/x86/gdt.h"
#include "arch/x86/percpu.h"
#include "arch/x86/trampoline.h"
#include "arch/x86/trap.h"
#include "arch/x86/tsc.h"
#include "lib/print.h"

#define PAGE_SIZE 4096ull /* the unit of struct smp_memory's orders */
#define AP_STACK_ORDER 3  /* 32 KiB, as the BSP's boot stack */
/* SDM vol. 3A, 9.4.4.1: 10 ms after INIT, 200 us after each STARTUP. */
#define INIT_WAIT_US 10000
#define SIPI_WAIT_US 200
/* From the second STARTUP to ap_main (QEMU takes about 20 ms), and from there
 * to online (the AP enables its virtualization). */
#define START_TIMEOUT_US 1000000
#define SETUP_TIMEOUT_US 5000000

static unsigned cpu_count = 1;
static uint32_t apic_ids[CPU_MAX];
static uint32_t states[CPU_MAX]; /* enum cpu_state; an AP writes its own */
static uint32_t ap_started;      /* the AP being started reached ap_main */
static smp_online_fn online_hook;

void smp_on_online(smp_online_fn fn)
{
	online_hook = fn;
}

unsigned smp_cpu_count(void)
{
	return cpu_count;
}

enum cpu_state smp_cpu_state(unsigned id)
{
	return id < cpu_count ? __atomic_load_n(&states[id], __ATOMIC_ACQUIRE) : CPU_OFFLINE;
}

unsigned smp_online_count(void)
{
	unsigned n = 0;

	for (unsigned id = 0; id < cpu_count; id++)
		n += smp_cpu_state(id) == CPU_ONLINE;
	return n;
}

uint32_t smp_apic_id(unsigned id)
{
	return id < cpu_count ? apic_ids[id] : 0;
}

unsigned this_cpu_id(void)
{
	return this_cpu()->id;
}

static void kick_handler(struct trap_frame *tf)
{
	(void)tf;
	__atomic_fetch_add(&this_cpu()->kicks, 1, __ATOMIC_RELAXED);
	apic_eoi();
}

/* Interrupts are off between the look at call_state and the HLT (STI's
 * shadow covers the HLT), so smp_call's kick cannot slip in between. */
static void __attribute__((noreturn)) idle_loop(struct percpu *pc)
{
	for (;;) {
		cli();
		if (__atomic_load_n(&pc->call_state, __ATOMIC_ACQUIRE) != SMP_CALL_READY) {
			sti_hlt_cli();
			continue;
		}
		sti();
		pc->call_fn(pc->call_arg);
		cli();
		__atomic_store_n(&pc->call_state, SMP_CALL_IDLE, __ATOMIC_RELEASE);
	}
}

void ap_main(void *arg)
{
	struct percpu *pc = arg;
	char err[96];

	percpu_load(pc);
	gdt_init();
	idt_init();
	__atomic_store_n(&ap_started, 1, __ATOMIC_RELEASE);
	apic_init_ap();
	if (online_hook && !online_hook(err, sizeof(err))) {
		kprintf("smp: cpu %u apic %u: %s\n", pc->id, pc->apic_id, err);
		__atomic_store_n(&states[pc->id], CPU_FAILED, __ATOMIC_RELEASE);
		for (;;) {
			cli();
			hlt();
		}
	}
	__atomic_store_n(&states[pc->id], CPU_ONLINE, __ATOMIC_RELEASE);
	idle_loop(pc);
}

static void send_init(unsigned id)
{
	apic_send_ipi(apic_ids[id], APIC_ICR_INIT | APIC_ICR_LEVEL_ASSERT);
}

/* A CPU that may have run some of the trampoline keeps what it was given:
 * whether it stopped touching it cannot be known. */
static void start_failed(unsigned id, const char *why)
{
	kprintf("smp: cpu %u apic %u %s; left in INIT\n", id, apic_ids[id], why);
	send_init(id);
	__atomic_store_n(&states[id], CPU_FAILED, __ATOMIC_RELEASE);
}

/* Spin while *v reads old, at most us microseconds; the value last read. */
static uint32_t wait_change(const uint32_t *v, uint32_t old, uint64_t us)
{
	uint64_t end = rdtsc() + tsc_from_us(us);
	uint32_t now;

	while ((now = __atomic_load_n(v, __ATOMIC_ACQUIRE)) == old && rdtsc() < end)
		cpu_relax();
	return now;
}

static unsigned percpu_order(void)
{
	unsigned order = 0;

	while ((PAGE_SIZE << order) < sizeof(struct percpu))
		order++;
	return order;
}

static void start_ap(unsigned id, const struct smp_memory *mem)
{
	uint32_t apic = apic_ids[id];
	paddr_t area, stack;
	int vector = -1;

	if (!apic_can_address(apic)) {
		start_failed(id, "cannot be addressed in xAPIC mode");
		return;
	}
	if (!trampoline_page()) {
		start_failed(id, "has no trampoline: no usable page below 640 KiB");
		return;
	}
	area = mem->alloc(percpu_order());
	stack = mem->alloc(AP_STACK_ORDER);
	if (area && stack)
		vector = trampoline_prepare(read_cr3(), stack + (PAGE_SIZE << AP_STACK_ORDER),
					    pa_to_va(area));
	if (!area || !stack || vector < 0) {
		if (area)
			mem->free(area, percpu_order());
		if (stack)
			mem->free(stack, AP_STACK_ORDER);
		start_failed(id, !area || !stack ? "has no memory for its stack and per-CPU area"
						 : "has no trampoline: its page did not keep the copy");
		return;
	}
	percpu_setup(pa_to_va(area), id, apic);
	__atomic_store_n(&ap_started, 0, __ATOMIC_RELAXED);
	send_init(id);
	tsc_delay_us(INIT_WAIT_US);
	for (int i = 0; i < 2; i++) {
		apic_send_ipi(apic, APIC_ICR_STARTUP | APIC_ICR_LEVEL_ASSERT | (uint32_t)vector);
		tsc_delay_us(SIPI_WAIT_US);
	}
	if (!wait_change(&ap_started, 0, START_TIMEOUT_US)) {
		start_failed(id, "did not start within 1 s");
		return;
	}
	switch (wait_change(&states[id], CPU_OFFLINE, SETUP_TIMEOUT_US)) {
	case CPU_ONLINE:
		return;
	case CPU_FAILED:
		start_failed(id, "could not enable virtualization");
		return;
	default:
		start_failed(id, "did not finish its set-up within 5 s");
		return;
	}
}

void smp_init(unsigned maxcpus, const struct smp_memory *mem)
{
	uint32_t bsp = apic_id();
	unsigned beyond = 0, offline = 0, failed = 0;

	apic_ids[0] = bsp;
	states[0] = CPU_ONLINE;
	irq_register(VEC_KICK, kick_handler);
	for (unsigned i = 0; acpi.has_madt && i < acpi.cpu_ids_stored; i++) {
		if (acpi.cpu_online_capable_only[i] || acpi.cpu_apic_ids[i] == bsp)
			continue;
		if (cpu_count == CPU_MAX)
			beyond++;
		else
			apic_ids[cpu_count++] = acpi.cpu_apic_ids[i];
	}
	for (unsigned id = 1; id < cpu_count; id++) {
		if (maxcpus && id >= maxcpus)
			send_init(id);
		else
			start_ap(id, mem);
		offline += smp_cpu_state(id) == CPU_OFFLINE;
		failed += smp_cpu_state(id) == CPU_FAILED;
	}
	kprintf("smp: %u CPUs online (%s)", smp_online_count(), apic_mode());
	if (offline)
		kprintf(", %u offline (maxcpus=%u)", offline, maxcpus);
	if (failed)
		kprintf(", %u failed", failed);
	if (beyond)
		kprintf(", %u more not used (sprig takes %u)", beyond, CPU_MAX);
	kprintf("\n");
}

/* The bootstrap CPU runs the console, never an idle loop: it takes no calls. */
bool smp_call(unsigned id, void (*fn)(void *arg), void *arg)
{
	uint32_t idle = SMP_CALL_IDLE;
	struct percpu *pc;

	if (id == 0 || id == this_cpu_id() || smp_cpu_state(id) != CPU_ONLINE)
		return false;
	pc = percpu_of(id);
	if (!__atomic_compare_exchange_n(&pc->call_state, &idle, SMP_CALL_CLAIMED, false,
					 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return false;
	pc->call_fn = fn;
	pc->call_arg = arg;
	__atomic_store_n(&pc->call_state, SMP_CALL_READY, __ATOMIC_RELEASE);
	smp_kick(id);
	return true;
}

bool smp_busy(unsigned id)
{
	struct percpu *pc = id < cpu_count ? percpu_of(id) : NULL;

	return pc && __atomic_load_n(&pc->call_state, __ATOMIC_ACQUIRE) != SMP_CALL_IDLE;
}

void smp_kick(unsigned id)
{
	if (smp_cpu_state(id) == CPU_ONLINE)
		apic_send_ipi(apic_ids[id], APIC_ICR_FIXED | APIC_ICR_LEVEL_ASSERT | VEC_KICK);
}
