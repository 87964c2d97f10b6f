/* boot/multiboot2.c: the input is the boot information as GRUB hands it over
 * (total_size, reserved, tags), in a heap block of exactly its length, so a
 * read past it is an ASan report. A parse that succeeds must give what
 * multiboot2.h promises: a sorted, disjoint, merged memory map, terminated
 * strings, counts within their arrays, an RSDP inside the info; bytes past
 * total_size must not change the result; and unless ranges were dropped for
 * want of room, the map must be exactly the union of the map tag's ranges,
 * where they overlap the most restrictive type winning (computed here the
 * slow way, interval by interval). */
#include "boot/multiboot2.h"
#include "tests/fuzz/fuzz.h"
#include <stdbool.h>
#include <string.h>

#define MAX_RANGES 1024

struct range {
	uint64_t start, end;
	uint32_t type;
};

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static int rank(uint32_t type)
{
	static const int ranks[] = { [MEM_USABLE] = 0, [MEM_ACPI_RECLAIMABLE] = 1,
				     [MEM_RESERVED] = 2, [MEM_NVS] = 3, [MEM_BAD] = 4 };
	return ranks[type];
}

static uint32_t efi_type(uint32_t t)
{
	if (t == 1 || t == 2 || t == 3 || t == 4 || t == 7)
		return MEM_USABLE;
	if (t == 8)
		return MEM_BAD;
	if (t == 9)
		return MEM_ACPI_RECLAIMABLE;
	if (t == 10)
		return MEM_NVS;
	return MEM_RESERVED;
}

/* The first tag of the given type (the parser keeps the first), or NULL. */
static const uint8_t *find_tag(const uint8_t *base, uint32_t total, uint32_t type)
{
	for (size_t off = 8; off + 8 <= total;) {
		uint32_t t = get32(base + off), size = get32(base + off + 4);
		if (t == 0)
			return NULL;
		if (t == type)
			return base + off;
		off += ((size_t)size + 7) & ~(size_t)7;
	}
	return NULL;
}

