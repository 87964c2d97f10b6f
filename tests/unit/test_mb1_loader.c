/* virt/mb1_loader.c: ELF32 and a.out-kludge multiboot kernels built here,
 * loaded into a VM through the MMU and read back (segments, bss, entry, the
 * info structure, memory map, strings, modules); then malformed images, each
 * of which must be refused with the expected reason. Images are handed over in
 * heap copies of exactly their length, so ASan reports any read past them. */
#include "check.h"
#include "mm/mmu.h"
#include "svm/npt.h"
#include "tests/unit/host_mem.h"
#include "virt/mb1_loader.h"
#include <stdlib.h>
#include <string.h>

#define MiB (1ull << 20)
#define GUEST_MEM (16 * MiB)

/* The ELF test kernel: segment 0 is the first 0x200 bytes of the file (ELF
 * header, program headers, multiboot header, code) at 0x100000; segment 1 is
 * 0x100 bytes of data plus bss at 0x102000. Every byte of the file is loaded,
 * so every truncation must be refused. */
#define ELF_SIZE 0x300
#define ELF_PHOFF 52
#define ELF_MB_HDR 128
#define ELF_TEXT 0x100000u
#define ELF_DATA 0x102000u
#define ELF_DATA_MEMSZ 0x3000u
#define ELF_ENTRY 0x100100u

/* The a.out kludge kernel: header at file offset 0x40, file loaded at 0x100000
 * up to 0x180, bss to 0x102000. */
#define AOUT_SIZE 0x180
#define AOUT_HDR 0x40
#define AOUT_LOAD 0x100000u
#define AOUT_BSS_END 0x102000u
#define AOUT_ENTRY 0x100080u

struct image {
	uint8_t b[0x4000];
	size_t len;
};

static void put16(struct image *im, size_t off, uint16_t v)
{
	memcpy(im->b + off, &v, 2);
}

static void put32(struct image *im, size_t off, uint32_t v)
{
	memcpy(im->b + off, &v, 4);
}

static void mb_header(struct image *im, size_t off, uint32_t flags)
{
	put32(im, off, MB1_HEADER_MAGIC);
	put32(im, off + 4, flags);
	put32(im, off + 8, -(MB1_HEADER_MAGIC + flags));
}

static void fill_pattern(struct image *im, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++)
		im->b[i] = (uint8_t)(i * 7 + 3);
}

static void phdr(struct image *im, int i, uint32_t type, uint32_t off, uint32_t vaddr,
		 uint32_t paddr, uint32_t filesz, uint32_t memsz, uint32_t flags)
{
	size_t p = ELF_PHOFF + 32 * i;

	put32(im, p, type);
	put32(im, p + 4, off);
	put32(im, p + 8, vaddr);
	put32(im, p + 12, paddr);
	put32(im, p + 16, filesz);
	put32(im, p + 20, memsz);
	put32(im, p + 24, flags);
	put32(im, p + 28, 0x1000);
}

static void elf_image(struct image *im)
{
	static const uint8_t ident[16] = { 0x7f, 'E', 'L', 'F', 1, 1, 1 };

	memset(im, 0, sizeof(*im));
	im->len = ELF_SIZE;
	fill_pattern(im, 0, ELF_SIZE);
	memset(im->b, 0, ELF_MB_HDR + 12);
	memcpy(im->b, ident, 16);
	put16(im, 16, 2);  /* ET_EXEC */
	put16(im, 18, 3);  /* EM_386 */
	put32(im, 20, 1);
	put32(im, 24, ELF_ENTRY);
	put32(im, 28, ELF_PHOFF);
	put16(im, 40, 52);
	put16(im, 42, 32);
	put16(im, 44, 2);
	phdr(im, 0, 1, 0, ELF_TEXT, ELF_TEXT, 0x200, 0x200, 5);
	phdr(im, 1, 1, 0x200, ELF_DATA, ELF_DATA, 0x100, ELF_DATA_MEMSZ, 6);
	mb_header(im, ELF_MB_HDR, 3);
}

