/* boot/multiboot2.c: well-formed BIOS- and UEFI-style infos built here tag by
 * tag, and broken ones. The parser gets a heap copy of exactly the bytes it may
 * read, so ASan reports any read past them. */
#include "check.h"
#include "boot/multiboot2.h"
#include "tests/rng.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct blob {
	uint8_t bytes[64 * 1024];
	size_t len;
};

static void put32(struct blob *b, size_t off, uint32_t v)
{
	memcpy(b->bytes + off, &v, 4);
}

static void blob_init(struct blob *b)
{
	memset(b->bytes, 0, sizeof(b->bytes));
	b->len = 8; /* total_size and reserved, written by blob_finish */
}

/* Append a tag of the given payload; returns the tag's offset. */
static size_t add_tag(struct blob *b, uint32_t type, const void *payload, size_t n)
{
	size_t off = b->len;

	put32(b, off, type);
	put32(b, off + 4, 8 + n);
	if (n)
		memcpy(b->bytes + off + 8, payload, n);
	b->len = (off + 8 + n + 7) & ~(size_t)7;
	return off;
}

static void blob_finish(struct blob *b)
{
	add_tag(b, 0, NULL, 0);
	put32(b, 0, b->len);
}

/* Payload builder for map tags, modules and the like. */
struct payload {
	uint8_t bytes[48 * 1024];
	size_t len;
};

static void p32(struct payload *p, uint32_t v)
{
	memcpy(p->bytes + p->len, &v, 4);
	p->len += 4;
}

static void p64(struct payload *p, uint64_t v)
{
	memcpy(p->bytes + p->len, &v, 8);
	p->len += 8;
}

static void pstr(struct payload *p, const char *s, size_t n)
{
	memcpy(p->bytes + p->len, s, n);
	p->len += n;
}

static void bios_entry(struct payload *p, uint64_t base, uint64_t len, uint32_t type)
{
	p64(p, base);
	p64(p, len);
	p32(p, type);
	p32(p, 0);
}

/* EFI descriptors of 48 bytes, as OVMF hands them out. */
#define EFI_DESC_SIZE 48

static void efi_desc(struct payload *p, uint32_t type, uint64_t phys, uint64_t pages)
{
	p32(p, type);
	p32(p, 0);
	p64(p, phys);
	p64(p, 0);
	p64(p, pages);
	p64(p, 0xf); /* attribute */
	p64(p, 0);   /* the larger descriptor's tail */
}

static size_t add_module(struct blob *b, uint32_t start, uint32_t end, const char *name)
{
	struct payload p = { .len = 0 };

	p32(&p, start);
	p32(&p, end);
	pstr(&p, name, strlen(name) + 1);
	return add_tag(b, 3, p.bytes, p.len);
}

static const uint8_t rsdp_v1[20] = "RSD PTR \x00OEMID \x00\x00\xe0\x0f\x00";
static const uint8_t rsdp_v2[36] = "RSD PTR \x00OEMID \x02\x00\xe0\x0f\x00\x24";

/* Parse a heap copy of exactly avail bytes of the blob. */
struct parsed {
	bool ok;
	struct boot_info info;
	char err[128];
	uint8_t *copy;
};

static void parsed_free(struct parsed *r)
{
	if (r)
		free(r->copy);
	free(r);
}

/* Each result lives until the next parse, so a test may stop at any REQUIRE. */
static struct parsed *parse_blob(const struct blob *b, size_t avail)
{
	static struct parsed *last;
	struct parsed *r = calloc(1, sizeof(*r));

	parsed_free(last);
	last = r;

	r->copy = malloc(avail ? avail : 1);
	memcpy(r->copy, b->bytes, avail);
	r->ok = mb2_parse(r->copy, avail, &r->info, r->err, sizeof(r->err));
	return r;
}

static bool has_warning(const struct boot_info *bi, const char *word)
{
	for (size_t i = 0; i < bi->n_warnings; i++)
		if (strstr(bi->warnings[i], word))
			return true;
	return false;
}

