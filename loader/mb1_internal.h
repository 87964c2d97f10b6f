/* The multiboot 1 loader's planning pass (mb1_loader.c), shared with the
 * parsers of the two kernel formats it accepts: ELF (mb1_elf.c) and the
 * a.out kludge (mb1_aout.c). Each parser validates its headers against the
 * image's size and the guest's memory and fills in the plan; loading only
 * copies what the plan says. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "loader/e820.h"
#include "loader/mb1_loader.h"

/* The header must lie in the first 8 KiB, 32-bit aligned. */
#define HEADER_SEARCH_BYTES 8192u
#define HEADER_AOUT_BYTES 32u   /* ... header_addr, load_addr, load_end, bss_end, entry */

/* Boundaries: two per entry of the default map and per range; entries: one fewer. */
#define MAP_POINTS_MAX (2 * PC_E820_MAX + 2 * MB1_RANGES_MAX)
#define MAP_MAX (MAP_POINTS_MAX - 1)

/* What the planning pass found and decided. */
struct mb1_plan {
	bool aout;
	uint32_t flags;
	uint32_t entry;
	/* a.out kludge: one range from the file, then bss. */
	uint64_t aout_offset, aout_file_size, aout_mem_size;
	/* ELF: the validated program header table. */
	uint64_t phoff;
	uint32_t phentsize, phnum;
	/* [kernel_start, kernel_end): every loaded byte, bss included. */
	uint64_t kernel_start, kernel_end;
	/* Placement after the kernel. */
	uint64_t mods_table, strings, strings_size, first_module, end;
	/* The memory map, and where it and the info go. */
	struct map_entry {
		uint64_t base, end;
		uint32_t type;
	} map[MAP_MAX];
	uint32_t n_map, mem_lower, mem_upper;
	uint64_t mmap_gpa, info_gpa;
};

struct elf_segment {
	uint32_t type, flags;
	uint64_t offset, vaddr, paddr, file_size, mem_size;
};

/* The a.out kludge: the header at hoff gives the file range, bss and entry. */
int plan_aout(const uint8_t *img, uint64_t size, uint64_t hoff, uint64_t guest_mem,
	      struct mb1_plan *p, char *err, size_t errlen);
/* An ELF32 (or ELF64 with 32-bit addresses) executable's loadable segments
 * and entry point. */
int plan_elf(const uint8_t *img, uint64_t size, uint64_t guest_mem, struct mb1_plan *p,
	     char *err, size_t errlen);
/* Program header i of a table plan_elf has bounded inside the image. */
void elf_segment_read(const uint8_t *img, const struct mb1_plan *p, uint32_t i,
		      struct elf_segment *s);
/* Segments QEMU loads: PT_LOAD with a non-zero size in memory. */
bool elf_segment_loaded(const struct elf_segment *s);
