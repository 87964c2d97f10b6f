/* Multiboot2 boot-information parser. Two passes: the first proves that the tag
 * chain is sound (every tag inside total_size, an end tag reached), the second
 * reads the tags, skipping with a warning any whose content is inconsistent.
 * Fields are read with memcpy, never through struct overlays, so neither the
 * loader's alignment nor aliasing rules can matter. */
#include "boot/multiboot2.h"
#include "lib/bytes.h"
#include "lib/print.h"
#include "lib/string.h"
#include <stdarg.h>

enum {
	TAG_END = 0,
	TAG_CMDLINE = 1,
	TAG_MODULE = 3,
	TAG_BASIC_MEMINFO = 4,
	TAG_MMAP = 6,
	TAG_FRAMEBUFFER = 8,
	TAG_EFI64 = 12,
	TAG_ACPI_OLD = 14,
	TAG_ACPI_NEW = 15,
	TAG_EFI_MMAP = 17,
};

#define TAG_HDR 8       /* u32 type, u32 size */
#define MAP_HDR 16      /* tag header, u32 entry (descriptor) size, u32 version */
#define BIOS_ENTRY_MIN 24
#define EFI_DESC_MIN 40
#define RSDP_V1_LEN 20
#define RSDP_V2_LEN 36
#define EFI_PAGE_SHIFT 12
/* GRUB's framebuffer tag: the common part is 32 bytes (its reserved field is
 * 16 bits, as in the specification's multiboot2.h, not the 8 its table
 * shows), then for RGB the position and size of red, green and blue. */
#define FB_COMMON_LEN 32
#define FB_RGB_LEN (FB_COMMON_LEN + 6)

static void warn(struct boot_info *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(struct boot_info *out, const char *fmt, ...)
{
	va_list ap;
	size_t slot = out->n_warnings;

	/* The last slot turns into a marker once there are more than fit. */
	if (slot == BOOT_MSG_MAX) {
		ksnprintf(out->warnings[BOOT_MSG_MAX - 1], sizeof(out->warnings[0]),
			  "further warnings dropped");
		return;
	}
	va_start(ap, fmt);
	kvsnprintf(out->warnings[slot], sizeof(out->warnings[0]), fmt, ap);
	va_end(ap);
	out->n_warnings++;
}

static bool fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err) {
		va_start(ap, fmt);
		kvsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return false;
}

/* Copy a string field of srclen bytes; returns false when it had no NUL inside
 * the field or did not fit (the copy is cut and terminated either way). */
static bool copy_string(char *dst, size_t dstlen, const uint8_t *src, size_t srclen)
{
	size_t n = 0;

	while (n < srclen && src[n])
		n++;
	bool whole = n < srclen && n < dstlen;
	if (n >= dstlen)
		n = dstlen - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
	return whole;
}

/* Memory map building: out->mmap stays sorted, disjoint, and merged. Where
 * loader entries overlap, the more restrictive type wins. */
static int type_rank(uint32_t type)
{
	switch (type) {
	case MEM_USABLE: return 0;
	case MEM_ACPI_RECLAIMABLE: return 1;
	case MEM_RESERVED: return 2;
	case MEM_NVS: return 3;
	default: return 4; /* MEM_BAD */
	}
}

static uint64_t entry_end(const struct boot_mmap_entry *e)
{
	return e->start + e->len;
}

/* Insert [start, end) at index i, growing a touching neighbour of the same type
 * when there is one; returns false (and counts a drop) when the map is full. */
static bool map_insert(struct boot_info *out, size_t i, uint64_t start, uint64_t end, uint32_t type,
		       size_t *dropped)
{
	struct boot_mmap_entry *m = out->mmap;

	if (i > 0 && m[i - 1].type == type && entry_end(&m[i - 1]) == start) {
		m[i - 1].len += end - start;
		return false;
	}
	if (i < out->n_mmap && m[i].type == type && m[i].start == end) {
		m[i].start = start;
		m[i].len += end - start;
		return false;
	}
	if (out->n_mmap == BOOT_MAX_MMAP) {
		(*dropped)++;
		return false;
	}
	memmove(&m[i + 1], &m[i], (out->n_mmap - i) * sizeof(*m));
	m[i] = (struct boot_mmap_entry){ start, end - start, type };
	out->n_mmap++;
	return true;
}