static bool map_is_normal(const struct boot_info *bi)
{
	for (size_t i = 0; i < bi->n_mmap; i++) {
		const struct boot_mmap_entry *e = &bi->mmap[i];
		if (!e->len)
			return false;
		if (i && bi->mmap[i - 1].start + bi->mmap[i - 1].len > e->start)
			return false; /* unsorted or overlapping */
		if (i && bi->mmap[i - 1].start + bi->mmap[i - 1].len == e->start &&
		    bi->mmap[i - 1].type == e->type)
			return false; /* unmerged */
	}
	return true;
}

static struct blob blob;

TEST(mb2_bios_style)
{
	struct payload p = { .len = 0 };

	blob_init(&blob);
	const char *cmd = "\"run=mem; cpus\" leaf_hint=off";
	add_tag(&blob, 1, cmd, strlen(cmd) + 1);
	add_tag(&blob, 2, "GRUB 2.06", 10); /* boot loader name: not used */
	p32(&p, 639);
	p32(&p, 1047424);
	add_tag(&blob, 4, p.bytes, p.len);

	p.len = 0;
	p32(&p, 24);
	p32(&p, 0);
	bios_entry(&p, 0, 0x9fc00, 1);
	bios_entry(&p, 0x9fc00, 0x400, 2);
	bios_entry(&p, 0xf0000, 0x10000, 2);
	bios_entry(&p, 0x100000, 0x3fee0000 - 0x100000, 1);
	bios_entry(&p, 0x3fee0000, 0x20000, 3);
	bios_entry(&p, 0xfffc0000, 0x40000, 2);
	bios_entry(&p, 0x100000000, 0x40000000, 1);
	bios_entry(&p, 0x140000000, 0, 1); /* empty: dropped */
	add_tag(&blob, 6, p.bytes, p.len);

	add_module(&blob, 0x200000, 0x201000, "guest1 arg");
	add_module(&blob, 0x300000, 0x300000, "");
	size_t rsdp_off = add_tag(&blob, 14, rsdp_v1, sizeof(rsdp_v1));
	blob_finish(&blob);

	struct parsed *r = parse_blob(&blob, blob.len);
	struct boot_info *bi = &r->info;
	REQUIRE(r->ok);
	CHECK(bi->n_warnings == 0);
	CHECK(strcmp(bi->cmdline, cmd) == 0);
	CHECK(bi->mem_lower_kb == 639 && bi->mem_upper_kb == 1047424);
	CHECK(!bi->mmap_from_efi);
	CHECK_EQ_U64(bi->n_mmap, 7);
	CHECK(map_is_normal(bi));
	CHECK(bi->mmap[0].start == 0 && bi->mmap[0].len == 0x9fc00 && bi->mmap[0].type == MEM_USABLE);
	CHECK(bi->mmap[1].start == 0x9fc00 && bi->mmap[1].type == MEM_RESERVED);
	CHECK(bi->mmap[4].start == 0x3fee0000 && bi->mmap[4].type == MEM_ACPI_RECLAIMABLE);
	CHECK(bi->mmap[6].start == 0x100000000 && bi->mmap[6].len == 0x40000000);
	CHECK_EQ_U64(bi->n_modules, 2);
	CHECK(bi->modules[0].start == 0x200000 && bi->modules[0].end == 0x201000);
	CHECK(strcmp(bi->modules[0].cmdline, "guest1 arg") == 0);
	CHECK(bi->modules[1].start == 0x300000 && bi->modules[1].end == 0x300000);
	CHECK_EQ_U64(bi->rsdp, (uintptr_t)(r->copy + rsdp_off + 8));
	CHECK(bi->rsdp_len == 20);
	CHECK(bi->efi_system_table == 0);
	CHECK(bi->total_size == blob.len);
}

