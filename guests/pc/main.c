/* The pc guest: checks the chipset half of a PC the way a kernel uses it,
 * one line per check, for tests/e2e/e2e_pc.py. Bare under QEMU's pc machine
 * (with -device pc-testdev) it is the reference that sprig's emulated
 * chipset must match: the same kernel prints the same PASS/FAIL/SKIP lines
 * under sprig. Lines:
 *   PASS: NAME            FAIL: NAME (detail)            SKIP: NAME (why)
 *   info: ...             (measurements; never compared)
 * then "pc: N passed, N failed, N skipped" and exit status 0 when nothing
 * failed, 1 otherwise.
 *
 * Checks, in order (the default run, no arguments):
 *   acpi-walk      RSDP in 0xE0000-0xFFFFF, RSDT/XSDT, MADT, FADT, checksums
 *   pit-calibrate  the TSC against PIT channel 2, compared with the PM timer
 *                  (and HC_TSC_KHZ under sprig)
 *   pmtimer-rate   the PM timer (port from the FADT) at 3.579545 MHz, 24 bits
 *   rtc-read       the CMOS clock: a plausible date
 *   ioapic-regs    version register, a redirection entry read back
 *   ioapic-pit     PIT channel 0 at 100 Hz through the I/O APIC (GSI from the
 *                  MADT's override for IRQ 0)
 *   pic-mask       8259 initialisation, IMR read-back, the PIT through the
 *                  PIC and LINT0 in ExtINT mode; masked, nothing arrives
 *   fwcfg          fw_cfg signature, CPU count, RAM size, file directory
 *   pci-scan       mechanism 1: host bridge 00:00.0, absent functions
 *   testdev-regs   pc-testdev scratch ports and the MMIO window
 *   testdev-irq-edge, testdev-irq-level
 *                  ISA IRQ lines raised through port 0x2000+n
 *   testdev-flush  a page dropped through port 0xe4 keeps its contents
 * Argument `snapshot` (under sprig): the default run, stopping at
 *   HC_SNAPSHOT_POINT inside ioapic-pit, the PIT running and routed through
 *   the I/O APIC, so that a VM restored from a snapshot taken there must
 *   have the chipset's state to pass the checks that follow.
 * Arguments (each ends the guest; nothing else runs):
 *   poweroff         ACPI S5 through PM1a_CNT (SLP_TYP from the DSDT's _S5_)
 *   reset=cf9        reset through port 0xcf9
 *   reset=fadt       reset through the FADT's reset register
 *   reset=kbd        reset through the 8042 (port 0x64, 0xfe)
 * When the machine is still alive afterwards, the guest prints a FAIL and
 * exits with status 1. */
#include "guests/rt/acpi.h"
#include "guests/rt/cpu.h"
#include "guests/rt/idt.h"
#include "guests/rt/lapic.h"
#include "guests/rt/report.h"
#include "guests/rt/rt.h"
#include "guests/rt/tsc.h"
#include "virt/hypercall.h"

/* ------------------------------------------------------------------ */
/* Port and memory access */


static uint32_t mmio_read32(uint64_t pa)
{
	return *(volatile uint32_t *)pa;
}

static void mmio_write32(uint64_t pa, uint32_t v)
{
	*(volatile uint32_t *)pa = v;
}

/* ------------------------------------------------------------------ */
/* Interrupts and exceptions */

typedef void (*handler_t)(struct frame *f);

static handler_t handlers[256];
static volatile unsigned int unexpected_irqs, last_unexpected;


/* Vectors. */
#define VEC_PIC_MASTER 0x20	/* 0x20-0x27 */
#define VEC_PIC_SLAVE 0x28	/* 0x28-0x2f */
#define VEC_IOAPIC_PIT 0x40
#define VEC_TESTDEV_EDGE 0x41
#define VEC_TESTDEV_LEVEL 0x42
#define VEC_PROBE 0x43

static void pc_dispatch(struct frame *f)
{
	unsigned int v = (unsigned int)f->vector;

	if (v < 32) {
		fail("exception", "vector %u, error 0x%lx at RIP 0x%lx", v, f->error, f->rip);
		exit(report_summary("pc"));
	}
	if (handlers[v]) {
		handlers[v](f);
		return;
	}
	if (v == SPURIOUS_VEC || v == VEC_PIC_MASTER + 7 || v == VEC_PIC_SLAVE + 7)
		return;	/* spurious: no EOI */
	unexpected_irqs++;
	last_unexpected = v;
	if (v >= VEC_PIC_MASTER && v < VEC_PIC_SLAVE + 8) {
		if (v >= VEC_PIC_SLAVE)
			outb(0xa0, 0x20);
		outb(0x20, 0x20);
	} else {
		apic_eoi();
	}
}

/* ------------------------------------------------------------------ */
/* Time: the TSC, calibrated against the PIT (pit-calibrate) */

#define PIT_HZ 1193182ull
#define PM_HZ 3579545ull


static bool within_pct(uint64_t a, uint64_t b, uint64_t pct)
{
	uint64_t d = a > b ? a - b : b - a;

	return d * 100 <= b * pct;
}

/* ------------------------------------------------------------------ */
/* ACPI */

struct acpi_info {
	bool rsdp_found;
	uint64_t rsdp;
	uint8_t revision;
	uint64_t madt, fadt, dsdt;
	uint32_t fadt_len;
	/* From the FADT. */
	uint16_t pm_tmr, pm1a_cnt;
	bool tmr_32bit;
	bool reset_supported;
	uint8_t reset_space, reset_value;
	uint64_t reset_addr;
	/* From the MADT. */
	unsigned int lapics, ioapics;
	uint64_t ioapic_addr;
	uint32_t irq_gsi[16];
	uint16_t irq_flags[16];		/* MPS INTI flags of an override; 0 = ISA default */
};

static struct acpi_info acpi;

static void parse_madt(uint64_t madt)
{
	for (uint64_t p = madt_next(madt, 0); p; p = madt_next(madt, p)) {
		uint8_t type = *(uint8_t *)p;

		if (type == MADT_LAPIC && (rd32(p + 4) & MADT_LAPIC_ENABLED))
			acpi.lapics++;
		if (type == MADT_IOAPIC) {
			if (!acpi.ioapics)
				acpi.ioapic_addr = rd32(p + 4);
			acpi.ioapics++;
		}
		if (type == MADT_OVERRIDE && *(uint8_t *)(p + 3) < 16) {
			uint8_t src = *(uint8_t *)(p + 3);

			acpi.irq_gsi[src] = rd32(p + 4);
			acpi.irq_flags[src] = rd16(p + 8);
		}
	}
}

static void parse_fadt(uint64_t fadt)
{
	uint32_t len = rd32(fadt + 4);
	uint32_t flags = len >= 116 ? rd32(fadt + 112) : 0;

	acpi.fadt_len = len;
	acpi.pm_tmr = (uint16_t)rd32(fadt + 76);
	acpi.pm1a_cnt = (uint16_t)rd32(fadt + 64);
	acpi.tmr_32bit = flags & (1u << 8);
	acpi.dsdt = rd32(fadt + 40);
	if (len >= 148 && rd64(fadt + 140))
		acpi.dsdt = rd64(fadt + 140);
	if (len >= 129) {
		acpi.reset_supported = flags & (1u << 10);
		acpi.reset_space = *(uint8_t *)(fadt + 116);
		acpi.reset_addr = rd64(fadt + 120);
		acpi.reset_value = *(uint8_t *)(fadt + 128);
	}
}

