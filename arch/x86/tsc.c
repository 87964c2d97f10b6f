/* TSC calibration. CPUID leaf 0x15 gives the exact ratio to the core crystal
 * when it enumerates all three values; leaf 0x16 is only a nominal figure (Bochs
 * reports 3.5 GHz there while its TSC runs at its ips setting), so otherwise the
 * TSC is measured against the PIT, or the ACPI PM timer where no PIT counts. */
#include "arch/x86/tsc.h"
#include "lib/sort.h"
#include "arch/x86/acpi.h"
#include "arch/x86/cpu.h"
#include "arch/x86/lock.h"
#include "lib/print.h"

#define PIT_HZ 1193182u
#define PIT_CH2_DATA 0x42
#define PIT_MODE 0x43
#define PIT_GATE_PORT 0x61          /* NMI status and control (port B) */
#define PIT_GATE_CH2 0x01           /* channel 2 gate */
#define PIT_SPEAKER_DATA 0x02       /* speaker enable: kept off */
#define PIT_OUT_CH2 0x20            /* channel 2 output, read-only */
/* Channel 2, low byte then high byte, mode 0 (interrupt on terminal count), binary. */
#define PIT_CMD_CH2_MODE0 0xb0

#define PM_TIMER_HZ 3579545u

#define CALIBRATION_MS 10
#define CALIBRATION_RUNS 5
/* A run whose loop polled fewer times met an output that never went low. */
#define CALIBRATION_MIN_POLLS 100
/* Far more than any CPU needs for one window (10 ms at 10 GHz = 1e8 cycles):
 * if the reference has not moved by then, it does not count. */
#define CALIBRATION_TIMEOUT_CYCLES 2000000000ull

/* Before calibration, delays assume a faster TSC than any CPU has: waiting
 * too long is safe, too short is not. */
#define TSC_KHZ_UNCALIBRATED 6000000ull

static uint64_t khz;
static const char *source = "uncalibrated";
static bool invariant;

uint64_t tsc_khz(void)
{
	return khz;
}

const char *tsc_source(void)
{
	return source;
}

bool tsc_invariant(void)
{
	return invariant;
}

/* Split the product so that hours of cycles at any clock rate stay in range. */
static uint64_t mul_div(uint64_t a, uint64_t mul, uint64_t div)
{
	return (a / div) * mul + (a % div) * mul / div;
}

uint64_t tsc_to_ns(uint64_t cycles)
{
	return khz ? mul_div(cycles, 1000000, khz) : 0;
}

uint64_t tsc_from_us(uint64_t us)
{
	return mul_div(us, khz ? khz : TSC_KHZ_UNCALIBRATED, 1000);
}

void tsc_delay_us(uint64_t us)
{
	uint64_t start = rdtsc();
	uint64_t cycles = tsc_from_us(us);

	while (rdtsc() - start < cycles)
		cpu_relax();
}

/* One PIT window; returns the TSC rate in kHz, 0 if the PIT did not count. */
static uint64_t pit_measure_once(void)
{
	const uint32_t latch = PIT_HZ * CALIBRATION_MS / 1000;
	uint64_t start, now;
	unsigned polls = 0;

	/* Gate high starts channel 2 counting once the count is loaded; the
	 * speaker stays off. Mode 0's output is low until terminal count. */
	outb(PIT_GATE_PORT, (inb(PIT_GATE_PORT) & ~PIT_SPEAKER_DATA) | PIT_GATE_CH2);
	outb(PIT_MODE, PIT_CMD_CH2_MODE0);
	outb(PIT_CH2_DATA, latch & 0xff);
	outb(PIT_CH2_DATA, latch >> 8);
	start = rdtsc();
	do {
		now = rdtsc();
		if (now - start > CALIBRATION_TIMEOUT_CYCLES)
			return 0;
		polls++;
	} while (!(inb(PIT_GATE_PORT) & PIT_OUT_CH2));
	if (polls < CALIBRATION_MIN_POLLS)
		return 0;
	return mul_div(now - start, PIT_HZ, (uint64_t)latch * 1000);
}

