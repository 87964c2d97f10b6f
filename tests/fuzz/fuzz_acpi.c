/* arch/x86/acpi.c: the input is an RSDP and the tables reachable from it, laid
 * out as tests/unit/test_acpi.c builds them: in an arena below 4 GiB, whose
 * addresses serve as physical addresses.
 *
 * Input: one flags byte, then chunks of [u16 length, little-endian][bytes]
 * (the last one may be cut short). Chunk 0 is the RSDP, chunks 1..n are tables.
 * The parser follows pointers, so the harness turns every pointer field into
 * an address it can reach: a value v becomes 0 when v is 0, else the address
 * of table (v - 1) % n. The fields rewritten so: the RSDP's RsdtAddress and
 * XsdtAddress, the entries of a chunk signed RSDT or XSDT, and a FACP's DSDT
 * and X_DSDT. A length field larger than its chunk is cut to the chunk (so that
 * the declared bytes exist), and with the flags' bits 0 and 1 the tables' and
 * the RSDP's checksums are made good after all that. Flags bits 3-5 shift every
 * table off 16-byte alignment.
 *
 * The arena is poisoned for ASan except the declared bytes of each table (at
 * least its 8-byte signature and length, which the parser reads before it can
 * know the length): a read past a table is a report. The raw input also goes
 * to acpi_find_s5 and acpi_find_rsdp, in a heap block of its exact length. */
#include "arch/x86/acpi.h"
#include "tests/fuzz/fuzz.h"
#include <sanitizer/asan_interface.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>

#define ARENA_SIZE (4u << 20)
#define MAX_CHUNKS 32
#define GAP 32 /* poisoned bytes between tables */

enum { FIX_TABLE_SUMS = 1, FIX_RSDP_SUMS = 2 };

static uint8_t *arena;

struct chunk {
	uint8_t *at;   /* in the arena */
	uint32_t len;  /* bytes the fields may claim */
	uint32_t room; /* bytes written there */
};

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

static void set32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void set64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

static uint8_t sum(const uint8_t *p, size_t n)
{
	uint8_t s = 0;
	while (n--)
		s += *p++;
	return s;
}

static uint64_t target(const struct chunk *tables, unsigned n, uint64_t v)
{
	return v && n ? (uint64_t)(uintptr_t)tables[(v - 1) % n].at : 0;
}

static void fix32(uint8_t *p, const struct chunk *tables, unsigned n)
{
	set32(p, (uint32_t)target(tables, n, get32(p)));
}

static void fix64(uint8_t *p, const struct chunk *tables, unsigned n)
{
	set64(p, target(tables, n, get64(p)));
}

/* The tables' pointers and lengths, then their checksums. */
static void fix_tables(struct chunk *tables, unsigned n, bool sums)
{
	for (unsigned i = 0; i < n; i++) {
		uint8_t *t = tables[i].at;
		uint32_t len = get32(t + 4);

		if (len > tables[i].len)
			set32(t + 4, len = tables[i].len);
		if (!memcmp(t, "RSDT", 4))
			for (uint32_t off = 36; off + 4 <= len; off += 4)
				fix32(t + off, tables, n);
		if (!memcmp(t, "XSDT", 4))
			for (uint32_t off = 36; off + 8 <= len; off += 8)
				fix64(t + off, tables, n);
		if (!memcmp(t, "FACP", 4)) {
			if (40 + 4 <= len)
				fix32(t + 40, tables, n);
			if (140 + 8 <= len)
				fix64(t + 140, tables, n);
		}
	}
	for (unsigned i = 0; sums && i < n; i++) {
		uint8_t *t = tables[i].at;
		uint32_t len = get32(t + 4);

		if (len >= 10) {
			t[9] = 0;
			t[9] = (uint8_t)-sum(t, len);
		}
	}
}

static void fix_rsdp(struct chunk *r, const struct chunk *tables, unsigned n, bool sums)
{
	uint8_t *p = r->at;

	uint32_t len = 0; /* of the extended part, revision 2 on */

	fix32(p + 16, tables, n);
	if (p[15] >= 2) {
		len = get32(p + 20);
		if (len > r->len)
			set32(p + 20, len = r->len);
		if (len >= 32)
			fix64(p + 24, tables, n);
	}
	if (sums) {
		p[8] = 0;
		p[8] = (uint8_t)-sum(p, 20);
		if (len >= 33) {
			p[32] = 0;
			p[32] = (uint8_t)-sum(p, len);
		}
	}
}

