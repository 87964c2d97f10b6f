/* Linux boot protocol loader: plan from the setup header, then write the
 * kernel, initrd, command line, GDT and boot_params (bzimage_loader.h). */
#include "loader/bzimage_loader.h"
#include "lib/bytes.h"
#include "lib/print.h"
#include "lib/refuse.h"
#include "lib/string.h"
#include "loader/e820.h"

/* Setup header fields: offsets in the image and in boot_params alike. */
#define HDR_START 0x1f1
#define HDR_SETUP_SECTS 0x1f1
#define HDR_BOOT_FLAG 0x1fe
#define HDR_JUMP 0x200 /* a short jump: its offset byte ends the header */
#define HDR_MAGIC 0x202
#define HDR_VERSION 0x206
#define HDR_TYPE_OF_LOADER 0x210
#define HDR_LOADFLAGS 0x211
#define HDR_CODE32_START 0x214
#define HDR_RAMDISK_IMAGE 0x218
#define HDR_RAMDISK_SIZE 0x21c
#define HDR_CMD_LINE_PTR 0x228
#define HDR_INITRD_ADDR_MAX 0x22c
#define HDR_KERNEL_ALIGNMENT 0x230
#define HDR_RELOCATABLE 0x234
#define HDR_CMDLINE_SIZE 0x238
#define HDR_HARDWARE_SUBARCH 0x23c
#define HDR_PREF_ADDRESS 0x258
#define HDR_INIT_SIZE 0x260
#define HDR_END_MIN 0x264 /* protocol 2.10's header ends after init_size */

#define BOOT_FLAG 0xaa55
#define HDR_SIGNATURE 0x53726448u /* "HdrS" */
#define LOADED_HIGH 0x01
#define LOADER_UNDEFINED 0xff /* type_of_loader: a loader without an assigned ID */

/* boot_params beyond the header. */
#define BP_SIZE 4096
#define BP_ACPI_RSDP_ADDR 0x070
#define BP_E820_ENTRIES 0x1e8
#define BP_HDR_LIMIT 0x290 /* the header's room: EDD's buffer follows */
#define BP_E820_TABLE 0x2d0
#define E820_ENTRY_SIZE 20

#define GDT_ENTRIES 4
#define FOUR_GIB (1ull << 32)
#define PAGE_MASK_4K 0xfffull

struct bz_plan {
	uint64_t setup_size, kernel_size, hdr_end;
	uint64_t kernel_gpa, kernel_end; /* [gpa, gpa + max(init_size, size)) */
	uint64_t initrd_gpa;
	uint64_t cmdline_len;
};

bool bzimage_detect(const void *image, uint64_t size)
{
	const uint8_t *img = image;

	return size >= HDR_MAGIC + 4 && rd16(img + HDR_BOOT_FLAG) == BOOT_FLAG &&
	       rd32(img + HDR_MAGIC) == HDR_SIGNATURE;
}

/* Where the kernel goes: a relocatable kernel's pref_address (rounded up to
 * its alignment), else code32_start; at or above 1 MiB either way. */
static int plan_kernel(const uint8_t *img, struct bz_plan *p, uint64_t guest_mem, char *err,
		       size_t errlen)
{
	uint64_t align = rd32(img + HDR_KERNEL_ALIGNMENT), init_size = rd32(img + HDR_INIT_SIZE);
	uint64_t gpa = rd32(img + HDR_CODE32_START);

	if (img[HDR_RELOCATABLE]) {
		if (!align || (align & (align - 1)))
			return refuse(err, errlen, "bzImage: kernel_alignment 0x%llx is not a power "
				      "of two", (unsigned long long)align);
		gpa = rd64(img + HDR_PREF_ADDRESS);
		if (gpa < PC_HIGH_RAM)
			gpa = PC_HIGH_RAM;
		if (gpa > FOUR_GIB)
			gpa = FOUR_GIB;
		gpa = (gpa + align - 1) & ~(align - 1);
	}
	if (gpa < PC_HIGH_RAM)
		return refuse(err, errlen, "bzImage: code32_start 0x%llx is below 1 MiB",
			      (unsigned long long)gpa);
	p->kernel_gpa = gpa;
	p->kernel_end = gpa + (init_size > p->kernel_size ? init_size : p->kernel_size);
	if (p->kernel_end > guest_mem || p->kernel_end > FOUR_GIB)
		return refuse(err, errlen, "bzImage: the kernel needs memory up to %llu MiB "
			      "(loaded at 0x%llx, init_size %llu KiB); the VM has %llu MiB",
			      (unsigned long long)((p->kernel_end + (1 << 20) - 1) >> 20),
			      (unsigned long long)gpa, (unsigned long long)(init_size >> 10),
			      (unsigned long long)(guest_mem >> 20));
	return 0;
}