static void check_acpi_walk(void)
{
	const char *name = "acpi-walk";
	uint64_t rsdp, root;
	unsigned int entry_size, n, bad_sum = 0, tables = 0;
	char bad_sig[5] = "";

	for (int i = 0; i < 16; i++)
		acpi.irq_gsi[i] = (uint32_t)i;
	rsdp = acpi_find_rsdp();
	if (!rsdp) {
		fail(name, "no RSDP with a valid checksum in the EBDA or 0xE0000-0xFFFFF");
		return;
	}
	acpi.rsdp_found = true;
	acpi.rsdp = rsdp;
	acpi.revision = *(uint8_t *)(rsdp + 15);
	if (acpi.revision >= 2 && acpi_checksum(rsdp, rd32(rsdp + 20)) != 0) {
		fail(name, "RSDP revision %u: the extended checksum is wrong", acpi.revision);
		return;
	}
	if (acpi.revision >= 2 && rd64(rsdp + 24)) {
		root = rd64(rsdp + 24);
		entry_size = 8;
		if (!acpi_sig_is(root, "XSDT")) {
			fail(name, "XSDT at 0x%lx has no XSDT signature", root);
			return;
		}
	} else {
		root = rd32(rsdp + 16);
		entry_size = 4;
		if (!acpi_sig_is(root, "RSDT")) {
			fail(name, "RSDT at 0x%lx has no RSDT signature", root);
			return;
		}
	}
	if (acpi_checksum(root, rd32(root + 4))) {
		fail(name, "%s checksum", entry_size == 8 ? "XSDT" : "RSDT");
		return;
	}
	n = (rd32(root + 4) - 36) / entry_size;
	printf("info: RSDP at 0x%lx revision %u, %s at 0x%lx with %u tables:", rsdp,
	       acpi.revision, entry_size == 8 ? "XSDT" : "RSDT", root, n);
	for (unsigned int i = 0; i < n; i++) {
		uint64_t t = entry_size == 8 ? rd64(root + 36 + 8 * i) : rd32(root + 36 + 4 * i);

		printf(" %c%c%c%c", *(char *)t, *(char *)(t + 1), *(char *)(t + 2),
		       *(char *)(t + 3));
		tables++;
		if (acpi_checksum(t, rd32(t + 4)) && !bad_sum++)
			for (int j = 0; j < 4; j++)
				bad_sig[j] = *(char *)(t + j);
		if (acpi_sig_is(t, "APIC") && !acpi.madt)
			acpi.madt = t;
		if (acpi_sig_is(t, "FACP") && !acpi.fadt)
			acpi.fadt = t;
	}
	printf("\n");
	if (acpi.fadt) {
		parse_fadt(acpi.fadt);
		if (acpi.dsdt) {
			tables++;
			if (!acpi_sig_is(acpi.dsdt, "DSDT"))
				bad_sum++, bad_sig[0] = 'D', bad_sig[1] = 's', bad_sig[2] = 'i',
					   bad_sig[3] = 'g';
			else if (acpi_checksum(acpi.dsdt, rd32(acpi.dsdt + 4)) && !bad_sum++)
				bad_sig[0] = 'D', bad_sig[1] = 'S', bad_sig[2] = 'D', bad_sig[3] = 'T';
		}
		printf("info: FADT revision %u length %u: PM timer 0x%x%s, PM1a_CNT 0x%x, reset "
		       "register %s space %u address 0x%lx value 0x%x, DSDT at 0x%lx\n",
		       *(uint8_t *)(acpi.fadt + 8), acpi.fadt_len, acpi.pm_tmr,
		       acpi.tmr_32bit ? " (32-bit)" : "", acpi.pm1a_cnt,
		       acpi.reset_supported ? "supported" : "not flagged", acpi.reset_space,
		       acpi.reset_addr, acpi.reset_value, acpi.dsdt);
	}
	if (acpi.madt) {
		parse_madt(acpi.madt);
		printf("info: MADT: %u local APICs, %u I/O APICs (first at 0x%lx), IRQ 0 -> GSI %u\n",
		       acpi.lapics, acpi.ioapics, acpi.ioapic_addr, acpi.irq_gsi[0]);
	}
	if (bad_sum)
		fail(name, "%u of %u tables have a bad checksum (first %s)", bad_sum, tables,
		     bad_sig);
	else if (!acpi.madt)
		fail(name, "no MADT (APIC) table");
	else if (!acpi.fadt)
		fail(name, "no FADT (FACP) table");
	else if (acpi.lapics != 1)
		fail(name, "%u enabled local APIC entries, expected 1", acpi.lapics);
	else if (acpi.ioapics < 1 || acpi.ioapic_addr != 0xfec00000)
		fail(name, "%u I/O APIC entries, the first at 0x%lx", acpi.ioapics,
		     acpi.ioapic_addr);
	else if (!acpi.pm_tmr)
		fail(name, "the FADT has no PM timer block");
	else if (!acpi.pm1a_cnt)
		fail(name, "the FADT has no PM1a control block");
	else
		pass(name);
}

/* SLP_TYPa for S5 from the DSDT's \_S5_ package: -1 if not found. */
static int s5_slp_typ(void)
{
	uint64_t d = acpi.dsdt;
	uint32_t len;

	if (!d || !acpi_sig_is(d, "DSDT"))
		return -1;
	len = rd32(d + 4);
	for (uint64_t p = d + 36; p + 8 < d + len; p++) {
		const uint8_t *b = (const uint8_t *)p;
		unsigned int pkglen_bytes;

		if (!(b[0] == '_' && b[1] == 'S' && b[2] == '5' && b[3] == '_'))
			continue;
		/* NameOp (0x08) before the name, optionally a root prefix '\'. */
		if (!(b[-1] == 0x08 || (b[-1] == '\\' && b[-2] == 0x08)))
			continue;
		if (b[4] != 0x12)	/* PackageOp */
			continue;
		pkglen_bytes = (b[5] >> 6) + 1;
		b += 5 + pkglen_bytes + 1;	/* PkgLength, NumElements */
		if (b[0] == 0x0a)	/* BytePrefix */
			return b[1];
		if (b[0] == 0x00 || b[0] == 0x01)	/* ZeroOp, OneOp */
			return b[0];
		return -1;
	}
	return -1;
}

/* ------------------------------------------------------------------ */
/* PIT, PM timer */

static uint16_t pm_port = 0x608;
static bool pm_from_fadt;

static uint32_t pm_read(void)
{
	uint32_t v = inl(pm_port);

	return acpi.tmr_32bit ? v : v & 0xffffff;
}

/* Ticks of the PM timer from a to b, modulo its width. */
static uint32_t pm_delta(uint32_t a, uint32_t b)
{
	return acpi.tmr_32bit ? b - a : (b - a) & 0xffffff;
}

struct pit_sample {
	uint64_t tsc;		/* the middle of the bracket */
	uint32_t pm;
	uint16_t count;
};

/* Channel 2's count latched, the PM timer read, both bracketed by RDTSC:
 * the tightest bracket of five, so that a descheduled emulator thread
 * (QEMU under load) does not skew the sample. */
