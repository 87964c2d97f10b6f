/* dev/acpi_tables.c: the guest's ACPI tables, built into an arena below
 * 4 GiB (MAP_32BIT) whose host addresses serve as guest addresses, then read
 * back with sprig's own parser (arch/x86/acpi.c) and byte by byte. */
#include "check.h"
#include "dev/acpi_tables.h"
#include "arch/x86/acpi.h"
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define ARENA 0x10000

static uint8_t *arena(void)
{
	static uint8_t *a;
	if (!a) {
		void *p = mmap(NULL, ARENA, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
		if (p == MAP_FAILED)
			abort();
		a = p;
	}
	memset(a, 0xcc, ARENA);
	return a;
}

static uint32_t g32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t g64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static uint16_t g16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static const uint8_t *at(uint64_t gpa) { return (const uint8_t *)(uintptr_t)gpa; }

static uint8_t sum(const uint8_t *p, size_t n)
{
	uint8_t s = 0;
	while (n--)
		s += *p++;
	return s;
}

/* Build for cpus at RSDP = arena + 0, tables = arena + 0x100 (as 0xF0000 /
 * 0xF0100); returns the RSDP. */
static const uint8_t *build(unsigned cpus, size_t *used)
{
	uint8_t *a = arena();
	*used = acpi_build(a, a + 0x100, ARENA - 0x100, cpus, (uintptr_t)a,
			   (uintptr_t)(a + 0x100));
	return a;
}

static void check_header(const uint8_t *t, const char *sig, uint8_t rev)
{
	CHECK(!memcmp(t, sig, 4));
	CHECK_EQ_U64(t[8], rev);
	CHECK(!memcmp(t + 10, "BOCHS ", 6));
	CHECK(!memcmp(t + 16, "BXPC    ", 8));
	CHECK(!memcmp(t + 28, "BXPC", 4));
	CHECK_EQ_U64(sum(t, g32(t + 4)), 0);
}

TEST(acpi_tables_rsdp_and_roots)
{
	size_t used;
	const uint8_t *r = build(1, &used);
	REQUIRE(used > 0 && used <= ACPI_TABLES_SIZE(1));
	CHECK(!memcmp(r, "RSD PTR ", 8));
	CHECK_EQ_U64(sum(r, 20), 0);
	CHECK_EQ_U64(sum(r, 36), 0);
	CHECK_EQ_U64(r[15], 2);
	CHECK_EQ_U64(g32(r + 20), 36);
	CHECK(!memcmp(r + 9, "BOCHS ", 6));
	CHECK_EQ_U64(acpi_find_rsdp((uintptr_t)r, 0x100), (uintptr_t)r);
	const uint8_t *rsdt = at(g32(r + 16)), *xsdt = at(g64(r + 24));
	check_header(rsdt, "RSDT", 1);
	check_header(xsdt, "XSDT", 1);
	CHECK_EQ_U64(g32(rsdt + 4), 36 + 8);
	CHECK_EQ_U64(g32(xsdt + 4), 36 + 16);
	for (unsigned i = 0; i < 2; i++)
		CHECK_EQ_U64(g32(rsdt + 36 + 4 * i), g64(xsdt + 36 + 8 * i));
	check_header(at(g64(xsdt + 36)), "FACP", 3);
	check_header(at(g64(xsdt + 44)), "APIC", 1);
	/* everything inside the tables buffer */
	uint64_t lo = (uintptr_t)r + 0x100, hi = lo + used;
	CHECK(g32(r + 16) >= lo && g32(r + 16) + 44 <= hi);
	CHECK(g64(r + 24) >= lo && g64(r + 24) + 52 <= hi);
}

TEST(acpi_tables_parse_back)
{
	static struct acpi_info info;
	size_t used;
	const uint8_t *r = build(4, &used);
	REQUIRE(used);
	REQUIRE(acpi_parse((uintptr_t)r, &info));
	CHECK(info.root_is_xsdt);
	CHECK_EQ_U64(info.rsdp_revision, 2);
	CHECK(!strcmp(info.oem_id, "BOCHS "));
	CHECK(info.has_madt);
	CHECK_EQ_U64(info.lapic_addr, 0xfee00000);
	CHECK_EQ_U64(info.cpu_count, 4);
	for (unsigned i = 0; i < 4; i++) {
		CHECK_EQ_U64(info.cpu_apic_ids[i], i);
		CHECK(!info.cpu_online_capable_only[i]);
	}
	CHECK_EQ_U64(info.ioapic_count, 1);
	CHECK(info.pcat_compat);
	CHECK(info.has_fadt);
	CHECK_EQ_U64(info.pm1a_cnt, 0x604);
	CHECK_EQ_U64(info.pm1b_cnt, 0);
	CHECK_EQ_U64(info.pm_tmr_port, 0x608);
	CHECK(!info.pm_tmr_32bit);
	CHECK_EQ_U64(info.smi_cmd, 0);
	CHECK(info.has_reset_reg);
	CHECK_EQ_U64(info.reset_reg.space_id, ACPI_SPACE_IO);
	CHECK_EQ_U64(info.reset_reg.address, 0xcf9);
	CHECK_EQ_U64(info.reset_reg.bit_width, 8);
	CHECK_EQ_U64(info.reset_value, 6);
	CHECK(info.has_s5);
	CHECK_EQ_U64(info.slp_typa, ACPI_SLP_TYP_S5);
	CHECK_EQ_U64(info.slp_typb, ACPI_SLP_TYP_S5);
}

static bool contains(const uint8_t *p, size_t n, const char *s4)
{
	for (size_t i = 0; i + 4 <= n; i++)
		if (!memcmp(p + i, s4, 4))
			return true;
	return false;
}

static const uint8_t *table(const uint8_t *r, const char *sig)
{
	const uint8_t *x = at(g64(r + 24));
	for (uint32_t off = 36; off < g32(x + 4); off += 8)
		if (!memcmp(at(g64(x + off)), sig, 4))
			return at(g64(x + off));
	return NULL;
}

static void check_madt(unsigned cpus)
{
	size_t used;
	const uint8_t *r = build(cpus, &used);
	REQUIRE(used);
	const uint8_t *m = table(r, "APIC");
	REQUIRE(m);
	uint32_t len = g32(m + 4);
	CHECK_EQ_U64(len, 44 + 8 * cpus + 12 + 5 * 10 + 6);
	CHECK_EQ_U64(g32(m + 36), 0xfee00000);
	CHECK_EQ_U64(g32(m + 40), 1);
	unsigned lapics = 0, ioapics = 0, isos = 0, nmis = 0;
	static const uint8_t iso_irq[] = { 0, 5, 9, 10, 11 };
	static const uint8_t iso_gsi[] = { 2, 5, 9, 10, 11 };
	static const uint16_t iso_flags[] = { 0, 0xd, 0xd, 0xd, 0xd };
	for (uint32_t off = 44; off < len;) {
		const uint8_t *e = m + off;
		REQUIRE(e[1] >= 2 && off + e[1] <= len);
		switch (e[0]) {
		case 0:
			CHECK_EQ_U64(e[1], 8);
			CHECK_EQ_U64(e[2], lapics);
			CHECK_EQ_U64(e[3], lapics);
			CHECK_EQ_U64(g32(e + 4), 1);
			lapics++;
			break;
		case 1:
			CHECK_EQ_U64(e[1], 12);
			CHECK_EQ_U64(e[2], 0);
			CHECK_EQ_U64(g32(e + 4), 0xfec00000);
			CHECK_EQ_U64(g32(e + 8), 0);
			ioapics++;
			break;
		case 2:
			CHECK_EQ_U64(e[1], 10);
			REQUIRE(isos < 5);
			CHECK_EQ_U64(e[2], 0);
			CHECK_EQ_U64(e[3], iso_irq[isos]);
			CHECK_EQ_U64(g32(e + 4), iso_gsi[isos]);
			CHECK_EQ_U64(g16(e + 8), iso_flags[isos]);
			isos++;
			break;
		case 4:
			CHECK_EQ_U64(e[1], 6);
			CHECK_EQ_U64(e[2], 0xff);
			CHECK_EQ_U64(g16(e + 3), 0);
			CHECK_EQ_U64(e[5], 1);
			nmis++;
			break;
		default:
			CHECK(!"unexpected MADT entry");
		}
		off += e[1];
	}
	CHECK_EQ_U64(lapics, cpus);
	CHECK_EQ_U64(ioapics, 1);
	CHECK_EQ_U64(isos, 5);
	CHECK_EQ_U64(nmis, 1);
}

TEST(acpi_tables_madt_1_cpu) { check_madt(1); }
TEST(acpi_tables_madt_4_cpus) { check_madt(4); }
TEST(acpi_tables_madt_255_cpus) { check_madt(255); }

TEST(acpi_tables_fadt_facs_dsdt)
{
	size_t used;
	const uint8_t *r = build(2, &used);
	REQUIRE(used);
	const uint8_t *f = table(r, "FACP");
	REQUIRE(f);
	CHECK_EQ_U64(g32(f + 4), 244);
	CHECK_EQ_U64(g32(f + 36), g64(f + 132)); /* FACS: 32 and 64 */
	CHECK_EQ_U64(g32(f + 40), g64(f + 140)); /* DSDT: 32 and 64 */
	CHECK_EQ_U64(g16(f + 46), 9);
	CHECK_EQ_U64(g32(f + 48), 0);
	CHECK_EQ_U64(f[52] | f[53], 0);
	CHECK_EQ_U64(g32(f + 56), 0x600);
	CHECK_EQ_U64(g32(f + 60), 0);
	CHECK_EQ_U64(g32(f + 64), 0x604);
	CHECK_EQ_U64(g32(f + 76), 0x608);
	CHECK_EQ_U64(g32(f + 80), 0);
	CHECK_EQ_U64(f[88], 4);
	CHECK_EQ_U64(f[89], 2);
	CHECK_EQ_U64(f[91], 4);
	CHECK_EQ_U64(f[92], 0);
	CHECK_EQ_U64(g16(f + 96), 0xfff);
	CHECK_EQ_U64(g16(f + 98), 0xfff);
	CHECK_EQ_U64(f[108], 0x32);
	CHECK_EQ_U64(g32(f + 112), 0x84a5); /* WBINVD C1 SLP_BUTTON RTC_S4 RESET PLATFORM_CLOCK */
	CHECK_EQ_U64(f[116], 1);
	CHECK_EQ_U64(f[117], 8);
	CHECK_EQ_U64(g64(f + 120), 0xcf9);
	CHECK_EQ_U64(f[128], 6);
	/* X_ blocks agree with the legacy ones */
	CHECK_EQ_U64(f[148], 1); CHECK_EQ_U64(f[149], 32); CHECK_EQ_U64(g64(f + 152), 0x600);
	CHECK_EQ_U64(f[172], 1); CHECK_EQ_U64(f[173], 16); CHECK_EQ_U64(g64(f + 176), 0x604);
	CHECK_EQ_U64(f[208], 1); CHECK_EQ_U64(f[209], 32); CHECK_EQ_U64(g64(f + 212), 0x608);
	CHECK_EQ_U64(g64(f + 160) | g64(f + 184) | g64(f + 196 + 4) | g64(f + 220 + 4), 0);

	const uint8_t *facs = at(g32(f + 36));
	CHECK_EQ_U64((uintptr_t)facs % 64, 0);
	CHECK(!memcmp(facs, "FACS", 4));
	CHECK_EQ_U64(g32(facs + 4), 64);

	const uint8_t *d = at(g32(f + 40));
	check_header(d, "DSDT", 1);
	static const uint8_t s5[] = { 0x08, '\\', '_', 'S', '5', '_', 0x12, 0x06, 0x04, 0, 0, 0, 0 };
	CHECK(g32(d + 4) > 36 + sizeof s5);
	CHECK(!memcmp(d + 36, s5, sizeof s5));
	/* the PCI root bridge: Device (PCI0), _HID EisaId ("PNP0A03") */
	static const uint8_t pnp0a03[] = { 0x08, '_', 'H', 'I', 'D', 0x0c, 0x41, 0xd0, 0x0a, 0x03 };
	CHECK(contains(d, g32(d + 4), "PCI0"));
	bool hid = false;
	for (size_t i = 36; i + sizeof pnp0a03 <= g32(d + 4); i++)
		hid |= !memcmp(d + i, pnp0a03, sizeof pnp0a03);
	CHECK(hid);
	uint8_t a = 0xaa, b = 0xbb;
	CHECK(acpi_find_s5(d + 36, g32(d + 4) - 36, &a, &b));
	CHECK_EQ_U64(a, 0);
	CHECK_EQ_U64(b, 0);
	CHECK(!contains(d, g32(d + 4), "_S3_"));
	CHECK(!contains(d, g32(d + 4), "_S4_"));
	CHECK(contains(d, g32(d + 4), "_S5_"));

	/* more than 8 CPUs: cluster model, as QEMU */
	r = build(9, &used);
	f = table(r, "FACP");
	REQUIRE(f);
	CHECK_EQ_U64(g32(f + 112), 0x84a5 | 1u << 18);
	CHECK_EQ_U64(sum(f, 244), 0);
}

TEST(acpi_tables_placement_and_limits)
{
	uint8_t *a = arena();
	uint8_t rsdp[36];
	/* unaligned tables base: the FACS still lands 64-byte aligned */
	size_t used = acpi_build(rsdp, a + 8, ARENA - 8, 3, 0xf0000, (uintptr_t)(a + 8));
	REQUIRE(used);
	static struct acpi_info info;
	memcpy(a + 0xf000, rsdp, 36);
	REQUIRE(acpi_parse((uintptr_t)(a + 0xf000), &info));
	CHECK_EQ_U64(info.cpu_count, 3);
	CHECK(info.has_s5);
	/* guest addresses need not equal the buffer's */
	static uint8_t buf[4096];
	used = acpi_build(rsdp, buf, sizeof buf, 1, 0xf0000, 0xf0100);
	REQUIRE(used);
	CHECK_EQ_U64(g32(rsdp + 16) >= 0xf0100, 1);
	CHECK(g32(rsdp + 16) + 44 <= 0xf0100 + used);
	CHECK(0xf0100 + used <= 0x100000);
	/* limits */
	CHECK_EQ_U64(acpi_build(rsdp, buf, used - 1, 1, 0xf0000, 0xf0100), 0);
	CHECK_EQ_U64(acpi_build(rsdp, buf, sizeof buf, 0, 0xf0000, 0xf0100), 0);
	CHECK_EQ_U64(acpi_build(rsdp, buf, sizeof buf, 256, 0xf0000, 0xf0100), 0);
	CHECK_EQ_U64(acpi_build(rsdp, buf, sizeof buf, 1, 0xf0000, 0xffffff00ull), 0);
	CHECK(acpi_build(rsdp, buf, sizeof buf, 1, 0xf0000, 0xffff0000ull) > 0);
	CHECK(acpi_build(rsdp, buf, ACPI_TABLES_SIZE(255), 255, 0xf0000, 0xf0101) > 0);
}