static void map_add(struct boot_info *out, uint64_t start, uint64_t end, uint32_t type, size_t *dropped)
{
	struct boot_mmap_entry *m = out->mmap;

	/* Carve the new range out of overlapping entries of lower rank. */
	for (size_t i = 0; i < out->n_mmap; i++) {
		uint64_t ms = m[i].start, me = entry_end(&m[i]);
		if (me <= start || ms >= end || type_rank(m[i].type) >= type_rank(type))
			continue;
		if (ms >= start && me <= end) {
			memmove(&m[i], &m[i + 1], (out->n_mmap - i - 1) * sizeof(*m));
			out->n_mmap--;
			i--; /* wraps at 0 and comes back with i++: unsigned arithmetic */
		} else if (ms < start) {
			m[i].len = start - ms;
			if (me > end && map_insert(out, i + 1, end, me, m[i].type, dropped))
				i++;
		} else {
			m[i].start = end;
			m[i].len = me - end;
		}
	}

	/* What overlaps the range now outranks it: fill only the gaps. */
	uint64_t cur = start;
	size_t i = 0;
	while (cur < end) {
		while (i < out->n_mmap && entry_end(&m[i]) <= cur)
			i++;
		if (i < out->n_mmap && m[i].start <= cur) {
			cur = entry_end(&m[i++]);
			continue;
		}
		uint64_t stop = i < out->n_mmap && m[i].start < end ? m[i].start : end;
		if (map_insert(out, i, cur, stop, type, dropped))
			i++;
		cur = stop;
	}

	/* Growing an entry may have made it touch its neighbour. */
	size_t n = 0;
	for (size_t j = 0; j < out->n_mmap; j++) {
		if (n && m[n - 1].type == m[j].type && entry_end(&m[n - 1]) == m[j].start)
			m[n - 1].len += m[j].len;
		else
			m[n++] = m[j];
	}
	out->n_mmap = n;
}

static uint32_t efi_to_mem_type(uint32_t efi_type)
{
	switch (efi_type) {
	case 1: /* LoaderCode */
	case 2: /* LoaderData */
	case 3: /* BootServicesCode */
	case 4: /* BootServicesData: free once GRUB has exited boot services */
	case 7: /* ConventionalMemory */
		return MEM_USABLE;
	case 8: /* UnusableMemory */
		return MEM_BAD;
	case 9: /* ACPIReclaimMemory */
		return MEM_ACPI_RECLAIMABLE;
	case 10: /* ACPIMemoryNVS */
		return MEM_NVS;
	default: /* reserved, runtime services, MMIO, PAL code, persistent */
		return MEM_RESERVED;
	}
}

/* Reads a BIOS (e820-style) or EFI memory map tag into out->mmap. Returns false,
 * having warned, when the tag as a whole cannot be used. */
static bool read_map(struct boot_info *out, const uint8_t *tag, uint32_t size, bool efi)
{
	const char *what = efi ? "EFI memory map" : "memory map";
	size_t min = efi ? EFI_DESC_MIN : BIOS_ENTRY_MIN;

	if (size < MAP_HDR) {
		warn(out, "%s tag of %u bytes is too short; skipped", what, size);
		return false;
	}
	uint32_t esize = rd32(tag + 8);
	if (esize < min || esize % 8) {
		warn(out, "%s entry size %u is invalid; skipped", what, esize);
		return false;
	}

	size_t count = (size - MAP_HDR) / esize, bad = 0, dropped = 0;
	if ((size - MAP_HDR) % esize)
		warn(out, "%s has %u stray bytes after its entries", what, (size - MAP_HDR) % esize);
	for (size_t k = 0; k < count; k++) {
		const uint8_t *e = tag + MAP_HDR + k * esize;
		uint64_t start, len;
		uint32_t type;
		if (efi) {
			uint64_t pages = rd64(e + 24);
			start = rd64(e + 8);
			len = pages << EFI_PAGE_SHIFT;
			type = efi_to_mem_type(rd32(e));
			if (pages > UINT64_MAX >> EFI_PAGE_SHIFT) {
				bad++;
				continue;
			}
		} else {
			start = rd64(e);
			len = rd64(e + 8);
			type = rd32(e + 16);
			if (type < MEM_USABLE || type > MEM_BAD)
				type = MEM_RESERVED;
		}
		if (len > UINT64_MAX - start) {
			bad++;
			continue;
		}
		if (len)
			map_add(out, start, start + len, type, &dropped);
	}
	if (bad)
		warn(out, "%s: %zu entries extend past 2^64; skipped", what, bad);
	if (dropped)
		warn(out, "%s: %zu ranges dropped, more than %d", what, dropped, BOOT_MAX_MMAP);
	return true;
}