static void pit2_sample(struct pit_sample *s)
{
	uint64_t best = ~0ull;

	for (int i = 0; i < 5; i++) {
		uint64_t a = rdtsc(), b;
		uint16_t lo, hi;
		uint32_t pm;

		outb(0x43, 0x80);	/* latch channel 2 */
		lo = inb(0x42);
		hi = inb(0x42);
		pm = pm_read();
		b = rdtsc();
		if (b - a < best) {
			best = b - a;
			s->tsc = a + (b - a) / 2;
			s->pm = pm;
			s->count = (uint16_t)(hi << 8 | lo);
		}
	}
}

static uint16_t pit2_count(void)
{
	uint16_t lo, hi;

	outb(0x43, 0x80);
	lo = inb(0x42);
	hi = inb(0x42);
	return (uint16_t)(hi << 8 | lo);
}

/* The TSC against PIT channel 2 in mode 0 (gate through port 0x61) over
 * about 30 ms, from the latched count at both ends; OUT2 (port 0x61 bit 5)
 * must be low during the count and rise at its end. The PM timer is read in
 * the same brackets. 30 ms of the count's 55 leave a starved emulator 25 ms
 * to come back before the count wraps; a wrapped try is tried again. */
#define PIT_CALIBRATE_TRIES 20
static void check_pit_calibrate(void)
{
	const char *name = "pit-calibrate";
	const uint32_t span = 35795;	/* 1193182 Hz * 30 ms */
	struct pit_sample s0, s1;
	uint64_t pm_khz = 0, hc_khz = 0;
	uint32_t spins = 0, ticks = 0, tries = 0;
	bool out_low = false, wrapped;

	tsc_khz = 0;
	do {
		outb(0x61, (inb(0x61) & ~0x02) & ~0x01);	/* gate 2 off, speaker off */
		outb(0x43, 0xb0);			/* channel 2, lo/hi, mode 0 */
		outb(0x42, 0xff);
		outb(0x42, 0xff);
		outb(0x61, (inb(0x61) & ~0x02) | 0x01);	/* gate on: counting */
		pit2_sample(&s0);
		out_low = !(inb(0x61) & 0x20);
		spins = 0;
		while ((uint16_t)(s0.count - pit2_count()) < span && ++spins < 10000000)
			;
		pit2_sample(&s1);
		/* 0xffff ticks take 54.9 ms: OUT2 high now means the count
		 * wrapped past s0 (the thread was away too long). */
		wrapped = inb(0x61) & 0x20;
		ticks = (uint16_t)(s0.count - s1.count);
	} while (wrapped && ++tries < PIT_CALIBRATE_TRIES);
	/* Then OUT2 rises at the terminal count. */
	spins = 0;
	while (!(inb(0x61) & 0x20) && ++spins < 10000000)
		;
	outb(0x61, inb(0x61) & ~0x03);
	if (ticks && s1.tsc > s0.tsc)
		tsc_khz = (s1.tsc - s0.tsc) * PIT_HZ / ticks / 1000;
	if (pm_delta(s0.pm, s1.pm))
		pm_khz = (s1.tsc - s0.tsc) * PM_HZ / pm_delta(s0.pm, s1.pm) / 1000;
	if (under_sprig())
		hc_khz = (uint64_t)hypercall(HC_TSC_KHZ, 0, 0, 0, 0);
	printf("info: TSC %lu kHz against the PIT, %lu kHz against the PM timer", tsc_khz,
	       pm_khz);
	if (under_sprig())
		printf(", HC_TSC_KHZ %lu kHz", hc_khz);
	printf(" (%u PIT ticks, %u retries)\n", ticks, tries);
	if (wrapped)
		fail(name, "channel 2 wrapped in %u tries (OUT2 high after 30 ms of a 55 ms count)",
		     PIT_CALIBRATE_TRIES);
	else if (!out_low)
		fail(name, "OUT2 (port 0x61 bit 5) high while channel 2 counts in mode 0");
	else if (!(inb(0x61) & 0x20) && spins >= 10000000)
		fail(name, "OUT2 never rose at the terminal count");
	else if (!tsc_khz)
		fail(name, "the PIT count or the TSC did not move (%u ticks)", ticks);
	else if (!within_pct(tsc_khz, pm_khz, 1))
		fail(name, "TSC %lu kHz by the PIT, %lu kHz by the PM timer", tsc_khz, pm_khz);
	else if (under_sprig() && !within_pct(tsc_khz, hc_khz, 1))
		fail(name, "TSC %lu kHz by the PIT, HC_TSC_KHZ %lu kHz", tsc_khz, hc_khz);
	else
		pass(name);
	/* A wrapped count measured nothing: the later checks time themselves
	 * by the PM timer's bracket, which a 50 ms absence does not wrap. */
	if (!tsc_khz || wrapped)
		tsc_khz = pm_khz ? pm_khz : 1000000;
}

/* The PM timer and the TSC, bracketed: the tightest bracket of five. */
static void pm_sample(uint32_t *pm, uint64_t *tsc)
{
	uint64_t best = ~0ull;

	for (int i = 0; i < 5; i++) {
		uint64_t a = rdtsc(), b;
		uint32_t v = inl(pm_port);

		b = rdtsc();
		if (b - a < best) {
			best = b - a;
			*pm = v;
			*tsc = a + (b - a) / 2;
		}
	}
}

static void check_pmtimer_rate(void)
{
	const char *name = "pmtimer-rate";
	uint64_t t0 = 0, t1 = 0, end, hz, ticks = 0;
	uint32_t first = 0, last = 0, prev, v, maxv = 0, reads = 0, backwards = 0;

	if (!pm_from_fadt)
		skip("pmtimer-port", "no FADT: port 0x608 assumed");
	pm_sample(&first, &t0);
	prev = first;
	maxv = first;
	end = t0 + us_to_tsc(50000);
	for (;;) {
		bool done = rdtsc() >= end;
		uint32_t d;

		if (done) {
			pm_sample(&last, &t1);
			v = last;
		} else {
			v = inl(pm_port);
		}
		reads++;
		if (v > maxv)
			maxv = v;
		d = pm_delta(prev, v);
		if (!acpi.tmr_32bit && d > 0x800000)
			backwards++;
		ticks += d;
		prev = v;
		if (done)
			break;
	}
	hz = t1 > t0 ? ticks * tsc_khz * 1000 / (t1 - t0) : 0;
	printf("info: PM timer at port 0x%x: %lu Hz (%u reads)\n", pm_port, hz, reads);
	if (!acpi.tmr_32bit && maxv >= (1u << 24))
		fail(name, "read 0x%x: wider than 24 bits", maxv);
	else if (backwards)
		fail(name, "went backwards %u times in %u reads", backwards, reads);
	else if (!within_pct(hz, PM_HZ, 1))
		fail(name, "%lu Hz, expected 3579545", hz);
	else
		pass(name);
}

/* ------------------------------------------------------------------ */
/* RTC */

static uint8_t cmos_read(uint8_t reg)
{
	outb(0x70, reg);	/* bit 7 clear: NMIs stay enabled */
	return inb(0x71);
}

struct rtc_time {
	uint8_t sec, min, hour, day, mon, year, cent;
};