TEST(mb2_uefi_style)
{
	struct payload p = { .len = 0 };

	blob_init(&blob);
	add_tag(&blob, 1, "", 1);
	p64(&p, 0x3f6ee018);
	add_tag(&blob, 12, p.bytes, p.len);

	/* A coarse BIOS map too: GRUB passes both under UEFI. */
	p.len = 0;
	p32(&p, 24);
	p32(&p, 0);
	bios_entry(&p, 0, 0x40000000, 1);
	add_tag(&blob, 6, p.bytes, p.len);

	p.len = 0;
	p32(&p, EFI_DESC_SIZE);
	p32(&p, 1);
	efi_desc(&p, 3, 0, 1);           /* BootServicesCode */
	efi_desc(&p, 7, 0x1000, 0x9f);   /* Conventional, merges with the above */
	efi_desc(&p, 0, 0xa0000, 0x60);  /* reserved */
	efi_desc(&p, 2, 0x100000, 0x100); /* LoaderData */
	efi_desc(&p, 1, 0x200000, 0x10); /* LoaderCode */
	efi_desc(&p, 4, 0x210000, 0x5f0); /* BootServicesData */
	efi_desc(&p, 10, 0x800000, 0x8); /* ACPI NVS */
	efi_desc(&p, 7, 0x808000, 0x8);
	efi_desc(&p, 9, 0x810000, 0x10); /* ACPI reclaim */
	efi_desc(&p, 5, 0x3f000000, 0x100); /* RuntimeServicesCode */
	efi_desc(&p, 6, 0x3f100000, 0x100); /* RuntimeServicesData */
	efi_desc(&p, 8, 0x3f200000, 0x10);  /* Unusable */
	efi_desc(&p, 11, 0xffc00000, 0x400); /* MMIO */
	efi_desc(&p, 14, 0x180000000, 0x10); /* persistent */
	add_tag(&blob, 17, p.bytes, p.len);

	size_t old_off = add_tag(&blob, 14, rsdp_v1, sizeof(rsdp_v1));
	size_t new_off = add_tag(&blob, 15, rsdp_v2, sizeof(rsdp_v2));
	blob_finish(&blob);

	struct parsed *r = parse_blob(&blob, blob.len);
	struct boot_info *bi = &r->info;
	REQUIRE(r->ok);
	CHECK(bi->n_warnings == 0);
	CHECK(bi->cmdline[0] == '\0');
	CHECK_EQ_U64(bi->efi_system_table, 0x3f6ee018);
	CHECK(bi->mmap_from_efi);
	CHECK(map_is_normal(bi));
	static const struct boot_mmap_entry want[] = {
		{ 0, 0xa0000, MEM_USABLE },
		{ 0xa0000, 0x60000, MEM_RESERVED },
		{ 0x100000, 0x700000, MEM_USABLE },
		{ 0x800000, 0x8000, MEM_NVS },
		{ 0x808000, 0x8000, MEM_USABLE },
		{ 0x810000, 0x10000, MEM_ACPI_RECLAIMABLE },
		{ 0x3f000000, 0x200000, MEM_RESERVED },
		{ 0x3f200000, 0x10000, MEM_BAD },
		{ 0xffc00000, 0x400000, MEM_RESERVED },
		{ 0x180000000, 0x10000, MEM_RESERVED },
	};
	CHECK_EQ_U64(bi->n_mmap, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < bi->n_mmap && i < sizeof(want) / sizeof(want[0]); i++) {
		CHECK_EQ_U64(bi->mmap[i].start, want[i].start);
		CHECK_EQ_U64(bi->mmap[i].len, want[i].len);
		CHECK_EQ_U64(bi->mmap[i].type, want[i].type);
	}
	CHECK_EQ_U64(bi->rsdp, (uintptr_t)(r->copy + new_off + 8));
	CHECK(bi->rsdp != (uintptr_t)(r->copy + old_off + 8));
	CHECK(bi->rsdp_len == 36);
}

/* A small valid info to break in various ways. */
static void minimal_blob(void)
{
	blob_init(&blob);
	add_tag(&blob, 1, "x=1", 4);
	blob_finish(&blob);
}

static void expect_refused(const struct blob *b, size_t avail, const char *word)
{
	struct parsed *r = parse_blob(b, avail);

	CHECK(!r->ok);
	if (!strstr(r->err, word)) {
		char msg[256];
		snprintf(msg, sizeof(msg), "error \"%s\" lacks \"%s\"", r->err, word);
		unit_fail(__FILE__, __LINE__, msg);
	}
}