static void read_module(struct boot_info *out, const uint8_t *tag, uint32_t size)
{
	if (size < 16) {
		warn(out, "module tag of %u bytes is too short; skipped", size);
		return;
	}
	uint32_t start = rd32(tag + 8), end = rd32(tag + 12);
	if (end < start) {
		warn(out, "module at 0x%x ends before it starts (0x%x); skipped", start, end);
		return;
	}
	if (out->n_modules == BOOT_MAX_MODULES) {
		warn(out, "module at 0x%x dropped: more than %d modules", start, BOOT_MAX_MODULES);
		return;
	}
	struct boot_module *m = &out->modules[out->n_modules++];
	m->start = start;
	m->end = end;
	if (!copy_string(m->cmdline, sizeof(m->cmdline), tag + 16, size - 16))
		warn(out, "module %zu string unterminated or too long; cut", out->n_modules - 1);
}

static void read_framebuffer(struct boot_info *out, const uint8_t *tag, uint32_t size)
{
	struct boot_framebuffer *fb = &out->fb;
	uint8_t type = size >= FB_COMMON_LEN ? tag[29] : 0;

	if (size < FB_COMMON_LEN || (type == BOOT_FB_RGB && size < FB_RGB_LEN)) {
		warn(out, "framebuffer tag of %u bytes is too short; skipped", size);
		return;
	}
	fb->addr = rd64(tag + 8);
	fb->pitch = rd32(tag + 16);
	fb->width = rd32(tag + 20);
	fb->height = rd32(tag + 24);
	fb->bpp = tag[28];
	fb->type = type;
	if (type == BOOT_FB_RGB) {
		fb->red_pos = tag[32];
		fb->red_size = tag[33];
		fb->green_pos = tag[34];
		fb->green_size = tag[35];
		fb->blue_pos = tag[36];
		fb->blue_size = tag[37];
	}
	uint64_t bytes_per_line = type == BOOT_FB_EGA_TEXT ? 2ull * fb->width :
				  ((uint64_t)fb->width * fb->bpp + 7) / 8;
	if (!fb->addr || !fb->width || !fb->height || fb->pitch < bytes_per_line ||
	    (uint64_t)fb->pitch * fb->height > UINT64_MAX - fb->addr) {
		warn(out, "framebuffer tag %ux%u pitch %u at 0x%llx is inconsistent; skipped",
		     fb->width, fb->height, fb->pitch, (unsigned long long)fb->addr);
		return;
	}
	fb->present = true;
}

static bool valid_rsdp(const uint8_t *tag, uint32_t size, uint32_t min)
{
	return size >= TAG_HDR + min && memcmp(tag + TAG_HDR, "RSD PTR ", 8) == 0;
}