static void aout_image(struct image *im, uint32_t load_end)
{
	memset(im, 0, sizeof(*im));
	im->len = AOUT_SIZE;
	fill_pattern(im, 0, AOUT_SIZE);
	mb_header(im, AOUT_HDR, 1u << 16 | 3);
	put32(im, AOUT_HDR + 12, AOUT_LOAD + AOUT_HDR);
	put32(im, AOUT_HDR + 16, AOUT_LOAD);
	put32(im, AOUT_HDR + 20, load_end);
	put32(im, AOUT_HDR + 24, AOUT_BSS_END);
	put32(im, AOUT_HDR + 28, AOUT_ENTRY);
}

/* mb1_check on a heap copy of exactly len bytes of the image. */
static int check_copy(const struct image *im, size_t len, uint64_t guest_mem,
		      const struct mb1_module_src *mods, size_t n_mods, char *err, size_t errlen)
{
	void *copy = malloc(len ? len : 1);
	int rc;

	memcpy(copy, im->b, len);
	rc = mb1_check(copy, len, guest_mem, "x", mods, n_mods, err, errlen);
	free(copy);
	return rc;
}

/* Refused, with `reason` in the message. */
static bool refused(const struct image *im, uint64_t guest_mem, const char *reason)
{
	char err[160] = "";

	if (check_copy(im, im->len, guest_mem, NULL, 0, err, sizeof(err)) == 0) {
		printf("  accepted, expected \"%s\"\n", reason);
		return false;
	}
	if (!strstr(err, reason)) {
		printf("  refused with \"%s\", expected \"%s\"\n", err, reason);
		return false;
	}
	return true;
}

static uint64_t free_bytes(void)
{
	struct frame_stats st;

	frame_get_stats(&st);
	return st.free_bytes;
}

static void no_flush(void *ctx)
{
	(void)ctx;
}

static bool vm_create(struct mmu *mmu, uint64_t guest_mem)
{
	struct memslot_config cfg = { .gpa = 0, .size = guest_mem,
				      .backing = { .kind = BACKING_LAZY } };

	if (mmu_init(mmu, &npt_format, no_flush, NULL))
		return false;
	if (mmu_slot_add(mmu, &cfg) == 0)
		return true;
	mmu_destroy(mmu);
	return false;
}

static uint32_t guest32(struct mmu *mmu, uint64_t gpa)
{
	uint32_t v = 0xdeadbeef;

	CHECK(mmu_read_guest(mmu, gpa, &v, 4) == 0);
	return v;
}

static uint64_t guest64(struct mmu *mmu, uint64_t gpa)
{
	uint64_t v = 0xdeadbeef;

	CHECK(mmu_read_guest(mmu, gpa, &v, 8) == 0);
	return v;
}

static bool guest_equals(struct mmu *mmu, uint64_t gpa, const void *want, size_t len)
{
	uint8_t *got = malloc(len ? len : 1);
	bool same = mmu_read_guest(mmu, gpa, got, len) == 0 && memcmp(got, want, len) == 0;

	free(got);
	return same;
}

static bool guest_zero(struct mmu *mmu, uint64_t gpa, size_t len)
{
	uint8_t *z = calloc(1, len);
	bool same = guest_equals(mmu, gpa, z, len);

	free(z);
	return same;
}

static bool guest_string(struct mmu *mmu, uint32_t gpa, const char *want)
{
	return guest_equals(mmu, gpa, want, strlen(want) + 1);
}

