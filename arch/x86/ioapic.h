/* The host's I/O APICs: sprig takes no interrupt through them, so every
 * redirection entry is masked at boot, whatever the firmware left unmasked
 * (a device's line would otherwise raise a vector sprig has no handler for). */
#pragma once

/* Mask every entry of every I/O APIC the MADT lists. After acpi_init. */
void ioapic_mask_all(void);
