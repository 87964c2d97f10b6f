/* Multiboot 1 loader: a planning pass that validates the image and computes
 * where everything goes (shared by mb1_check and mb1_load, so that the two
 * can never disagree; the kernel's format is parsed by mb1_elf.c or
 * mb1_aout.c, mb1_internal.h), then a writing pass that only copies. The image is
 * read byte-wise with memcpy: it may be unaligned and no field is trusted
 * before its bounds are checked. Every sum of guest addresses is done in 64
 * bits on values already known to be below 2^32 or checked with
 * __builtin_add_overflow. */
#include "loader/mb1_loader.h"
#include "loader/mb1_internal.h"
#include "lib/bytes.h"
#include "lib/print.h"
#include "lib/refuse.h"
#include "lib/string.h"
#include "loader/e820.h"
#include <stdbool.h>

#define MiB (1ull << 20)
#define GiB (1ull << 30)

#define HEADER_BASE_BYTES 12u   /* magic, flags, checksum */

enum {
	HF_PAGE_ALIGN_MODULES = 1u << 0,
	HF_MEMORY_INFO = 1u << 1,
	HF_VIDEO_MODE = 1u << 2,
	HF_AOUT_KLUDGE = 1u << 16,
};
/* Bits 0-15 are requirements a loader must refuse if it cannot meet them.
 * Video mode (bit 2) is accepted and ignored, as QEMU does ("multiboot knows
 * VBE. we don't."): sprig has no display, and the spec lets the loader pick
 * another mode. */
#define HF_REQUIRED_MASK 0xffffu
#define HF_SUPPORTED (HF_PAGE_ALIGN_MODULES | HF_MEMORY_INFO | HF_VIDEO_MODE)

/* struct multiboot_info: field offsets and flags. */
enum {
	MBI_FLAGS = 0,
	MBI_MEM_LOWER = 4,
	MBI_MEM_UPPER = 8,
	MBI_BOOT_DEVICE = 12,
	MBI_CMDLINE = 16,
	MBI_MODS_COUNT = 20,
	MBI_MODS_ADDR = 24,
	MBI_MMAP_LENGTH = 44,
	MBI_MMAP_ADDR = 48,
	MBI_BOOT_LOADER_NAME = 64,
	MBI_SIZE = 88,

	MBI_HAS_MEMORY = 1u << 0,
	MBI_HAS_BOOT_DEVICE = 1u << 1,
	MBI_HAS_CMDLINE = 1u << 2,
	MBI_HAS_MODS = 1u << 3,
	MBI_HAS_MMAP = 1u << 6,
	MBI_HAS_BOOT_LOADER_NAME = 1u << 9,

	MOD_ENTRY_SIZE = 16,  /* mod_start, mod_end, string, reserved */
	MMAP_ENTRY_SIZE = 24, /* size (= 20, not counting itself), base, length, type */
};

/* QEMU's value: "first BIOS disk, whole disk". */
#define BOOT_DEVICE_NONE 0x8000ffffu
#define BOOT_LOADER_NAME "sprig"

/* The default map is the VM's (loader/e820.h: SeaBIOS's below 1 MiB). SeaBIOS
 * also reserves its tables at the top of RAM and the ROM alias at 0xfffc0000;
 * sprig has no firmware there (the integrator passes such ranges:
 * mb1_loader.h). */
#define MEM_USABLE MB1_MEM_USABLE
_Static_assert(MB1_MEM_USABLE == E820_RAM && MB1_MEM_RESERVED == E820_RESERVED,
	       "multiboot's memory types are e820's");
/* QEMU's area: the map at 0x9000, the info at 0x9500. */
#define FIXED_START MB1_MMAP_GPA
#define FIXED_END (MB1_INFO_GPA + MBI_SIZE)

/* Round up to a page; false on overflow. */
static bool page_align(uint64_t x, uint64_t *out)
{
	if (x > UINT64_MAX - (PAGE_SIZE - 1))
		return false;
	*out = (x + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1);
	return true;
}

static int find_header(const uint8_t *img, uint64_t size, uint64_t *off, uint32_t *flags,
		       char *err, size_t errlen)
{
	uint64_t limit = size < HEADER_SEARCH_BYTES ? size : HEADER_SEARCH_BYTES;
	bool magic_seen = false;

	if (size < HEADER_BASE_BYTES)
		return refuse(err, errlen, "image too small for a multiboot header (%llu bytes)",
			      (unsigned long long)size);
	for (uint64_t i = 0; i + HEADER_BASE_BYTES <= limit; i += 4) {
		uint32_t magic = rd32(img + i), f = rd32(img + i + 4), sum = rd32(img + i + 8);

		if (magic != MB1_HEADER_MAGIC)
			continue;
		magic_seen = true;
		if ((uint32_t)(magic + f + sum) != 0)
			continue;
		*off = i;
		*flags = f;
		return 0;
	}
	if (magic_seen)
		return refuse(err, errlen, "bad multiboot header checksum");
	return refuse(err, errlen, "no multiboot header in the first 8 KiB");
}

