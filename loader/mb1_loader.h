/* Guest loader for multiboot version 1 kernels (Multiboot Specification 0.6.96),
 * loading them as `qemu-system-x86_64 -kernel K -append CMDLINE -initrd MODS`
 * does (hw/i386/multiboot.c): ELF32 program headers by physical address, or
 * the a.out kludge address fields (header flag 16).
 *
 * Guest-physical layout, as QEMU makes it (for a kernel loaded at a page
 * boundary, as every real one is, the addresses are QEMU's):
 *
 *   0x9000   memory map (mmap_addr): 24-byte entries {size = 20, base, length, type}
 *   0x9500   struct multiboot_info (EBX), 88 bytes
 *   kernel   [lowest loaded byte, highest loaded byte + bss)
 *   next page after the kernel:
 *            module table (16-byte entries {mod_start, mod_end, string, 0}),
 *            module strings, the kernel command line, the boot loader name
 *   next page: each module, each starting on a page boundary (header flag 0)
 *
 * QEMU (hw/i386/multiboot.c, to 9.x) always writes the map and the info at
 * 0x9000/0x9500 (MULTIBOOT_STRUCT_ADDR; its option ROM fills the map from
 * e820 there): a kernel covering them is overwritten and does not boot. sprig
 * keeps QEMU's addresses whenever 0x9000-0x9558 is free (no kernel segment,
 * string, module or reserved range on it; so every kernel QEMU boots gets the
 * same addresses) and otherwise moves both after the strings, 8-aligned,
 * before the first module:
 *
 *   next page after the kernel: module table, strings, then the memory map,
 *            then struct multiboot_info; next page: the modules
 *
 * EBX (entry.ebx) and mmap_addr always say where they are: guests must not
 * assume 0x9500. Nothing the loader writes overlaps anything else it writes.
 *
 * Memory map (the one QEMU's option ROM copies from SeaBIOS's e820), and
 * mem_lower/mem_upper computed from it as the ROM does (mem_lower: the usable
 * KiB from 0 = 639; mem_upper: the usable KiB contiguous from 1 MiB, at most
 * to 4 GiB):
 *
 *   0x0       - 0x9fc00   usable     (SeaBIOS's EBDA takes the last KiB)
 *   0x9fc00   - 0xa0000   reserved
 *   0xf0000   - 0x100000  reserved   (BIOS; 0xa0000-0xf0000 is absent)
 *   0x100000  - guest_mem usable
 *
 * with each mb1_mem_range the integrator passes laid over it (it wins where it
 * overlaps, adjacent entries of one type merge). QEMU -m 128M with SeaBIOS
 * shows, besides the four entries above, SeaBIOS's own high tables (ACPI,
 * SMBIOS) 0x7fe0000-0x8000000 reserved, which shortens mem_upper to 129920
 * KiB, the BIOS ROM alias 0xfffc0000-0x100000000 reserved and, under KVM only,
 * 0xfeffc000-0xff000000 reserved (QEMU's etc/e820 itself holds just the RAM
 * and the KVM range). sprig has no firmware there, so those are not in the
 * default map: an integrator that puts its tables there passes the ranges
 * and the map is QEMU's entry for entry.
 *
 * Everything must lie in guest memory below 4 GiB (the info's fields are 32
 * bits); kernel, strings, map, info and modules must not overlap a range the
 * integrator passed. Command lines have no length limit here (as in QEMU).
 * Unlike QEMU, the command line is passed as given: QEMU prefixes the kernel's
 * file name, so a caller that wants identical output passes "NAME ARGS".
 *
 * Entry state the vCPU must be given (spec section 3.2): 32-bit protected mode,
 * paging off, flat 4 GiB code and data segments, A20 on, EFLAGS.IF and VM
 * clear, EIP = entry.eip, EAX = entry.eax (MB1_BOOTLOADER_MAGIC), EBX =
 * entry.ebx (the info structure's gpa). No stack is provided.
 *
 * Guest memory is one slot at gpa 0 of guest_mem bytes (more than 1 MiB). */
#pragma once
#include "mm/mmu.h"
#include <stddef.h>
#include <stdint.h>

#define MB1_HEADER_MAGIC 0x1BADB002u
#define MB1_BOOTLOADER_MAGIC 0x2BADB002u

/* Where the loader puts the info structure and the memory map when the
 * kernel leaves them free (QEMU's, always); else after the strings. */
#define MB1_INFO_GPA 0x9500u
#define MB1_MMAP_GPA 0x9000u

/* Memory map types (multiboot spec 3.3; 1 is usable RAM). */
#define MB1_MEM_USABLE 1u
#define MB1_MEM_RESERVED 2u
#define MB1_MEM_ACPI 3u /* ACPI reclaimable */
#define MB1_MEM_NVS 4u
#define MB1_MEM_BAD 5u

/* A range the memory map reports with type (2 to 5) instead of what the
 * default map says there (e.g. the integrator's ACPI tables: base 0xe0000,
 * size 0x20000, MB1_MEM_RESERVED). Ranges may lie anywhere, above guest memory
 * too, but not overlap each other; at most MB1_RANGES_MAX. */
struct mb1_mem_range {
	uint64_t base, size;
	uint32_t type;
};
#define MB1_RANGES_MAX 16

/* One module (QEMU's -initrd "FILE ARGS"): its bytes and the string the guest
 * sees for it (NULL reads as ""). */
struct mb1_module_src {
	const void *data;
	uint64_t size;
	const char *cmdline;
};

struct mb1_entry {
	uint32_t eip;
	uint32_t eax; /* MB1_BOOTLOADER_MAGIC */
	uint32_t ebx; /* gpa of struct multiboot_info */
};

/* Everything a load takes. cmdline NULL reads as "". */
struct mb1_boot {
	const void *image;
	uint64_t size;
	uint64_t guest_mem;
	const char *cmdline;
	const struct mb1_module_src *mods;
	size_t n_mods;
	const struct mb1_mem_range *ranges; /* laid over the default memory map */
	size_t n_ranges;
};

/* mb1_check and mb1_load with memory-map ranges (same contracts). */
int mb1_check_boot(const struct mb1_boot *b, char *err, size_t errlen);
int mb1_load_boot(struct mmu *mmu, const struct mb1_boot *b, struct mb1_entry *entry, char *err,
		  size_t errlen);

/* Validate everything mb1_load will do: the image, the layout of the strings
 * and modules and the fit in guest memory, without side effects. Call it
 * before creating the VM, so that no VM is created for an image that will not
 * load. 0, or -1 with a one-line reason in err. cmdline NULL reads as "". */
int mb1_check(const void *image, uint64_t size, uint64_t guest_mem, const char *cmdline,
	      const struct mb1_module_src *mods, size_t n_mods, char *err, size_t errlen);

/* Check as mb1_check, then write the kernel (zeroing its bss), the modules,
 * the strings, the memory map and the info structure into guest memory through
 * the MMU, and fill *entry. 0, or -1 with a reason in err: a refusal (nothing
 * written) or memory exhaustion part way (the caller destroys the VM). */
int mb1_load(struct mmu *mmu, uint64_t guest_mem, const void *image, uint64_t size,
	     const char *cmdline, const struct mb1_module_src *mods, size_t n_mods,
	     struct mb1_entry *entry, char *err, size_t errlen);
