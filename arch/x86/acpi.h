/* ACPI table discovery: the RSDP, the XSDT or RSDT, the MADT (processors, local
 * APIC address, I/O APICs), the FADT (PM1 event and control ports, PM timer,
 * reset register), the \_S5 sleep type from the DSDT or an SSDT, and the SPCR
 * (the firmware's serial console). Tables are read through pointers (memory is identity-
 * mapped), so this file also compiles for the host tests. Every table's length
 * and checksum are checked before it is used; bad ones are skipped. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#define ACPI_MAX_CPUS 256
#define ACPI_MAX_IOAPICS 16

/* Generic Address Structure address spaces. */
#define ACPI_SPACE_MEMORY 0
#define ACPI_SPACE_IO 1
#define ACPI_SPACE_PCI_CONFIG 2

struct acpi_gas {
	uint8_t space_id;
	uint8_t bit_width;
	uint8_t bit_offset;
	uint8_t access_size;
	uint64_t address;
};

struct acpi_info {
	bool valid;                 /* RSDP and a root table were found */
	uint8_t rsdp_revision;
	char oem_id[7];
	uint64_t root_table;        /* address of the XSDT or RSDT in use */
	bool root_is_xsdt;
	/* QEMU's or Bochs' tables (acpi_header_is_emulator on the root table
	 * or the FADT): the emulators' exit ports may be written. */
	bool emulator;

	/* MADT */
	bool has_madt;
	uint64_t lapic_addr;        /* type 5 override if present */
	unsigned cpu_count;         /* enabled or online-capable processors */
	unsigned cpu_ids_stored;    /* min(cpu_count, ACPI_MAX_CPUS) */
	uint32_t cpu_apic_ids[ACPI_MAX_CPUS];
	bool cpu_online_capable_only[ACPI_MAX_CPUS]; /* not enabled now */
	unsigned ioapic_count;
	uint64_t ioapic_addrs[ACPI_MAX_IOAPICS]; /* the first ACPI_MAX_IOAPICS */
	bool pcat_compat;           /* MADT flags bit 0: 8259 PICs present */

	/* FADT */
	bool has_fadt;
	uint16_t pm1a_cnt;          /* I/O ports; 0 when absent */
	uint16_t pm1b_cnt;
	uint16_t pm1a_evt;          /* PM1 event blocks: status, then enable */
	uint16_t pm1b_evt;
	uint16_t pm_tmr_port;
	bool pm_tmr_32bit;          /* FADT flags bit 8 TMR_VAL_EXT */
	uint16_t smi_cmd;           /* port to write acpi_enable to (0: ACPI-only) */
	uint8_t acpi_enable;
	bool has_reset_reg;         /* FADT flags bit 10 RESET_REG_SUP */
	struct acpi_gas reset_reg;
	uint8_t reset_value;
	uint64_t dsdt;

	/* \_S5 package, from the DSDT or else the first SSDT that has one */
	bool has_s5;
	char s5_table[5];           /* "DSDT" or "SSDT" */
	uint8_t slp_typa;
	uint8_t slp_typb;

	/* SPCR */
	bool has_spcr;
	uint8_t spcr_interface;     /* DBG2 serial port subtype */
	struct acpi_gas spcr_base;
	uint32_t spcr_baud;         /* 0: keep the rate the firmware set */
};

/* Filled by acpi_init. */
extern struct acpi_info acpi;

/* Parse from the RSDP at rsdp_pa into *info (cleared first). Returns
 * info->valid. Messages say what was skipped and why. */
bool acpi_parse(uint64_t rsdp_pa, struct acpi_info *info);
/* acpi_parse into the global acpi. */
bool acpi_init(uint64_t rsdp_pa);
/* Processors the MADT lists (enabled or online-capable); 1 without a MADT. */
unsigned acpi_cpu_count(void);
/* Search [start, start + len) on 16-byte boundaries for a valid RSDP, as on
 * BIOS systems (the EBDA's first KiB, then 0xE0000-0xFFFFF); 0 if none. */
uint64_t acpi_find_rsdp(uint64_t start, uint64_t len);
/* Whether the SDT header at hdr is QEMU's or the Bochs BIOS's: OEM ID
 * "BOCHS " and an OEM table ID that starts "BXPC". */
bool acpi_header_is_emulator(const uint8_t *hdr);
/* Scan AML for `Name(_S5_, Package(){a, b, ...})` and decode a and b. */
bool acpi_find_s5(const uint8_t *aml, uint64_t len, uint8_t *slp_typa, uint8_t *slp_typb);

/* The SPCR's port when it names a 16550 in I/O space (full, the 16450
 * subset, or compatible with GAS parameters); 0 otherwise. */
uint16_t acpi_spcr_io_16550(const struct acpi_info *info);

void acpi_print(void);