static void rtc_snapshot(struct rtc_time *t)
{
	for (int i = 0; i < 1000000 && (cmos_read(0x0a) & 0x80); i++)
		;
	t->sec = cmos_read(0x00);
	t->min = cmos_read(0x02);
	t->hour = cmos_read(0x04);
	t->day = cmos_read(0x07);
	t->mon = cmos_read(0x08);
	t->year = cmos_read(0x09);
	t->cent = cmos_read(0x32);
}

static bool rtc_same(const struct rtc_time *a, const struct rtc_time *b)
{
	return a->sec == b->sec && a->min == b->min && a->hour == b->hour && a->day == b->day &&
	       a->mon == b->mon && a->year == b->year && a->cent == b->cent;
}

static bool bcd_ok(uint8_t v)
{
	return (v & 0xf) <= 9 && (v >> 4) <= 9;
}

static uint8_t from_bcd(uint8_t v)
{
	return (v >> 4) * 10 + (v & 0xf);
}

static void check_rtc(void)
{
	const char *name = "rtc-read";
	struct rtc_time a, b;
	uint8_t regb = cmos_read(0x0b), rega = cmos_read(0x0a);
	bool binary = regb & 0x04, h24 = regb & 0x02, pm = false;
	unsigned int tries = 0, year, sec, min, hour, day, mon;

	do {
		rtc_snapshot(&a);
		rtc_snapshot(&b);
	} while (!rtc_same(&a, &b) && ++tries < 10);
	if (!rtc_same(&a, &b)) {
		fail(name, "no two equal reads in 10 tries");
		return;
	}
	if (!h24) {
		pm = a.hour & 0x80;
		a.hour &= 0x7f;
	}
	if (!binary) {
		uint8_t *f[] = { &a.sec, &a.min, &a.hour, &a.day, &a.mon, &a.year };

		for (unsigned int i = 0; i < 6; i++) {
			if (!bcd_ok(*f[i])) {
				fail(name, "field %u reads 0x%x: not BCD (register B 0x%x)", i, *f[i],
				     regb);
				return;
			}
			*f[i] = from_bcd(*f[i]);
		}
		a.cent = bcd_ok(a.cent) ? from_bcd(a.cent) : 0;
	}
	sec = a.sec;
	min = a.min;
	hour = a.hour;
	day = a.day;
	mon = a.mon;
	if (!h24)
		hour = (hour % 12) + (pm ? 12 : 0);
	year = (a.cent >= 19 && a.cent <= 30 ? a.cent : 20) * 100 + a.year;
	printf("info: RTC %04u-%02u-%02u %02u:%02u:%02u (register A 0x%x, B 0x%x: %s, %s)\n",
	       year, mon, day, hour, min, sec, rega, regb, binary ? "binary" : "BCD",
	       h24 ? "24-hour" : "12-hour");
	if (sec > 59 || min > 59 || hour > 23 || day < 1 || day > 31 || mon < 1 || mon > 12)
		fail(name, "%04u-%02u-%02u %02u:%02u:%02u is not a time", year, mon, day, hour,
		     min, sec);
	else if (year < 2020)
		fail(name, "year %u", year);
	else if ((rega & 0x70) != 0x20)
		fail(name, "register A 0x%x: the divider is not 32.768 kHz", rega);
	else
		pass(name);
}

/* ------------------------------------------------------------------ */
/* I/O APIC */

#define IOAPIC_BASE 0xfec00000ul
#define IOREDTBL_MASKED (1u << 16)
#define IOREDTBL_LEVEL (1u << 15)
#define IOREDTBL_LOW (1u << 13)

static uint32_t ioapic_read(uint32_t reg)
{
	mmio_write32(IOAPIC_BASE, reg);
	return mmio_read32(IOAPIC_BASE + 0x10);
}

static void ioapic_write(uint32_t reg, uint32_t v)
{
	mmio_write32(IOAPIC_BASE, reg);
	mmio_write32(IOAPIC_BASE + 0x10, v);
}

static void ioapic_route(unsigned int gsi, uint32_t low, uint32_t dest)
{
	ioapic_write(0x10 + 2 * gsi, IOREDTBL_MASKED);
	ioapic_write(0x11 + 2 * gsi, dest << 24);
	ioapic_write(0x10 + 2 * gsi, low);
}

static void ioapic_mask(unsigned int gsi)
{
	ioapic_write(0x10 + 2 * gsi, IOREDTBL_MASKED);
}

static unsigned int ioapic_pins;

static void check_ioapic_regs(void)
{
	const char *name = "ioapic-regs";
	uint32_t ver = ioapic_read(0x01), id = ioapic_read(0x00), lo, hi;
	unsigned int pin = 13;	/* an ISA line nothing on QEMU's pc uses */

	ioapic_pins = ((ver >> 16) & 0xff) + 1;
	printf("info: I/O APIC id %u, version 0x%x, %u pins\n", id >> 24, ver & 0xff,
	       ioapic_pins);
	if (ver == 0xffffffff || ver == 0) {
		fail(name, "version register reads 0x%x", ver);
		ioapic_pins = 24;
		return;
	}
	if (ioapic_pins != 24 || (ver & 0xff) != 0x20) {
		fail(name, "version register 0x%x: expected version 0x20 and 24 pins", ver);
		return;
	}
	/* Every entry masked after firmware: a kernel assumes nothing else. */
	ioapic_write(0x10 + 2 * pin, IOREDTBL_MASKED | IOREDTBL_LEVEL | IOREDTBL_LOW | 0x5a);
	ioapic_write(0x11 + 2 * pin, 0xab000000);
	lo = ioapic_read(0x10 + 2 * pin);
	hi = ioapic_read(0x11 + 2 * pin);
	ioapic_write(0x10 + 2 * pin, IOREDTBL_MASKED);
	ioapic_write(0x11 + 2 * pin, 0);
	/* Remote IRR (bit 14) and delivery status (bit 12) are read-only. */
	if ((lo & ~((1u << 14) | (1u << 12))) !=
	    (IOREDTBL_MASKED | IOREDTBL_LEVEL | IOREDTBL_LOW | 0x5a) ||
	    hi >> 24 != 0xab)
		fail(name, "redirection entry %u read back 0x%x:%08x, wrote 0xab000000:%08x", pin,
		     hi, lo, IOREDTBL_MASKED | IOREDTBL_LEVEL | IOREDTBL_LOW | 0x5a);
	else if (ioapic_read(0x10 + 2 * pin) != IOREDTBL_MASKED)
		fail(name, "redirection entry %u did not take a second write", pin);
	else
		pass(name);
}

/* ------------------------------------------------------------------ */
/* PIT channel 0 through the I/O APIC and through the PIC */

static volatile unsigned int pit_irqs;
/* The TSC at each of the last PIT_STAMPS interrupts, by pit_irqs. */
#define PIT_STAMPS 64
static volatile uint64_t pit_tsc[PIT_STAMPS];

static void pit_tick(void)
{
	pit_tsc[pit_irqs % PIT_STAMPS] = rdtsc();
	pit_irqs++;
}

static void pit_ioapic_handler(struct frame *f)
{
	(void)f;
	pit_tick();
	apic_eoi();
}

static void pit_pic_handler(struct frame *f)
{
	(void)f;
	pit_tick();
	outb(0x20, 0x20);	/* non-specific EOI to the master */
}