/* The info structure, memory map and strings every load must produce. */
static void check_info(struct mmu *mmu, const struct mb1_entry *e, uint64_t guest_mem,
		       const char *cmdline)
{
	static const uint64_t map[4][3] = {
		{ 0, 0x9fc00, 1 },
		{ 0x9fc00, 0x400, 2 },
		{ 0xf0000, 0x10000, 2 },
		{ 0x100000, 0, 1 },
	};
	uint32_t info = e->ebx, mmap;

	CHECK_EQ_U64(e->eax, MB1_BOOTLOADER_MAGIC);
	CHECK_EQ_U64(info, MB1_INFO_GPA);
	CHECK_EQ_U64(guest32(mmu, info + 0), 0x24f);
	CHECK_EQ_U64(guest32(mmu, info + 4), 640);
	CHECK_EQ_U64(guest32(mmu, info + 8), guest_mem / 1024 - 1024);
	CHECK_EQ_U64(guest32(mmu, info + 12), 0x8000ffff);
	CHECK(guest_string(mmu, guest32(mmu, info + 16), cmdline));
	CHECK(guest_string(mmu, guest32(mmu, info + 64), "sprig"));
	CHECK_EQ_U64(guest32(mmu, info + 44), 4 * 24);
	mmap = guest32(mmu, info + 48);
	CHECK_EQ_U64(mmap, MB1_MMAP_GPA);
	for (int i = 0; i < 4; i++) {
		uint32_t at = mmap + 24 * i;
		uint64_t len = i == 3 ? guest_mem - 0x100000 : map[i][1];

		CHECK_EQ_U64(guest32(mmu, at), 20);
		CHECK_EQ_U64(guest64(mmu, at + 4), map[i][0]);
		CHECK_EQ_U64(guest64(mmu, at + 12), len);
		CHECK_EQ_U64(guest32(mmu, at + 20), map[i][2]);
	}
}

TEST(mb1_elf_load)
{
	static const char mod0[] = "first module";
	uint8_t mod1[5000];
	struct mb1_module_src mods[2] = {
		{ mod0, sizeof(mod0), "mod0 arg" },
		{ mod1, sizeof(mod1), NULL },
	};
	uint8_t garbage[0x1000 + ELF_DATA_MEMSZ];
	struct image im;
	struct mb1_entry e = { 0 };
	struct mmu mmu;
	char err[160] = "";
	uint64_t before;
	uint32_t table, prev_end = 0;

	host_mem_init(256 * MiB);
	before = free_bytes();
	memset(mod1, 0x5a, sizeof(mod1));
	elf_image(&im);
	REQUIRE(mb1_check(im.b, im.len, GUEST_MEM, "console=com1", mods, 2, err, sizeof(err)) == 0);
	REQUIRE(vm_create(&mmu, GUEST_MEM));
	/* Old contents where the bss goes: the loader must zero it, not assume. */
	memset(garbage, 0xcc, sizeof(garbage));
	REQUIRE(mmu_write_guest(&mmu, ELF_DATA - 0x1000, garbage, sizeof(garbage)) == 0);

	REQUIRE(mb1_load(&mmu, GUEST_MEM, im.b, im.len, "console=com1", mods, 2, &e, err,
			 sizeof(err)) == 0);
	CHECK_EQ_U64(e.eip, ELF_ENTRY);
	CHECK(guest_equals(&mmu, ELF_TEXT, im.b, 0x200));
	CHECK(guest_equals(&mmu, ELF_DATA, im.b + 0x200, 0x100));
	CHECK(guest_zero(&mmu, ELF_DATA + 0x100, ELF_DATA_MEMSZ - 0x100));
	/* Between the segments, the old contents stay. */
	CHECK(guest_equals(&mmu, ELF_DATA - 0x1000, garbage, 0x1000));
	check_info(&mmu, &e, GUEST_MEM, "console=com1");

	CHECK_EQ_U64(guest32(&mmu, e.ebx + 20), 2);
	table = guest32(&mmu, e.ebx + 24);
	/* The module table starts on the page after the kernel (as QEMU's does). */
	CHECK_EQ_U64(table, ELF_DATA + ELF_DATA_MEMSZ);
	for (int i = 0; i < 2; i++) {
		uint32_t start = guest32(&mmu, table + 16 * i);

		CHECK_EQ_U64(start % 4096, 0);
		CHECK(start > table);
		CHECK(start >= prev_end);
		CHECK_EQ_U64(guest32(&mmu, table + 16 * i + 4), start + mods[i].size);
		CHECK(guest_equals(&mmu, start, mods[i].data, mods[i].size));
		CHECK(guest_string(&mmu, guest32(&mmu, table + 16 * i + 8),
				   i == 0 ? "mod0 arg" : ""));
		CHECK_EQ_U64(guest32(&mmu, table + 16 * i + 12), 0);
		prev_end = start + mods[i].size;
	}
	mmu_destroy(&mmu);
	CHECK_EQ_U64(free_bytes(), before);
}

