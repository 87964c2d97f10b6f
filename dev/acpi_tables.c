/* ACPI table builder; the choices are in acpi_tables.h. */
#include "dev/acpi_tables.h"
#include "lib/string.h"

#define HDR_LEN 36
#define FADT_LEN 244 /* revision 3: up to X_GPE1_BLK */
#define FACS_LEN 64
#define MADT_LAPIC_LEN 8
#define MADT_IOAPIC_LEN 12
#define MADT_ISO_LEN 10
#define MADT_NMI_LEN 6

/* FADT flags (ACPI 6.5 table 5.10) */
#define FADT_F_WBINVD (1u << 0)
#define FADT_F_PROC_C1 (1u << 2)
#define FADT_F_SLP_BUTTON (1u << 5)
#define FADT_F_RTC_S4 (1u << 7)
#define FADT_F_RESET_REG_SUP (1u << 10)
#define FADT_F_USE_PLATFORM_CLOCK (1u << 15)
#define FADT_F_FORCE_APIC_CLUSTER_MODEL (1u << 18)

#define GAS_IO 1

/* Name(\_S5_, Package(4){Zero, Zero, Zero, Zero}), then the PCI root bridge,
 * as QEMU's pc describes it, so that a kernel scans bus 0 through ACPI and
 * keeps the BARs firmware assigned inside the bridge's windows (iasl 20200925
 * output of):
 *   Scope (\_SB) { Device (PCI0) {
 *     Name (_HID, EisaId ("PNP0A03"))
 *     Name (_UID, Zero)
 *     Name (_CRS, ResourceTemplate () {
 *       WordBusNumber (ResourceProducer, MinFixed, MaxFixed, PosDecode, 0, 0, 0xFF, 0, 0x100)
 *       IO (Decode16, 0x0CF8, 0x0CF8, 1, 8)
 *       WordIO (ResourceProducer, MinFixed, MaxFixed, PosDecode, EntireRange, 0, 0, 0x0CF7, 0, 0x0CF8)
 *       WordIO (ResourceProducer, MinFixed, MaxFixed, PosDecode, EntireRange, 0, 0x0D00, 0xFFFF, 0, 0xF300)
 *       DWordMemory (ResourceProducer, PosDecode, MinFixed, MaxFixed, NonCacheable, ReadWrite,
 *                    0, 0xC0000000, 0xFEBFFFFF, 0, 0x3EC00000) }) } }
 * The memory window starts above the largest guest RAM (3 GiB) and ends
 * below the I/O APIC, as QEMU's does. */
static const uint8_t dsdt_aml[] = {
	0x08, '\\', '_', 'S', '5', '_', /* NameOp, \_S5_ */
	0x12, 0x06, 0x04,               /* PackageOp, PkgLength 6, 4 elements */
	ACPI_SLP_TYP_S5, ACPI_SLP_TYP_S5, 0x00, 0x00, /* ZeroOp (SLP_TYP 0) */
	0x10, 0x4c, 0x07, 0x5f, 0x53, 0x42, 0x5f, 0x5b, 0x82, 0x44, 0x07, 0x50,
	0x43, 0x49, 0x30, 0x08, 0x5f, 0x48, 0x49, 0x44, 0x0c, 0x41, 0xd0, 0x0a,
	0x03, 0x08, 0x5f, 0x55, 0x49, 0x44, 0x00, 0x08, 0x5f, 0x43, 0x52, 0x53,
	0x11, 0x48, 0x05, 0x0a, 0x54, 0x88, 0x0d, 0x00, 0x02, 0x0c, 0x00, 0x00,
	0x00, 0x00, 0x00, 0xff, 0x00, 0x00, 0x00, 0x00, 0x01, 0x47, 0x01, 0xf8,
	0x0c, 0xf8, 0x0c, 0x01, 0x08, 0x88, 0x0d, 0x00, 0x01, 0x0c, 0x03, 0x00,
	0x00, 0x00, 0x00, 0xf7, 0x0c, 0x00, 0x00, 0xf8, 0x0c, 0x88, 0x0d, 0x00,
	0x01, 0x0c, 0x03, 0x00, 0x00, 0x00, 0x0d, 0xff, 0xff, 0x00, 0x00, 0x00,
	0xf3, 0x87, 0x17, 0x00, 0x00, 0x0c, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0xc0, 0xff, 0xff, 0xbf, 0xfe, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0xc0, 0x3e, 0x79, 0x00,
};
_Static_assert(ACPI_SLP_TYP_S5 == 0, "the AML above encodes SLP_TYP as ZeroOp");