/* PIT channel 0 at 100 Hz: a slower rate than Linux's 1 kHz, so that QEMU's
 * software emulation under host load (ticks it runs late are lost, not
 * queued) keeps most of its ticks (at_100hz). */
#define PIT_COUNT_100HZ 11932

static void pit_periodic(uint16_t count)
{
	outb(0x43, 0x34);	/* channel 0, lo/hi, mode 2 (rate generator) */
	outb(0x40, count & 0xff);
	outb(0x40, count >> 8);
}

static void pit_stop(void)
{
	outb(0x43, 0x30);	/* channel 0, lo/hi, mode 0: one count, then quiet */
	outb(0x40, 0xff);
	outb(0x40, 0xff);
}

/* Counts interrupts with interrupts enabled until us microseconds have
 * passed since `since`, the TSC from which they are due; *took: the
 * microseconds from `since` until they are disabled again. A CPU taken
 * away makes that longer than us, and a PIT that reinjects the ticks it
 * owes (as KVM's and sprig's) delivers them when the CPU is back: the count
 * is checked against *took, not us. */
static unsigned int count_since(volatile unsigned int *counter, uint64_t since, uint64_t us,
				uint64_t *took)
{
	unsigned int start = *counter;
	uint64_t end = since + us_to_tsc(us), now;

	sti();
	now = rdtsc();
	if (now < end)
		delay_us((uint64_t)tsc_to_us((int64_t)(end - now)));
	cli();
	*took = (uint64_t)tsc_to_us((int64_t)(rdtsc() - since));
	return *counter - start;
}

/* The n PIT interrupts from number first on, in us microseconds: a 100 Hz
 * timer? Their median spacing is its period to within 20%: ticks an
 * emulator ran late and dropped (QEMU's PIT under host load) or owed and
 * delivered back to back (KVM's and sprig's, after the CPU was taken away)
 * move only a few spacings. And no more than 120% of the ticks came, no
 * fewer than half. *median_us: the median spacing. */
static bool at_100hz(unsigned int first, unsigned int n, uint64_t us, uint64_t *median_us)
{
	uint64_t gap[PIT_STAMPS];
	unsigned int gaps = 0;

	*median_us = 0;
	if (n < 5 || n * 100000ull > us * 12 || n * 200000ull < us)
		return false;
	for (unsigned int i = n > PIT_STAMPS ? n - PIT_STAMPS + 1 : 1; i < n; i++) {
		uint64_t g = pit_tsc[(first + i) % PIT_STAMPS] - pit_tsc[(first + i - 1) % PIT_STAMPS];
		unsigned int j = gaps++;

		for (; j && gap[j - 1] > g; j--)
			gap[j] = gap[j - 1];
		gap[j] = g;
	}
	*median_us = (uint64_t)tsc_to_us((int64_t)gap[gaps / 2]);
	return *median_us >= 8000 && *median_us <= 12000;
}

static uint32_t bsp_apic_id;

/* `snapshot`: stop mid-check at HC_SNAPSHOT_POINT (under sprig). */
static bool snapshot_mid_run;

static void check_ioapic_pit(void)
{
	const char *name = "ioapic-pit";
	unsigned int gsi = acpi.irq_gsi[0], n, first;
	uint64_t median_us;
	bool rate;
	uint16_t flags = acpi.irq_flags[0];
	uint32_t low = VEC_IOAPIC_PIT;
	uint64_t since, took;

	if ((flags & 3) == 3)
		low |= IOREDTBL_LOW;
	if (((flags >> 2) & 3) == 3)
		low |= IOREDTBL_LEVEL;
	if (gsi >= ioapic_pins) {
		fail(name, "IRQ 0 is GSI %u: beyond the I/O APIC's %u pins", gsi, ioapic_pins);
		return;
	}
	handlers[VEC_IOAPIC_PIT] = pit_ioapic_handler;
	pit_periodic(PIT_COUNT_100HZ);
	ioapic_route(gsi, low, bsp_apic_id);
	since = rdtsc();
	/* The snapshot point falls inside a line of output: the restored guest's
	 * console must finish that line, not print it split at the pause. The
	 * pause is no time the PIT owes ticks for. */
	if (snapshot_mid_run) {
		printf("info: ioapic-pit: stopped at the snapshot point");
		hypercall(HC_SNAPSHOT_POINT, 0, 0, 0, 0);
		printf(" and went on\n");
		/* A restored guest's first accesses fault its memory in from
		 * the image while its clock runs (90 ms of it under a loaded
		 * emulator), and the PIT owes that time's ticks, then delivers
		 * them back to back, as KVM's reinjecting PIT does. They are not
		 * the rate checked here: let them land first. */
		sti();
		delay_us(50000);
		cli();
		since = rdtsc();
	}
	first = pit_irqs;
	n = count_since(&pit_irqs, since, 200000, &took);
	ioapic_mask(gsi);
	pit_stop();
	/* Let one in flight land. */
	sti();
	delay_us(2000);
	cli();
	rate = at_100hz(first, n, took, &median_us);
	printf("info: ioapic-pit: %u interrupts in %lu ms through GSI %u, %lu us apart (median)\n",
	       n, took / 1000, gsi, median_us);
	if (!rate)
		fail(name, "%u PIT interrupts through GSI %u in %lu ms, %lu us apart: not 100 Hz", n,
		     gsi, took / 1000, median_us);
	else
		pass(name);
}

static void pic_init(uint8_t master_mask, uint8_t slave_mask)
{
	outb(0x20, 0x11);	/* ICW1: edge, cascade, ICW4 */
	outb(0xa0, 0x11);
	outb(0x21, VEC_PIC_MASTER);	/* ICW2 */
	outb(0xa1, VEC_PIC_SLAVE);
	outb(0x21, 0x04);	/* ICW3: slave on IR2 */
	outb(0xa1, 0x02);	/* ICW3: cascade identity 2 */
	outb(0x21, 0x01);	/* ICW4: 8086 mode, normal EOI */
	outb(0xa1, 0x01);
	outb(0x21, master_mask);
	outb(0xa1, slave_mask);
}

static void check_pic_mask(void)
{
	const char *name = "pic-mask";
	uint8_t m1, m2, m3, m4;
	unsigned int on, off, first, gsi = acpi.irq_gsi[0];
	uint32_t lint0;
	uint64_t took, masked, median_us;
	bool rate;

	pic_init(0xff, 0xff);
	m1 = inb(0x21);
	m2 = inb(0xa1);
	outb(0x21, 0xa5);
	outb(0xa1, 0x5a);
	m3 = inb(0x21);
	m4 = inb(0xa1);
	outb(0x21, 0xff);
	outb(0xa1, 0xff);
	if (m1 != 0xff || m2 != 0xff || m3 != 0xa5 || m4 != 0x5a) {
		fail(name, "IMR read back 0x%x/0x%x after 0xff/0xff, 0x%x/0x%x after 0xa5/0x5a",
		     m1, m2, m3, m4);
		return;
	}
	/* Virtual wire: LINT0 in ExtINT mode, the PIT on the PIC's IR0 only. */
	handlers[VEC_PIC_MASTER] = pit_pic_handler;
	if (gsi < ioapic_pins)
		ioapic_mask(gsi);
	lint0 = apic_read(APIC_LVT_LINT0);
	apic_write(APIC_LVT_LINT0, LVT_EXTINT);
	outb(0x21, 0xfe);
	pit_periodic(PIT_COUNT_100HZ);
	first = pit_irqs;
	on = count_since(&pit_irqs, rdtsc(), 200000, &took);
	outb(0x21, 0xff);
	sti();
	delay_us(2000);	/* one in flight lands */
	cli();
	off = count_since(&pit_irqs, rdtsc(), 30000, &masked);
	pit_stop();
	apic_write(APIC_LVT_LINT0, lint0 | LVT_MASKED);
	handlers[VEC_PIC_MASTER] = 0;
	rate = at_100hz(first, on, took, &median_us);
	printf("info: pic-mask: %u interrupts in %lu ms unmasked (%lu us apart, median), %u in %lu "
	       "ms masked\n", on, took / 1000, median_us, off, masked / 1000);
	if (!rate)
		fail(name, "%u PIT interrupts through the PIC in %lu ms, %lu us apart: not 100 Hz", on,
		     took / 1000, median_us);
	else if (off)
		fail(name, "%u PIT interrupts with IRQ 0 masked in the IMR", off);
	else
		pass(name);
}

