/* QEMU's fw_cfg device through its traditional I/O interface, as QEMU 7.2's
 * `pc` machine answers it (hw/nvram/fw_cfg.c, hw/i386/fw_cfg.c; the interface
 * is documented in QEMU's docs/specs/fw_cfg.txt). Pure model, also built for
 * the host (tests/unit/test_fwcfg.c); built once at VM creation, then only the
 * selector and offset change.
 *
 * Ports (QEMU's combined 2-byte I/O region at 0x510):
 *   - A 16-bit write to 0x510 selects an item and rewinds its offset. QEMU
 *     takes 16-bit writes only there; a byte write to 0x510 or 0x511 is a data
 *     write, which QEMU ignores since 2.4; 32-bit and unaligned 16-bit (0x511)
 *     accesses are rejected: writes ignored, reads 0 without advancing.
 *   - A byte read of 0x511 (or of 0x510: the region is shared) returns the
 *     selected item's next byte and advances; past its end, or with no item
 *     there, it reads 0. Reads never fail.
 *   - Bit 14 of the selector (the write channel) is ignored for reads, bit 15
 *     selects the x86 arch-local items, as QEMU's.
 *   - No DMA: port 0x514 is not offered and FW_CFG_ID has bit 1 clear (QEMU 7.2
 *     pc answers 3, DMA included; guests must fall back to the byte port).
 *
 * Items (QEMU sets the same keys for pc with -kernel multiboot.elf):
 *   0x0000 SIGNATURE "QEMU", 0x0001 ID = 1, 0x0002 UUID (16 zero bytes),
 *   0x0003 RAM_SIZE (u64 LE), 0x0004 NOGRAPHIC (u16), 0x0005 NB_CPUS (u16),
 *   0x000e BOOT_MENU (u16 0), 0x000f MAX_CPUS (u16), 0x8002 IRQ0_OVERRIDE
 *   (u32 1: the MADT routes IRQ0 to GSI 2), 0x0019 FILE_DIR.
 *   Multiboot (QEMU's load_multiboot, for its option ROM): KERNEL_ENTRY 0x10,
 *   KERNEL_ADDR 0x07, KERNEL_SIZE 0x08, INITRD_ADDR 0x0a (the MBI) and
 *   INITRD_SIZE 0x0b as u32 when the config gives them nonzero; the bulk
 *   KERNEL_DATA/INITRD_DATA (0x11, 0x12) are not offered (sprig loads the
 *   kernel itself; they would read 0).
 *   Not set, reading 0 as in QEMU pc: MACHINE_ID 0x0006 (set only by sparc/ppc).
 *   Not offered (read 0, which for each means "none"): NUMA 0x000d (a zero
 *   node count), 0x8000 ACPI_TABLES, 0x8003 E820_TABLE (legacy reservations),
 *   0x8004 HPET (sprig has none).
 * Files, in the directory with selectors from 0x0020 in name order (QEMU sorts
 * the directory by name and numbers the slots in that order):
 *   "bootorder" (empty: no bootindex devices), "etc/e820" (struct e820 entries
 *   {u64 address, u64 length, u32 type}, LE, packed, 20 bytes each).
 *   Not offered: etc/acpi/tables, etc/acpi/rsdp, etc/table-loader (QEMU's are
 *   unpatched blobs for the firmware's linker/loader; sprig places its tables
 *   in guest memory already, as SeaBIOS would have), the genroms/ and etc/smbios/ files.
 * Limits: at most FWCFG_E820_MAX map entries (the rest are dropped), item data
 * in one FWCFG_DATA_MAX-byte array inside the struct. */
#pragma once
#include "loader/e820.h"
#include <stdbool.h>
#include <stdint.h>
#include "virt/state_record.h"

#define FWCFG_PORT_SEL 0x510
#define FWCFG_PORT_DATA 0x511