static void le(uint8_t *p, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint8_t sum(const uint8_t *p, size_t n)
{
	uint8_t s = 0;

	while (n--)
		s += *p++;
	return s;
}

static void header(uint8_t *t, const char *sig, uint32_t len, uint8_t rev)
{
	memcpy(t, sig, 4);
	le(t + 4, len, 4);
	t[8] = rev;
	memcpy(t + 10, "BOCHS ", 6);
	memcpy(t + 16, "BXPC    ", 8);
	le(t + 24, 1, 4);       /* OEM revision */
	memcpy(t + 28, "BXPC", 4); /* creator ID */
	le(t + 32, 1, 4);       /* creator revision */
}

static void finish(uint8_t *t, uint32_t len)
{
	t[9] = 0;
	t[9] = (uint8_t)-sum(t, len);
}

static void gas_io(uint8_t *p, unsigned bits, uint64_t addr)
{
	p[0] = GAS_IO;
	p[1] = (uint8_t)bits;
	p[2] = 0;
	p[3] = 0; /* access size undefined, as QEMU */
	le(p + 4, addr, 8);
}

static void iso(uint8_t *e, uint8_t irq, uint32_t gsi, uint16_t flags)
{
	e[0] = 2;
	e[1] = MADT_ISO_LEN;
	e[2] = 0; /* bus: ISA */
	e[3] = irq;
	le(e + 4, gsi, 4);
	le(e + 8, flags, 2);
}

static size_t align(size_t v, size_t a)
{
	return (v + a - 1) & ~(a - 1);
}

size_t acpi_build(void *rsdp_buf, void *tables_buf, size_t tables_cap, unsigned cpus,
		  uint64_t rsdp_gpa, uint64_t tables_gpa)
{
	static const uint8_t pci_irqs[] = { 5, 9, 10, 11 };
	uint8_t *b = tables_buf, *r = rsdp_buf;

	(void)rsdp_gpa; /* nothing points at the RSDP */
	if (!cpus || cpus > ACPI_TABLES_MAX_CPUS)
		return 0;

	size_t facs = (size_t)(-tables_gpa & 63);
	size_t dsdt = facs + FACS_LEN;
	uint32_t dsdt_len = HDR_LEN + sizeof(dsdt_aml);
	size_t fadt = align(dsdt + dsdt_len, 8);
	size_t madt = align(fadt + FADT_LEN, 8);
	uint32_t madt_len = HDR_LEN + 8 + cpus * MADT_LAPIC_LEN + MADT_IOAPIC_LEN +
			    (1 + sizeof(pci_irqs)) * MADT_ISO_LEN + MADT_NMI_LEN;
	size_t rsdt = align(madt + madt_len, 8);
	uint32_t rsdt_len = HDR_LEN + 2 * 4;
	size_t xsdt = align(rsdt + rsdt_len, 8);
	uint32_t xsdt_len = HDR_LEN + 2 * 8;
	size_t end = xsdt + xsdt_len;

	if (end > tables_cap || tables_gpa + end > 0x100000000ull)
		return 0;
	memset(b, 0, end);
#define GPA(off) (tables_gpa + (off))

	/* FACS */
	memcpy(b + facs, "FACS", 4);
	le(b + facs + 4, FACS_LEN, 4);

	/* DSDT */
	header(b + dsdt, "DSDT", dsdt_len, 1);
	memcpy(b + dsdt + HDR_LEN, dsdt_aml, sizeof(dsdt_aml));
	finish(b + dsdt, dsdt_len);

	/* FADT */
	uint8_t *f = b + fadt;
	header(f, "FACP", FADT_LEN, 3);
	le(f + 36, GPA(facs), 4);  /* FIRMWARE_CTRL */
	le(f + 40, GPA(dsdt), 4);  /* DSDT */
	f[44] = 1;                 /* INT_MODEL (ACPI 1.0): multiple APIC */
	le(f + 46, ACPI_SCI_IRQ, 2);
	/* SMI_CMD (48), ACPI_ENABLE/DISABLE: 0, ACPI-only */
	le(f + 56, ACPI_PM1A_EVT, 4);
	le(f + 64, ACPI_PM1A_CNT, 4);
	le(f + 76, ACPI_PM_TMR, 4);
	f[88] = 4; /* PM1_EVT_LEN */
	f[89] = 2; /* PM1_CNT_LEN */
	f[91] = 4; /* PM_TMR_LEN */
	le(f + 96, 0xfff, 2);  /* P_LVL2_LAT: no C2 */
	le(f + 98, 0xfff, 2);  /* P_LVL3_LAT: no C3 */
	f[108] = 0x32;         /* CENTURY: CMOS register */
	uint32_t flags = FADT_F_WBINVD | FADT_F_PROC_C1 | FADT_F_SLP_BUTTON | FADT_F_RTC_S4 |
			 FADT_F_RESET_REG_SUP | FADT_F_USE_PLATFORM_CLOCK;
	if (cpus > 8)
		flags |= FADT_F_FORCE_APIC_CLUSTER_MODEL;
	le(f + 112, flags, 4);
	gas_io(f + 116, 8, ACPI_RESET_PORT);
	f[128] = ACPI_RESET_VALUE;
	le(f + 132, GPA(facs), 8); /* X_FIRMWARE_CTRL */
	le(f + 140, GPA(dsdt), 8); /* X_DSDT */
	gas_io(f + 148, 32, ACPI_PM1A_EVT);
	gas_io(f + 172, 16, ACPI_PM1A_CNT);
	gas_io(f + 208, 32, ACPI_PM_TMR);
	finish(f, FADT_LEN);

	/* MADT */
	uint8_t *m = b + madt;
	header(m, "APIC", madt_len, 1);
	le(m + 36, ACPI_LAPIC_ADDR, 4);
	le(m + 40, 1, 4); /* PCAT_COMPAT */
	uint8_t *e = m + HDR_LEN + 8;
	for (unsigned i = 0; i < cpus; i++, e += MADT_LAPIC_LEN) {
		e[0] = 0;
		e[1] = MADT_LAPIC_LEN;
		e[2] = (uint8_t)i; /* processor UID */
		e[3] = (uint8_t)i; /* APIC ID */
		le(e + 4, 1, 4);   /* enabled */
	}
	e[0] = 1;
	e[1] = MADT_IOAPIC_LEN;
	e[2] = ACPI_IOAPIC_ID;
	le(e + 4, ACPI_IOAPIC_ADDR, 4);
	le(e + 8, 0, 4); /* GSI base */
	e += MADT_IOAPIC_LEN;
	iso(e, 0, 2, 0);
	e += MADT_ISO_LEN;
	for (unsigned i = 0; i < sizeof(pci_irqs); i++, e += MADT_ISO_LEN)
		iso(e, pci_irqs[i], pci_irqs[i], 0x000d);
	e[0] = 4;
	e[1] = MADT_NMI_LEN;
	e[2] = 0xff; /* all processors */
	le(e + 3, 0, 2);
	e[5] = 1;    /* LINT1 */
	finish(m, madt_len);

	/* RSDT, XSDT */
	header(b + rsdt, "RSDT", rsdt_len, 1);
	le(b + rsdt + HDR_LEN, GPA(fadt), 4);
	le(b + rsdt + HDR_LEN + 4, GPA(madt), 4);
	finish(b + rsdt, rsdt_len);
	header(b + xsdt, "XSDT", xsdt_len, 1);
	le(b + xsdt + HDR_LEN, GPA(fadt), 8);
	le(b + xsdt + HDR_LEN + 8, GPA(madt), 8);
	finish(b + xsdt, xsdt_len);

	/* RSDP */
	memset(r, 0, ACPI_RSDP_LEN);
	memcpy(r, "RSD PTR ", 8);
	memcpy(r + 9, "BOCHS ", 6);
	r[15] = 2;
	le(r + 16, GPA(rsdt), 4);
	le(r + 20, ACPI_RSDP_LEN, 4);
	le(r + 24, GPA(xsdt), 8);
	r[8] = (uint8_t)-sum(r, 20);
	r[32] = (uint8_t)-sum(r, ACPI_RSDP_LEN);
#undef GPA
	return end;
}