/* What acpi.h promises of any parse. */
static void check_info(const struct acpi_info *info, const struct chunk *tables, unsigned n)
{
	FUZZ_ASSERT(info->oem_id[6] == '\0');
	FUZZ_ASSERT(info->cpu_ids_stored <= ACPI_MAX_CPUS);
	FUZZ_ASSERT(info->cpu_ids_stored ==
		    (info->cpu_count < ACPI_MAX_CPUS ? info->cpu_count : ACPI_MAX_CPUS));
	for (unsigned i = 0; i < info->cpu_ids_stored; i++)
		for (unsigned j = 0; j < i; j++)
			FUZZ_ASSERT(info->cpu_apic_ids[i] != info->cpu_apic_ids[j]);
	FUZZ_ASSERT(info->has_madt || (!info->cpu_count && !info->ioapic_count));
	FUZZ_ASSERT(info->has_fadt || (!info->has_s5 && !info->pm1a_cnt && !info->dsdt));
	if (!info->valid) {
		FUZZ_ASSERT(!info->has_madt && !info->has_fadt);
		return;
	}
	bool found = false;
	for (unsigned i = 0; i < n; i++)
		found |= info->root_table == (uint64_t)(uintptr_t)tables[i].at;
	FUZZ_ASSERT(found);
}

static void check_scans(const uint8_t *data, size_t size)
{
	uint8_t *copy = malloc(size ? size : 1);
	uint8_t a = 0xee, b = 0xee;

	memcpy(copy, data, size);
	acpi_find_s5(copy, size, &a, &b);
	uint64_t start = (uint64_t)(uintptr_t)copy;
	uint64_t at = acpi_find_rsdp(start, size);
	if (at) {
		FUZZ_ASSERT(at >= start && at + 20 <= start + size && at % 16 == 0);
		FUZZ_ASSERT(!memcmp(copy + (at - start), "RSD PTR ", 8));
	}
	free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct acpi_info info;
	struct chunk chunks[MAX_CHUNKS];
	unsigned n = 0;
	size_t used = 0;

	if (!arena) {
		void *p = mmap(NULL, ARENA_SIZE, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
		FUZZ_ASSERT(p != MAP_FAILED);
		arena = p;
		ASAN_POISON_MEMORY_REGION(arena, ARENA_SIZE);
	}
	check_scans(data, size);
	if (!size || size > ARENA_SIZE / 2)
		return 0;

	uint8_t flags = data[0];
	unsigned shift = (flags >> 3) & 7;
	size_t off = 1;
	while (off < size && n < MAX_CHUNKS) {
		size_t len = data[off];
		if (off + 1 < size)
			len |= (size_t)data[off + 1] << 8;
		off += 2;
		if (off > size)
			off = size;
		if (len > size - off)
			len = size - off;
		/* The RSDP's fields run to 20 bytes, 24 for revision 2; a table's
		 * signature and length to 8. Shorter chunks are padded with zeros. */
		size_t room = len < 24 ? 24 : len;
		uint8_t *at = arena + used + shift;
		used = (used + shift + room + GAP + 15) & ~(size_t)15;
		ASAN_UNPOISON_MEMORY_REGION(at, room);
		memset(at, 0, room);
		memcpy(at, data + off, len);
		chunks[n].at = at;
		chunks[n].room = (uint32_t)room;
		chunks[n].len = (uint32_t)(n == 0 ? (len < 20 ? 20 : len) : (len < 8 ? 8 : len));
		if (n == 0 && at[15] >= 2 && chunks[n].len < 24)
			chunks[n].len = 24;
		n++;
		off += len;
	}
	if (n) {
		struct chunk *tables = chunks + 1;
		unsigned nt = n - 1;

		fix_tables(tables, nt, flags & FIX_TABLE_SUMS);
		fix_rsdp(&chunks[0], tables, nt, flags & FIX_RSDP_SUMS);
		/* From here on, only the declared bytes are readable. */
		for (unsigned i = 0; i < n; i++) {
			uint32_t decl = i ? get32(chunks[i].at + 4) : chunks[i].len;

			ASAN_POISON_MEMORY_REGION(chunks[i].at, chunks[i].room);
			ASAN_UNPOISON_MEMORY_REGION(chunks[i].at, decl < 8 ? 8 : decl);
		}
		acpi_parse((uint64_t)(uintptr_t)chunks[0].at, &info);
		if (fuzz_verbose())
			printf("acpi: %u tables: valid %d xsdt %d madt %d (%u cpus) fadt %d s5 %d\n",
			       nt, info.valid, info.root_is_xsdt, info.has_madt, info.cpu_count,
			       info.has_fadt, info.has_s5);
		check_info(&info, tables, nt);
	}
	ASAN_POISON_MEMORY_REGION(arena, used);
	return 0;
}
