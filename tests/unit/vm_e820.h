/* The memory map every way of booting a VM must give it (loader/e820.h), written
 * out independently of the code: the multiboot loader's map, the bzImage
 * loader's boot_params e820 and fw_cfg's etc/e820 are each compared with it
 * (test_mb1_loader.c, test_bzimage_loader.c, test_fwcfg.c). The platform's
 * ACPI tables at 0xf0000 are reserved in all three. */
#pragma once
#include <stdint.h>

#define VM_E820_ENTRIES 4

/* {base, length, type} of a VM of guest_mem bytes. */
static inline void vm_e820_want(uint64_t guest_mem, uint64_t want[VM_E820_ENTRIES][3])
{
	const uint64_t map[VM_E820_ENTRIES][3] = {
		{ 0, 0x9fc00, 1 },
		{ 0x9fc00, 0x400, 2 },
		{ 0xf0000, 0x10000, 2 },
		{ 0x100000, guest_mem - 0x100000, 1 },
	};

	for (int i = 0; i < VM_E820_ENTRIES; i++)
		for (int j = 0; j < 3; j++)
			want[i][j] = map[i][j];
}
