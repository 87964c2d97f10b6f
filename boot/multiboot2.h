/* Multiboot2 boot information: parsed once, validated, into struct boot_info.
 * The parser never follows a tag blindly: sizes are checked against the total
 * size, tags must be 8-byte aligned and end with a type-0 tag; a malformed tag
 * makes it refuse the whole structure (or skip only that tag, when its fault is
 * contained) with a message. Host-testable: no kernel dependencies. */
#pragma once
#include "arch/x86/framebuffer.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MB2_BOOTLOADER_MAGIC 0x36d76289u

enum mem_type {
	MEM_USABLE = 1,
	MEM_RESERVED = 2,
	MEM_ACPI_RECLAIMABLE = 3,
	MEM_NVS = 4,
	MEM_BAD = 5,
};

#define BOOT_MAX_MMAP 128
#define BOOT_MAX_MODULES 64
#define BOOT_CMDLINE_MAX 4096
#define BOOT_MSG_MAX 8

struct boot_mmap_entry {
	uint64_t start, len;
	uint32_t type; /* enum mem_type; EFI types are converted */
};

struct boot_module {
	uint64_t start, end; /* physical, end exclusive */
	char cmdline[128];
};

struct boot_info {
	char cmdline[BOOT_CMDLINE_MAX];
	bool cmdline_cut; /* longer than cmdline holds: what is there is not all */
	struct boot_mmap_entry mmap[BOOT_MAX_MMAP];
	size_t n_mmap;
	bool mmap_from_efi; /* from the EFI memory map tag, not the BIOS map tag */
	struct boot_module modules[BOOT_MAX_MODULES];
	size_t n_modules;
	uint64_t rsdp;    /* physical address of the RSDP copy in the info (0: none) */
	uint32_t rsdp_len;
	uint32_t mem_lower_kb, mem_upper_kb; /* basic meminfo tag, 0 if absent */
	uint64_t efi_system_table;            /* 0 if absent */
	struct boot_framebuffer fb;           /* the framebuffer GRUB set up */
	uint32_t total_size;                  /* of the raw info, for reserving it */
	/* Warnings about tags that were skipped (kept for the console). */
	char warnings[BOOT_MSG_MAX][96];
	size_t n_warnings;
};

/* Parse the info at `info` (as handed over by the loader in EBX), which lies
 * wholly inside [info, info + avail) (avail bounds how far the parser may read).
 * Returns false with a reason in err when the structure as a whole cannot be
 * trusted. */
bool mb2_parse(const void *info, size_t avail, struct boot_info *out, char *err, size_t errlen);
