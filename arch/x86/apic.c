/* Local APIC. Register offsets are the xAPIC MMIO ones; in x2APIC mode the same
 * register is MSR 0x800 + offset / 16 (SDM vol. 3A, 11.12.1.2). */
#include "arch/x86/apic.h"
#include "arch/x86/cpu.h"
#include "arch/x86/direct_map.h"
#include "arch/x86/ioapic.h"
#include "arch/x86/lock.h"
#include "arch/x86/percpu.h"
#include "arch/x86/regs.h"
#include "arch/x86/trap.h"
#include "arch/x86/tsc.h"
#include "arch/x86/watchdog.h"
#include "lib/print.h"
#include "lib/sort.h"

#define APIC_ID 0x020
#define APIC_VERSION 0x030
#define APIC_TPR 0x080
#define APIC_EOI 0x0b0
#define APIC_SVR 0x0f0
#define APIC_ESR 0x280
#define APIC_LVT_CMCI 0x2f0
#define APIC_ICR_LOW 0x300
#define APIC_ICR_HIGH 0x310
#define APIC_LVT_TIMER 0x320
#define APIC_LVT_THERMAL 0x330
#define APIC_LVT_PERF 0x340
#define APIC_LVT_LINT0 0x350
#define APIC_LVT_LINT1 0x360
#define APIC_LVT_ERROR 0x370
#define APIC_TIMER_INIT 0x380
#define APIC_TIMER_CURRENT 0x390
#define APIC_TIMER_DIVIDE 0x3e0

#define APIC_SVR_ENABLE (1u << 8)
#define APIC_LVT_MASKED (1u << 16)
#define APIC_LVT_NMI (4u << 8)
#define APIC_LVT_TIMER_PERIODIC (1u << 17)
#define APIC_ICR_PENDING (1u << 12)
#define APIC_TIMER_DIVIDE_16 0x3
#define APIC_TIMER_DIVISOR 16

#define APIC_BASE_ADDR_MASK 0x000ffffffffff000ull

#define PIC1_DATA 0x21
#define PIC2_DATA 0xa1

#define CALIBRATION_US 10000
#define CALIBRATION_RUNS 3

static bool x2apic;
static volatile uint32_t *mmio;
static uint64_t timer_hz;    /* the same bus clock on every CPU: measured once */
static unsigned bsp_tick_hz; /* what the BSP's tick was started at; APs tick alike */

static uint32_t apic_read(uint32_t reg)
{
	if (x2apic)
		return (uint32_t)rdmsr(MSR_X2APIC_BASE + reg / 16);
	return mmio[reg / 4];
}

static void apic_write(uint32_t reg, uint32_t v)
{
	if (x2apic)
		wrmsr(MSR_X2APIC_BASE + reg / 16, v);
	else
		mmio[reg / 4] = v;
}

void apic_eoi(void)
{
	apic_write(APIC_EOI, 0);
}

uint32_t apic_id(void)
{
	uint32_t id = apic_read(APIC_ID);
	return x2apic ? id : id >> 24;
}

const char *apic_mode(void)
{
	return x2apic ? "x2apic" : "xapic";
}

uint64_t apic_ticks(void)
{
	return __atomic_load_n(&percpu_of(0)->timer.ticks, __ATOMIC_RELAXED);
}

uint64_t apic_timer_hz(void)
{
	return timer_hz;
}

bool apic_can_address(uint32_t id)
{
	return x2apic || id < 0xff;
}

void apic_send_ipi(uint32_t dest, uint32_t icr_low)
{
	uint64_t flags;

	if (x2apic) {
		wrmsr(MSR_X2APIC_BASE + APIC_ICR_LOW / 16, ((uint64_t)dest << 32) | icr_low);
		return;
	}
	/* An interrupt handler's IPI between the two writes would send ours
	 * to its destination. */
	flags = read_rflags();
	cli();
	while (apic_read(APIC_ICR_LOW) & APIC_ICR_PENDING)
		cpu_relax();
	apic_write(APIC_ICR_HIGH, dest << 24);
	apic_write(APIC_ICR_LOW, icr_low);
	if (flags & RFLAGS_IF)
		sti();
}

/* IA32_APIC_BASE transitions allowed by SDM 11.12.5: x2APIC may only be left
 * through the disabled state, and entered from xAPIC. */