TEST(mb2_refuses_broken_structure)
{
	minimal_blob();
	struct parsed *r = parse_blob(&blob, blob.len);
	CHECK(r->ok);

	/* total_size larger than what may be read. */
	expect_refused(&blob, blob.len - 8, "exceeds");
	/* Not even a header. */
	expect_refused(&blob, 4, "too small");
	/* total_size too small for a tag, or cutting off the end tag. */
	put32(&blob, 0, 8);
	expect_refused(&blob, blob.len, "too small");
	put32(&blob, 0, 0);
	expect_refused(&blob, blob.len, "too small");
	put32(&blob, 0, blob.len - 8);
	expect_refused(&blob, blob.len, "no end tag");
	put32(&blob, 0, 16);
	expect_refused(&blob, blob.len, "overruns");

	/* A tag whose size is below its own header. */
	minimal_blob();
	put32(&blob, 12, 4);
	expect_refused(&blob, blob.len, "size 4");
	put32(&blob, 12, 0);
	expect_refused(&blob, blob.len, "size 0");
	/* A tag running past total_size, and one far past it. */
	minimal_blob();
	put32(&blob, 12, blob.len - 8 + 1);
	expect_refused(&blob, blob.len, "overruns");
	put32(&blob, 12, 0xfffffff8);
	expect_refused(&blob, blob.len, "overruns");

	/* No end tag: the chain just stops at total_size. */
	blob_init(&blob);
	add_tag(&blob, 1, "x=1", 4);
	put32(&blob, 0, blob.len);
	expect_refused(&blob, blob.len, "no end tag");
	/* A chain whose padding runs past total_size (total not a multiple of 8). */
	blob_init(&blob);
	add_tag(&blob, 1, "x=12", 5);
	put32(&blob, 0, 8 + 13);
	expect_refused(&blob, blob.len, "no end tag");
	/* An end tag of the wrong size. */
	blob_init(&blob);
	add_tag(&blob, 0, "12345678", 8);
	put32(&blob, 0, blob.len);
	expect_refused(&blob, blob.len, "end tag");

	/* Misaligned or missing info. */
	minimal_blob();
	uint8_t *raw = malloc(blob.len + 1);
	memcpy(raw + 1, blob.bytes, blob.len);
	struct boot_info *bi = malloc(sizeof(*bi));
	char err[128] = "";
	CHECK(!mb2_parse(raw + 1, blob.len, bi, err, sizeof(err)));
	CHECK(strstr(err, "aligned") != NULL);
	CHECK(!mb2_parse(NULL, 0, bi, err, sizeof(err)));
	CHECK(!mb2_parse(raw + 1, blob.len, bi, NULL, 0)); /* no room for a reason: still refused */
	free(raw);
	free(bi);
}

TEST(mb2_total_size_not_multiple_of_8)
{
	/* Some loaders count only up to the end tag's last byte plus slack. */
	minimal_blob();
	put32(&blob, 0, blob.len + 3);
	struct parsed *r = parse_blob(&blob, blob.len + 3);
	CHECK(r->ok && strcmp(r->info.cmdline, "x=1") == 0);
}

static struct parsed *parse_with_bios_map(uint32_t entry_size, size_t n_entries)
{
	struct payload *p = calloc(1, sizeof(*p));

	blob_init(&blob);
	p32(p, entry_size);
	p32(p, 0);
	for (size_t i = 0; i < n_entries; i++) {
		bios_entry(p, i * 0x2000, 0x1000, 1 + i % 2);
		for (size_t pad = 24; pad < entry_size && p->len + 1 < sizeof(p->bytes); pad++)
			p->bytes[p->len++] = 0xee;
	}
	add_tag(&blob, 6, p->bytes, p->len);
	blob_finish(&blob);
	free(p);
	return parse_blob(&blob, blob.len);
}

TEST(mb2_bad_map_entry_size)
{
	static const uint32_t bad[] = { 0, 20, 28, 25 };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct parsed *r = parse_with_bios_map(bad[i], bad[i] ? 4 : 0);
		CHECK(r->ok);
		CHECK(r->info.n_mmap == 0);
		CHECK(has_warning(&r->info, "entry size"));
	}
	/* Larger entries than 24 bytes are fine. */
	struct parsed *r = parse_with_bios_map(32, 3);
	CHECK(r->ok && r->info.n_mmap == 3 && r->info.n_warnings == 0);
	CHECK(r->info.mmap[2].start == 0x4000 && r->info.mmap[2].type == MEM_USABLE);
	/* A map tag too short for its own header. */
	blob_init(&blob);
	add_tag(&blob, 6, "\x18\0\0\0", 4);
	blob_finish(&blob);
	r = parse_blob(&blob, blob.len);
	CHECK(r->ok && r->info.n_mmap == 0 && has_warning(&r->info, "too short"));
}

