/* The ACPI tables a guest is given, as QEMU 7.2's `pc` machine (i440FX +
 * PIIX4 PM) lays them out where that serves a kernel, with the deviations the
 * brief asks for (ACPI 6.5 for the formats; QEMU's hw/i386/acpi-build.c,
 * acpi-common.c for the values). Pure: builds bytes into caller buffers; the
 * integrator copies them into guest memory. Host tests: test_acpi_tables.c,
 * which reads the result back with sprig's own parser (arch/x86/acpi.c).
 *
 * What is built (all headers: OEM ID "BOCHS ", OEM table ID "BXPC    ", OEM
 * revision 1, creator "BXPC" revision 1, as QEMU):
 *   RSDP  revision 2, 36 bytes, both checksums, RSDT and XSDT addresses.
 *         QEMU gives revision 0 with an RSDT only; the XSDT is added here.
 *   RSDT, XSDT  -> FADT, MADT (QEMU's order).
 *   FADT  revision 3 (244 bytes, ACPI 2.0+ with the X_ fields); QEMU pc gives
 *         revision 1 ("w2k requires") without a reset register; its q35 gives
 *         revision 3 with reset 0xCF9/0x0F. Here: SCI IRQ 9; SMI_CMD 0 and
 *         ACPI_ENABLE/DISABLE 0 ("ACPI-only": the integrator must start with
 *         SCI_EN set in PM1a_CNT; QEMU has SMI_CMD 0xB2 enable 0xF1 disable
 *         0xF0 when SMM is on); PM1a_EVT 0x600 (4 bytes), PM1a_CNT 0x604 (2),
 *         PM_TMR 0x608 (4, 24-bit: no TMR_VAL_EXT, as PIIX4); no GPE0 block
 *         (QEMU: 0xAFE0, 4 bytes; sprig has no GPE registers); P_LVL2/3_LAT
 *         0xFFF (no C2/C3), CENTURY 0x32, INT_MODEL 1, IAPC_BOOT_ARCH 0 (no
 *         8042; QEMU pc's rev-1 FADT has 0 there too); flags WBINVD,
 *         PROC_C1, SLP_BUTTON, RTC_S4, USE_PLATFORM_CLOCK (as QEMU),
 *         RESET_REG_SUP (added), FORCE_APIC_CLUSTER_MODEL above 8 CPUs (as
 *         QEMU, which tests max_cpus); reset register: system I/O 0xCF9,
 *         8 bits, value 0x06. FIRMWARE_CTRL and X_FIRMWARE_CTRL both hold the
 *         FACS, DSDT and X_DSDT the DSDT (the same addresses, which ACPICA
 *         accepts; QEMU leaves X_FIRMWARE_CTRL 0). GAS access sizes 0
 *         (undefined), as QEMU.
 *   FACS  64 bytes, 64-byte aligned, version 0, all zero (as QEMU).
 *   MADT  revision 1 (QEMU 7.2): local APIC 0xFEE00000, PCAT_COMPAT; one
 *         Processor Local APIC per vCPU (processor UID = APIC ID = index,
 *         enabled); I/O APIC ID 0 at 0xFEC00000, GSI base 0; overrides
 *         IRQ0 -> GSI 2 flags 0 (conforms to the bus: edge, active high),
 *         IRQ 5, 9, 10, 11 -> same GSI flags 0x000D (level, active high: the
 *         PCI link IRQs, QEMU's pci_irq_mask); Local APIC NMI: all processors
 *         (0xFF), flags 0, LINT1.
 *   DSDT  revision 1 (32-bit integers, as QEMU), AML: Name(\_S5_,
 *         Package(4){0, 0, 0, 0}) only. QEMU's piix4 _S5 is SLP_TYP 0 (its
 *         acpi_pm1_cnt_write powers off on SLP_EN with type 0). No _S3/_S4
 *         (QEMU offers _S3 = 1 and _S4 = 2 unless disabled), no \_SB.PCI0
 *         (kernels fall back to probing PCI bus 0 themselves), no HPET table,
 *         no WAET.
 * Limits: 1 to ACPI_TABLES_MAX_CPUS vCPUs (xAPIC IDs; 0xFF is broadcast).
 * Everything must lie below 4 GiB (RSDT and the 32-bit FADT pointers). */
#pragma once
#include <stddef.h>
#include <stdint.h>

#define ACPI_PM_BASE 0x600 /* PM1a_EVT 0x600, PM1a_CNT 0x604, PM_TMR 0x608 */
#define ACPI_PM1A_EVT (ACPI_PM_BASE + 0)
#define ACPI_PM1A_CNT (ACPI_PM_BASE + 4)
#define ACPI_PM_TMR (ACPI_PM_BASE + 8)
#define ACPI_PM_TMR_HZ 3579545u /* the PM timer's clock; 24 bits wide */
#define ACPI_SCI_IRQ 9
/* PM1a_CNT bits: the integrator starts with SCI_EN set (SMI_CMD is 0) and
 * powers the VM off on a write with SLP_EN set and SLP_TYP == ACPI_SLP_TYP_S5. */
#define ACPI_PM1_CNT_SCI_EN (1u << 0)
#define ACPI_PM1_CNT_SLP_TYP_SHIFT 10
#define ACPI_PM1_CNT_SLP_TYP_MASK (7u << 10)
#define ACPI_PM1_CNT_SLP_EN (1u << 13)
#define ACPI_SLP_TYP_S5 0 /* the SLP_TYP the DSDT's _S5 gives, as QEMU pc */
#define ACPI_RESET_PORT 0xcf9
#define ACPI_RESET_VALUE 0x06

#define ACPI_IOAPIC_ADDR 0xfec00000u
#define ACPI_IOAPIC_ID 0
#define ACPI_LAPIC_ADDR 0xfee00000u

#define ACPI_RSDP_LEN 36
#define ACPI_TABLES_MAX_CPUS 255
/* A tables_cap that always suffices for `cpus` vCPUs (includes the FACS's
 * alignment padding). */
#define ACPI_TABLES_SIZE(cpus) (1024u + 8u * (cpus))

/* Build the RSDP into rsdp_buf (ACPI_RSDP_LEN bytes, to be copied to guest
 * address rsdp_gpa: 16-byte aligned, in 0xE0000-0xFFFFF for kernels that
 * search the BIOS area) and every other table into tables_buf (to be copied
 * to tables_gpa, which the integrator keeps out of the RAM the memory map
 * offers, e.g. E820 reserved or inside the BIOS area: RSDP at 0xF0000, tables
 * at 0xF0100). Returns the bytes of tables_buf used, or 0 if tables_cap is
 * too small, cpus is 0 or above ACPI_TABLES_MAX_CPUS, or the tables would
 * not lie below 4 GiB. Addresses inside the tables are absolute guest
 * addresses derived from tables_gpa; the FACS is placed at the first 64-byte
 * aligned guest address at or after tables_gpa. */
size_t acpi_build(void *rsdp_buf, void *tables_buf, size_t tables_cap, unsigned cpus,
		  uint64_t rsdp_gpa, uint64_t tables_gpa);
