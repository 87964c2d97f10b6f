/* Guest loader for Linux kernels (bzImage), by the Linux x86 boot protocol
 * (Documentation/arch/x86/boot.rst): the 32-bit entry, as a boot loader that
 * skips the real-mode setup code does.
 *
 * The image: setup_sects + 1 sectors of real-mode setup (the setup header at
 * 0x1f1: boot flag 0xAA55 at 0x1fe, "HdrS" at 0x202, the protocol version at
 * 0x206), then the protected-mode kernel. sprig takes protocol 2.10 or newer
 * (Linux 2.6.31: pref_address and init_size) with LOADED_HIGH.
 *
 * Guest-physical layout:
 *
 *   0x6000   GDT: 0x10 flat 32-bit code, 0x18 flat data (the boot protocol's
 *            __BOOT_CS and __BOOT_DS)
 *   0x7000   boot_params ("zero page"), 4 KiB: the image's setup header,
 *            the e820 map, acpi_rsdp_addr
 *   0x20000  the command line (at most the header's cmdline_size bytes)
 *   kernel   pref_address of a relocatable kernel, else code32_start (1 MiB);
 *            init_size bytes from there are the kernel's to decompress into
 *   initrd   page-aligned at the top of memory below initrd_addr_max, above
 *            the kernel's init_size
 *
 * e820 map, the one multiboot guests get (loader/mb1_loader.h):
 *
 *   0x0       - 0x9fc00   usable
 *   0x9fc00   - 0xa0000   reserved
 *   0xf0000   - 0x100000  reserved   (the platform's ACPI tables lie there)
 *   0x100000  - guest_mem usable
 *
 * Entry state the vCPU must be given: 32-bit protected mode, paging off,
 * interrupts off, GDTR = {entry.gdt_gpa, entry.gdt_limit}, CS = 0x10, DS, ES
 * and SS = 0x18 (all flat 4 GiB), EIP = entry.eip, ESI = entry.esi (the
 * boot_params' gpa), EBP, EDI and EBX zero.
 *
 * Guest memory is one slot at gpa 0 of guest_mem bytes; everything loads
 * below 4 GiB. */
#pragma once
#include "mm/mmu.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BZ_GDT_GPA 0x6000u
#define BZ_BOOT_PARAMS_GPA 0x7000u
#define BZ_CMDLINE_GPA 0x20000u
#define BZ_BOOT_CS 0x10u
#define BZ_BOOT_DS 0x18u
#define BZ_PROTOCOL_MIN 0x020a

/* Everything a load takes. cmdline NULL reads as ""; initrd NULL with
 * initrd_size 0 is none. */
struct bzimage_boot {
	const void *image;
	uint64_t size;
	uint64_t guest_mem;
	const char *cmdline;
	const void *initrd;
	uint64_t initrd_size;
	uint64_t rsdp_gpa; /* for boot_params.acpi_rsdp_addr; 0 for none */
};

struct bzimage_entry {
	uint32_t eip;
	uint32_t esi; /* gpa of boot_params */
	uint32_t gdt_gpa;
	uint16_t gdt_limit;
	uint16_t cs, ds;
	uint32_t kernel_gpa, initrd_gpa; /* where they went, for the report */
};

/* Does the image carry a Linux setup header (boot flag and "HdrS")? Such an
 * image is a bzImage to load with this loader, not a multiboot kernel. */
bool bzimage_detect(const void *image, uint64_t size);

/* Validate everything bzimage_load will do, without side effects: 0, or -1
 * with a one-line reason in err. */
int bzimage_check(const struct bzimage_boot *b, char *err, size_t errlen);

/* Check as bzimage_check, then write the GDT, boot_params, the command line,
 * the kernel and the initrd into guest memory through the MMU, and fill
 * *entry. 0, or -1 with a reason in err: a refusal (nothing written) or
 * memory exhaustion part way (the caller destroys the VM). */
int bzimage_load(struct mmu *mmu, const struct bzimage_boot *b, struct bzimage_entry *entry,
		 char *err, size_t errlen);
