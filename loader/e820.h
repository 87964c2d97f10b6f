/* The memory map of a sprig VM, the one source for every way a guest learns
 * it: the multiboot map (loader/mb1_loader.c, the integrator's ranges laid
 * over), the bzImage boot_params' e820 (loader/bzimage_loader.c) and fw_cfg's
 * etc/e820 (dev/fwcfg.c). Below 1 MiB it is SeaBIOS's map as a QEMU guest
 * sees it:
 *
 *   0x0       - 0x9fc00   RAM        (SeaBIOS's EBDA takes the last KiB)
 *   0x9fc00   - 0xa0000   reserved
 *   0xf0000   - 0x100000  reserved   (the BIOS area: the platform's ACPI
 *                                     tables lie there, PLATFORM_ACPI_GPA)
 *   0x100000  - guest_mem RAM
 *
 * (0xa0000-0xf0000 is absent.) Types are e820's, which multiboot shares. */
#pragma once
#include <stdint.h>

#define E820_RAM 1
#define E820_RESERVED 2
#define E820_ACPI 3
#define E820_NVS 4

#define PC_EBDA_START 0x9fc00ull
#define PC_VGA_START 0xa0000ull
#define PC_BIOS_START 0xf0000ull
#define PC_HIGH_RAM 0x100000ull
#define PC_E820_MAX 4

struct e820_entry {
	uint64_t addr;
	uint64_t len;
	uint32_t type;
};

/* The map of a VM with guest_mem bytes of RAM at 0 (more than 1 MiB);
 * returns the number of entries. */
static inline unsigned pc_e820(uint64_t guest_mem, struct e820_entry map[PC_E820_MAX])
{
	map[0] = (struct e820_entry){ 0, PC_EBDA_START, E820_RAM };
	map[1] = (struct e820_entry){ PC_EBDA_START, PC_VGA_START - PC_EBDA_START, E820_RESERVED };
	map[2] = (struct e820_entry){ PC_BIOS_START, PC_HIGH_RAM - PC_BIOS_START, E820_RESERVED };
	map[3] = (struct e820_entry){ PC_HIGH_RAM, guest_mem - PC_HIGH_RAM, E820_RAM };
	return PC_E820_MAX;
}