TEST(mb2_huge_entry_count)
{
	/* 1500 separate ranges: the map keeps what fits and says so. */
	struct parsed *r = parse_with_bios_map(24, 1500);
	REQUIRE(r->ok);
	CHECK(r->info.n_mmap == BOOT_MAX_MMAP);
	CHECK(map_is_normal(&r->info));
	CHECK(has_warning(&r->info, "dropped"));

	/* Adjacent ranges of one type merge as they come, so a long map fits. */
	struct payload *p = calloc(1, sizeof(*p));
	blob_init(&blob);
	p32(p, EFI_DESC_SIZE);
	p32(p, 1);
	for (int i = 0; i < 900; i++)
		efi_desc(p, i % 2 ? 7 : 4, (uint64_t)i << 12, 1);
	add_tag(&blob, 17, p->bytes, p->len);
	blob_finish(&blob);
	free(p);
	r = parse_blob(&blob, blob.len);
	CHECK(r->ok && r->info.n_mmap == 1 && r->info.mmap[0].len == 900 << 12);
	CHECK(r->info.n_warnings == 0);
}

TEST(mb2_map_overlaps_resolved)
{
	struct payload p = { .len = 0 };

	/* Unsorted, overlapping: reserved inside usable, usable over NVS. */
	blob_init(&blob);
	p32(&p, 24);
	p32(&p, 0);
	bios_entry(&p, 0x200000, 0x100000, 1);
	bios_entry(&p, 0, 0x200000, 1);
	bios_entry(&p, 0x100000, 0x1000, 2);
	bios_entry(&p, 0x180000, 0x100000, 4);
	bios_entry(&p, 0x1000, 0x1000, 7); /* unknown type: reserved */
	bios_entry(&p, 0xfffffffffffff000, 0x2000, 1); /* wraps: skipped */
	add_tag(&blob, 6, p.bytes, p.len);
	blob_finish(&blob);
	struct parsed *r = parse_blob(&blob, blob.len);
	struct boot_info *bi = &r->info;
	REQUIRE(r->ok);
	static const struct boot_mmap_entry want[] = {
		{ 0, 0x1000, MEM_USABLE },
		{ 0x1000, 0x1000, MEM_RESERVED },
		{ 0x2000, 0xfe000, MEM_USABLE },
		{ 0x100000, 0x1000, MEM_RESERVED },
		{ 0x101000, 0x7f000, MEM_USABLE },
		{ 0x180000, 0x100000, MEM_NVS },
		{ 0x280000, 0x80000, MEM_USABLE },
	};
	CHECK_EQ_U64(bi->n_mmap, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < bi->n_mmap && i < sizeof(want) / sizeof(want[0]); i++) {
		CHECK_EQ_U64(bi->mmap[i].start, want[i].start);
		CHECK_EQ_U64(bi->mmap[i].len, want[i].len);
		CHECK_EQ_U64(bi->mmap[i].type, want[i].type);
	}
	CHECK(has_warning(bi, "2^64"));
}

static int rank(uint32_t type)
{
	static const int ranks[] = { [MEM_USABLE] = 1, [MEM_ACPI_RECLAIMABLE] = 2, [MEM_RESERVED] = 3,
				     [MEM_NVS] = 4, [MEM_BAD] = 5 };
	return ranks[type];
}

