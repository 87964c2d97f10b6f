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
 * Everything must lie in guest memory below 4 GiB (the info's fields are 32
 * bits) and the kernel, strings and modules must not cover 0x9000-0x9558.
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

/* Where the loader puts the info structure and the memory map (QEMU's). */
#define MB1_INFO_GPA 0x9500u
#define MB1_MMAP_GPA 0x9000u

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
