/* loader/bzimage_loader.c: a synthetic bzImage carrying the setup header of
 * Debian's 6.1 kernel (build/linux/vmlinuz, protocol 2.15), with a short setup
 * and kernel, loaded into a VM through the MMU and read back (kernel, initrd,
 * command line, GDT, boot_params and its e820 map); then malformed images,
 * each refused with the expected reason. Images are handed over in heap copies
 * of exactly their length, so ASan reports any read past them. */
#include "check.h"
#include "mm/mmu.h"
#include "svm/npt.h"
#include "tests/unit/host_mem.h"
#include "tests/unit/vm_e820.h"
#include "loader/bzimage_loader.h"
#include <stdlib.h>
#include <string.h>

#define MiB (1ull << 20)
#define GUEST_MEM (128 * MiB)

/* The setup header of linux-image-6.1.0-57-amd64's vmlinuz, 0x1f1 to its end
 * (0x202 + the jump's offset 0x6a): setup_sects 39, syssize 0x7d820
 * paragraphs, protocol 2.15, LOADED_HIGH, code32_start 1 MiB, initrd_addr_max
 * 0x7fffffff, kernel_alignment 2 MiB, relocatable, xloadflags 0x7f,
 * cmdline_size 2047, pref_address 16 MiB, init_size 0x3f98000. */
static const uint8_t debian_hdr[] = {
	0x27, 0x01, 0x00, 0x20, 0xd8, 0x07, 0x00, 0x00, 0x00, 0xff, 0xff, 0x00, 0x00, 0x55, 0xaa,
	0xeb, 0x6a, 0x48, 0x64, 0x72, 0x53, 0x0f, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0xc0,
	0x42, 0x00, 0x01, 0x00, 0x80, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xe0, 0x5b, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff,
	0xff, 0xff, 0x7f, 0x00, 0x00, 0x20, 0x00, 0x01, 0x15, 0x7f, 0x00, 0xff, 0x07, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xcc, 0x02, 0x00,
	0x00, 0xe4, 0xef, 0x7b, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0xf9, 0x03, 0x20, 0x8d, 0x7c, 0x00, 0xfc,
	0x56, 0x7d, 0x00,
};

/* The synthetic image: 4 setup sectors (setup_sects 3), then 0x2000 bytes
 * of kernel (syssize says so). */
#define SETUP_SECTS 3
#define SETUP_SIZE ((SETUP_SECTS + 1) * 512)
#define KERNEL_SIZE 0x2000
#define IMAGE_SIZE (SETUP_SIZE + KERNEL_SIZE)
#define PREF_ADDRESS 0x1000000u
#define INIT_SIZE 0x3f98000u