TEST(mb2_map_random_against_model)
{
	/* Random overlapping maps over 64 pages, checked page by page against a
	 * model where the most restrictive type covering a page wins. */
	struct rng rng = rng_seeded(0x9e3779b97f4a7c15ull);

	for (int iter = 0; iter < 2000; iter++) {
		struct payload p = { .len = 0 };
		uint32_t model[64] = { 0 };
		int n = 1 + (int)rng_below(&rng, 12);

		p32(&p, 24);
		p32(&p, 0);
		for (int k = 0; k < n; k++) {
			uint64_t r = rng_next(&rng);
			uint64_t first = (r >> 20) % 64, count = (r >> 30) % 16;
			uint32_t type = 1 + (r >> 40) % 5;
			if (first + count > 64)
				count = 64 - first;
			bios_entry(&p, first << 12, count << 12, type);
			for (uint64_t pg = first; pg < first + count; pg++)
				if (rank(type) > (model[pg] ? rank(model[pg]) : 0))
					model[pg] = type;
		}
		blob_init(&blob);
		add_tag(&blob, 6, p.bytes, p.len);
		blob_finish(&blob);
		struct parsed *r = parse_blob(&blob, blob.len);
		REQUIRE(r->ok);
		CHECK(map_is_normal(&r->info));
		uint32_t got[64] = { 0 };
		for (size_t i = 0; i < r->info.n_mmap; i++)
			for (uint64_t a = r->info.mmap[i].start; a < r->info.mmap[i].start + r->info.mmap[i].len;
			     a += 0x1000)
				got[a >> 12] = r->info.mmap[i].type;
		CHECK(memcmp(got, model, sizeof(got)) == 0);
		if (unit_failures_in_current)
			return;
	}
}

TEST(mb2_module_faults)
{
	blob_init(&blob);
	add_module(&blob, 0x200000, 0x1ff000, "backwards");
	add_module(&blob, 0x300000, 0x301000, "ok");
	/* A module tag with only start and end, and one with an unterminated string. */
	uint32_t bare[2] = { 0x400000, 0x401000 };
	add_tag(&blob, 3, bare, sizeof(bare));
	struct payload p = { .len = 0 };
	p32(&p, 0x500000);
	p32(&p, 0x501000);
	pstr(&p, "abc", 3);
	add_tag(&blob, 3, p.bytes, p.len);
	add_tag(&blob, 3, bare, 4); /* too short for end */
	blob_finish(&blob);

	struct parsed *r = parse_blob(&blob, blob.len);
	struct boot_info *bi = &r->info;
	REQUIRE(r->ok);
	REQUIRE(bi->n_modules == 3);
	CHECK(strcmp(bi->modules[0].cmdline, "ok") == 0);
	CHECK(bi->modules[1].start == 0x400000 && bi->modules[1].cmdline[0] == '\0');
	CHECK(bi->modules[2].start == 0x500000 && strcmp(bi->modules[2].cmdline, "abc") == 0);
	CHECK(has_warning(bi, "ends before"));
	CHECK(has_warning(bi, "unterminated"));
	CHECK(has_warning(bi, "too short"));

	/* More modules than fit. */
	blob_init(&blob);
	for (int i = 0; i < BOOT_MAX_MODULES + 2; i++)
		add_module(&blob, i << 12, (i + 1) << 12, "m");
	blob_finish(&blob);
	r = parse_blob(&blob, blob.len);
	CHECK(r->ok && r->info.n_modules == BOOT_MAX_MODULES);
	CHECK(has_warning(&r->info, "more than"));
}

TEST(mb2_cmdline_faults)
{
	/* Not terminated inside its tag: copied up to the tag's end. */
	blob_init(&blob);
	add_tag(&blob, 1, "run=mem", 7);
	blob_finish(&blob);
	struct parsed *r = parse_blob(&blob, blob.len);
	/* Malformed, so possibly not all of it: run= will not run from it. */
	CHECK(r->ok && strcmp(r->info.cmdline, "run=mem") == 0 && r->info.cmdline_cut);
	CHECK(has_warning(&r->info, "command line"));

	/* Longer than the copy can hold: cut, terminated, with a warning. */
	static char longline[BOOT_CMDLINE_MAX + 100];
	memset(longline, 'a', sizeof(longline) - 1);
	blob_init(&blob);
	add_tag(&blob, 1, longline, sizeof(longline));
	blob_finish(&blob);
	r = parse_blob(&blob, blob.len);
	CHECK(r->ok && strlen(r->info.cmdline) == BOOT_CMDLINE_MAX - 1);
	CHECK(has_warning(&r->info, "command line") && r->info.cmdline_cut);

	/* An empty cmdline tag (header only). */
	blob_init(&blob);
	add_tag(&blob, 1, NULL, 0);
	blob_finish(&blob);
	r = parse_blob(&blob, blob.len);
	CHECK(r->ok && r->info.cmdline[0] == '\0');
}