/* ------------------------------------------------------------------ */
/* fw_cfg */

#define FW_CFG_CTL 0x510
#define FW_CFG_DATA 0x511

static void fwcfg_select(uint16_t key)
{
	outw(FW_CFG_CTL, key);
}

static void fwcfg_read(void *buf, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		((uint8_t *)buf)[i] = inb(FW_CFG_DATA);
}

static void check_fwcfg(const struct mb1_info *mbi)
{
	const char *name = "fwcfg";
	char sig[4];
	uint16_t cpus;
	uint64_t ram, mb_ram = ((uint64_t)mbi->mem_upper + 1024) * KIB;
	uint32_t count, bad_names = 0;
	uint8_t be[4];

	fwcfg_select(0x0000);
	fwcfg_read(sig, 4);
	if (sig[0] != 'Q' || sig[1] != 'E' || sig[2] != 'M' || sig[3] != 'U') {
		fail(name, "signature 0x%x 0x%x 0x%x 0x%x, expected \"QEMU\"", (uint8_t)sig[0],
		     (uint8_t)sig[1], (uint8_t)sig[2], (uint8_t)sig[3]);
		return;
	}
	fwcfg_select(0x0005);	/* FW_CFG_NB_CPUS */
	fwcfg_read(&cpus, 2);
	fwcfg_select(0x0003);	/* FW_CFG_RAM_SIZE */
	fwcfg_read(&ram, 8);
	fwcfg_select(0x0019);	/* FW_CFG_FILE_DIR */
	fwcfg_read(be, 4);
	count = (uint32_t)be[0] << 24 | be[1] << 16 | be[2] << 8 | be[3];
	printf("info: fw_cfg: %u CPUs, RAM %lu MiB (multiboot: %lu MiB below 4 GiB), %u files:",
	       cpus, ram / MIB, mb_ram / MIB, count);
	for (uint32_t i = 0; i < count && i < 256; i++) {
		struct {
			uint8_t size[4], select[2], reserved[2];
			char name[56];
		} f;
		bool ok = false;

		fwcfg_read(&f, sizeof(f));
		for (unsigned int j = 0; j < sizeof(f.name); j++) {
			if (!f.name[j]) {
				ok = j > 0;
				break;
			}
			if (f.name[j] < 0x20 || f.name[j] > 0x7e)
				break;
		}
		if (!ok)
			bad_names++;
		else if (i < 6)
			printf(" %s", f.name);
	}
	printf("%s\n", count > 6 ? " ..." : "");
	if (cpus != 1)
		fail(name, "%u CPUs, expected 1", cpus);
	else if (!mbi->has_mem)
		fail(name, "no multiboot memory information to compare the RAM size with");
	/* Firmware may keep the top of low RAM (below 1 MiB of it) for its
	 * tables, outside mem_upper; from 2 GiB the PCI hole may split RAM. */
	else if (!(ram >= mb_ram && (ram - mb_ram < MIB || mb_ram >= 2048 * MIB)))
		fail(name, "RAM %lu KiB, multiboot says %lu KiB below 4 GiB", ram / KIB,
		     mb_ram / KIB);
	else if (!count || count > 4096)
		fail(name, "file directory count %u", count);
	else if (bad_names)
		fail(name, "%u of %u file names are not printable", bad_names, count);
	else
		pass(name);
}

/* ------------------------------------------------------------------ */
/* PCI */

static uint32_t pci_read(unsigned int bus, unsigned int dev, unsigned int fn, unsigned int reg)
{
	outl(0xcf8, 0x80000000u | bus << 16 | dev << 11 | fn << 8 | (reg & 0xfc));
	return inl(0xcfc);
}

static void check_pci_scan(void)
{
	const char *name = "pci-scan";
	uint32_t id, class, absent_id = 0, absent_other = 0, addr;
	int absent_dev = -1, found = 0;

	addr = 0x80000000u | 3 << 11 | 0x08;
	outl(0xcf8, addr);
	if (inl(0xcf8) != addr) {
		fail(name, "CONFIG_ADDRESS (0xcf8) read back 0x%x, wrote 0x%x", inl(0xcf8), addr);
		return;
	}
	printf("info: PCI bus 0:");
	for (unsigned int dev = 0; dev < 32; dev++) {
		id = pci_read(0, dev, 0, 0);
		if ((id & 0xffff) == 0xffff) {
			if (absent_dev < 0) {
				absent_dev = (int)dev;
				absent_id = id;
				absent_other = pci_read(0, dev, 0, 0x08);
			}
			continue;
		}
		found++;
		printf(" %02x.0 %04x:%04x", dev, id & 0xffff, id >> 16);
	}
	printf("\n");
	id = pci_read(0, 0, 0, 0);
	class = pci_read(0, 0, 0, 0x08) >> 16;
	if ((id & 0xffff) != 0x8086)
		fail(name, "00:00.0 vendor 0x%x, expected 0x8086", id & 0xffff);
	else if (class != 0x0600)
		fail(name, "00:00.0 class 0x%x, expected 0x0600 (host bridge)", class);
	else if (absent_dev < 0)
		fail(name, "every slot of bus 0 answers");
	else if (absent_id != 0xffffffff || absent_other != 0xffffffff)
		fail(name, "absent 00:%02x.0 reads 0x%x (ID), 0x%x (class)", absent_dev, absent_id,
		     absent_other);
	else if (pci_read(0xff, 31, 7, 0) != 0xffffffff)
		fail(name, "ff:1f.7 reads 0x%x", pci_read(0xff, 31, 7, 0));
	else
		pass(name);
	outl(0xcf8, 0);
}

/* ------------------------------------------------------------------ */
/* pc-testdev */

#define TESTDEV_PORT 0xe0
#define TESTDEV_BYTE_PORT 0xe8
#define TESTDEV_FLUSH_PORT 0xe4
#define TESTDEV_IRQ_PORT 0x2000
#define TESTDEV_MMIO 0xff000000ul
#define TESTDEV_MMIO_LEN 0x10000ul

static bool testdev_present;