static uint64_t string_size(const char *s)
{
	return s ? strlen(s) + 1 : 1;
}

/* The type of the default map at addr: 0 where it has no entry. */
/* The default map's type at addr, or 0 where it has no entry. */
static uint32_t default_type(const struct e820_entry *map, unsigned n, uint64_t addr)
{
	for (unsigned i = 0; i < n; i++)
		if (addr >= map[i].addr && addr - map[i].addr < map[i].len)
			return map[i].type;
	return 0;
}

static bool overlaps(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1)
{
	return a0 < b1 && b0 < a1;
}

/* The memory map: the default one with the integrator's ranges laid over it,
 * cut at every boundary, merged where contiguous entries share a type; then
 * mem_lower and mem_upper from it, as QEMU's option ROM computes them. */
static int plan_map(struct mb1_plan *p, uint64_t guest_mem, const struct mb1_mem_range *r,
		    size_t n, char *err, size_t errlen)
{
	uint64_t pts[MAP_POINTS_MAX], upper = MiB;
	struct e820_entry def[PC_E820_MAX];
	unsigned n_def = pc_e820(guest_mem, def);
	size_t np = 0;

	if (n > MB1_RANGES_MAX)
		return refuse(err, errlen, "too many memory map ranges (%zu, at most %d)", n,
			      MB1_RANGES_MAX);
	for (size_t i = 0; i < n; i++) {
		if (r[i].type < MB1_MEM_RESERVED || r[i].type > MB1_MEM_BAD)
			return refuse(err, errlen, "memory map range %zu: type %u (2 to 5 allowed)",
				      i, r[i].type);
		if (!r[i].size || r[i].size > UINT64_MAX - r[i].base)
			return refuse(err, errlen, "memory map range %zu: bad size 0x%llx at 0x%llx",
				      i, (unsigned long long)r[i].size,
				      (unsigned long long)r[i].base);
		for (size_t j = 0; j < i; j++)
			if (overlaps(r[i].base, r[i].base + r[i].size, r[j].base,
				     r[j].base + r[j].size))
				return refuse(err, errlen, "memory map ranges %zu and %zu overlap", j,
					      i);
	}
	for (unsigned i = 0; i < n_def; i++) {
		pts[np++] = def[i].addr;
		pts[np++] = def[i].addr + def[i].len;
	}
	for (size_t i = 0; i < n; i++) {
		pts[np++] = r[i].base;
		pts[np++] = r[i].base + r[i].size;
	}
	for (size_t i = 1; i < np; i++) /* insertion sort: at most 38 */
		for (size_t j = i; j > 0 && pts[j - 1] > pts[j]; j--) {
			uint64_t t = pts[j];
			pts[j] = pts[j - 1];
			pts[j - 1] = t;
		}
	p->n_map = 0;
	for (size_t i = 0; i + 1 < np; i++) {
		uint64_t a = pts[i], b = pts[i + 1];
		uint32_t type = default_type(def, n_def, a);
		struct map_entry *last = p->n_map ? &p->map[p->n_map - 1] : NULL;

		if (a == b)
			continue;
		for (size_t k = 0; k < n; k++)
			if (a >= r[k].base && a - r[k].base < r[k].size)
				type = r[k].type;
		if (!type)
			continue;
		if (last && last->end == a && last->type == type) {
			last->end = b;
		} else {
			p->map[p->n_map].base = a;
			p->map[p->n_map].end = b;
			p->map[p->n_map].type = type;
			p->n_map++;
		}
	}
	p->mem_lower = 0;
	if (p->n_map && p->map[0].base == 0 && p->map[0].type == MEM_USABLE)
		p->mem_lower = (uint32_t)((p->map[0].end < PC_VGA_START ? p->map[0].end : PC_VGA_START) /
					  1024);
	for (uint32_t i = 0; i < p->n_map; i++)
		if (p->map[i].type == MEM_USABLE && p->map[i].base <= upper &&
		    upper < p->map[i].end)
			upper = p->map[i].end;
	if (upper > 4 * GiB)
		upper = 4 * GiB;
	p->mem_upper = (uint32_t)((upper - MiB) / 1024);
	return 0;
}