TEST(mb2_unknown_and_duplicate_tags)
{
	blob_init(&blob);
	add_tag(&blob, 9, "ELF-sections-ish bytes", 22);
	add_tag(&blob, 21, "\0\0\x10\0", 4);
	add_tag(&blob, 999, NULL, 0);
	add_tag(&blob, 1, "first", 6);
	blob_finish(&blob);
	struct parsed *r = parse_blob(&blob, blob.len);
	CHECK(r->ok && r->info.n_warnings == 0 && strcmp(r->info.cmdline, "first") == 0);

	blob_init(&blob);
	add_tag(&blob, 1, "first", 6);
	add_tag(&blob, 1, "second", 7);
	blob_finish(&blob);
	r = parse_blob(&blob, blob.len);
	CHECK(r->ok && strcmp(r->info.cmdline, "first") == 0 && has_warning(&r->info, "duplicate"));
}

TEST(mb2_efi_faults)
{
	struct payload p = { .len = 0 };

	/* Descriptor size below 40: the EFI map is skipped, the BIOS map used. */
	blob_init(&blob);
	p32(&p, 32);
	p32(&p, 1);
	add_tag(&blob, 17, p.bytes, p.len);
	p.len = 0;
	p32(&p, 24);
	p32(&p, 0);
	bios_entry(&p, 0, 0x1000, 1);
	add_tag(&blob, 6, p.bytes, p.len);
	blob_finish(&blob);
	struct parsed *r = parse_blob(&blob, blob.len);
	CHECK(r->ok && !r->info.mmap_from_efi && r->info.n_mmap == 1);
	CHECK(has_warning(&r->info, "EFI memory map"));

	/* Page counts that overflow, short EFI64 and RSDP tags, a bad signature. */
	blob_init(&blob);
	p.len = 0;
	p32(&p, EFI_DESC_SIZE);
	p32(&p, 1);
	efi_desc(&p, 7, 0x1000, 1ull << 60);
	efi_desc(&p, 7, 0x2000, 1);
	add_tag(&blob, 17, p.bytes, p.len);
	add_tag(&blob, 12, "\1\2\3\4", 4);
	add_tag(&blob, 15, rsdp_v2, 20);
	add_tag(&blob, 14, "RSD PTX 0123456789ab", 20);
	blob_finish(&blob);
	r = parse_blob(&blob, blob.len);
	CHECK(r->ok && r->info.mmap_from_efi && r->info.n_mmap == 1);
	CHECK(r->info.efi_system_table == 0 && r->info.rsdp == 0);
	CHECK(has_warning(&r->info, "2^64") && has_warning(&r->info, "EFI64"));
	CHECK(has_warning(&r->info, "new RSDP") && has_warning(&r->info, "old RSDP"));
}

TEST(mb2_warning_overflow)
{
	blob_init(&blob);
	for (int i = 0; i < BOOT_MSG_MAX + 3; i++)
		add_module(&blob, 2, 1, "");
	blob_finish(&blob);
	struct parsed *r = parse_blob(&blob, blob.len);
	CHECK(r->ok && r->info.n_modules == 0 && r->info.n_warnings == BOOT_MSG_MAX);
	CHECK(strstr(r->info.warnings[BOOT_MSG_MAX - 1], "further warnings") != NULL);
}

/* A framebuffer tag's payload as GRUB 2.06 lays it out: the common part with
 * a 16-bit reserved field, then for RGB the six position/size bytes. */
static void fb_payload(struct payload *p, uint64_t addr, uint32_t pitch, uint32_t w, uint32_t h,
		       uint8_t bpp, uint8_t type)
{
	p->len = 0;
	p64(p, addr);
	p32(p, pitch);
	p32(p, w);
	p32(p, h);
	pstr(p, (const char[]){ (char)bpp, (char)type, 0, 0 }, 4);
}