/* The non-empty ranges of a map tag the parser accepted; -1 if too many. */
static int tag_ranges(const uint8_t *tag, bool efi, struct range *r)
{
	uint32_t size = get32(tag + 4), esize = get32(tag + 8);
	int n = 0;

	for (size_t k = 0; k < (size - 16) / esize; k++) {
		const uint8_t *e = tag + 16 + k * esize;
		uint64_t start = efi ? get64(e + 8) : get64(e), len;
		uint32_t type;

		if (efi) {
			if (get64(e + 24) >> 52)
				continue;
			len = get64(e + 24) << 12;
			type = efi_type(get32(e));
		} else {
			len = get64(e + 8);
			type = get32(e + 16);
			if (type < MEM_USABLE || type > MEM_BAD)
				type = MEM_RESERVED;
		}
		if (!len || len > UINT64_MAX - start)
			continue;
		if (n == MAX_RANGES)
			return -1;
		r[n++] = (struct range){ start, start + len, type };
	}
	return n;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The map the ranges must give: cut at every boundary, each piece typed by
 * the highest-ranked range covering it, touching pieces of a type merged. */
__attribute__((no_sanitize("coverage")))
static size_t reference_map(const struct range *r, int n, struct boot_mmap_entry *out)
{
	static uint64_t cuts[2 * MAX_RANGES];
	size_t nc = 0, m = 0;

	for (int i = 0; i < n; i++) {
		cuts[nc++] = r[i].start;
		cuts[nc++] = r[i].end;
	}
	qsort(cuts, nc, sizeof(cuts[0]), cmp_u64);
	for (size_t c = 0; c + 1 < nc; c++) {
		uint64_t a = cuts[c], b = cuts[c + 1];
		int best = -1;
		uint32_t type = 0;

		if (a == b)
			continue;
		for (int i = 0; i < n; i++)
			if (r[i].start <= a && r[i].end >= b && rank(r[i].type) > best) {
				best = rank(r[i].type);
				type = r[i].type;
			}
		if (best < 0)
			continue;
		if (m && out[m - 1].type == type && out[m - 1].start + out[m - 1].len == a)
			out[m - 1].len += b - a;
		else
			out[m++] = (struct boot_mmap_entry){ a, b - a, type };
	}
	return m;
}

static bool warned(const struct boot_info *bi, const char *word)
{
	for (size_t i = 0; i < bi->n_warnings; i++)
		if (strstr(bi->warnings[i], word))
			return true;
	return false;
}

static void check_map(const struct boot_info *bi, const uint8_t *base)
{
	static struct range r[MAX_RANGES];
	static struct boot_mmap_entry want[2 * MAX_RANGES];
	const uint8_t *tag = find_tag(base, bi->total_size, bi->mmap_from_efi ? 17 : 6);

	/* Dropped ranges, or warnings that may have hidden that, end the check. */
	if (warned(bi, "dropped") || bi->n_warnings == BOOT_MSG_MAX)
		return;
	if (!tag || get32(tag + 4) < 16 || get32(tag + 8) < (bi->mmap_from_efi ? 40 : 24) ||
	    get32(tag + 8) % 8) {
		FUZZ_ASSERT(!bi->n_mmap);
		return;
	}
	int n = tag_ranges(tag, bi->mmap_from_efi, r);
	if (n < 0)
		return;
	size_t m = reference_map(r, n, want);
	FUZZ_ASSERT(m == bi->n_mmap);
	for (size_t i = 0; i < m; i++)
		FUZZ_ASSERT(want[i].start == bi->mmap[i].start && want[i].len == bi->mmap[i].len &&
			    want[i].type == bi->mmap[i].type);
}

static void check_info(const struct boot_info *bi, const uint8_t *base, size_t avail)
{
	FUZZ_ASSERT(bi->total_size >= 16 && bi->total_size <= avail);
	FUZZ_ASSERT(strnlen(bi->cmdline, sizeof(bi->cmdline)) < sizeof(bi->cmdline));

	FUZZ_ASSERT(bi->n_mmap <= BOOT_MAX_MMAP);
	FUZZ_ASSERT(!bi->mmap_from_efi || bi->n_mmap);
	for (size_t i = 0; i < bi->n_mmap; i++) {
		const struct boot_mmap_entry *e = &bi->mmap[i], *prev = e - 1;

		FUZZ_ASSERT(e->len && e->start + e->len > e->start); /* no wrap past 2^64 */
		FUZZ_ASSERT(e->type >= MEM_USABLE && e->type <= MEM_BAD);
		if (i) {
			FUZZ_ASSERT(prev->start + prev->len <= e->start); /* sorted, disjoint */
			FUZZ_ASSERT(prev->start + prev->len < e->start || prev->type != e->type);
		}
	}

	FUZZ_ASSERT(bi->n_modules <= BOOT_MAX_MODULES);
	for (size_t i = 0; i < bi->n_modules; i++) {
		const struct boot_module *m = &bi->modules[i];

		FUZZ_ASSERT(m->start <= m->end && m->end <= UINT32_MAX);
		FUZZ_ASSERT(strnlen(m->cmdline, sizeof(m->cmdline)) < sizeof(m->cmdline));
	}

	FUZZ_ASSERT(bi->n_warnings <= BOOT_MSG_MAX);
	for (size_t i = 0; i < bi->n_warnings; i++)
		FUZZ_ASSERT(strnlen(bi->warnings[i], sizeof(bi->warnings[i])) <
			    sizeof(bi->warnings[i]));

	if (bi->rsdp) {
		uintptr_t at = (uintptr_t)bi->rsdp, lo = (uintptr_t)base;

		FUZZ_ASSERT(at >= lo + 16 && at <= lo + bi->total_size);
		FUZZ_ASSERT(bi->rsdp_len >= 20 && bi->rsdp_len <= lo + bi->total_size - at);
		FUZZ_ASSERT(!memcmp((const void *)at, "RSD PTR ", 8));
	} else {
		FUZZ_ASSERT(!bi->rsdp_len);
	}
}

/* Field by field: struct padding may differ. */
static bool same_info(const struct boot_info *a, const struct boot_info *b)
{
	if (strcmp(a->cmdline, b->cmdline) || a->n_mmap != b->n_mmap ||
	    a->mmap_from_efi != b->mmap_from_efi || a->n_modules != b->n_modules ||
	    a->rsdp != b->rsdp || a->rsdp_len != b->rsdp_len ||
	    a->mem_lower_kb != b->mem_lower_kb || a->mem_upper_kb != b->mem_upper_kb ||
	    a->efi_system_table != b->efi_system_table || a->total_size != b->total_size ||
	    a->n_warnings != b->n_warnings)
		return false;
	for (size_t i = 0; i < a->n_mmap; i++)
		if (a->mmap[i].start != b->mmap[i].start || a->mmap[i].len != b->mmap[i].len ||
		    a->mmap[i].type != b->mmap[i].type)
			return false;
	for (size_t i = 0; i < a->n_modules; i++)
		if (a->modules[i].start != b->modules[i].start ||
		    a->modules[i].end != b->modules[i].end ||
		    strcmp(a->modules[i].cmdline, b->modules[i].cmdline))
			return false;
	for (size_t i = 0; i < a->n_warnings; i++)
		if (strcmp(a->warnings[i], b->warnings[i]))
			return false;
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct boot_info bi, again;
	uint8_t *info = malloc(size ? size : 1); /* malloc's alignment: 16 */
	char err[128];

	memcpy(info, data, size);
	memset(err, 'Z', sizeof(err));
	bool ok = mb2_parse(info, size, &bi, err, sizeof(err));
	if (fuzz_verbose()) {
		printf("mb2: %s: %zu map entries, %zu modules, %zu warnings\n", ok ? "ok" : err,
		       bi.n_mmap, bi.n_modules, bi.n_warnings);
		for (size_t i = 0; i < bi.n_warnings; i++)
			printf("  %s\n", bi.warnings[i]);
	}
	if (ok) {
		check_info(&bi, info, size);
		check_map(&bi, info);
		/* Only the bytes inside total_size count. */
		FUZZ_ASSERT(mb2_parse(info, bi.total_size, &again, NULL, 0));
		FUZZ_ASSERT(same_info(&bi, &again));
	} else {
		FUZZ_ASSERT(err[0] != 'Z' && strnlen(err, sizeof(err)) < sizeof(err));
	}
	/* Misaligned: refused, without reading. */
	if (size > 8)
		FUZZ_ASSERT(!mb2_parse(info + 4, size - 4, &again, err, sizeof(err)));
	free(info);
	return 0;
}