TEST(mb1_elf_higher_half_entry)
{
	struct image im;
	struct mb1_entry e = { 0 };
	struct mmu mmu;
	char err[160] = "";
	uint64_t before;

	host_mem_init(256 * MiB);
	before = free_bytes();
	elf_image(&im);
	/* Linked at 0xC0100000, loaded at 0x100000: the entry is translated. */
	phdr(&im, 0, 1, 0, 0xc0000000u + ELF_TEXT, ELF_TEXT, 0x200, 0x200, 5);
	put32(&im, 24, 0xc0000000u + ELF_ENTRY);
	REQUIRE(vm_create(&mmu, GUEST_MEM));
	REQUIRE(mb1_load(&mmu, GUEST_MEM, im.b, im.len, NULL, NULL, 0, &e, err,
			 sizeof(err)) == 0);
	CHECK_EQ_U64(e.eip, ELF_ENTRY);
	check_info(&mmu, &e, GUEST_MEM, "");
	CHECK_EQ_U64(guest32(&mmu, e.ebx + 20), 0);
	mmu_destroy(&mmu);
	CHECK_EQ_U64(free_bytes(), before);
}

TEST(mb1_aout_load)
{
	struct mb1_module_src mod = { "abc", 3, "initrd" };
	struct image im;
	struct mb1_entry e = { 0 };
	struct mmu mmu;
	char err[160] = "";
	uint64_t before;

	host_mem_init(256 * MiB);
	before = free_bytes();
	for (int whole_file = 0; whole_file < 2; whole_file++) {
		uint32_t table, start;

		/* load_end_addr 0 means "to the end of the file". */
		aout_image(&im, whole_file ? 0 : AOUT_LOAD + AOUT_SIZE);
		REQUIRE(vm_create(&mmu, GUEST_MEM));
		REQUIRE(mb1_load(&mmu, GUEST_MEM, im.b, im.len, "a b", &mod, 1, &e, err,
				 sizeof(err)) == 0);
		CHECK_EQ_U64(e.eip, AOUT_ENTRY);
		CHECK(guest_equals(&mmu, AOUT_LOAD, im.b, AOUT_SIZE));
		CHECK(guest_zero(&mmu, AOUT_LOAD + AOUT_SIZE, AOUT_BSS_END - AOUT_LOAD - AOUT_SIZE));
		check_info(&mmu, &e, GUEST_MEM, "a b");
		table = guest32(&mmu, e.ebx + 24);
		CHECK_EQ_U64(table, AOUT_BSS_END);
		start = guest32(&mmu, table);
		CHECK_EQ_U64(start, AOUT_BSS_END + 0x1000);
		CHECK(guest_equals(&mmu, start, "abc", 3));
		CHECK(guest_string(&mmu, guest32(&mmu, table + 8), "initrd"));
		mmu_destroy(&mmu);
	}
	/* The header need not be the first thing loaded: load from file offset 0x20. */
	aout_image(&im, AOUT_LOAD + AOUT_SIZE - 0x20);
	put32(&im, AOUT_HDR + 12, AOUT_LOAD + AOUT_HDR - 0x20);
	REQUIRE(vm_create(&mmu, GUEST_MEM));
	REQUIRE(mb1_load(&mmu, GUEST_MEM, im.b, im.len, "", NULL, 0, &e, err, sizeof(err)) == 0);
	CHECK(guest_equals(&mmu, AOUT_LOAD, im.b + 0x20, AOUT_SIZE - 0x20));
	mmu_destroy(&mmu);
	CHECK_EQ_U64(free_bytes(), before);
}