/* Does [a, b) meet a loaded piece of the kernel? */
static bool kernel_overlaps(const uint8_t *img, const struct mb1_plan *p, uint64_t a, uint64_t b)
{
	struct elf_segment s;

	if (p->aout)
		return overlaps(a, b, p->kernel_start, p->kernel_end);
	for (uint32_t i = 0; i < p->phnum; i++) {
		elf_segment_read(img, p, i, &s);
		if (elf_segment_loaded(&s) && overlaps(a, b, s.paddr, s.paddr + s.mem_size))
			return true;
	}
	return false;
}

static bool range_overlaps(const struct mb1_mem_range *r, size_t n, uint64_t a, uint64_t b,
			   size_t *which)
{
	for (size_t i = 0; i < n; i++)
		if (overlaps(a, b, r[i].base, r[i].base + r[i].size)) {
			*which = i;
			return true;
		}
	return false;
}

/* Place the modules from p->first_module on: p->end. */
static int place_modules(struct mb1_plan *p, uint64_t limit, const struct mb1_module_src *mods,
			 size_t n_mods, char *err, size_t errlen)
{
	uint64_t at = p->first_module;

	for (size_t i = 0; i < n_mods; i++) {
		if (at > limit || mods[i].size > limit - at)
			return refuse(err, errlen, "image needs more memory than the guest has");
		if (!page_align(at + mods[i].size, &at))
			return refuse(err, errlen, "image needs more memory than the guest has");
	}
	p->end = at;
	return 0;
}

/* Place the module table, strings and modules after the kernel, as QEMU does
 * (but aligned on absolute page boundaries, as header flag 0 asks, where QEMU
 * aligns relative to the load address); the map and the info at QEMU's
 * 0x9000/0x9500 when nothing else is there, else after the strings. */
static int plan_layout(const uint8_t *img, struct mb1_plan *p, uint64_t guest_mem,
		       const char *cmdline, const struct mb1_module_src *mods, size_t n_mods,
		       const struct mb1_mem_range *ranges, size_t n_ranges, char *err,
		       size_t errlen)
{
	/* The info's addresses are 32 bits: nothing may go above 4 GiB. */
	uint64_t limit = guest_mem < 4 * GiB ? guest_mem : 4 * GiB;
	uint64_t strings_size = string_size(cmdline) + sizeof(BOOT_LOADER_NAME);
	uint64_t strings_end, mmap_size = (uint64_t)p->n_map * MMAP_ENTRY_SIZE;
	size_t which;

	if (p->kernel_end > limit)
		return refuse(err, errlen, "kernel ends at 0x%llx, above 4 GiB",
			      (unsigned long long)p->kernel_end);
	if (n_mods > limit / MOD_ENTRY_SIZE)
		return refuse(err, errlen, "too many modules (%zu)", n_mods);
	for (size_t i = 0; i < n_mods; i++) {
		strings_size += string_size(mods[i].cmdline);
		if (strings_size > limit)
			return refuse(err, errlen, "module strings do not fit in guest memory");
	}
	if (!page_align(p->kernel_end, &p->mods_table))
		return refuse(err, errlen, "image needs more memory than the guest has");
	p->strings = p->mods_table + n_mods * MOD_ENTRY_SIZE;
	p->strings_size = strings_size;
	strings_end = p->strings + strings_size;
	if (!page_align(strings_end, &p->first_module) ||
	    place_modules(p, limit, mods, n_mods, err, errlen))
		return -1;
	p->mmap_gpa = MB1_MMAP_GPA;
	p->info_gpa = MB1_INFO_GPA;
	if (kernel_overlaps(img, p, FIXED_START, FIXED_END) ||
	    overlaps(FIXED_START, FIXED_END, p->mods_table, p->end) ||
	    range_overlaps(ranges, n_ranges, FIXED_START, FIXED_END, &which)) {
		/* After the strings (all above the kernel): map, info, modules. */
		p->mmap_gpa = (strings_end + 7) & ~7ull;
		p->info_gpa = p->mmap_gpa + mmap_size;
		if (!page_align(p->info_gpa + MBI_SIZE, &p->first_module) ||
		    place_modules(p, limit, mods, n_mods, err, errlen))
			return -1;
		strings_end = p->info_gpa + MBI_SIZE;
	}
	if (p->end > limit || strings_end > limit)
		return refuse(err, errlen,
			      "image needs more memory than the guest has (0x%llx of 0x%llx)",
			      (unsigned long long)(strings_end > p->end ? strings_end : p->end),
			      (unsigned long long)limit);
	for (size_t i = 0; i < n_ranges; i++) {
		const struct mb1_mem_range *r = &ranges[i];

		if (kernel_overlaps(img, p, r->base, r->base + r->size) ||
		    overlaps(r->base, r->base + r->size, p->mods_table, p->end))
			return refuse(err, errlen,
				      "the image (0x%llx-0x%llx) overlaps memory map range %zu "
				      "(0x%llx-0x%llx)", (unsigned long long)p->kernel_start,
				      (unsigned long long)p->end, i, (unsigned long long)r->base,
				      (unsigned long long)(r->base + r->size));
	}
	return 0;
}