/* The initrd at the top of memory the kernel may reach, above the kernel. */
static int plan_initrd(const uint8_t *img, struct bz_plan *p, const struct bzimage_boot *b,
		       char *err, size_t errlen)
{
	uint64_t top = (uint64_t)rd32(img + HDR_INITRD_ADDR_MAX) + 1;

	if (!b->initrd_size)
		return 0;
	if (top > b->guest_mem)
		top = b->guest_mem;
	top &= ~PAGE_MASK_4K;
	if (b->initrd_size > top || ((top - b->initrd_size) & ~PAGE_MASK_4K) < p->kernel_end)
		return refuse(err, errlen, "bzImage: the initrd (%llu KiB) does not fit between "
			      "the kernel's end at 0x%llx and 0x%llx (initrd_addr_max or the VM's "
			      "memory)", (unsigned long long)(b->initrd_size >> 10),
			      (unsigned long long)p->kernel_end, (unsigned long long)top);
	p->initrd_gpa = (top - b->initrd_size) & ~PAGE_MASK_4K;
	return 0;
}

static int plan(const struct bzimage_boot *b, struct bz_plan *p, char *err, size_t errlen)
{
	const uint8_t *img = b->image;
	unsigned version;
	uint64_t setup_sects;

	memset(p, 0, sizeof(*p));
	if (!bzimage_detect(b->image, b->size))
		return refuse(err, errlen, "not a bzImage (no boot flag 0xAA55 and \"HdrS\" "
			      "setup header)");
	if (b->size < HDR_VERSION + 2)
		return refuse(err, errlen, "bzImage: truncated (%llu bytes)", (unsigned long long)b->size);
	version = rd16(img + HDR_VERSION);
	if (version < BZ_PROTOCOL_MIN)
		return refuse(err, errlen, "bzImage: boot protocol %u.%02u is too old (sprig needs "
			      "%u.%02u, Linux 2.6.31 or newer)", version >> 8, version & 0xff,
			      BZ_PROTOCOL_MIN >> 8, BZ_PROTOCOL_MIN & 0xff);
	p->hdr_end = HDR_MAGIC + (uint64_t)img[HDR_JUMP + 1];
	setup_sects = img[HDR_SETUP_SECTS] ? img[HDR_SETUP_SECTS] : 4;
	p->setup_size = (setup_sects + 1) * 512;
	if (p->hdr_end < HDR_END_MIN || p->hdr_end > p->setup_size)
		return refuse(err, errlen, "bzImage: setup header of %llu bytes, outside 0x%x to "
			      "the setup code's end 0x%llx", (unsigned long long)(p->hdr_end - HDR_START),
			      HDR_END_MIN, (unsigned long long)p->setup_size);
	if (b->size <= p->setup_size || b->size < p->hdr_end)
		return refuse(err, errlen, "bzImage: truncated (%llu bytes, the setup code alone "
			      "takes %llu)", (unsigned long long)b->size,
			      (unsigned long long)p->setup_size);
	if (!(img[HDR_LOADFLAGS] & LOADED_HIGH))
		return refuse(err, errlen, "bzImage: a zImage loaded below 1 MiB (no LOADED_HIGH); "
			      "not supported");
	/* The protected-mode kernel is the rest of the file, as GRUB and QEMU
	 * take it: syssize is in 16-byte units and build tools round it up
	 * past the file's end, so it is not a length to check against. */
	p->kernel_size = b->size - p->setup_size;
	p->cmdline_len = b->cmdline ? strlen(b->cmdline) : 0;
	if (p->cmdline_len > rd32(img + HDR_CMDLINE_SIZE))
		return refuse(err, errlen, "bzImage: command line of %llu bytes; the kernel takes "
			      "%u", (unsigned long long)p->cmdline_len, rd32(img + HDR_CMDLINE_SIZE));
	if (BZ_CMDLINE_GPA + p->cmdline_len + 1 > PC_HIGH_RAM)
		return refuse(err, errlen, "bzImage: command line of %llu bytes does not fit below "
			      "1 MiB", (unsigned long long)p->cmdline_len);
	if (plan_kernel(img, p, b->guest_mem, err, errlen))
		return -1;
	return plan_initrd(img, p, b, err, errlen);
}