static void check_testdev_regs(void)
{
	const char *name = "testdev-regs";
	uint32_t a, b, c;
	static const uint32_t offs[] = { 0, 4, 0x100, 0x7ffc, 0xfff8, 0xfffc };

	outl(TESTDEV_PORT, 0x12345678);
	a = inl(TESTDEV_PORT);
	outl(TESTDEV_PORT, 0xa5c3e1f0);
	b = inl(TESTDEV_PORT);
	if (a != 0x12345678 && b != 0xa5c3e1f0) {
		printf("info: testdev: port 0xe0 reads 0x%x after 0x12345678\n", a);
		skip(name, "no pc-testdev");
		return;
	}
	testdev_present = true;
	if (a != 0x12345678 || b != 0xa5c3e1f0) {
		fail(name, "port 0xe0 read back 0x%x, 0x%x", a, b);
		return;
	}
	/* Byte and word accesses to the 32-bit register. */
	outb(TESTDEV_PORT + 1, 0x77);
	outw(TESTDEV_PORT + 2, 0x9988);
	a = inl(TESTDEV_PORT);
	c = inb(TESTDEV_PORT + 3);
	if (a != 0x998877f0 || c != 0x99) {
		fail(name, "port 0xe0 after byte 0x77 at 0xe1, word 0x9988 at 0xe2: 0x%x, 0xe3 0x%x",
		     a, c);
		return;
	}
	/* The byte-wide window at 0xe8. */
	for (unsigned int i = 0; i < 4; i++)
		outb(TESTDEV_BYTE_PORT + i, 0x10 + i);
	a = 0;
	for (unsigned int i = 0; i < 4; i++)
		a |= (uint32_t)inb(TESTDEV_BYTE_PORT + i) << (8 * i);
	if (a != 0x13121110) {
		fail(name, "bytes 0x10-0x13 written to 0xe8-0xeb read back 0x%x", a);
		return;
	}
	/* The MMIO window: each width at several offsets. */
	set_uncached(TESTDEV_MMIO);
	for (unsigned int i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		uint64_t pa = TESTDEV_MMIO + offs[i];
		uint32_t pat = 0x5a000000u | offs[i];

		*(volatile uint32_t *)pa = pat;
		if (*(volatile uint32_t *)pa != pat) {
			fail(name, "MMIO 0x%lx: 32-bit read back 0x%x, wrote 0x%x", pa,
			     *(volatile uint32_t *)pa, pat);
			return;
		}
		*(volatile uint8_t *)(pa + 1) = 0xc3;
		*(volatile uint16_t *)(pa + 2) = 0x1e2d;
		if (*(volatile uint32_t *)pa != (0x1e2dc300u | (pat & 0xff)) ||
		    *(volatile uint8_t *)(pa + 3) != 0x1e || *(volatile uint16_t *)pa !=
		    (uint16_t)(0xc300u | (pat & 0xff))) {
			fail(name, "MMIO 0x%lx: 0x%x after byte and word writes", pa,
			     *(volatile uint32_t *)pa);
			return;
		}
	}
	/* A 64-bit access across the two words. */
	*(volatile uint64_t *)(TESTDEV_MMIO + 0x200) = 0x0123456789abcdefull;
	if (*(volatile uint64_t *)(TESTDEV_MMIO + 0x200) != 0x0123456789abcdefull ||
	    *(volatile uint32_t *)(TESTDEV_MMIO + 0x204) != 0x01234567) {
		fail(name, "MMIO 0x%lx: 64-bit read back 0x%lx", TESTDEV_MMIO + 0x200,
		     *(volatile uint64_t *)(TESTDEV_MMIO + 0x200));
		return;
	}
	pass(name);
}

static volatile unsigned int td_irqs;
static volatile unsigned int td_lower_after;	/* the level handler lowers the line then */
static unsigned int td_irq_line;

static void testdev_edge_handler(struct frame *f)
{
	(void)f;
	td_irqs++;
	apic_eoi();
}

static void testdev_level_handler(struct frame *f)
{
	(void)f;
	td_irqs++;
	if (td_irqs >= td_lower_after)
		outb(TESTDEV_IRQ_PORT + td_irq_line, 0);
	apic_eoi();
}

/* An ISA IRQ nothing on QEMU's pc drives, as the MADT routes it. */
static void check_testdev_irq(const char *name, unsigned int irq, bool level)
{
	unsigned int gsi = acpi.irq_gsi[irq], n1, n2, n3;
	uint16_t flags = acpi.irq_flags[irq];
	uint32_t low = level ? VEC_TESTDEV_LEVEL : VEC_TESTDEV_EDGE;
	bool is_level = ((flags >> 2) & 3) == 3, is_low = (flags & 3) == 3;

	if (!testdev_present) {
		skip(name, "no pc-testdev");
		return;
	}
	if (gsi >= ioapic_pins) {
		fail(name, "IRQ %u is GSI %u: beyond the I/O APIC's %u pins", irq, gsi, ioapic_pins);
		return;
	}
	if (is_low) {
		fail(name, "the MADT makes IRQ %u active low", irq);
		return;
	}
	if (level)
		low |= IOREDTBL_LEVEL;
	td_irq_line = irq;
	td_irqs = 0;
	handlers[VEC_TESTDEV_EDGE] = testdev_edge_handler;
	handlers[VEC_TESTDEV_LEVEL] = testdev_level_handler;
	outb(TESTDEV_IRQ_PORT + irq, 0);
	ioapic_route(gsi, low, bsp_apic_id);
	sti();
	delay_us(1000);
	n1 = td_irqs;		/* nothing while the line is low */
	if (level) {
		/* Still high after each EOI: delivered again until the
		 * handler lowers the line at the third. */
		td_lower_after = 3;
		outb(TESTDEV_IRQ_PORT + irq, 1);
		wait_count(&td_irqs, 3, 20000);
		delay_us(5000);
		n2 = td_irqs;
		n3 = n2;
	} else {
		/* One interrupt per rising edge; none while it stays high or
		 * falls. */
		outb(TESTDEV_IRQ_PORT + irq, 1);
		wait_count(&td_irqs, 1, 20000);
		delay_us(5000);
		n2 = td_irqs;
		outb(TESTDEV_IRQ_PORT + irq, 0);
		delay_us(2000);
		outb(TESTDEV_IRQ_PORT + irq, 1);
		wait_count(&td_irqs, 2, 20000);
		delay_us(5000);
		n3 = td_irqs;
		outb(TESTDEV_IRQ_PORT + irq, 0);
		delay_us(2000);
		n3 += td_irqs - n3;
	}
	cli();
	outb(TESTDEV_IRQ_PORT + irq, 0);
	ioapic_mask(gsi);
	printf("info: %s: IRQ %u (GSI %u, MADT %s), counts %u %u %u\n", name, irq, gsi,
	       is_level ? "level" : "edge", n1, n2, n3);
	if (n1)
		fail(name, "%u interrupts with the line low", n1);
	else if (level && n2 != 3)
		fail(name, "%u interrupts from a level line lowered at the third, expected 3", n2);
	else if (!level && (n2 != 1 || n3 != 2))
		fail(name, "%u interrupts after one rising edge, %u after two, expected 1 and 2",
		     n2, n3);
	else
		pass(name);
}

