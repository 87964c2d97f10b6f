/* loader/mb1_loader.c: ELF32 and a.out-kludge multiboot kernels built here,
 * loaded into a VM through the MMU and read back (segments, bss, entry, the
 * info structure, memory map, strings, modules); then malformed images, each
 * of which must be refused with the expected reason. Images are handed over in
 * heap copies of exactly their length, so ASan reports any read past them. */
#include "check.h"
#include "mm/mmu.h"
#include "svm/npt.h"
#include "tests/rng.h"
#include "tests/unit/host_mem.h"
#include "tests/unit/vm_e820.h"
#include "loader/mb1_loader.h"
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

/* The memory map the info structure points to: n entries {base, length, type}. */
static void check_map(struct mmu *mmu, uint32_t info, const uint64_t (*map)[3], int n)
{
	uint32_t mmap = guest32(mmu, info + 48);

	CHECK_EQ_U64(guest32(mmu, info + 44), n * 24);
	for (int i = 0; i < n; i++) {
		uint32_t at = mmap + 24 * i;

		CHECK_EQ_U64(guest32(mmu, at), 20);
		CHECK_EQ_U64(guest64(mmu, at + 4), map[i][0]);
		CHECK_EQ_U64(guest64(mmu, at + 12), map[i][1]);
		CHECK_EQ_U64(guest32(mmu, at + 20), map[i][2]);
	}
}

/* The info structure, memory map and strings every load must produce; at
 * QEMU's addresses when `qemu_addresses`. The default map is QEMU's (SeaBIOS's
 * e820 below 1 MiB, all RAM above) and mem_lower is int 0x12's 639 KiB. */
static void check_info_at(struct mmu *mmu, const struct mb1_entry *e, uint64_t guest_mem,
			  const char *cmdline, bool qemu_addresses)
{
	uint64_t map[VM_E820_ENTRIES][3];
	uint32_t info = e->ebx;

	CHECK_EQ_U64(e->eax, MB1_BOOTLOADER_MAGIC);
	if (qemu_addresses) {
		CHECK_EQ_U64(info, MB1_INFO_GPA);
		CHECK_EQ_U64(guest32(mmu, info + 48), MB1_MMAP_GPA);
	} else {
		CHECK(info != MB1_INFO_GPA);
		CHECK(info % 4 == 0);
	}
	CHECK_EQ_U64(guest32(mmu, info + 0), 0x24f);
	CHECK_EQ_U64(guest32(mmu, info + 4), 639);
	CHECK_EQ_U64(guest32(mmu, info + 8), guest_mem / 1024 - 1024);
	CHECK_EQ_U64(guest32(mmu, info + 12), 0x8000ffff);
	CHECK(guest_string(mmu, guest32(mmu, info + 16), cmdline));
	CHECK(guest_string(mmu, guest32(mmu, info + 64), "sprig"));
	vm_e820_want(guest_mem, map);
	check_map(mmu, info, (const uint64_t (*)[3])map, VM_E820_ENTRIES);
}