int bzimage_check(const struct bzimage_boot *b, char *err, size_t errlen)
{
	struct bz_plan p;

	return plan(b, &p, err, errlen);
}

static int write_guest(struct mmu *mmu, uint64_t gpa, const void *buf, uint64_t len, char *err,
		       size_t errlen)
{
	if (len && mmu_write_guest(mmu, gpa, buf, len))
		return refuse(err, errlen, "out of memory writing 0x%llx bytes at gpa 0x%llx",
			      (unsigned long long)len, (unsigned long long)gpa);
	return 0;
}

static void put_e820(uint8_t *bp, uint64_t guest_mem)
{
	struct e820_entry map[PC_E820_MAX];
	unsigned n = pc_e820(guest_mem, map);

	for (unsigned i = 0; i < n; i++) {
		uint8_t *e = bp + BP_E820_TABLE + i * E820_ENTRY_SIZE;

		put64(e, map[i].addr);
		put64(e + 8, map[i].len);
		put32(e + 16, map[i].type);
	}
	bp[BP_E820_ENTRIES] = (uint8_t)n;
}

/* boot_params: the image's header with the loader's fields, the map, the RSDP. */
static void fill_boot_params(uint8_t *bp, const uint8_t *img, const struct bz_plan *p,
			     const struct bzimage_boot *b)
{
	uint64_t hdr_end = p->hdr_end < BP_HDR_LIMIT ? p->hdr_end : BP_HDR_LIMIT;

	memcpy(bp + HDR_START, img + HDR_START, hdr_end - HDR_START);
	bp[HDR_TYPE_OF_LOADER] = LOADER_UNDEFINED;
	put32(bp + HDR_CODE32_START, (uint32_t)p->kernel_gpa);
	put32(bp + HDR_RAMDISK_IMAGE, (uint32_t)p->initrd_gpa);
	put32(bp + HDR_RAMDISK_SIZE, (uint32_t)b->initrd_size);
	put32(bp + HDR_CMD_LINE_PTR, BZ_CMDLINE_GPA);
	put32(bp + HDR_HARDWARE_SUBARCH, 0); /* a PC */
	put64(bp + BP_ACPI_RSDP_ADDR, b->rsdp_gpa);
	put_e820(bp, b->guest_mem);
}

/* Flat 4 GiB descriptors: base 0, limit 0xfffff in pages, 32-bit, present. */
static void fill_gdt(uint8_t *gdt)
{
	put64(gdt + BZ_BOOT_CS, 0x00cf9a000000ffffull); /* code, execute/read */
	put64(gdt + BZ_BOOT_DS, 0x00cf92000000ffffull); /* data, read/write */
}

int bzimage_load(struct mmu *mmu, const struct bzimage_boot *b, struct bzimage_entry *entry,
		 char *err, size_t errlen)
{
	static uint8_t bp[BP_SIZE]; /* off the stack; loads run one at a time */
	uint8_t gdt[GDT_ENTRIES * 8] = { 0 };
	const uint8_t *img = b->image;
	struct bz_plan p;

	if (plan(b, &p, err, errlen))
		return -1;
	memset(bp, 0, sizeof(bp));
	fill_boot_params(bp, img, &p, b);
	fill_gdt(gdt);
	if (write_guest(mmu, p.kernel_gpa, img + p.setup_size, p.kernel_size, err, errlen) ||
	    write_guest(mmu, p.initrd_gpa, b->initrd, b->initrd_size, err, errlen) ||
	    write_guest(mmu, BZ_CMDLINE_GPA, b->cmdline ? b->cmdline : "", p.cmdline_len + 1, err,
			errlen) ||
	    write_guest(mmu, BZ_GDT_GPA, gdt, sizeof(gdt), err, errlen) ||
	    write_guest(mmu, BZ_BOOT_PARAMS_GPA, bp, sizeof(bp), err, errlen))
		return -1;
	*entry = (struct bzimage_entry){
		.eip = (uint32_t)p.kernel_gpa, .esi = BZ_BOOT_PARAMS_GPA, .gdt_gpa = BZ_GDT_GPA,
		.gdt_limit = sizeof(gdt) - 1, .cs = BZ_BOOT_CS, .ds = BZ_BOOT_DS,
		.kernel_gpa = (uint32_t)p.kernel_gpa, .initrd_gpa = (uint32_t)p.initrd_gpa,
	};
	return 0;
}