bool mb2_parse(const void *info, size_t avail, struct boot_info *out, char *err, size_t errlen)
{
	const uint8_t *base = info;

	memset(out, 0, sizeof(*out));
	if (!info)
		return fail(err, errlen, "no boot information");
	if ((uintptr_t)info % 8)
		return fail(err, errlen, "boot information at %p is not 8-byte aligned", info);
	if (avail < TAG_HDR)
		return fail(err, errlen, "boot information area of %zu bytes is too small", avail);
	uint32_t total = rd32(base);
	if (total < 2 * TAG_HDR)
		return fail(err, errlen, "total_size %u is too small for any tag", total);
	if (total > avail)
		return fail(err, errlen, "total_size %u exceeds the %zu bytes available", total, avail);

	size_t off = TAG_HDR;
	for (;;) {
		if (off > total || total - off < TAG_HDR)
			return fail(err, errlen, "no end tag within total_size %u", total);
		uint32_t type = rd32(base + off), size = rd32(base + off + 4);
		if (size < TAG_HDR)
			return fail(err, errlen, "tag type %u at offset %zu has size %u < 8", type, off, size);
		if (size > total - off)
			return fail(err, errlen, "tag type %u at offset %zu (size %u) overruns total_size %u",
				    type, off, size, total);
		if (type == TAG_END) {
			if (size != TAG_HDR)
				return fail(err, errlen, "end tag at offset %zu has size %u, not 8", off, size);
			break;
		}
		off += ((size_t)size + 7) & ~(size_t)7;
	}
	out->total_size = total;

	const uint8_t *bios_map = NULL, *efi_map = NULL, *rsdp_old = NULL, *rsdp_new = NULL;
	bool have_cmdline = false, have_meminfo = false, have_efi64 = false, have_fb = false;
	for (off = TAG_HDR;; off += ((size_t)rd32(base + off + 4) + 7) & ~(size_t)7) {
		const uint8_t *tag = base + off;
		uint32_t type = rd32(tag), size = rd32(tag + 4);
		/* Keep the first of tags that should come once: later ones are suspect. */
		bool *seen = NULL;
		const uint8_t **keep = NULL;

		switch (type) {
		case TAG_END:
			break;
		case TAG_CMDLINE:
			seen = &have_cmdline;
			if (*seen)
				break;
			out->cmdline_cut = !copy_string(out->cmdline, sizeof(out->cmdline), tag + TAG_HDR,
							size - TAG_HDR);
			if (out->cmdline_cut)
				warn(out, "command line unterminated or longer than %d bytes; cut",
				     BOOT_CMDLINE_MAX - 1);
			break;
		case TAG_MODULE:
			read_module(out, tag, size);
			break;
		case TAG_BASIC_MEMINFO:
			seen = &have_meminfo;
			if (*seen)
				break;
			if (size < 16) {
				warn(out, "basic meminfo tag of %u bytes is too short; skipped", size);
				break;
			}
			out->mem_lower_kb = rd32(tag + 8);
			out->mem_upper_kb = rd32(tag + 12);
			break;
		case TAG_EFI64:
			seen = &have_efi64;
			if (*seen)
				break;
			if (size < 16) {
				warn(out, "EFI64 system table tag of %u bytes is too short; skipped", size);
				break;
			}
			out->efi_system_table = rd64(tag + 8);
			break;
		case TAG_FRAMEBUFFER:
			seen = &have_fb;
			if (*seen)
				break;
			read_framebuffer(out, tag, size);
			break;
		case TAG_MMAP:
			keep = &bios_map;
			break;
		case TAG_EFI_MMAP:
			keep = &efi_map;
			break;
		case TAG_ACPI_OLD:
			keep = &rsdp_old;
			break;
		case TAG_ACPI_NEW:
			keep = &rsdp_new;
			break;
		default: /* tags sprig has no use for */
			break;
		}
		if (type == TAG_END)
			break;
		if ((seen && *seen) || (keep && *keep)) {
			warn(out, "duplicate tag type %u at offset %zu ignored", type, off);
			continue;
		}
		if (seen)
			*seen = true;
		if (keep)
			*keep = tag;
	}

	/* GRUB under UEFI passes both maps; the EFI one is the firmware's own. */
	if (efi_map && read_map(out, efi_map, rd32(efi_map + 4), true) && out->n_mmap)
		out->mmap_from_efi = true;
	else if (bios_map)
		read_map(out, bios_map, rd32(bios_map + 4), false);

	if (rsdp_new && !valid_rsdp(rsdp_new, rd32(rsdp_new + 4), RSDP_V2_LEN)) {
		warn(out, "ACPI new RSDP tag malformed; skipped");
		rsdp_new = NULL;
	}
	if (rsdp_old && !valid_rsdp(rsdp_old, rd32(rsdp_old + 4), RSDP_V1_LEN)) {
		warn(out, "ACPI old RSDP tag malformed; skipped");
		rsdp_old = NULL;
	}
	const uint8_t *rsdp = rsdp_new ? rsdp_new : rsdp_old;
	if (rsdp) {
		out->rsdp = (uintptr_t)(rsdp + TAG_HDR);
		out->rsdp_len = rd32(rsdp + 4) - TAG_HDR;
	}
	return true;
}