TEST(mb1_truncated)
{
	struct image im;
	char err[160];

	for (int kind = 0; kind < 3; kind++) {
		if (kind == 0)
			elf_image(&im);
		else
			aout_image(&im, kind == 1 ? AOUT_LOAD + AOUT_SIZE : 0);
		for (size_t len = 0; len < im.len; len++) {
			int rc = check_copy(&im, len, GUEST_MEM, NULL, 0, err, sizeof(err));

			/* With load_end_addr 0 a shorter file is a shorter kernel, and
			 * fine while it still holds the header and the entry point. */
			if (kind == 2 && len > AOUT_ENTRY - AOUT_LOAD)
				CHECK(rc == 0);
			else
				CHECK(rc == -1 && err[0]);
		}
		CHECK(check_copy(&im, im.len, GUEST_MEM, NULL, 0, err, sizeof(err)) == 0);
	}
}

TEST(mb1_bad_header)
{
	struct image im;

	elf_image(&im);
	im.len = 8;
	CHECK(refused(&im, GUEST_MEM, "image too small for a multiboot header"));

	elf_image(&im);
	put32(&im, ELF_MB_HDR, 0x1badb003);
	CHECK(refused(&im, GUEST_MEM, "no multiboot header in the first 8 KiB"));

	elf_image(&im);
	put32(&im, ELF_MB_HDR + 8, 0);
	CHECK(refused(&im, GUEST_MEM, "bad multiboot header checksum"));

	/* Unaligned headers do not count. */
	elf_image(&im);
	memset(im.b + ELF_MB_HDR, 0, 12);
	im.len = 0x2100;
	memset(im.b + ELF_SIZE, 0, im.len - ELF_SIZE);
	mb_header(&im, ELF_MB_HDR + 2, 3);
	CHECK(refused(&im, GUEST_MEM, "no multiboot header in the first 8 KiB"));

	/* Past 8 KiB (the file is longer, the segments are unchanged). */
	memset(im.b + ELF_MB_HDR, 0, 16);
	mb_header(&im, 8192, 3);
	CHECK(refused(&im, GUEST_MEM, "no multiboot header in the first 8 KiB"));
	memset(im.b + 8192, 0, 12);
	mb_header(&im, 8192 - 12, 3);
	CHECK(check_copy(&im, im.len, GUEST_MEM, NULL, 0, (char[80]){ 0 }, 80) == 0);

	for (int bit = 3; bit < 16; bit++) {
		elf_image(&im);
		mb_header(&im, ELF_MB_HDR, 3 | 1u << bit);
		CHECK(refused(&im, GUEST_MEM, "unsupported required multiboot flags"));
	}
	/* Video mode is ignored, as QEMU does; bits above 16 are optional. */
	elf_image(&im);
	mb_header(&im, ELF_MB_HDR, 7 | 1u << 20);
	CHECK(check_copy(&im, im.len, GUEST_MEM, NULL, 0, (char[80]){ 0 }, 80) == 0);

	elf_image(&im);
	CHECK(check_copy(&im, im.len, MiB, NULL, 0, (char[80]){ 0 }, 80) == -1);
}