static void set_mode(void)
{
	uint64_t base = rdmsr(MSR_APIC_BASE);

	if ((base & APIC_BASE_EXTD) && !x2apic) {
		base &= ~(APIC_BASE_EN | APIC_BASE_EXTD);
		wrmsr(MSR_APIC_BASE, base);
	}
	if (!(base & APIC_BASE_EN)) {
		base |= APIC_BASE_EN;
		wrmsr(MSR_APIC_BASE, base);
	}
	if (x2apic && !(base & APIC_BASE_EXTD)) {
		base |= APIC_BASE_EXTD;
		wrmsr(MSR_APIC_BASE, base);
	}
	if (!x2apic)
		mmio = pa_to_va(base & APIC_BASE_ADDR_MASK);
}

static void mask_if_present(uint32_t reg, unsigned max_lvt, unsigned needed)
{
	if (max_lvt >= needed)
		apic_write(reg, apic_read(reg) | APIC_LVT_MASKED);
}

static void spurious_handler(struct trap_frame *tf)
{
	/* A spurious interrupt sets no ISR bit, so it takes no EOI. */
	(void)tf;
}

/* The tick's period in TSC cycles. */
static uint64_t tick_tsc(const struct apic_timer *t)
{
	return (uint64_t)t->tick_count * tsc_khz() * 1000 / timer_hz;
}

/* The count is cleared before the mode changes: a periodic LVT with a one-shot's
 * small count left in it would, for the moment between the two writes, be a
 * timer of a few ns (QEMU then runs nothing but that timer, for good). */
static void start_periodic(struct apic_timer *t)
{
	apic_write(APIC_TIMER_INIT, 0);
	apic_write(APIC_TIMER_DIVIDE, APIC_TIMER_DIVIDE_16);
	apic_write(APIC_LVT_TIMER, VEC_APIC_TIMER | APIC_LVT_TIMER_PERIODIC);
	apic_write(APIC_TIMER_INIT, t->tick_count);
	t->next_tick = rdtsc() + tick_tsc(t);
}

static void timer_handler(struct trap_frame *tf)
{
	struct apic_timer *t = &this_cpu()->timer;

	(void)tf;
	/* Atomic: other CPUs read the BSP's count (apic_ticks). */
	__atomic_fetch_add(&t->ticks, 1, __ATOMIC_RELAXED);
	if (t->oneshot_due) {
		/* The one-shot fired: the periodic tick goes on from here. */
		t->oneshot_due = 0;
		start_periodic(t);
	} else {
		t->next_tick = rdtsc() + tick_tsc(t);
	}
	apic_eoi();
	/* The console CPU's: the commands the watchdog guards run there. */
	if (this_cpu()->id == 0)
		watchdog_tick();
}

/* This CPU's APIC in the chosen mode, every local interrupt source masked but
 * LINT1, which carries NMI on the BSP (the MP specification's wiring). */
static void enable_local(bool bsp)
{
	set_mode();
	unsigned max_lvt = (apic_read(APIC_VERSION) >> 16) & 0xff;

	this_cpu()->apic_id = apic_id();
	apic_write(APIC_TPR, 0);
	apic_write(APIC_LVT_TIMER, APIC_LVT_MASKED);
	/* LINT0 carries the 8259's ExtINT, which sprig does not take. */
	apic_write(APIC_LVT_LINT0, APIC_LVT_MASKED);
	apic_write(APIC_LVT_LINT1, APIC_LVT_NMI | (bsp ? 0 : APIC_LVT_MASKED));
	apic_write(APIC_LVT_ERROR, APIC_LVT_MASKED);
	/* Optional LVT entries: writing an absent one #GPs in x2APIC mode. */
	mask_if_present(APIC_LVT_PERF, max_lvt, 4);
	mask_if_present(APIC_LVT_THERMAL, max_lvt, 5);
	mask_if_present(APIC_LVT_CMCI, max_lvt, 6);
	/* Writing ESR latches the errors so far; reading then gives them. */
	apic_write(APIC_ESR, 0);
	(void)apic_read(APIC_ESR);
	apic_write(APIC_SVR, APIC_SVR_ENABLE | VEC_SPURIOUS);
	apic_eoi(); /* in case firmware left an interrupt in service */
}