static int plan(const struct mb1_boot *b, struct mb1_plan *p, char *err, size_t errlen)
{
	const uint8_t *img = b->image;
	uint64_t size = b->size, guest_mem = b->guest_mem;
	uint64_t hoff = 0;
	uint32_t unsupported;

	memset(p, 0, sizeof(*p));
	if (guest_mem <= MiB)
		return refuse(err, errlen, "guest memory (0x%llx bytes) must be more than 1 MiB",
			      (unsigned long long)guest_mem);
	if (find_header(img, size, &hoff, &p->flags, err, errlen))
		return -1;
	unsupported = p->flags & HF_REQUIRED_MASK & ~HF_SUPPORTED;
	if (unsupported)
		return refuse(err, errlen, "unsupported required multiboot flags 0x%x",
			      unsupported);
	if (p->flags & HF_AOUT_KLUDGE) {
		if (plan_aout(img, size, hoff, guest_mem, p, err, errlen))
			return -1;
	} else if (plan_elf(img, size, guest_mem, p, err, errlen)) {
		return -1;
	}
	if (plan_map(p, guest_mem, b->ranges, b->n_ranges, err, errlen))
		return -1;
	return plan_layout(img, p, guest_mem, b->cmdline, b->mods, b->n_mods, b->ranges,
			   b->n_ranges, err, errlen);
}

/* The plan (with its map) is about 1 KiB of stack; a load adds as much. */
int mb1_check_boot(const struct mb1_boot *b, char *err, size_t errlen)
{
	struct mb1_plan p;

	return plan(b, &p, err, errlen);
}

int mb1_check(const void *image, uint64_t size, uint64_t guest_mem, const char *cmdline,
	      const struct mb1_module_src *mods, size_t n_mods, char *err, size_t errlen)
{
	struct mb1_boot b = { .image = image, .size = size, .guest_mem = guest_mem,
			      .cmdline = cmdline, .mods = mods, .n_mods = n_mods };

	return mb1_check_boot(&b, err, errlen);
}

static int write_guest(struct mmu *mmu, uint64_t gpa, const void *buf, uint64_t len,
		       char *err, size_t errlen)
{
	if (len && mmu_write_guest(mmu, gpa, buf, len))
		return refuse(err, errlen, "out of memory writing 0x%llx bytes at gpa 0x%llx",
			      (unsigned long long)len, (unsigned long long)gpa);
	return 0;
}

/* The slot's backing may hold old data (eager without zeroing, restore), so
 * bss is zeroed explicitly. */
static int zero_guest(struct mmu *mmu, uint64_t gpa, uint64_t len, char *err, size_t errlen)
{
	static const uint8_t zeros[4096];

	while (len) {
		uint64_t n = len < sizeof(zeros) ? len : sizeof(zeros);

		if (write_guest(mmu, gpa, zeros, n, err, errlen))
			return -1;
		gpa += n;
		len -= n;
	}
	return 0;
}

static int load_kernel(struct mmu *mmu, const uint8_t *img, const struct mb1_plan *p,
		       char *err, size_t errlen)
{
	struct elf_segment s;

	if (p->aout) {
		if (write_guest(mmu, p->kernel_start, img + p->aout_offset, p->aout_file_size,
				err, errlen))
			return -1;
		return zero_guest(mmu, p->kernel_start + p->aout_file_size,
				  p->aout_mem_size - p->aout_file_size, err, errlen);
	}
	for (uint32_t i = 0; i < p->phnum; i++) {
		elf_segment_read(img, p, i, &s);
		if (!elf_segment_loaded(&s))
			continue;
		if (write_guest(mmu, s.paddr, img + s.offset, s.file_size, err, errlen) ||
		    zero_guest(mmu, s.paddr + s.file_size, s.mem_size - s.file_size, err, errlen))
			return -1;
	}
	return 0;
}