TEST(mb1_bad_elf)
{
	struct image im;

	elf_image(&im);
	im.b[1] = 'X';
	CHECK(refused(&im, GUEST_MEM, "not an ELF file"));

	elf_image(&im);
	im.b[4] = 2;
	CHECK(refused(&im, GUEST_MEM, "ELF64 images are not supported"));
	elf_image(&im);
	put16(&im, 18, 62);
	CHECK(refused(&im, GUEST_MEM, "ELF64 images are not supported"));

	elf_image(&im);
	im.b[5] = 2;
	CHECK(refused(&im, GUEST_MEM, "not a little-endian version-1 ELF32"));

	elf_image(&im);
	put16(&im, 18, 40);
	CHECK(refused(&im, GUEST_MEM, "ELF machine 40 is not i386"));

	elf_image(&im);
	put16(&im, 16, 3);
	CHECK(refused(&im, GUEST_MEM, "is not an executable"));

	elf_image(&im);
	put16(&im, 42, 16);
	CHECK(refused(&im, GUEST_MEM, "program header size 16"));

	elf_image(&im);
	put16(&im, 44, 0);
	CHECK(refused(&im, GUEST_MEM, "ELF has 0 program headers"));
	elf_image(&im);
	put16(&im, 44, 65);
	CHECK(refused(&im, GUEST_MEM, "ELF has 65 program headers"));

	elf_image(&im);
	put32(&im, 28, ELF_SIZE - 32);
	CHECK(refused(&im, GUEST_MEM, "program headers lie past the end"));
	elf_image(&im);
	put32(&im, 28, 0xffffffe0);
	CHECK(refused(&im, GUEST_MEM, "program headers lie past the end"));

	elf_image(&im);
	phdr(&im, 1, 1, 0x200, ELF_DATA, ELF_DATA, 0x100, 0x80, 6);
	CHECK(refused(&im, GUEST_MEM, "segment 1: file size 0x100 exceeds its memory size 0x80"));

	elf_image(&im);
	phdr(&im, 1, 1, 0x200, ELF_DATA, ELF_DATA, 0x101, 0x3000, 6);
	CHECK(refused(&im, GUEST_MEM, "segment 1: file range"));
	elf_image(&im);
	phdr(&im, 1, 1, 0xffffff00, ELF_DATA, ELF_DATA, 0x200, 0x3000, 6);
	CHECK(refused(&im, GUEST_MEM, "segment 1: file range"));

	elf_image(&im);
	phdr(&im, 1, 1, 0x200, 0, GUEST_MEM - 0x1000, 0x100, 0x2000, 6);
	CHECK(refused(&im, GUEST_MEM,
		      "segment 1 lies outside guest memory (0xfff000-0x1001000 of 0x1000000)"));
	elf_image(&im);
	phdr(&im, 1, 1, 0x200, 0, 0xfffff000u, 0x100, 0x2000, 6);
	CHECK(refused(&im, GUEST_MEM, "segment 1 lies outside guest memory"));
	/* Even with guest memory above 4 GiB, a kernel may not cross 4 GiB. */
	CHECK(refused(&im, 8ull << 30, "above 4 GiB"));

	elf_image(&im);
	phdr(&im, 1, 1, 0x200, ELF_TEXT + 0x100, ELF_TEXT + 0x100, 0x100, 0x100, 6);
	CHECK(refused(&im, GUEST_MEM, "segments 0 and 1 overlap"));

	elf_image(&im);
	put32(&im, 24, ELF_DATA + 0x200);
	CHECK(refused(&im, GUEST_MEM, "entry point 0x102200 is not in any loaded segment"));
	elf_image(&im);
	put32(&im, 24, ELF_TEXT + 0x200);
	CHECK(refused(&im, GUEST_MEM, "is not in any loaded segment"));

	elf_image(&im);
	phdr(&im, 0, 4, 0, ELF_TEXT, ELF_TEXT, 0x200, 0x200, 5);
	phdr(&im, 1, 1, 0x200, ELF_DATA, ELF_DATA, 0, 0, 6);
	CHECK(refused(&im, GUEST_MEM, "no loadable segment"));

	/* A kernel low in memory may not cover the info structure at 0x9000. */
	elf_image(&im);
	phdr(&im, 0, 1, 0, 0x8000, 0x8000, 0x200, 0x200, 5);
	put32(&im, 24, 0x8100);
	CHECK(refused(&im, GUEST_MEM, "overlaps the multiboot information"));
}