/* Count APIC timer ticks over a TSC-measured window; the median of a few. */
static uint64_t calibrate_timer(void)
{
	uint64_t runs[CALIBRATION_RUNS];
	uint64_t window = tsc_from_us(CALIBRATION_US);
	uint64_t flags = read_rflags();

	if (!tsc_khz()) {
		kprintf("apic: timer not calibrated: the TSC is not (tsc_init first)\n");
		return 0;
	}
	cli();
	apic_write(APIC_TIMER_DIVIDE, APIC_TIMER_DIVIDE_16);
	apic_write(APIC_LVT_TIMER, APIC_LVT_MASKED);
	for (int i = 0; i < CALIBRATION_RUNS; i++) {
		apic_write(APIC_TIMER_INIT, 0xffffffffu);
		uint64_t t0 = rdtsc(), t1;
		while ((t1 = rdtsc()) - t0 < window)
			cpu_relax();
		uint32_t left = apic_read(APIC_TIMER_CURRENT);
		/* At most 2^32 ticks times 10^9 stays below 2^64. */
		runs[i] = (uint64_t)(0xffffffffu - left) * 1000000000 / tsc_to_ns(t1 - t0);
	}
	apic_write(APIC_TIMER_INIT, 0);
	if (flags & RFLAGS_IF)
		sti();
	sort_u64(runs, CALIBRATION_RUNS);
	return runs[CALIBRATION_RUNS / 2];
}

bool apic_init(bool allow_x2apic)
{
	struct cpuid_regs l1 = cpuid(1, 0);

	if (!(l1.edx & (1u << 9))) {
		kprintf("apic: none\n");
		return false;
	}
	x2apic = allow_x2apic && (l1.ecx & (1u << 21));

	/* Masked 8259s raise nothing; the masked LINT0 would drop it anyway. */
	outb(PIC1_DATA, 0xff);
	outb(PIC2_DATA, 0xff);
	ioapic_mask_all();

	irq_register(VEC_SPURIOUS, spurious_handler);
	irq_register(VEC_APIC_TIMER, timer_handler);
	enable_local(true);
	timer_hz = calibrate_timer();

	unsigned version = apic_read(APIC_VERSION);
	kprintf("apic: %s id %u version 0x%x max-lvt %u timer %llu kHz (bus/%u) "
		"tsc-deadline %s (unused)\n",
		apic_mode(), apic_id(), version & 0xff, (version >> 16) & 0xff,
		(unsigned long long)(timer_hz / 1000), APIC_TIMER_DIVISOR,
		(l1.ecx & (1u << 24)) ? "yes" : "no");
	return true;
}

void apic_init_ap(void)
{
	enable_local(false);
	if (bsp_tick_hz)
		apic_timer_start(bsp_tick_hz);
}

void apic_timer_start(unsigned hz)
{
	struct apic_timer *t = &this_cpu()->timer;
	uint64_t count = hz ? timer_hz / hz : 0;

	if (!timer_hz) {
		kprintf("apic: timer rate unknown, not started\n");
		return;
	}
	if (!count)
		count = 1;
	if (count > 0xffffffffu)
		count = 0xffffffffu;
	if (this_cpu()->id == 0)
		bsp_tick_hz = hz;
	t->tick_count = (uint32_t)count;
	t->oneshot_due = 0;
	start_periodic(t);
}

void apic_timer_stop(void)
{
	struct apic_timer *t = &this_cpu()->timer;

	apic_write(APIC_LVT_TIMER, APIC_LVT_MASKED);
	apic_write(APIC_TIMER_INIT, 0);
	t->tick_count = 0;
	t->oneshot_due = 0;
}

void apic_timer_wake_by(uint64_t tsc)
{
	struct apic_timer *t = &this_cpu()->timer;
	uint64_t now = rdtsc(), count;

	if (!t->tick_count || !tsc_khz() || tsc >= t->next_tick ||
	    (t->oneshot_due && t->oneshot_due <= tsc))
		return;
	/* Round up: the interrupt must not come before tsc. */
	count = tsc > now ? ((tsc - now) * timer_hz + tsc_khz() * 1000 - 1) / (tsc_khz() * 1000) : 1;
	if (!count)
		count = 1;
	t->oneshot_due = tsc;
	apic_write(APIC_LVT_TIMER, VEC_APIC_TIMER); /* one-shot */
	apic_write(APIC_TIMER_INIT, (uint32_t)count);
}
