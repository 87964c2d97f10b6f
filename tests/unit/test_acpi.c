/* arch/x86/acpi.c: tables built in host memory, their addresses used as
 * physical addresses. The arena lies below 4 GiB (MAP_32BIT) so that the RSDT
 * and the FADT's 32-bit fields can point into it. */
#include "check.h"
#include "arch/x86/acpi.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define ARENA_SIZE (1u << 20)

static uint8_t *arena;
static size_t arena_used;

static void arena_reset(void)
{
	if (!arena) {
		void *p = mmap(NULL, ARENA_SIZE, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
		if (p == MAP_FAILED)
			abort();
		arena = p;
	}
	memset(arena, 0, ARENA_SIZE);
	arena_used = 0;
}

static uint8_t *arena_alloc(size_t n)
{
	uint8_t *p = arena + arena_used;
	arena_used = (arena_used + n + 15) & ~(size_t)15;
	if (arena_used > ARENA_SIZE)
		abort();
	return p;
}

static uint64_t pa(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

static uint8_t sum(const uint8_t *p, size_t n)
{
	uint8_t s = 0;
	while (n--)
		s += *p++;
	return s;
}

/* A table with a header for sig and len bytes in all; checksum by finish(). */
static uint8_t *sdt_new(const char *sig, uint32_t len)
{
	uint8_t *t = arena_alloc(len);
	memcpy(t, sig, 4);
	put32(t + 4, len);
	t[8] = 1;
	memcpy(t + 10, "SPRIG ", 6);
	return t;
}

static void sdt_finish(uint8_t *t)
{
	uint32_t len;
	memcpy(&len, t + 4, 4);
	t[9] = 0;
	t[9] = (uint8_t)-sum(t, len);
}

static uint8_t *rsdp_new(uint8_t revision, uint64_t rsdt, uint64_t xsdt)
{
	uint8_t *r = arena_alloc(36);
	memcpy(r, "RSD PTR ", 8);
	memcpy(r + 9, "SPRIG ", 6);
	r[15] = revision;
	put32(r + 16, (uint32_t)rsdt);
	r[8] = (uint8_t)-sum(r, 20);
	if (revision >= 2) {
		put32(r + 20, 36);
		put64(r + 24, xsdt);
		r[32] = (uint8_t)-sum(r, 36);
	}
	return r;
}

static uint8_t *xsdt_new(const uint64_t *tables, unsigned n)
{
	uint8_t *t = sdt_new("XSDT", 36 + 8 * n);
	for (unsigned i = 0; i < n; i++)
		put64(t + 36 + 8 * i, tables[i]);
	sdt_finish(t);
	return t;
}

static uint8_t *rsdt_new(const uint64_t *tables, unsigned n)
{
	uint8_t *t = sdt_new("RSDT", 36 + 4 * n);
	for (unsigned i = 0; i < n; i++)
		put32(t + 36 + 4 * i, (uint32_t)tables[i]);
	sdt_finish(t);
	return t;
}

/* AML: a Method-like preamble, then Name(_S5_, Package(4){5, 7, 0, 0}). */
static const uint8_t s5_aml[] = {
	0x10, 0x05, '_', 'S', 'B', '_',           /* Scope(_SB_) with nothing in it */
	0x08, '_', 'S', '5', '_', 0x12, 0x08, 0x04,
	0x0a, 0x05, 0x0a, 0x07, 0x00, 0x00,
};

static uint8_t *dsdt_new(const uint8_t *aml, size_t n)
{
	uint8_t *t = sdt_new("DSDT", 36 + n);
	memcpy(t + 36, aml, n);
	sdt_finish(t);
	return t;
}

static void gas(uint8_t *p, uint8_t space, uint8_t width, uint64_t addr)
{
	p[0] = space;
	p[1] = width;
	p[3] = 1;
	put64(p + 4, addr);
}

/* A revision 6 FADT (276 bytes) with X_ fields, or a revision 1 (116 bytes). */
static uint8_t *fadt_new(bool v1, uint64_t dsdt)
{
	uint8_t *t = sdt_new("FACP", v1 ? 116 : 276);
	put32(t + 40, (uint32_t)dsdt);
	put32(t + 48, 0xb2);   /* SMI_CMD */
	t[52] = 0xf1;          /* ACPI_ENABLE */
	put32(t + 64, 0x604);  /* PM1a_CNT_BLK */
	put32(t + 76, 0x608);  /* PM_TMR_BLK */
	t[91] = 4;             /* PM_TMR_LEN */
	if (!v1) {
		put32(t + 112, (1u << 10) | (1u << 8)); /* RESET_REG_SUP, TMR_VAL_EXT */
		gas(t + 116, 1, 8, 0xcf9);
		t[128] = 0x06;
		put64(t + 140, dsdt);
		gas(t + 172, 1, 16, 0x1004);  /* X_PM1a_CNT_BLK wins over 0x604 */
		gas(t + 184, 1, 16, 0x2004);  /* X_PM1b_CNT_BLK */
		gas(t + 208, 1, 32, 0x1008);
		put32(t + 40, 0);             /* DSDT only through X_DSDT */
	}
	sdt_finish(t);
	return t;
}

struct madt_builder {
	uint8_t *t;
	uint32_t len;
};

static struct madt_builder madt_new(void)
{
	struct madt_builder m = { sdt_new("APIC", 512), 44 };
	put32(m.t + 36, 0xfee00000);
	put32(m.t + 40, 1);
	return m;
}

static void madt_lapic(struct madt_builder *m, uint8_t apic_id, uint32_t flags)
{
	uint8_t *e = m->t + m->len;
	e[0] = 0;
	e[1] = 8;
	e[2] = apic_id; /* processor UID */
	e[3] = apic_id;
	put32(e + 4, flags);
	m->len += 8;
}

static void madt_x2apic(struct madt_builder *m, uint32_t apic_id, uint32_t flags)
{
	uint8_t *e = m->t + m->len;
	e[0] = 9;
	e[1] = 16;
	put32(e + 4, apic_id);
	put32(e + 8, flags);
	put32(e + 12, apic_id);
	m->len += 16;
}

static void madt_raw(struct madt_builder *m, uint8_t type, uint8_t len)
{
	uint8_t *e = m->t + m->len;
	e[0] = type;
	e[1] = len;
	m->len += 2;
}

static void madt_ioapic(struct madt_builder *m)
{
	uint8_t *e = m->t + m->len;
	e[0] = 1;
	e[1] = 12;
	put32(e + 4, 0xfec00000);
	m->len += 12;
}

static void madt_override(struct madt_builder *m, uint64_t addr)
{
	uint8_t *e = m->t + m->len;
	e[0] = 5;
	e[1] = 12;
	put64(e + 4, addr);
	m->len += 12;
}

static uint8_t *madt_finish(struct madt_builder *m)
{
	put32(m->t + 4, m->len);
	sdt_finish(m->t);
	return m->t;
}

/* The usual machine: 2 enabled CPUs, one disabled, one online-capable. */
static uint8_t *madt_standard(void)
{
	struct madt_builder m = madt_new();
	madt_lapic(&m, 0, 1);
	madt_lapic(&m, 1, 1);
	madt_lapic(&m, 2, 0);
	madt_lapic(&m, 3, 2);
	madt_ioapic(&m);
	madt_x2apic(&m, 1, 1);   /* the same CPU as APIC ID 1 */
	madt_x2apic(&m, 300, 1);
	return madt_finish(&m);
}

static struct acpi_info info;

TEST(acpi_full_xsdt)
{
	arena_reset();
	uint8_t *dsdt = dsdt_new(s5_aml, sizeof(s5_aml));
	uint64_t tables[] = { pa(fadt_new(false, pa(dsdt))), pa(madt_standard()) };
	uint8_t *xsdt = xsdt_new(tables, 2);
	uint8_t *rsdp = rsdp_new(2, 0, pa(xsdt));

	REQUIRE(acpi_parse(pa(rsdp), &info));
	CHECK(info.root_is_xsdt);
	CHECK_EQ_U64(info.root_table, pa(xsdt));
	CHECK_EQ_U64(info.rsdp_revision, 2);
	CHECK(strcmp(info.oem_id, "SPRIG ") == 0);
	CHECK(info.has_madt);
	CHECK_EQ_U64(info.cpu_count, 4);
	CHECK_EQ_U64(info.cpu_ids_stored, 4);
	CHECK_EQ_U64(info.cpu_apic_ids[2], 3);
	CHECK(info.cpu_online_capable_only[2]);
	CHECK(!info.cpu_online_capable_only[1]);
	CHECK_EQ_U64(info.cpu_apic_ids[3], 300);
	CHECK_EQ_U64(info.lapic_addr, 0xfee00000);
	CHECK_EQ_U64(info.ioapic_count, 1);
	CHECK(info.pcat_compat);
	CHECK(info.has_fadt);
	CHECK_EQ_U64(info.pm1a_cnt, 0x1004);
	CHECK_EQ_U64(info.pm1b_cnt, 0x2004);
	CHECK_EQ_U64(info.pm_tmr_port, 0x1008);
	CHECK(info.pm_tmr_32bit);
	CHECK_EQ_U64(info.smi_cmd, 0xb2);
	CHECK_EQ_U64(info.acpi_enable, 0xf1);
	CHECK(info.has_reset_reg);
	CHECK_EQ_U64(info.reset_reg.space_id, ACPI_SPACE_IO);
	CHECK_EQ_U64(info.reset_reg.address, 0xcf9);
	CHECK_EQ_U64(info.reset_value, 6);
	CHECK_EQ_U64(info.dsdt, pa(dsdt));
	CHECK(info.has_s5);
	CHECK_EQ_U64(info.slp_typa, 5);
	CHECK_EQ_U64(info.slp_typb, 7);
}

TEST(acpi_rsdt_only_revision0)
{
	arena_reset();
	uint8_t *dsdt = dsdt_new(s5_aml, sizeof(s5_aml));
	uint64_t tables[] = { pa(madt_standard()), pa(fadt_new(true, pa(dsdt))) };
	uint8_t *rsdt = rsdt_new(tables, 2);
	/* A revision 0 RSDP has no XSDT field: bytes past 20 must not be read
	 * as one, so make them look like a pointer to garbage. */
	uint8_t *rsdp = rsdp_new(0, pa(rsdt), 0);
	put64(rsdp + 24, 0xdeadbeef);

	REQUIRE(acpi_parse(pa(rsdp), &info));
	CHECK(!info.root_is_xsdt);
	CHECK_EQ_U64(info.root_table, pa(rsdt));
	CHECK_EQ_U64(info.cpu_count, 4);
	CHECK_EQ_U64(info.pm1a_cnt, 0x604);
	CHECK_EQ_U64(info.pm1b_cnt, 0);
	CHECK_EQ_U64(info.pm_tmr_port, 0x608);
	CHECK(!info.pm_tmr_32bit);
	CHECK(!info.has_reset_reg);
	CHECK_EQ_U64(info.dsdt, pa(dsdt));
	CHECK(info.has_s5);
}

TEST(acpi_rsdp_bad_signature_or_checksum)
{
	arena_reset();
	uint64_t none[1];
	uint8_t *rsdp = rsdp_new(2, 0, pa(xsdt_new(none, 0)));

	rsdp[8] ^= 1;
	CHECK(!acpi_parse(pa(rsdp), &info));
	CHECK(!info.valid);
	rsdp[8] ^= 1;
	rsdp[0] = 'X';
	CHECK(!acpi_parse(pa(rsdp), &info));
	CHECK(!acpi_parse(0, &info));
}

TEST(acpi_rsdp_bad_extended_checksum_uses_rsdt)
{
	arena_reset();
	uint64_t tables[] = { pa(madt_standard()) };
	uint8_t *rsdt = rsdt_new(tables, 1);
	uint8_t *rsdp = rsdp_new(2, pa(rsdt), pa(xsdt_new(tables, 1)));

	rsdp[32] ^= 0x55;
	REQUIRE(acpi_parse(pa(rsdp), &info));
	CHECK(!info.root_is_xsdt);
	CHECK_EQ_U64(info.cpu_count, 4);

	/* An extended length below 36 is as bad. */
	rsdp = rsdp_new(2, pa(rsdt), pa(xsdt_new(tables, 1)));
	put32(rsdp + 20, 20);
	rsdp[32] = 0;
	rsdp[32] = (uint8_t)-sum(rsdp, 36);
	REQUIRE(acpi_parse(pa(rsdp), &info));
	CHECK(!info.root_is_xsdt);
}

TEST(acpi_bad_xsdt_falls_back_to_rsdt)
{
	arena_reset();
	uint64_t tables[] = { pa(madt_standard()) };
	uint8_t *xsdt = xsdt_new(tables, 1);
	uint8_t *rsdp = rsdp_new(2, pa(rsdt_new(tables, 1)), pa(xsdt));

	xsdt[40] ^= 0xff;
	REQUIRE(acpi_parse(pa(rsdp), &info));
	CHECK(!info.root_is_xsdt);
	CHECK(info.has_madt);

	/* No RSDT either: nothing to go on. */
	rsdp = rsdp_new(2, 0, pa(xsdt));
	CHECK(!acpi_parse(pa(rsdp), &info));
}

TEST(acpi_bad_table_checksum_skipped)
{
	arena_reset();
	uint8_t *madt = madt_standard();
	uint8_t *dsdt = dsdt_new(s5_aml, sizeof(s5_aml));
	uint64_t tables[] = { pa(madt), pa(fadt_new(false, pa(dsdt))) };
	uint8_t *rsdp = rsdp_new(2, 0, pa(xsdt_new(tables, 2)));

	madt[44 + 3] = 9; /* the first CPU's APIC ID, without fixing the checksum */
	dsdt[40] ^= 1;
	REQUIRE(acpi_parse(pa(rsdp), &info));
	CHECK(!info.has_madt);
	CHECK_EQ_U64(info.cpu_count, 0);
	CHECK(info.has_fadt);
	CHECK(!info.has_s5);
}

TEST(acpi_table_length_shorter_than_header)
{
	arena_reset();
	uint8_t *madt = madt_standard();
	uint8_t *short_fadt = sdt_new("FACP", 36);
	uint64_t tables[] = { pa(madt), pa(short_fadt), 0 };
	uint8_t *rsdp = rsdp_new(2, 0, pa(xsdt_new(tables, 3)));

	/* Length 10 with a checksum that would pass over those 10 bytes. */
	put32(madt + 4, 10);
	madt[9] = 0;
	madt[9] = (uint8_t)-sum(madt, 10);
	sdt_finish(short_fadt); /* a sound header, but too short to be a FADT */
	REQUIRE(acpi_parse(pa(rsdp), &info));
	CHECK(!info.has_madt);
	CHECK(!info.has_fadt);

	/* A root table shorter than its header. */
	uint8_t *xsdt = xsdt_new(tables, 0);
	put32(xsdt + 4, 8);
	xsdt[9] = 0;
	xsdt[9] = (uint8_t)-sum(xsdt, 8);
	CHECK(!acpi_parse(pa(rsdp_new(2, 0, pa(xsdt))), &info));
}

TEST(acpi_madt_entry_zero_length_stops)
{
	arena_reset();
	struct madt_builder m = madt_new();
	madt_lapic(&m, 0, 1);
	madt_raw(&m, 0, 0);
	madt_lapic(&m, 1, 1);
	uint64_t tables[] = { pa(madt_finish(&m)) };
	uint8_t *rsdp = rsdp_new(2, 0, pa(xsdt_new(tables, 1)));

	REQUIRE(acpi_parse(pa(rsdp), &info));
	CHECK(info.has_madt);
	CHECK_EQ_U64(info.cpu_count, 1);

	/* Length 1 could not even hold its own header. */
	m = madt_new();
	madt_raw(&m, 0, 1);
	tables[0] = pa(madt_finish(&m));
	REQUIRE(acpi_parse(pa(rsdp_new(2, 0, pa(xsdt_new(tables, 1)))), &info));
	CHECK_EQ_U64(info.cpu_count, 0);
}

TEST(acpi_madt_entry_overrunning_table_stops)
{
	arena_reset();
	struct madt_builder m = madt_new();
	madt_lapic(&m, 0, 1);
	madt_lapic(&m, 1, 1);
	uint8_t *madt = madt_finish(&m);
	/* The table ends 4 bytes into the second entry. */
	put32(madt + 4, 44 + 8 + 4);
	sdt_finish(madt);
	uint64_t tables[] = { pa(madt) };

	REQUIRE(acpi_parse(pa(rsdp_new(2, 0, pa(xsdt_new(tables, 1)))), &info));
	CHECK_EQ_U64(info.cpu_count, 1);

	/* An entry whose length reaches past the end by one byte. */
	m = madt_new();
	madt_lapic(&m, 0, 1);
	madt_raw(&m, 9, 16);
	madt = madt_finish(&m);
	put32(madt + 4, 44 + 8 + 15);
	sdt_finish(madt);
	tables[0] = pa(madt);
	REQUIRE(acpi_parse(pa(rsdp_new(2, 0, pa(xsdt_new(tables, 1)))), &info));
	CHECK_EQ_U64(info.cpu_count, 1);

	/* A single trailing byte is no entry at all. */
	m = madt_new();
	madt_lapic(&m, 4, 1);
	madt = madt_finish(&m);
	put32(madt + 4, 44 + 8 + 1);
	sdt_finish(madt);
	tables[0] = pa(madt);
	REQUIRE(acpi_parse(pa(rsdp_new(2, 0, pa(xsdt_new(tables, 1)))), &info));
	CHECK_EQ_U64(info.cpu_count, 1);
}

TEST(acpi_madt_override_and_short_entries)
{
	arena_reset();
	struct madt_builder m = madt_new();
	madt_override(&m, 0x1234567000ull);
	madt_raw(&m, 0, 2);   /* a type 0 too short to hold its fields */
	madt_lapic(&m, 0xff, 1); /* the broadcast ID is no processor */
	madt_lapic(&m, 5, 1);
	uint64_t tables[] = { pa(madt_finish(&m)) };

	REQUIRE(acpi_parse(pa(rsdp_new(2, 0, pa(xsdt_new(tables, 1)))), &info));
	CHECK_EQ_U64(info.lapic_addr, 0x1234567000ull);
	CHECK_EQ_U64(info.cpu_count, 1);
	CHECK_EQ_U64(info.cpu_apic_ids[0], 5);
}

TEST(acpi_missing_tables)
{
	arena_reset();
	uint64_t none[1];
	uint8_t *ssdt = sdt_new("SSDT", 40);
	sdt_finish(ssdt);
	uint64_t only_ssdt[] = { pa(ssdt) };

	REQUIRE(acpi_parse(pa(rsdp_new(2, 0, pa(xsdt_new(none, 0)))), &info));
	CHECK(info.valid);
	CHECK(!info.has_madt);
	CHECK(!info.has_fadt);
	CHECK(!info.has_s5);
	CHECK_EQ_U64(info.cpu_count, 0);

	REQUIRE(acpi_parse(pa(rsdp_new(0, pa(rsdt_new(only_ssdt, 1)), 0)), &info));
	CHECK(!info.has_madt);
	CHECK(!info.has_fadt);

	/* A FADT whose DSDT pointer is null or points at another table. */
	uint64_t with_fadt[] = { pa(fadt_new(true, 0)) };
	REQUIRE(acpi_parse(pa(rsdp_new(2, 0, pa(xsdt_new(with_fadt, 1)))), &info));
	CHECK(info.has_fadt);
	CHECK(!info.has_s5);
	with_fadt[0] = pa(fadt_new(true, pa(ssdt)));
	REQUIRE(acpi_parse(pa(rsdp_new(2, 0, pa(xsdt_new(with_fadt, 1)))), &info));
	CHECK(!info.has_s5);
}

TEST(acpi_fadt_x_field_outside_io_uses_legacy)
{
	arena_reset();
	uint8_t *fadt = fadt_new(false, 0);
	gas(fadt + 172, 0, 16, 0xfed00000); /* X_PM1a_CNT_BLK in memory space */
	gas(fadt + 184, 0, 0, 0);
	sdt_finish(fadt);
	uint64_t tables[] = { pa(fadt) };

	REQUIRE(acpi_parse(pa(rsdp_new(2, 0, pa(xsdt_new(tables, 1)))), &info));
	CHECK_EQ_U64(info.pm1a_cnt, 0x604);
	CHECK_EQ_U64(info.pm1b_cnt, 0);
}

static bool s5(const uint8_t *aml, size_t n, uint8_t *a, uint8_t *b)
{
	/* A copy of exactly n bytes, so that ASan sees any read past the end. */
	uint8_t *copy = malloc(n ? n : 1);
	memcpy(copy, aml, n);
	bool ok = acpi_find_s5(copy, n, a, b);
	free(copy);
	return ok;
}

TEST(acpi_s5_encodings)
{
	uint8_t a = 0xee, b = 0xee;
	static const uint8_t zero_one[] = { 0x08, '_', 'S', '5', '_', 0x12, 0x06, 0x04, 0x00, 0x01, 0x00, 0x00 };
	CHECK(s5(zero_one, sizeof(zero_one), &a, &b));
	CHECK_EQ_U64(a, 0);
	CHECK_EQ_U64(b, 1);

	/* Root-prefixed name, two-byte PkgLength, word and dword constants. */
	static const uint8_t wide[] = { 0x08, '\\', '_', 'S', '5', '_', 0x12, 0x4b, 0x00, 0x02,
					0x0b, 0x07, 0x00, 0x0c, 0x03, 0x00, 0x00, 0x00, 0xa3 };
	CHECK(s5(wide, sizeof(wide), &a, &b));
	CHECK_EQ_U64(a, 7);
	CHECK_EQ_U64(b, 3);

	/* "_S5_" first inside a string, then the real package. */
	static const uint8_t twice[] = { 0x0d, '_', 'S', '5', '_', 0x00,
					 0x08, '_', 'S', '5', '_', 0x12, 0x06, 0x02, 0x0a, 0x02, 0x0a, 0x04 };
	CHECK(s5(twice, sizeof(twice), &a, &b));
	CHECK_EQ_U64(a, 2);
	CHECK_EQ_U64(b, 4);
}

TEST(acpi_s5_malformed)
{
	uint8_t a, b;
	/* Truncated at every length: never found, never read past the end. */
	static const uint8_t full[] = { 0x08, '_', 'S', '5', '_', 0x12, 0x08, 0x04,
					0x0a, 0x05, 0x0a, 0x07, 0x00, 0x00 };
	for (size_t n = 0; n < sizeof(full); n++)
		CHECK(!s5(full, n, &a, &b));

	/* A PkgLength claiming more than the AML holds. */
	static const uint8_t too_long[] = { 0x08, '_', 'S', '5', '_', 0x12, 0x3f, 0x04,
					    0x0a, 0x05, 0x0a, 0x07 };
	CHECK(!s5(too_long, sizeof(too_long), &a, &b));
	/* A package of one element, a method instead of a package, a string element. */
	static const uint8_t one[] = { 0x08, '_', 'S', '5', '_', 0x12, 0x04, 0x01, 0x0a, 0x05 };
	CHECK(!s5(one, sizeof(one), &a, &b));
	static const uint8_t method[] = { 0x14, 0x08, '_', 'S', '5', '_', 0x00, 0xa4, 0x00 };
	CHECK(!s5(method, sizeof(method), &a, &b));
	static const uint8_t string[] = { 0x08, '_', 'S', '5', '_', 0x12, 0x06, 0x02,
					  0x0d, 'x', 0x00, 0x00 };
	CHECK(!s5(string, sizeof(string), &a, &b));
	/* A 4-byte PkgLength lead byte at the very end. */
	static const uint8_t lead[] = { '_', 'S', '5', '_', 0x12, 0xc0 };
	CHECK(!s5(lead, sizeof(lead), &a, &b));
}

TEST(acpi_find_rsdp_scan)
{
	arena_reset();
	uint8_t *area = arena_alloc(4096);
	uint64_t none[1];
	uint8_t *rsdp = rsdp_new(2, 0, pa(xsdt_new(none, 0)));

	/* A signature with a bad checksum first, then a good copy at +0x230. */
	memcpy(area + 0x100, "RSD PTR ", 8);
	memcpy(area + 0x230, rsdp, 36);
	/* Off a 16-byte boundary it does not count. */
	memcpy(area + 0x308, rsdp, 36);
	CHECK_EQ_U64(acpi_find_rsdp(pa(area), 4096), pa(area) + 0x230);
	CHECK_EQ_U64(acpi_find_rsdp(pa(area), 0x230), 0);
	CHECK_EQ_U64(acpi_find_rsdp(pa(area) + 0x240, 4096 - 0x240), 0);
}

/* An SPCR of revision rev (80 bytes; 88 from revision 4) for a UART of the
 * given interface type at base in space, with baud-rate code baud. */
static uint8_t *spcr_new(uint8_t rev, uint8_t interface, uint8_t space, uint64_t base, uint8_t baud,
			 uint32_t precise)
{
	uint8_t *t = sdt_new("SPCR", rev >= 4 ? 88 : 80);
	t[8] = rev;
	t[36] = interface;
	gas(t + 40, space, 8, base);
	t[58] = baud;
	if (rev >= 4)
		put32(t + 80, precise);
	sdt_finish(t);
	return t;
}

static bool parse_with_spcr(uint8_t *spcr)
{
	uint64_t tables[] = { pa(madt_standard()), pa(spcr) };
	return acpi_parse(pa(rsdp_new(2, 0, pa(xsdt_new(tables, 2)))), &info);
}

TEST(acpi_spcr)
{
	/* The usual server: COM2 (serial-over-LAN) at 115200, a full 16550. */
	arena_reset();
	REQUIRE(parse_with_spcr(spcr_new(2, 0x00, ACPI_SPACE_IO, 0x2f8, 7, 0)));
	CHECK(info.has_spcr);
	CHECK_EQ_U64(info.spcr_baud, 115200);
	CHECK_EQ_U64(acpi_spcr_io_16550(&info), 0x2f8);

	/* Each baud code; 0 and unknown codes keep the firmware's rate. */
	const uint8_t codes[] = { 0, 3, 4, 5, 6, 7, 8 };
	const uint32_t rates[] = { 0, 9600, 19200, 0, 57600, 115200, 0 };
	for (size_t i = 0; i < sizeof(codes); i++) {
		arena_reset();
		REQUIRE(parse_with_spcr(spcr_new(2, 0x00, ACPI_SPACE_IO, 0x3f8, codes[i], 0)));
		CHECK_EQ_U64(info.spcr_baud, rates[i]);
	}

	/* Revision 4's precise rate overrides the code; 0 there does not. */
	arena_reset();
	REQUIRE(parse_with_spcr(spcr_new(4, 0x12, ACPI_SPACE_IO, 0x3f8, 7, 38400)));
	CHECK_EQ_U64(info.spcr_baud, 38400);
	CHECK_EQ_U64(acpi_spcr_io_16550(&info), 0x3f8);
	arena_reset();
	REQUIRE(parse_with_spcr(spcr_new(4, 0x01, ACPI_SPACE_IO, 0x3e8, 6, 0)));
	CHECK_EQ_U64(info.spcr_baud, 57600);
	CHECK_EQ_U64(acpi_spcr_io_16550(&info), 0x3e8);
	/* A revision 2 table's bytes past 80 are not a precise rate. */
	arena_reset();
	REQUIRE(parse_with_spcr(spcr_new(2, 0x00, ACPI_SPACE_IO, 0x3f8, 7, 0)));
	CHECK_EQ_U64(info.spcr_baud, 115200);
}

TEST(acpi_spcr_not_an_io_16550)
{
	/* A memory-mapped 16550 (PCI UARTs, many ARM-style SoCs), a PL011
	 * (type 0x03), an I/O port above 16 bits, no address. */
	const struct { uint8_t interface, space; uint64_t base; } cases[] = {
		{ 0x00, ACPI_SPACE_MEMORY, 0xfe030000 },
		{ 0x03, ACPI_SPACE_IO, 0x3f8 },
		{ 0x00, ACPI_SPACE_IO, 0x10000 },
		{ 0x00, ACPI_SPACE_IO, 0 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		arena_reset();
		REQUIRE(parse_with_spcr(spcr_new(2, cases[i].interface, cases[i].space, cases[i].base,
						 7, 0)));
		CHECK(info.has_spcr);
		CHECK_EQ_U64(acpi_spcr_io_16550(&info), 0);
	}

	/* Too short to hold the baud rate: skipped. */
	arena_reset();
	uint8_t *t = sdt_new("SPCR", 58);
	sdt_finish(t);
	REQUIRE(parse_with_spcr(t));
	CHECK(!info.has_spcr);
	CHECK_EQ_U64(acpi_spcr_io_16550(&info), 0);

	/* No SPCR at all. */
	arena_reset();
	uint64_t tables[] = { pa(madt_standard()) };
	REQUIRE(acpi_parse(pa(rsdp_new(2, 0, pa(xsdt_new(tables, 1)))), &info));
	CHECK(!info.has_spcr);
	CHECK_EQ_U64(acpi_spcr_io_16550(&info), 0);
}

/* A definition block (DSDT or SSDT) holding aml. */
static uint8_t *aml_table_new(const char *sig, const uint8_t *aml, size_t n)
{
	uint8_t *t = sdt_new(sig, 36 + n);
	memcpy(t + 36, aml, n);
	sdt_finish(t);
	return t;
}

/* AML with no \_S5: a scope with a method in it. */
static const uint8_t no_s5_aml[] = {
	0x10, 0x0b, '_', 'S', 'B', '_', 0x14, 0x06, 'F', 'O', 'O', '_', 0x00, 0xa4,
};

/* Name(_S5_, Package(2){3, 3}). */
static const uint8_t other_s5_aml[] = {
	0x08, '_', 'S', '5', '_', 0x12, 0x06, 0x02, 0x0a, 0x03, 0x0a, 0x03,
};

TEST(acpi_s5_from_ssdt)
{
	arena_reset();
	uint8_t *dsdt = aml_table_new("DSDT", no_s5_aml, sizeof(no_s5_aml));
	uint8_t *fadt = fadt_new(false, pa(dsdt));
	put32(fadt + 56, 0x600); /* PM1a_EVT_BLK */
	sdt_finish(fadt);
	uint64_t tables[] = { pa(fadt), pa(aml_table_new("SSDT", no_s5_aml, sizeof(no_s5_aml))),
			      pa(aml_table_new("SSDT", s5_aml, sizeof(s5_aml))) };
	uint8_t *rsdp = rsdp_new(2, 0, pa(xsdt_new(tables, 3)));

	REQUIRE(acpi_parse(pa(rsdp), &info));
	CHECK(info.has_s5);
	CHECK_EQ_U64(info.slp_typa, 5);
	CHECK_EQ_U64(info.slp_typb, 7);
	CHECK(strcmp(info.s5_table, "SSDT") == 0);
	CHECK_EQ_U64(info.pm1a_evt, 0x600);
	CHECK_EQ_U64(info.pm1b_evt, 0);
	CHECK(!info.emulator);

	/* The DSDT's \_S5 comes first; an SSDT's is not looked at then. */
	arena_reset();
	dsdt = aml_table_new("DSDT", s5_aml, sizeof(s5_aml));
	uint64_t both[] = { pa(aml_table_new("SSDT", other_s5_aml, sizeof(other_s5_aml))),
			    pa(fadt_new(false, pa(dsdt))) };
	rsdp = rsdp_new(2, 0, pa(xsdt_new(both, 2)));
	REQUIRE(acpi_parse(pa(rsdp), &info));
	CHECK_EQ_U64(info.slp_typa, 5);
	CHECK(strcmp(info.s5_table, "DSDT") == 0);

	/* Neither has one; an SSDT with a bad checksum is skipped. */
	arena_reset();
	dsdt = aml_table_new("DSDT", no_s5_aml, sizeof(no_s5_aml));
	uint8_t *bad = aml_table_new("SSDT", s5_aml, sizeof(s5_aml));
	bad[9]++;
	uint64_t none[] = { pa(fadt_new(true, pa(dsdt))), pa(bad) };
	rsdp = rsdp_new(0, pa(rsdt_new(none, 2)), 0);
	REQUIRE(acpi_parse(pa(rsdp), &info));
	CHECK(!info.has_s5);
}

static uint8_t *header_with_ids(const char *oem_id, const char *table_id)
{
	uint8_t *t = sdt_new("FACP", 36);
	memcpy(t + 10, oem_id, 6);
	memcpy(t + 16, table_id, 8);
	sdt_finish(t);
	return t;
}

TEST(acpi_emulator_ids)
{
	arena_reset();
	/* QEMU's tables since 6.0, older QEMU and the Bochs BIOS. */
	CHECK(acpi_header_is_emulator(header_with_ids("BOCHS ", "BXPC    ")));
	CHECK(acpi_header_is_emulator(header_with_ids("BOCHS ", "BXPCFACP")));
	/* Real firmware; near misses. */
	CHECK(!acpi_header_is_emulator(header_with_ids("ALASKA", "A M I   ")));
	CHECK(!acpi_header_is_emulator(header_with_ids("INTEL ", "BXPC    ")));
	CHECK(!acpi_header_is_emulator(header_with_ids("BOCHSX", "BXPC    ")));
	CHECK(!acpi_header_is_emulator(header_with_ids("BOCHS ", "BXP     ")));
	CHECK(!acpi_header_is_emulator(header_with_ids("bochs ", "bxpc    ")));

	/* Through the parser: the root table's IDs, or the FADT's. */
	uint8_t *dsdt = aml_table_new("DSDT", s5_aml, sizeof(s5_aml));
	uint64_t tables[] = { pa(fadt_new(false, pa(dsdt))) };
	uint8_t *xsdt = xsdt_new(tables, 1);
	REQUIRE(acpi_parse(pa(rsdp_new(2, 0, pa(xsdt))), &info));
	CHECK(!info.emulator);
	memcpy(xsdt + 10, "BOCHS ", 6);
	memcpy(xsdt + 16, "BXPC    ", 8);
	sdt_finish(xsdt);
	REQUIRE(acpi_parse(pa(rsdp_new(2, 0, pa(xsdt))), &info));
	CHECK(info.emulator);

	arena_reset();
	dsdt = aml_table_new("DSDT", s5_aml, sizeof(s5_aml));
	uint8_t *fadt = fadt_new(false, pa(dsdt));
	memcpy(fadt + 10, "BOCHS ", 6);
	memcpy(fadt + 16, "BXPCFACP", 8);
	sdt_finish(fadt);
	uint64_t qemu[] = { pa(fadt) };
	REQUIRE(acpi_parse(pa(rsdp_new(2, 0, pa(xsdt_new(qemu, 1)))), &info));
	CHECK(info.emulator);
}

TEST(acpi_ioapic_addresses)
{
	arena_reset();
	struct madt_builder m = madt_new();
	madt_lapic(&m, 0, 1);
	madt_ioapic(&m);
	uint8_t *e = m.t + m.len;
	e[0] = 1;
	e[1] = 12;
	put32(e + 4, 0xfec01000);
	m.len += 12;
	uint64_t tables[] = { pa(madt_finish(&m)) };
	REQUIRE(acpi_parse(pa(rsdp_new(2, 0, pa(xsdt_new(tables, 1)))), &info));
	CHECK_EQ_U64(info.ioapic_count, 2);
	CHECK_EQ_U64(info.ioapic_addrs[0], 0xfec00000);
	CHECK_EQ_U64(info.ioapic_addrs[1], 0xfec01000);
}