TEST(mb1_bad_aout)
{
	struct image im;

	aout_image(&im, AOUT_LOAD + AOUT_SIZE);
	put32(&im, AOUT_HDR + 12, AOUT_LOAD - 4);
	CHECK(refused(&im, GUEST_MEM, "header_addr 0xffffc below load_addr 0x100000"));

	aout_image(&im, AOUT_LOAD + AOUT_SIZE);
	put32(&im, AOUT_HDR + 16, AOUT_LOAD - 0x100);
	put32(&im, AOUT_HDR + 12, AOUT_LOAD + AOUT_HDR);
	CHECK(refused(&im, GUEST_MEM, "before the file"));

	aout_image(&im, AOUT_LOAD - 1);
	CHECK(refused(&im, GUEST_MEM, "load_end_addr 0xfffff below load_addr 0x100000"));

	aout_image(&im, AOUT_LOAD + AOUT_SIZE + 1);
	CHECK(refused(&im, GUEST_MEM, "runs past the end of the file"));

	aout_image(&im, AOUT_LOAD + AOUT_SIZE);
	put32(&im, AOUT_HDR + 24, AOUT_LOAD + AOUT_SIZE - 1);
	CHECK(refused(&im, GUEST_MEM, "bss_end_addr 0x10017f below the end"));

	aout_image(&im, AOUT_LOAD + AOUT_SIZE);
	put32(&im, AOUT_HDR + 28, AOUT_LOAD + AOUT_SIZE);
	CHECK(refused(&im, GUEST_MEM, "entry 0x100180 outside the loaded image"));
	put32(&im, AOUT_HDR + 28, AOUT_LOAD - 1);
	CHECK(refused(&im, GUEST_MEM, "outside the loaded image"));

	aout_image(&im, AOUT_LOAD + AOUT_SIZE);
	put32(&im, AOUT_HDR + 24, GUEST_MEM + 0x1000);
	CHECK(refused(&im, GUEST_MEM, "lies outside guest memory"));
	put32(&im, AOUT_HDR + 24, 0);
	put32(&im, AOUT_HDR + 12, 0xfffff000u + AOUT_HDR);
	put32(&im, AOUT_HDR + 16, 0xfffff000u);
	put32(&im, AOUT_HDR + 20, 0xfffff000u + AOUT_SIZE);
	put32(&im, AOUT_HDR + 28, 0xfffff000u + 0x80);
	CHECK(refused(&im, GUEST_MEM, "lies outside guest memory"));

	/* The header's address fields must lie in the file and in the first 8 KiB. */
	aout_image(&im, AOUT_LOAD + AOUT_SIZE);
	im.len = AOUT_HDR + 28;
	CHECK(refused(&im, GUEST_MEM, "multiboot header truncated"));
}

TEST(mb1_too_big)
{
	struct mb1_module_src mod = { NULL, 0, "m" };
	struct image im;
	char err[160] = "";
	uint8_t *big;

	/* Kernel fits; kernel + module does not, by one page. */
	elf_image(&im);
	mod.size = GUEST_MEM - (ELF_DATA + ELF_DATA_MEMSZ + 0x1000) + 1;
	big = calloc(1, mod.size);
	mod.data = big;
	CHECK(check_copy(&im, im.len, GUEST_MEM, &mod, 1, err, sizeof(err)) == -1);
	CHECK(strstr(err, "image needs more memory than the guest has") != NULL);
	mod.size--;
	CHECK(check_copy(&im, im.len, GUEST_MEM, &mod, 1, err, sizeof(err)) == 0);
	free(big);

	/* A module whose size runs past 2^64 (never read: refused first). */
	mod.data = "x";
	mod.size = UINT64_MAX - 0x800;
	CHECK(check_copy(&im, im.len, GUEST_MEM, &mod, 1, err, sizeof(err)) == -1);
	CHECK(strstr(err, "image needs more memory than the guest has") != NULL);

	/* An a.out kernel bigger than guest memory. */
	aout_image(&im, AOUT_LOAD + AOUT_SIZE);
	put32(&im, AOUT_HDR + 24, 0x80000000u);
	CHECK(refused(&im, GUEST_MEM, "lies outside guest memory"));
}