/* The median of several windows: an SMI or a preempted emulator thread at
 * the end of one window spoils only that window. */
static uint64_t pit_calibrate(void)
{
	uint64_t runs[CALIBRATION_RUNS];
	uint8_t saved_gate = inb(PIT_GATE_PORT);
	unsigned n = 0;

	for (unsigned i = 0; i < CALIBRATION_RUNS; i++) {
		uint64_t r = pit_measure_once();
		if (!r)
			break;
		runs[n++] = r;
	}
	outb(PIT_GATE_PORT, saved_gate & (PIT_GATE_CH2 | PIT_SPEAKER_DATA));
	if (n < CALIBRATION_RUNS)
		return 0;
	sort_u64(runs, n);
	return runs[n / 2];
}

static uint32_t pm_timer_read(void)
{
	uint32_t v = inl(acpi.pm_tmr_port);
	return acpi.pm_tmr_32bit ? v : v & 0xffffff;
}

/* One window against the ACPI PM timer (24 or 32 bits, free-running). */
static uint64_t pm_timer_measure_once(void)
{
	const uint32_t ticks = PM_TIMER_HZ / 1000 * CALIBRATION_MS;
	const uint32_t mask = acpi.pm_tmr_32bit ? 0xffffffffu : 0xffffffu;
	uint32_t t0 = pm_timer_read(), t;
	uint64_t start = rdtsc(), now;

	do {
		now = rdtsc();
		if (now - start > CALIBRATION_TIMEOUT_CYCLES)
			return 0;
		t = pm_timer_read();
	} while (((t - t0) & mask) < ticks);
	return mul_div(now - start, PM_TIMER_HZ, (uint64_t)((t - t0) & mask) * 1000);
}

static uint64_t pm_timer_calibrate(void)
{
	uint64_t runs[CALIBRATION_RUNS];

	if (!acpi.pm_tmr_port)
		return 0;
	for (unsigned i = 0; i < CALIBRATION_RUNS; i++) {
		runs[i] = pm_timer_measure_once();
		if (!runs[i])
			return 0;
	}
	sort_u64(runs, CALIBRATION_RUNS);
	return runs[CALIBRATION_RUNS / 2];
}

static uint64_t cpuid_15_khz(void)
{
	if (cpuid(0, 0).eax < 0x15)
		return 0;
	struct cpuid_regs r = cpuid(0x15, 0);
	if (!r.eax || !r.ebx || !r.ecx)
		return 0;
	/* Crystal Hz times numerator: both below 2^32, so the product fits. */
	return (uint64_t)r.ecx * r.ebx / r.eax / 1000;
}

static uint64_t cpuid_16_khz(void)
{
	if (cpuid(0, 0).eax < 0x16)
		return 0;
	return (uint64_t)(cpuid(0x16, 0).eax & 0xffff) * 1000;
}

void tsc_init(void)
{
	uint64_t flags = read_rflags();
	bool measured = true;

	if (cpuid(0x80000000, 0).eax >= 0x80000007)
		invariant = cpuid(0x80000007, 0).edx & (1u << 8);

	cli();
	if ((khz = cpuid_15_khz()))
		source = "cpuid-0x15";
	else if ((khz = pit_calibrate()))
		source = "pit";
	else if ((khz = pm_timer_calibrate()))
		source = "acpi-pm-timer";
	else if ((khz = cpuid_16_khz())) {
		source = "cpuid-0x16-nominal";
		measured = false;
	} else {
		khz = 1000000;
		source = "assumed";
		measured = false;
	}
	if (flags & (1u << 9))
		sti();

	kprintf("tsc: %llu.%03llu MHz from %s, invariant %s\n",
		(unsigned long long)(khz / 1000), (unsigned long long)(khz % 1000),
		source, invariant ? "yes" : "no");
	if (!measured)
		kprintf("tsc: warning: neither PIT nor ACPI PM timer counts; time is approximate\n");
}