static void check_info(struct mmu *mmu, const struct mb1_entry *e, uint64_t guest_mem,
		       const char *cmdline)
{
	check_info_at(mmu, e, guest_mem, cmdline, true);
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

/* The loader writes through mmu_write_guest: on a logged slot, every page it
 * wrote is in the dirty log (kernel, bss, info and map, strings), no other. */
TEST(mb1_load_dirty_logged)
{
	static uint64_t log[GUEST_MEM / PAGE_SIZE / 64];
	struct image im;
	struct mb1_entry e = { 0 };
	struct mmu mmu;
	char err[160] = "";
	uint64_t strings;

	host_mem_init(256 * MiB);
	elf_image(&im);
	REQUIRE(vm_create(&mmu, GUEST_MEM));
	REQUIRE(mmu_dirty_log_enable(&mmu, 0, true) == 0);
	REQUIRE(mb1_load(&mmu, GUEST_MEM, im.b, im.len, "x", NULL, 0, &e, err, sizeof(err)) == 0);
	strings = guest32(&mmu, e.ebx + 16) / PAGE_SIZE; /* the command line's page */
	CHECK(mmu_dirty_log_get(&mmu, 0, log) == 6);
	for (uint64_t gfn = 0; gfn < GUEST_MEM / PAGE_SIZE; gfn++) {
		bool want = gfn == MB1_INFO_GPA / PAGE_SIZE || gfn == ELF_TEXT / PAGE_SIZE ||
			    (gfn >= ELF_DATA / PAGE_SIZE &&
			     gfn < (ELF_DATA + ELF_DATA_MEMSZ) / PAGE_SIZE) || gfn == strings;

		CHECK_EQ_U64(log[gfn / 64] >> (gfn % 64) & 1, want);
	}
	mmu_destroy(&mmu);
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

/* ---- Layouts: low kernels, long command lines, memory map ranges ---- */

struct piece {
	uint64_t start, end;
	const char *what;
};

static uint64_t guest_strlen(struct mmu *mmu, uint64_t gpa, uint64_t guest_mem)
{
	uint8_t c = 1;
	uint64_t n = 0;

	while (gpa + n < guest_mem && mmu_read_guest(mmu, gpa + n, &c, 1) == 0 && c)
		n++;
	return n;
}

/* Everything the loader wrote besides the kernel, as pieces: info, map,
 * module table, strings, modules. Returns how many. */
static int loader_pieces(struct mmu *mmu, const struct mb1_entry *e, uint64_t guest_mem,
			 struct piece *p, int max)
{
	uint32_t info = e->ebx, table = guest32(mmu, info + 24), n_mods = guest32(mmu, info + 20);
	uint32_t s;
	int n = 0;

	p[n++] = (struct piece){ info, info + 88, "info" };
	p[n++] = (struct piece){ guest32(mmu, info + 48),
				 guest32(mmu, info + 48) + guest32(mmu, info + 44), "mmap" };
	if (n_mods)
		p[n++] = (struct piece){ table, table + 16ull * n_mods, "module table" };
	s = guest32(mmu, info + 16);
	p[n++] = (struct piece){ s, s + guest_strlen(mmu, s, guest_mem) + 1, "cmdline" };
	s = guest32(mmu, info + 64);
	p[n++] = (struct piece){ s, s + guest_strlen(mmu, s, guest_mem) + 1, "loader name" };
	for (uint32_t i = 0; i < n_mods && n + 2 <= max; i++) {
		s = guest32(mmu, table + 16 * i + 8);
		p[n++] = (struct piece){ s, s + guest_strlen(mmu, s, guest_mem) + 1, "module string" };
		p[n++] = (struct piece){ guest32(mmu, table + 16 * i),
					 guest32(mmu, table + 16 * i + 4), "module" };
	}
	return n;
}

/* No two pieces overlap (empty ones aside), all lie in guest memory. */
static bool disjoint(const struct piece *p, int n, uint64_t guest_mem)
{
	bool ok = true;

	for (int i = 0; i < n; i++) {
		if (p[i].end > guest_mem || p[i].start > p[i].end) {
			printf("  %s 0x%llx-0x%llx outside guest memory\n", p[i].what,
			       (unsigned long long)p[i].start, (unsigned long long)p[i].end);
			ok = false;
		}
		for (int j = 0; j < i; j++)
			if (p[i].start < p[j].end && p[j].start < p[i].end) {
				printf("  %s 0x%llx-0x%llx overlaps %s 0x%llx-0x%llx\n", p[i].what,
				       (unsigned long long)p[i].start, (unsigned long long)p[i].end,
				       p[j].what, (unsigned long long)p[j].start,
				       (unsigned long long)p[j].end);
				ok = false;
			}
	}
	return ok;
}

TEST(mb1_low_kernel)
{
	static const char mod0[] = "low module";
	struct mb1_module_src mod = { mod0, sizeof(mod0), "m0 arg" };
	struct image im;
	struct mb1_entry e = { 0 };
	struct mmu mmu;
	char err[160] = "";
	struct piece p[16];
	int n;
	uint64_t before;

	host_mem_init(256 * MiB);
	before = free_bytes();
	for (int kind = 0; kind < 3; kind++) {
		if (kind == 0) {
			/* ELF linked at 0x8000: text 0x8000-0x8200, data+bss 0x9000-0xc000
			 * (over QEMU's 0x9000-0x9558). */
			elf_image(&im);
			phdr(&im, 0, 1, 0, 0x8000, 0x8000, 0x200, 0x200, 5);
			phdr(&im, 1, 1, 0x200, 0x9000, 0x9000, 0x100, 0x3000, 6);
			put32(&im, 24, 0x8100);
		} else {
			/* a.out kludge, load_addr 0x8000, bss to 0xa000; kind 2: the whole
			 * file (load_end 0). */
			aout_image(&im, kind == 1 ? 0x8000 + AOUT_SIZE : 0);
			put32(&im, AOUT_HDR + 12, 0x8000 + AOUT_HDR);
			put32(&im, AOUT_HDR + 16, 0x8000);
			put32(&im, AOUT_HDR + 24, 0xa000);
			put32(&im, AOUT_HDR + 28, 0x8080);
		}
		REQUIRE(mb1_check(im.b, im.len, GUEST_MEM, "low kernel", &mod, 1, err,
				  sizeof(err)) == 0);
		REQUIRE(vm_create(&mmu, GUEST_MEM));
		REQUIRE(mb1_load(&mmu, GUEST_MEM, im.b, im.len, "low kernel", &mod, 1, &e, err,
				 sizeof(err)) == 0);
		CHECK_EQ_U64(e.eip, kind == 0 ? 0x8100 : 0x8080);
		check_info_at(&mmu, &e, GUEST_MEM, "low kernel", false);
		/* The kernel is intact: nothing was written over it. */
		if (kind == 0) {
			CHECK(guest_equals(&mmu, 0x8000, im.b, 0x200));
			CHECK(guest_equals(&mmu, 0x9000, im.b + 0x200, 0x100));
			CHECK(guest_zero(&mmu, 0x9100, 0x2f00));
		} else {
			CHECK(guest_equals(&mmu, 0x8000, im.b, AOUT_SIZE));
			CHECK(guest_zero(&mmu, 0x8000 + AOUT_SIZE, 0x2000 - AOUT_SIZE));
		}
		n = loader_pieces(&mmu, &e, GUEST_MEM, p, 14);
		p[n++] = (struct piece){ 0x8000, kind == 0 ? 0xc000 : 0xa000, "kernel" };
		CHECK(disjoint(p, n, GUEST_MEM));
		/* After the kernel: table on its next page, map and info after the
		 * strings, the module on the page after them. */
		CHECK_EQ_U64(guest32(&mmu, e.ebx + 24), kind == 0 ? 0xc000 : 0xa000);
		CHECK(e.ebx > guest32(&mmu, e.ebx + 48));
		CHECK(guest_equals(&mmu, guest32(&mmu, guest32(&mmu, e.ebx + 24)), mod0,
				   sizeof(mod0)));
		CHECK(guest_string(&mmu, guest32(&mmu, guest32(&mmu, e.ebx + 24) + 8), "m0 arg"));
		mmu_destroy(&mmu);
	}

	/* Low, but clear of 0x9000-0x9558 (text 0x8000-0x8200, data at 1 MiB):
	 * QEMU's addresses, as QEMU would boot it. */
	elf_image(&im);
	phdr(&im, 0, 1, 0, 0x8000, 0x8000, 0x200, 0x200, 5);
	put32(&im, 24, 0x8100);
	REQUIRE(vm_create(&mmu, GUEST_MEM));
	REQUIRE(mb1_load(&mmu, GUEST_MEM, im.b, im.len, "x", NULL, 0, &e, err, sizeof(err)) == 0);
	check_info(&mmu, &e, GUEST_MEM, "x");
	CHECK(guest_equals(&mmu, 0x8000, im.b, 0x200));
	mmu_destroy(&mmu);

	/* A kernel at 0x6000-0x7000 leaves 0x9000 free, unless the strings after
	 * it (from 0x7000) reach it. */
	for (int long_line = 0; long_line < 2; long_line++) {
		char *line = calloc(1, 8200);

		memset(line, 'q', long_line ? 8199 : 4000);
		aout_image(&im, 0x6000 + AOUT_SIZE);
		put32(&im, AOUT_HDR + 12, 0x6000 + AOUT_HDR);
		put32(&im, AOUT_HDR + 16, 0x6000);
		put32(&im, AOUT_HDR + 24, 0x7000);
		put32(&im, AOUT_HDR + 28, 0x6080);
		REQUIRE(vm_create(&mmu, GUEST_MEM));
		REQUIRE(mb1_load(&mmu, GUEST_MEM, im.b, im.len, line, NULL, 0, &e, err,
				 sizeof(err)) == 0);
		check_info_at(&mmu, &e, GUEST_MEM, line, !long_line);
		CHECK_EQ_U64(guest32(&mmu, e.ebx + 16), 0x7000);
		n = loader_pieces(&mmu, &e, GUEST_MEM, p, 14);
		p[n++] = (struct piece){ 0x6000, 0x7000, "kernel" };
		CHECK(disjoint(p, n, GUEST_MEM));
		mmu_destroy(&mmu);
		free(line);
	}
	CHECK_EQ_U64(free_bytes(), before);
}

TEST(mb1_long_cmdline)
{
	char *line = malloc(4096), *mline = malloc(4096);
	struct mb1_module_src mod = { "m", 1, mline };
	struct image im;
	struct mb1_entry e = { 0 };
	struct mmu mmu;
	char err[160] = "";
	uint64_t before;

	host_mem_init(256 * MiB);
	before = free_bytes();
	for (int i = 0; i < 4095; i++) {
		line[i] = (char)('a' + i % 26);
		mline[i] = (char)('A' + i % 26);
	}
	line[4095] = mline[4095] = 0;
	for (int low = 0; low < 2; low++) {
		elf_image(&im);
		if (low) {
			phdr(&im, 0, 1, 0, 0x8000, 0x8000, 0x200, 0x200, 5);
			phdr(&im, 1, 1, 0x200, 0x9000, 0x9000, 0x100, 0x3000, 6);
			put32(&im, 24, 0x8100);
		}
		REQUIRE(vm_create(&mmu, GUEST_MEM));
		REQUIRE(mb1_load(&mmu, GUEST_MEM, im.b, im.len, line, &mod, 1, &e, err,
				 sizeof(err)) == 0);
		check_info_at(&mmu, &e, GUEST_MEM, line, !low);
		CHECK_EQ_U64(guest_strlen(&mmu, guest32(&mmu, e.ebx + 16), GUEST_MEM), 4095);
		CHECK(guest_string(&mmu, guest32(&mmu, guest32(&mmu, e.ebx + 24) + 8), mline));
		mmu_destroy(&mmu);
	}
	CHECK_EQ_U64(free_bytes(), before);
	free(line);
	free(mline);
}

TEST(mb1_map_ranges)
{
	struct image im;
	struct mb1_entry e = { 0 };
	struct mmu mmu;
	char err[160] = "";
	uint64_t before;
	const uint64_t mem = 128 * MiB;

	host_mem_init(256 * MiB);
	before = free_bytes();
	elf_image(&im);

	/* ACPI tables at 0xe0000-0x100000: merged with the BIOS entry. */
	{
		struct mb1_mem_range acpi = { 0xe0000, 0x20000, MB1_MEM_RESERVED };
		struct mb1_boot b = { im.b, im.len, mem, "acpi", NULL, 0, &acpi, 1 };
		static const uint64_t map[4][3] = {
			{ 0, 0x9fc00, 1 },
			{ 0x9fc00, 0x400, 2 },
			{ 0xe0000, 0x20000, 2 },
			{ 0x100000, 128 * MiB - 0x100000, 1 },
		};

		REQUIRE(mb1_check_boot(&b, err, sizeof(err)) == 0);
		REQUIRE(vm_create(&mmu, mem));
		REQUIRE(mb1_load_boot(&mmu, &b, &e, err, sizeof(err)) == 0);
		CHECK_EQ_U64(e.ebx, MB1_INFO_GPA);
		check_map(&mmu, e.ebx, map, 4);
		CHECK_EQ_U64(guest32(&mmu, e.ebx + 4), 639);
		CHECK_EQ_U64(guest32(&mmu, e.ebx + 8), 130048);
		mmu_destroy(&mmu);
	}

	/* QEMU -m 128M under SeaBIOS (TCG), entry for entry, given its firmware
	 * ranges; ACPI type 3 in the middle of RAM splits it. */
	{
		struct mb1_mem_range r[3] = {
			{ 0xfffc0000, 0x40000, MB1_MEM_RESERVED },
			{ 0x7fe0000, 0x20000, MB1_MEM_RESERVED },
			{ 0x4000000, 0x1000, MB1_MEM_ACPI },
		};
		struct mb1_boot b = { im.b, im.len, mem, "", NULL, 0, r, 2 };
		static const uint64_t qemu[6][3] = {
			{ 0, 0x9fc00, 1 },
			{ 0x9fc00, 0x400, 2 },
			{ 0xf0000, 0x10000, 2 },
			{ 0x100000, 0x7ee0000, 1 },
			{ 0x7fe0000, 0x20000, 2 },
			{ 0xfffc0000, 0x40000, 2 },
		};
		static const uint64_t split[8][3] = {
			{ 0, 0x9fc00, 1 },
			{ 0x9fc00, 0x400, 2 },
			{ 0xf0000, 0x10000, 2 },
			{ 0x100000, 0x3f00000, 1 },
			{ 0x4000000, 0x1000, 3 },
			{ 0x4001000, 0x3fdf000, 1 },
			{ 0x7fe0000, 0x20000, 2 },
			{ 0xfffc0000, 0x40000, 2 },
		};

		REQUIRE(vm_create(&mmu, mem));
		REQUIRE(mb1_load_boot(&mmu, &b, &e, err, sizeof(err)) == 0);
		check_map(&mmu, e.ebx, qemu, 6);
		CHECK_EQ_U64(guest32(&mmu, e.ebx + 8), 129920); /* QEMU's mem_upper */
		mmu_destroy(&mmu);
		b.n_ranges = 3;
		REQUIRE(vm_create(&mmu, mem));
		REQUIRE(mb1_load_boot(&mmu, &b, &e, err, sizeof(err)) == 0);
		check_map(&mmu, e.ebx, split, 8);
		CHECK_EQ_U64(guest32(&mmu, e.ebx + 8), 0x3f00000 / 1024);
		mmu_destroy(&mmu);
	}

	/* A range over 0x9000: the map and the info move after the kernel. */
	{
		struct mb1_mem_range r = { 0x9000, 0x1000, MB1_MEM_NVS };
		struct mb1_boot b = { im.b, im.len, GUEST_MEM, "", NULL, 0, &r, 1 };

		REQUIRE(vm_create(&mmu, GUEST_MEM));
		REQUIRE(mb1_load_boot(&mmu, &b, &e, err, sizeof(err)) == 0);
		CHECK(e.ebx >= ELF_DATA + ELF_DATA_MEMSZ);
		CHECK_EQ_U64(guest32(&mmu, e.ebx + 44), 6 * 24);
		CHECK_EQ_U64(guest32(&mmu, e.ebx + 4), 0x9000 / 1024); /* usable from 0 */
		mmu_destroy(&mmu);
	}

	/* Refusals. */
	{
		struct mb1_mem_range r[MB1_RANGES_MAX + 1];
		struct mb1_boot b = { im.b, im.len, GUEST_MEM, "", NULL, 0, r, 1 };

		for (int i = 0; i <= MB1_RANGES_MAX; i++)
			r[i] = (struct mb1_mem_range){ 0x2000000 + 0x1000ull * i, 0x1000, 2 };
		b.n_ranges = MB1_RANGES_MAX;
		CHECK(mb1_check_boot(&b, err, sizeof(err)) == 0);
		b.n_ranges = MB1_RANGES_MAX + 1;
		CHECK(mb1_check_boot(&b, err, sizeof(err)) == -1 &&
		      strstr(err, "too many memory map ranges"));
		b.n_ranges = 1;
		r[0].type = 1;
		CHECK(mb1_check_boot(&b, err, sizeof(err)) == -1 && strstr(err, "type 1"));
		r[0].type = 6;
		CHECK(mb1_check_boot(&b, err, sizeof(err)) == -1 && strstr(err, "type 6"));
		r[0] = (struct mb1_mem_range){ 0x2000000, 0, 2 };
		CHECK(mb1_check_boot(&b, err, sizeof(err)) == -1 && strstr(err, "bad size"));
		r[0] = (struct mb1_mem_range){ UINT64_MAX - 0xfff, 0x1000, 2 };
		CHECK(mb1_check_boot(&b, err, sizeof(err)) == -1 && strstr(err, "bad size"));
		r[0].size = 0xfff;
		CHECK(mb1_check_boot(&b, err, sizeof(err)) == 0);
		r[0] = (struct mb1_mem_range){ 0x2000000, 0x2000, 2 };
		r[1] = (struct mb1_mem_range){ 0x2001000, 0x1000, 4 };
		b.n_ranges = 2;
		CHECK(mb1_check_boot(&b, err, sizeof(err)) == -1 &&
		      strstr(err, "ranges 0 and 1 overlap"));
		/* Over the kernel's bss, over the strings after it. */
		b.n_ranges = 1;
		r[0] = (struct mb1_mem_range){ ELF_DATA + ELF_DATA_MEMSZ - 1, 1, 2 };
		CHECK(mb1_check_boot(&b, err, sizeof(err)) == -1 &&
		      strstr(err, "overlaps memory map range 0"));
		r[0] = (struct mb1_mem_range){ ELF_DATA + ELF_DATA_MEMSZ, 1, 2 };
		CHECK(mb1_check_boot(&b, err, sizeof(err)) == -1 &&
		      strstr(err, "overlaps memory map range 0"));
		/* In the gap between the segments: fine. */
		r[0] = (struct mb1_mem_range){ ELF_TEXT + 0x1000, 0x1000, 2 };
		CHECK(mb1_check_boot(&b, err, sizeof(err)) == 0);
	}
	CHECK_EQ_U64(free_bytes(), before);
}

/* ---- Property: random layouts never overlap ---- */

#define RND_SEGS 3
#define RND_HDR 0x180 /* multiboot header; program headers at 52 */
#define RND_DATA 0x200

/* An ELF kernel with n segments (from RND_DATA in the file), entry in the first. */
static void rnd_elf(struct image *im, int n, const uint32_t *paddr, const uint32_t *filesz,
		    const uint32_t *memsz)
{
	static const uint8_t ident[16] = { 0x7f, 'E', 'L', 'F', 1, 1, 1 };
	uint32_t off = RND_DATA;

	memset(im, 0, sizeof(*im));
	memcpy(im->b, ident, 16);
	put16(im, 16, 2);
	put16(im, 18, 3);
	put32(im, 20, 1);
	put32(im, 24, paddr[0]);
	put32(im, 28, ELF_PHOFF);
	put16(im, 40, 52);
	put16(im, 42, 32);
	put16(im, 44, (uint16_t)n);
	mb_header(im, RND_HDR, 3);
	for (int i = 0; i < n; i++) {
		phdr(im, i, 1, off, paddr[i], paddr[i], filesz[i], memsz[i], i ? 6 : 5);
		fill_pattern(im, off, off + filesz[i]);
		off += filesz[i];
	}
	im->len = off;
}

TEST(mb1_layout_property)
{
	static const uint64_t mems[] = { 2 * MiB, 3 * MiB + 0x5000, 8 * MiB, 16 * MiB };
	static uint8_t moddata[3][0x12000];
	char *line = malloc(4096), *mstr[3];
	int loaded = 0, low_moved = 0, runs = 600;
	struct rng rng = rng_seeded(0x9e3779b97f4a7c15ull);
	uint64_t before;

	host_mem_init(256 * MiB);
	before = free_bytes();
	for (int m = 0; m < 3; m++) {
		memset(moddata[m], 0x30 + m, sizeof(moddata[m]));
		mstr[m] = malloc(300);
	}
	for (int run = 0; run < runs; run++) {
		uint64_t mem = mems[rng_below(&rng, 4)];
		uint32_t paddr[RND_SEGS], filesz[RND_SEGS], memsz[RND_SEGS], at;
		struct mb1_module_src mods[3];
		struct mb1_mem_range ranges[3];
		struct piece p[32];
		struct image im;
		struct mb1_entry e = { 0 };
		struct mmu mmu;
		char err[160] = "";
		int nseg = 1 + (int)rng_below(&rng, RND_SEGS), n, nr = 0;
		size_t n_mods = rng_below(&rng, 4);
		size_t cl = rng_below(&rng, 8) ? rng_below(&rng, 300) : 4095;
		bool aout = rng_below(&rng, 3) == 0;

		/* Kernel: low (around QEMU's 0x9000) half the time, else near 1 MiB. */
		at = rng_below(&rng, 2) ? 0x1000 + (uint32_t)rng_below(&rng, 0xc000)
					: 0x100000 + (uint32_t)rng_below(&rng, 0x80000);
		at &= ~3u;
		for (int i = 0; i < nseg; i++) {
			paddr[i] = at;
			filesz[i] = 1 + (uint32_t)rng_below(&rng, 0x800);
			memsz[i] = filesz[i] + (rng_below(&rng, 2) ? (uint32_t)rng_below(&rng, 0x4000) : 0);
			at = (paddr[i] + memsz[i] + (uint32_t)rng_below(&rng, 0x3000) + 3) & ~3u;
		}
		if (aout) {
			uint32_t load = paddr[0] & ~0xfffu;

			aout_image(&im, 0);
			put32(&im, AOUT_HDR + 12, load + AOUT_HDR);
			put32(&im, AOUT_HDR + 16, load);
			put32(&im, AOUT_HDR + 24, load + AOUT_SIZE + (uint32_t)rng_below(&rng, 0x6000));
			put32(&im, AOUT_HDR + 28, load + 0x80);
			nseg = 1;
			paddr[0] = load;
		} else {
			rnd_elf(&im, nseg, paddr, filesz, memsz);
		}
		for (int i = 0; i < (int)cl; i++)
			line[i] = (char)('!' + rng_below(&rng, 90));
		line[cl] = 0;
		for (size_t i = 0; i < n_mods; i++) {
			size_t sl = rng_below(&rng, 299);
			for (size_t k = 0; k < sl; k++)
				mstr[i][k] = (char)('a' + rng_below(&rng, 26));
			mstr[i][sl] = 0;
			mods[i] = (struct mb1_module_src){ moddata[i], rng_below(&rng, sizeof(moddata[i])),
							   rng_below(&rng, 5) ? mstr[i] : NULL };
		}
		for (int i = (int)rng_below(&rng, 4); i > 0; i--) {
			uint64_t b = rng_below(&rng, mem / 0x1000 + 64) * 0x1000;
			uint64_t s = 0x1000 * (1 + rng_below(&rng, 16));
			bool clash = false;
			for (int k = 0; k < nr; k++)
				clash |= b < ranges[k].base + ranges[k].size && ranges[k].base < b + s;
			if (!clash)
				ranges[nr++] = (struct mb1_mem_range){ b, s, 2 + (uint32_t)rng_below(&rng, 4) };
		}

		struct mb1_boot bt = { im.b, im.len, mem, line, mods, n_mods, ranges, (size_t)nr };
		int rc = mb1_check_boot(&bt, err, sizeof(err));
		if (rc)
			continue;
		REQUIRE(vm_create(&mmu, mem));
		REQUIRE(mb1_load_boot(&mmu, &bt, &e, err, sizeof(err)) == 0);
		loaded++;
		n = loader_pieces(&mmu, &e, mem, p, 28);
		if (aout) {
			uint32_t bss_end = 0;
			memcpy(&bss_end, im.b + AOUT_HDR + 24, 4);
			p[n++] = (struct piece){ paddr[0], bss_end, "kernel" };
			CHECK(guest_equals(&mmu, paddr[0], im.b, AOUT_SIZE));
		} else {
			uint32_t off = RND_DATA;

			for (int i = 0; i < nseg; i++) {
				p[n++] = (struct piece){ paddr[i], paddr[i] + memsz[i], "segment" };
				CHECK(guest_equals(&mmu, paddr[i], im.b + off, filesz[i]));
				CHECK(guest_zero(&mmu, paddr[i] + filesz[i], memsz[i] - filesz[i]));
				off += filesz[i];
			}
		}
		for (int k = 0; k < nr; k++) {
			uint64_t end = ranges[k].base + ranges[k].size;
			p[n++] = (struct piece){ ranges[k].base, end < mem ? end : mem, "range" };
			if (ranges[k].base >= mem)
				n--;
		}
		if (!disjoint(p, n, mem)) {
			printf("  run %d: %s kernel at 0x%x, %d segments, %zu modules, %d ranges\n",
			       run, aout ? "a.out" : "ELF", paddr[0], nseg, n_mods, nr);
			mmu_destroy(&mmu);
			break;
		}
		CHECK(guest_string(&mmu, guest32(&mmu, e.ebx + 16), line));
		if (e.ebx != MB1_INFO_GPA)
			low_moved++;
		mmu_destroy(&mmu);
	}
	printf("  %d of %d random layouts loaded, %d with the info moved\n", loaded, runs,
	       low_moved);
	CHECK(loaded > runs / 4);
	CHECK(low_moved > 10);
	CHECK_EQ_U64(free_bytes(), before);
	free(line);
	for (int m = 0; m < 3; m++)
		free(mstr[m]);
}