static void check_testdev_flush(const struct mb1_info *mbi)
{
	const char *name = "testdev-flush";
	volatile uint64_t *page = (volatile uint64_t *)(GUEST_PLAYGROUND + 0x3000);
	unsigned int bad = 0;

	if (!testdev_present) {
		skip(name, "no pc-testdev");
		return;
	}
	if (!playground_fits(mbi, 2 * PAGE_SIZE + 0x3000)) {
		fail(name, "no RAM at 0x%lx", (uint64_t)GUEST_PLAYGROUND);
		return;
	}
	for (unsigned int i = 0; i < 512; i++)
		page[i] = 0x9e3779b97f4a7c15ull * (i + 1);
	outl(TESTDEV_FLUSH_PORT, (uint32_t)(uintptr_t)page);
	for (unsigned int i = 0; i < 512; i++)
		if (page[i] != 0x9e3779b97f4a7c15ull * (i + 1))
			bad++;
	/* Written after the flush too: the page is writable again. */
	page[7] = 0x1122334455667788ull;
	outl(TESTDEV_FLUSH_PORT, (uint32_t)(uintptr_t)page);
	if (page[7] != 0x1122334455667788ull)
		bad++;
	if (bad)
		fail(name, "%u of 513 words changed across a flush", bad);
	else
		pass(name);
}

/* ------------------------------------------------------------------ */
/* Power off and reset */

static const char *arg_value(const struct mb1_info *mbi, const char *key)
{
	const char *p = mbi->args;

	while (*p) {
		const char *k = key, *q = p;

		while (*k && *q == *k) {
			k++;
			q++;
		}
		if (!*k && *q == '=')
			return q + 1;
		while (*p && *p != ' ')
			p++;
		while (*p == ' ')
			p++;
	}
	return 0;
}

static bool word_is(const char *s, const char *w)
{
	while (*w && *s == *w) {
		s++;
		w++;
	}
	return !*w && (!*s || *s == ' ');
}

/* The machine should be gone by now. A busy host may take a while to act on
 * the write (bare QEMU under two test suites took over 2 s), so the verdict
 * waits 20 s: well inside the callers' own limits (60 s bare, 30 s under
 * sprig), and spent only when the machine failed to go. */
static int still_alive(const char *name, const char *what)
{
	delay_us(20000000);
	fail(name, "still running 20 s after %s", what);
	return report_summary("pc");
}

static int do_poweroff(void)
{
	const char *name = "poweroff";
	int typ = s5_slp_typ();

	if (!acpi.fadt || !acpi.pm1a_cnt) {
		fail(name, "no FADT with a PM1a control block");
		return report_summary("pc");
	}
	printf("info: poweroff: DSDT _S5_ SLP_TYPa %d, PM1a_CNT 0x%x\n", typ, acpi.pm1a_cnt);
	if (typ < 0) {
		fail(name, "no _S5_ package in the DSDT");
		return report_summary("pc");
	}
	for (int i = 0; i < 1000000 && !(inb(0x3fd) & 0x40); i++)
		;	/* the last line out of the UART first */
	outw(acpi.pm1a_cnt, (uint16_t)((inw(acpi.pm1a_cnt) & ~(7u << 10)) |
				       (unsigned int)typ << 10 | 1u << 13));
	return still_alive(name, "the S5 write");
}

static int do_reset(const char *how)
{
	const char *name = "reset";

	if (word_is(how, "fadt")) {
		if (!acpi.fadt || acpi.fadt_len < 129 || !acpi.reset_supported) {
			/* QEMU's pc has an ACPI 1.0 FADT (revision 1, 116 bytes). */
			skip("reset-fadt", "the FADT has no reset register");
			return report_summary("pc");
		}
		printf("info: reset: FADT reset register space %u address 0x%lx value 0x%x\n",
		       acpi.reset_space, acpi.reset_addr, acpi.reset_value);
	} else if (word_is(how, "cf9")) {
		printf("info: reset: port 0xcf9\n");
	} else if (word_is(how, "kbd")) {
		printf("info: reset: 8042 port 0x64\n");
	} else {
		fail(name, "unknown reset method (cf9, fadt or kbd)");
		return report_summary("pc");
	}
	for (int i = 0; i < 1000000 && !(inb(0x3fd) & 0x40); i++)
		;
	if (word_is(how, "fadt")) {
		if (acpi.reset_space == 1) {
			outb((uint16_t)acpi.reset_addr, acpi.reset_value);
		} else if (acpi.reset_space == 0) {
			*(volatile uint8_t *)acpi.reset_addr = acpi.reset_value;
		} else if (acpi.reset_space == 2) {
			/* PCI configuration space: bus 0, device in bits 32-47,
			 * function in 16-31, register in 0-15. */
			uint64_t a = acpi.reset_addr;

			outl(0xcf8, 0x80000000u | (uint32_t)((a >> 32) & 0x1f) << 11 |
					    (uint32_t)((a >> 16) & 7) << 8 | (a & 0xfc));
			outb(0xcfc + (a & 3), acpi.reset_value);
		} else {
			fail(name, "FADT reset register in address space %u", acpi.reset_space);
			return report_summary("pc");
		}
	} else if (word_is(how, "cf9")) {
		outb(0xcf9, 0x02);	/* hard reset, then the edge that starts it */
		outb(0xcf9, 0x06);
	} else {
		for (int i = 0; i < 100000 && (inb(0x64) & 0x02); i++)
			;	/* input buffer empty */
		outb(0x64, 0xfe);
	}
	return still_alive(name, how);
}

/* ------------------------------------------------------------------ */

int main(const struct mb1_info *mbi)
{
	const char *reset = arg_value(mbi, "reset");

	if (!under_sprig())
		serial_setup();
	idt_install(pc_dispatch);
	printf("pc: checks of the PC chipset%s\n", under_sprig() ? " (under sprig)" : "");

	/* The 8259s masked: nothing reaches us but what a check routes. */
	outb(0x21, 0xff);
	outb(0xa1, 0xff);
	set_uncached(APIC_DEFAULT);
	set_uncached(IOAPIC_BASE);
	apic_write(APIC_SVR, SVR_ENABLE | SPURIOUS_VEC);
	apic_write(APIC_LVT_TIMER, LVT_MASKED);
	apic_write(APIC_LVT_LINT0, LVT_MASKED);
	apic_write(APIC_LVT_ERROR, LVT_MASKED | 0xfe);
	bsp_apic_id = apic_read(APIC_ID) >> 24;

	check_acpi_walk();
	if (acpi.pm_tmr) {
		pm_port = acpi.pm_tmr;
		pm_from_fadt = true;
	}
	if (first_arg_is(mbi, "poweroff"))
		return do_poweroff();
	if (reset)
		return do_reset(reset);
	snapshot_mid_run = under_sprig() && first_arg_is(mbi, "snapshot");

	check_pit_calibrate();
	check_pmtimer_rate();
	check_rtc();
	check_ioapic_regs();
	check_ioapic_pit();
	check_pic_mask();
	check_fwcfg(mbi);
	check_pci_scan();
	check_testdev_regs();
	check_testdev_irq("testdev-irq-edge", 3, false);
	check_testdev_irq("testdev-irq-level", 10, true);
	check_testdev_flush(mbi);

	cli();
	if (unexpected_irqs)
		fail("unexpected-interrupts", "%u, the last vector 0x%x", unexpected_irqs,
		     last_unexpected);
	return report_summary("pc");
}