enum {
	FW_CFG_SIGNATURE = 0x0000,
	FW_CFG_ID = 0x0001,
	FW_CFG_UUID = 0x0002,
	FW_CFG_RAM_SIZE = 0x0003,
	FW_CFG_NOGRAPHIC = 0x0004,
	FW_CFG_NB_CPUS = 0x0005,
	FW_CFG_MACHINE_ID = 0x0006,
	FW_CFG_KERNEL_ADDR = 0x0007,
	FW_CFG_KERNEL_SIZE = 0x0008,
	FW_CFG_KERNEL_CMDLINE = 0x0009,
	FW_CFG_INITRD_ADDR = 0x000a,
	FW_CFG_INITRD_SIZE = 0x000b,
	FW_CFG_BOOT_DEVICE = 0x000c,
	FW_CFG_NUMA = 0x000d,
	FW_CFG_BOOT_MENU = 0x000e,
	FW_CFG_MAX_CPUS = 0x000f,
	FW_CFG_KERNEL_ENTRY = 0x0010,
	FW_CFG_KERNEL_DATA = 0x0011,
	FW_CFG_INITRD_DATA = 0x0012,
	FW_CFG_FILE_DIR = 0x0019,
	FW_CFG_FILE_FIRST = 0x0020,
	FW_CFG_WRITE_CHANNEL = 0x4000,
	FW_CFG_ARCH_LOCAL = 0x8000,
	FW_CFG_IRQ0_OVERRIDE = 0x8002,
};

#define FW_CFG_ID_TRADITIONAL (1u << 0)
#define FW_CFG_ID_DMA (1u << 1)
#define FW_CFG_FILE_NAME_LEN 56
#define FW_CFG_FILE_ENTRY_LEN 64 /* BE u32 size, BE u16 select, u16, name */
#define FW_CFG_E820_ENTRY_LEN 20

#define FWCFG_E820_MAX 32
#define FWCFG_ITEMS_MAX 20
#define FWCFG_DATA_MAX 1024

struct fwcfg_config {
	uint64_t ram_bytes;              /* FW_CFG_RAM_SIZE */
	unsigned cpus;                   /* FW_CFG_NB_CPUS (0 taken as 1) */
	unsigned max_cpus;               /* FW_CFG_MAX_CPUS; 0: same as cpus */
	const struct e820_entry *e820;   /* "etc/e820" */
	unsigned e820_count;
	bool nographic;                  /* FW_CFG_NOGRAPHIC */
	/* multiboot -kernel values, each item offered only when nonzero */
	uint32_t kernel_entry, kernel_addr, kernel_size, mbi_addr, mbi_size;
};

struct fwcfg_item {
	uint16_t key; /* selector without the write-channel bit */
	uint16_t off; /* into fwcfg.data */
	uint16_t len;
};

struct fwcfg {
	uint16_t select;  /* as last written */
	int cur;          /* index into items, -1 for none */
	uint32_t offset;  /* into the current item */
	unsigned nitems;
	uint16_t used;    /* bytes of data in use */
	struct fwcfg_item items[FWCFG_ITEMS_MAX];
	uint8_t data[FWCFG_DATA_MAX];
};

void fwcfg_init(struct fwcfg *f, const struct fwcfg_config *c);
/* A VM's fw_cfg (dev/platform.c): ram_bytes of RAM, cpus, no graphics, and
 * as etc/e820 the VM's memory map (loader/e820.h), the one its boot loader
 * gives it. */
void fwcfg_init_vm(struct fwcfg *f, uint64_t ram_bytes, unsigned cpus);
/* Ports 0x510 and 0x511; other ports read 0. */
uint32_t fwcfg_port_read(struct fwcfg *f, uint16_t port, unsigned size);
void fwcfg_port_write(struct fwcfg *f, uint16_t port, unsigned size, uint32_t val);

/* The saved state (REC_FWCFG): the selector and the offset into its item. */
extern const struct record_type fwcfg_record;