TEST(mb2_framebuffer_rgb_and_ega_text)
{
	struct payload p;

	/* OVMF's GOP as GRUB hands it over under QEMU: 800x600, 24 bpp. */
	blob_init(&blob);
	fb_payload(&p, 0x80000000, 2400, 800, 600, 24, 1);
	pstr(&p, "\x10\x08\x08\x08\x00\x08", 6);
	add_tag(&blob, 8, p.bytes, p.len);
	blob_finish(&blob);
	struct parsed *r = parse_blob(&blob, blob.len);
	const struct boot_framebuffer *fb = &r->info.fb;
	REQUIRE(r->ok);
	CHECK(r->info.n_warnings == 0);
	CHECK(fb->present && fb->type == BOOT_FB_RGB);
	CHECK_EQ_U64(fb->addr, 0x80000000);
	CHECK(fb->pitch == 2400 && fb->width == 800 && fb->height == 600 && fb->bpp == 24);
	CHECK(fb->red_pos == 16 && fb->red_size == 8 && fb->green_pos == 8 && fb->green_size == 8);
	CHECK(fb->blue_pos == 0 && fb->blue_size == 8);

	/* SeaBIOS in text mode: GRUB describes VGA text as EGA text. */
	blob_init(&blob);
	fb_payload(&p, 0xb8000, 160, 80, 25, 16, 2);
	add_tag(&blob, 8, p.bytes, p.len);
	blob_finish(&blob);
	r = parse_blob(&blob, blob.len);
	REQUIRE(r->ok);
	CHECK(r->info.fb.present && r->info.fb.type == BOOT_FB_EGA_TEXT);
	CHECK(r->info.fb.width == 80 && r->info.fb.height == 25 && r->info.fb.addr == 0xb8000);

	/* No tag: nothing claimed. */
	blob_init(&blob);
	blob_finish(&blob);
	r = parse_blob(&blob, blob.len);
	CHECK(r->ok && !r->info.fb.present);
}

TEST(mb2_framebuffer_faults)
{
	struct payload p;

	/* Too short for the common part, and RGB without its colour fields. */
	blob_init(&blob);
	fb_payload(&p, 0x80000000, 2400, 800, 600, 24, 1);
	add_tag(&blob, 8, p.bytes, p.len - 2);
	blob_finish(&blob);
	struct parsed *r = parse_blob(&blob, blob.len);
	CHECK(r->ok && !r->info.fb.present && has_warning(&r->info, "too short"));

	blob_init(&blob);
	add_tag(&blob, 8, p.bytes, p.len);
	blob_finish(&blob);
	r = parse_blob(&blob, blob.len);
	CHECK(r->ok && !r->info.fb.present && has_warning(&r->info, "too short"));

	/* A pitch shorter than a line, no address, a range past 2^64. */
	const struct { uint64_t addr; uint32_t pitch; } bad[] = {
		{ 0x80000000, 2399 }, { 0, 2400 }, { UINT64_MAX - 4096, 2400 },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		blob_init(&blob);
		fb_payload(&p, bad[i].addr, bad[i].pitch, 800, 600, 24, 1);
		pstr(&p, "\x10\x08\x08\x08\x00\x08", 6);
		add_tag(&blob, 8, p.bytes, p.len);
		blob_finish(&blob);
		r = parse_blob(&blob, blob.len);
		CHECK(r->ok && !r->info.fb.present && has_warning(&r->info, "inconsistent"));
	}

	/* A second tag is ignored with a warning; the first stands. */
	blob_init(&blob);
	fb_payload(&p, 0xb8000, 160, 80, 25, 16, 2);
	add_tag(&blob, 8, p.bytes, p.len);
	fb_payload(&p, 0x80000000, 2400, 800, 600, 24, 1);
	pstr(&p, "\x10\x08\x08\x08\x00\x08", 6);
	add_tag(&blob, 8, p.bytes, p.len);
	blob_finish(&blob);
	r = parse_blob(&blob, blob.len);
	CHECK(r->ok && r->info.fb.type == BOOT_FB_EGA_TEXT && has_warning(&r->info, "duplicate"));
}
