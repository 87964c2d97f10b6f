/* The board's power and reset control, as a pure model: the ACPI PM1a event
 * and control registers of QEMU pc's PIIX4 PM block (ACPI spec 4.8.3.1-2,
 * 4.8.3.2.1), PIIX3's reset control register at 0xCF9 and the 8042's reset
 * line. The PM timer in the same block is dev/pmtimer.c. Power-off and
 * reset are what a write returns: the integrator ends the VM. Also built for
 * the host (tests/unit/test_acpi_pm.c).
 *
 * Registers, by offset from ACPI_PM_BASE (dev/acpi_tables.h, which the FADT
 * describes): 0-1 PM1_STS (a write of one clears a bit), 2-3 PM1_EN, 4-7
 * PM1_CNT (4-5; a byte write at 5-7 is its high byte, reads of 6-7 are 0).
 * Choices (QEMU's where the spec leaves one):
 *   - Power-on: SCI_EN set (there is no SMI command port to turn ACPI on),
 *     everything else 0. No event sets a status bit: nothing raises an SCI.
 *   - SLP_EN reads 0. A write with SLP_EN and SLP_TYP = ACPI_SLP_TYP_S5 (the
 *     DSDT's _S5, the only sleep state offered) powers off; other sleep
 *     types are stored and ignored.
 *   - Reads return the register shifted to the accessed offset; the caller
 *     keeps the bytes of the access's size.
 *   - Reset control (byte accesses only): bit 2 written as 1 resets (the
 *     FADT's reset register, value 6), the other bits are kept; bit 2 reads 0.
 *   - 8042 (its status port 0x64): reads 0, nothing to read and room to
 *     write; the command 0xFE (pulse the reset line) resets. Nothing else of
 *     the keyboard controller is there. */
#pragma once
#include <stdint.h>
#include "virt/state_record.h"

#define ACPI_PM1_BYTES 8    /* PM1_STS, PM1_EN, PM1_CNT and two spare ports */
#define KBD_STATUS_PORT 0x64 /* the 8042's status/command port */

enum acpi_pm_action { ACPI_PM_NONE, ACPI_PM_POWER_OFF, ACPI_PM_RESET };

struct acpi_pm {
	uint16_t pm1_sts, pm1_en, pm1_cnt;
	uint8_t reset_control; /* port 0xCF9 */
};

void acpi_pm_init(struct acpi_pm *pm);
extern const struct record_type acpi_pm_record; /* REC_ACPI_PM */
/* PM1 registers at offset off (below ACPI_PM1_BYTES); size 1, 2 or 4. */
uint32_t acpi_pm1_read(const struct acpi_pm *pm, unsigned off);
enum acpi_pm_action acpi_pm1_write(struct acpi_pm *pm, unsigned off, unsigned size, uint32_t val);
uint8_t acpi_pm_reset_read(const struct acpi_pm *pm);
enum acpi_pm_action acpi_pm_reset_write(struct acpi_pm *pm, uint8_t val);
/* A command to the 8042. */
enum acpi_pm_action acpi_pm_kbd_write(uint8_t cmd);