struct image {
	uint8_t b[IMAGE_SIZE];
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

static void debian_image(struct image *im)
{
	memset(im, 0, sizeof(*im));
	im->len = IMAGE_SIZE;
	for (size_t i = 0; i < IMAGE_SIZE; i++)
		im->b[i] = (uint8_t)(i * 7 + 3);
	memcpy(im->b + 0x1f1, debian_hdr, sizeof(debian_hdr));
	im->b[0x1f1] = SETUP_SECTS;
	put32(im, 0x1f4, KERNEL_SIZE / 16);
}

/* bzimage_check on a heap copy of exactly len bytes. */
static int check_copy(const struct image *im, size_t len, uint64_t guest_mem,
		      uint64_t initrd_size, const char *cmdline, char *err, size_t errlen)
{
	void *copy = malloc(len ? len : 1);
	struct bzimage_boot b = { .image = copy, .size = len, .guest_mem = guest_mem,
				  .cmdline = cmdline, .initrd_size = initrd_size };
	int rc;

	memcpy(copy, im->b, len);
	rc = bzimage_check(&b, err, errlen);
	free(copy);
	return rc;
}

static bool refused_as(const struct image *im, size_t len, uint64_t guest_mem,
		       uint64_t initrd_size, const char *cmdline, const char *reason)
{
	char err[200] = "";

	if (check_copy(im, len, guest_mem, initrd_size, cmdline, err, sizeof(err)) == 0) {
		printf("  accepted, expected \"%s\"\n", reason);
		return false;
	}
	if (!strstr(err, reason)) {
		printf("  refused with \"%s\", expected \"%s\"\n", err, reason);
		return false;
	}
	return true;
}

static bool refused(const struct image *im, const char *reason)
{
	return refused_as(im, im->len, GUEST_MEM, 0, "x", reason);
}

static void no_flush(void *ctx)
{
	(void)ctx;
}

static uint64_t free_bytes(void)
{
	struct frame_stats st;

	frame_get_stats(&st);
	return st.free_bytes;
}

static uint64_t guest64(struct mmu *mmu, uint64_t gpa)
{
	uint64_t v = 0xdeadbeef;

	CHECK(mmu_read_guest(mmu, gpa, &v, 8) == 0);
	return v;
}

static uint32_t guest32(struct mmu *mmu, uint64_t gpa)
{
	return (uint32_t)guest64(mmu, gpa);
}

static bool guest_equals(struct mmu *mmu, uint64_t gpa, const void *want, size_t len)
{
	uint8_t *got = malloc(len ? len : 1);
	bool same = mmu_read_guest(mmu, gpa, got, len) == 0 && memcmp(got, want, len) == 0;

	free(got);
	return same;
}

TEST(bzimage_load)
{
	static const char cmdline[] = "console=ttyS0 sprig.run=\"uname -a\"";
	uint64_t e820[VM_E820_ENTRIES][3];
	uint8_t initrd[5000];
	struct image im;
	struct bzimage_entry e;
	struct bzimage_boot b;
	struct memslot_config cfg = { .gpa = 0, .size = GUEST_MEM,
				      .backing = { .kind = BACKING_LAZY } };
	struct mmu mmu;
	char err[200] = "";
	uint64_t before, bp = BZ_BOOT_PARAMS_GPA, initrd_gpa;

	host_mem_init(256 * MiB);
	before = free_bytes();
	debian_image(&im);
	memset(initrd, 0x5a, sizeof(initrd));
	b = (struct bzimage_boot){ .image = im.b, .size = im.len, .guest_mem = GUEST_MEM,
				   .cmdline = cmdline, .initrd = initrd,
				   .initrd_size = sizeof(initrd), .rsdp_gpa = 0xf0000 };
	CHECK(bzimage_detect(im.b, im.len));
	REQUIRE(bzimage_check(&b, err, sizeof(err)) == 0);
	REQUIRE(mmu_init(&mmu, &npt_format, no_flush, NULL) == 0);
	REQUIRE(mmu_slot_add(&mmu, &cfg) == 0);
	REQUIRE(bzimage_load(&mmu, &b, &e, err, sizeof(err)) == 0);

	/* Entry: the protected-mode kernel at pref_address, boot_params in ESI. */
	CHECK_EQ_U64(e.eip, PREF_ADDRESS);
	CHECK_EQ_U64(e.kernel_gpa, PREF_ADDRESS);
	CHECK_EQ_U64(e.esi, BZ_BOOT_PARAMS_GPA);
	CHECK_EQ_U64(e.cs, 0x10);
	CHECK_EQ_U64(e.ds, 0x18);
	CHECK(guest_equals(&mmu, PREF_ADDRESS, im.b + SETUP_SIZE, KERNEL_SIZE));
	/* The GDT's __BOOT_CS and __BOOT_DS: flat 4 GiB, 32-bit. */
	CHECK_EQ_U64(e.gdt_limit, 31);
	CHECK_EQ_U64(guest64(&mmu, e.gdt_gpa + 0x10), 0x00cf9a000000ffffull);
	CHECK_EQ_U64(guest64(&mmu, e.gdt_gpa + 0x18), 0x00cf92000000ffffull);
	/* The initrd page-aligned at the top of memory, above the kernel's init_size. */
	initrd_gpa = (GUEST_MEM - sizeof(initrd)) & ~0xfffull;
	CHECK_EQ_U64(e.initrd_gpa, initrd_gpa);
	CHECK(initrd_gpa >= PREF_ADDRESS + INIT_SIZE);
	CHECK(guest_equals(&mmu, initrd_gpa, initrd, sizeof(initrd)));

	/* boot_params: the header as the image has it, then the loader's fields. */
	CHECK(guest_equals(&mmu, bp + 0x1f1, im.b + 0x1f1, 0x210 - 0x1f1));
	CHECK(guest_equals(&mmu, bp + 0x22c, im.b + 0x22c, 0x1f1 + sizeof(debian_hdr) - 0x22c));
	CHECK_EQ_U64(guest32(&mmu, bp + 0x210) & 0xff, 0xff);   /* type_of_loader */
	CHECK_EQ_U64(guest32(&mmu, bp + 0x211) & 0xff, 0x01);   /* loadflags */
	CHECK_EQ_U64(guest32(&mmu, bp + 0x214), PREF_ADDRESS);  /* code32_start */
	CHECK_EQ_U64(guest32(&mmu, bp + 0x218), initrd_gpa);
	CHECK_EQ_U64(guest32(&mmu, bp + 0x21c), sizeof(initrd));
	CHECK_EQ_U64(guest32(&mmu, bp + 0x228), BZ_CMDLINE_GPA);
	CHECK_EQ_U64(guest32(&mmu, bp + 0x23c), 0);             /* hardware_subarch: PC */
	CHECK_EQ_U64(guest64(&mmu, bp + 0x70), 0xf0000);        /* acpi_rsdp_addr */
	CHECK_EQ_U64(guest32(&mmu, bp + 0x1e8) & 0xff, VM_E820_ENTRIES); /* e820_entries */
	vm_e820_want(GUEST_MEM, e820);
	for (int i = 0; i < VM_E820_ENTRIES; i++) {
		uint64_t at = bp + 0x2d0 + 20 * i;

		CHECK_EQ_U64(guest64(&mmu, at), e820[i][0]);
		CHECK_EQ_U64(guest64(&mmu, at + 8), e820[i][1]);
		CHECK_EQ_U64(guest32(&mmu, at + 16), e820[i][2]);
	}
	CHECK(guest_equals(&mmu, BZ_CMDLINE_GPA, cmdline, sizeof(cmdline)));
	mmu_destroy(&mmu);
	CHECK_EQ_U64(free_bytes(), before);
}

/* A kernel whose syssize, rounded up to 16 bytes, runs a few bytes past the
 * file's end loads as GRUB loads it: the file after the setup code, no more. */
TEST(bzimage_syssize_past_end)
{
	struct image im;
	struct bzimage_entry e;
	struct memslot_config cfg = { .gpa = 0, .size = GUEST_MEM,
				      .backing = { .kind = BACKING_LAZY } };
	struct mmu mmu;
	char err[200] = "";
	const size_t len = IMAGE_SIZE - 5;
	uint8_t *copy = malloc(len), after[8], zero[8] = { 0 };
	struct bzimage_boot b = { .image = copy, .size = len, .guest_mem = GUEST_MEM, .cmdline = "x" };

	host_mem_init(256 * MiB);
	debian_image(&im);
	memcpy(copy, im.b, len);
	REQUIRE(bzimage_check(&b, err, sizeof(err)) == 0);
	REQUIRE(mmu_init(&mmu, &npt_format, no_flush, NULL) == 0);
	REQUIRE(mmu_slot_add(&mmu, &cfg) == 0);
	REQUIRE(bzimage_load(&mmu, &b, &e, err, sizeof(err)) == 0);
	CHECK(guest_equals(&mmu, PREF_ADDRESS, im.b + SETUP_SIZE, KERNEL_SIZE - 5));
	CHECK(mmu_read_guest(&mmu, PREF_ADDRESS + KERNEL_SIZE - 5, after, sizeof(after)) == 0);
	CHECK(memcmp(after, zero, sizeof(after)) == 0);
	mmu_destroy(&mmu);
	free(copy);
}

TEST(bzimage_refused)
{
	struct image im;
	char longline[2100];

	host_mem_init(256 * MiB);
	debian_image(&im);
	/* Not a bzImage at all: the multiboot loader's business. */
	im.b[0x1fe] = 0;
	CHECK(!bzimage_detect(im.b, im.len));
	CHECK(refused(&im, "not a bzImage"));
	debian_image(&im);
	put32(&im, 0x202, 0x53726449);
	CHECK(!bzimage_detect(im.b, im.len));
	/* Every cut of the image within its setup code is refused; past it,
	 * the rest of the file is the kernel whatever syssize says. */
	debian_image(&im);
	for (size_t len = 0; len < IMAGE_SIZE; len += len < 0x300 ? 1 : 0x100)
		CHECK(check_copy(&im, len, GUEST_MEM, 0, "x", NULL, 0) == (len > SETUP_SIZE ? 0 : -1));
	CHECK(refused_as(&im, SETUP_SIZE, GUEST_MEM, 0, "x", "truncated"));
	/* Too old a protocol, no LOADED_HIGH, a header past the setup code. */
	put16(&im, 0x206, 0x0206);
	CHECK(refused(&im, "boot protocol 2.06 is too old"));
	debian_image(&im);
	im.b[0x211] = 0;
	CHECK(refused(&im, "no LOADED_HIGH"));
	debian_image(&im);
	im.b[0x201] = 0x10;
	CHECK(refused(&im, "setup header of"));
	debian_image(&im);
	im.b[0x234] = 1;
	put32(&im, 0x230, 0x300000);
	CHECK(refused(&im, "kernel_alignment 0x300000 is not a power of two"));
	/* A non-relocatable kernel goes to code32_start, never below 1 MiB. */
	debian_image(&im);
	im.b[0x234] = 0;
	put32(&im, 0x214, 0x8000);
	CHECK(refused(&im, "code32_start 0x8000 is below 1 MiB"));
	/* Memory: the kernel's init_size, then the initrd above it. */
	debian_image(&im);
	CHECK(refused_as(&im, im.len, 64 * MiB, 0, "x", "the kernel needs memory up to 80 MiB"));
	CHECK(check_copy(&im, im.len, 81 * MiB, 0, "x", NULL, 0) == 0);
	CHECK(refused_as(&im, im.len, 81 * MiB, 2 * MiB, "x", "the initrd (2048 KiB) does not fit"));
	put32(&im, 0x22c, 0x1ffffff); /* initrd_addr_max below the kernel's end */
	CHECK(refused_as(&im, im.len, GUEST_MEM, 4096, "x", "initrd_addr_max"));
	/* The command line: at most cmdline_size (2047) bytes. */
	debian_image(&im);
	memset(longline, 'a', sizeof(longline));
	longline[2047] = 0;
	CHECK(check_copy(&im, im.len, GUEST_MEM, 0, longline, NULL, 0) == 0);
	longline[2047] = 'a';
	longline[2048] = 0;
	CHECK(refused_as(&im, im.len, GUEST_MEM, 0, longline, "command line of 2048 bytes"));
}