/* Append string s (NULL: "") at *at; returns its gpa. */
static int put_string(struct mmu *mmu, uint64_t *at, const char *s, uint32_t *gpa, char *err,
		      size_t errlen)
{
	uint64_t n = string_size(s);

	*gpa = (uint32_t)*at;
	if (write_guest(mmu, *at, s ? s : "", n, err, errlen))
		return -1;
	*at += n;
	return 0;
}

static int load_info(struct mmu *mmu, const struct mb1_plan *p, const char *cmdline,
		     const struct mb1_module_src *mods, size_t n_mods, char *err, size_t errlen)
{
	uint8_t info[MBI_SIZE] = { 0 }, mod[MOD_ENTRY_SIZE] = { 0 };
	uint8_t map[MAP_MAX * MMAP_ENTRY_SIZE];
	uint64_t strings = p->strings, module = p->first_module;
	uint32_t gpa;

	for (size_t i = 0; i < n_mods; i++) {
		if (write_guest(mmu, module, mods[i].data, mods[i].size, err, errlen) ||
		    put_string(mmu, &strings, mods[i].cmdline, &gpa, err, errlen))
			return -1;
		put32(mod + 0, (uint32_t)module);
		put32(mod + 4, (uint32_t)(module + mods[i].size));
		put32(mod + 8, gpa);
		if (write_guest(mmu, p->mods_table + i * MOD_ENTRY_SIZE, mod, sizeof(mod), err,
				errlen))
			return -1;
		page_align(module + mods[i].size, &module);
	}

	if (put_string(mmu, &strings, cmdline, &gpa, err, errlen))
		return -1;
	put32(info + MBI_CMDLINE, gpa);
	if (put_string(mmu, &strings, BOOT_LOADER_NAME, &gpa, err, errlen))
		return -1;
	put32(info + MBI_BOOT_LOADER_NAME, gpa);

	for (uint32_t i = 0; i < p->n_map; i++) {
		uint8_t *e = map + i * MMAP_ENTRY_SIZE;

		put32(e, MMAP_ENTRY_SIZE - 4);
		put64(e + 4, p->map[i].base);
		put64(e + 12, p->map[i].end - p->map[i].base);
		put32(e + 20, p->map[i].type);
	}
	if (write_guest(mmu, p->mmap_gpa, map, (uint64_t)p->n_map * MMAP_ENTRY_SIZE, err, errlen))
		return -1;

	/* Boot device as QEMU sets it, so that the flags match a QEMU boot. */
	put32(info + MBI_FLAGS, MBI_HAS_MEMORY | MBI_HAS_BOOT_DEVICE | MBI_HAS_CMDLINE |
				MBI_HAS_MODS | MBI_HAS_MMAP | MBI_HAS_BOOT_LOADER_NAME);
	put32(info + MBI_MEM_LOWER, p->mem_lower);
	put32(info + MBI_MEM_UPPER, p->mem_upper);
	put32(info + MBI_BOOT_DEVICE, BOOT_DEVICE_NONE);
	put32(info + MBI_MODS_COUNT, (uint32_t)n_mods);
	put32(info + MBI_MODS_ADDR, (uint32_t)p->mods_table);
	put32(info + MBI_MMAP_LENGTH, p->n_map * MMAP_ENTRY_SIZE);
	put32(info + MBI_MMAP_ADDR, (uint32_t)p->mmap_gpa);
	return write_guest(mmu, p->info_gpa, info, sizeof(info), err, errlen);
}

int mb1_load_boot(struct mmu *mmu, const struct mb1_boot *b, struct mb1_entry *entry, char *err,
		  size_t errlen)
{
	struct mb1_plan p;

	if (plan(b, &p, err, errlen) || load_kernel(mmu, b->image, &p, err, errlen) ||
	    load_info(mmu, &p, b->cmdline, b->mods, b->n_mods, err, errlen))
		return -1;
	entry->eip = p.entry;
	entry->eax = MB1_BOOTLOADER_MAGIC;
	entry->ebx = (uint32_t)p.info_gpa;
	return 0;
}

int mb1_load(struct mmu *mmu, uint64_t guest_mem, const void *image, uint64_t size,
	     const char *cmdline, const struct mb1_module_src *mods, size_t n_mods,
	     struct mb1_entry *entry, char *err, size_t errlen)
{
	struct mb1_boot b = { .image = image, .size = size, .guest_mem = guest_mem,
			      .cmdline = cmdline, .mods = mods, .n_mods = n_mods };

	return mb1_load_boot(mmu, &b, entry, err, errlen);
}
