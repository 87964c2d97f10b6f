/* The ACPI tables as firmware (SeaBIOS, or sprig) leaves them for a PC
 * kernel: found through the RSDP, read in place (identity-mapped). */
#pragma once
#include <stdbool.h>
#include <stdint.h>

/* MADT entry types (ACPI 6.5 5.2.12). */
#define MADT_LAPIC 0
#define MADT_IOAPIC 1
#define MADT_OVERRIDE 2
#define MADT_X2APIC 9
#define MADT_LAPIC_ENABLED (1u << 0)

uint8_t acpi_checksum(uint64_t pa, uint32_t len);
/* True when the 4 bytes at pa are sig. */
bool acpi_sig_is(uint64_t pa, const char *sig);
/* The RSDP with a valid checksum in the first KiB of the EBDA or in
 * 0xE0000-0xFFFFF, where the ACPI specification (5.2.5.1) puts it on a PC;
 * 0 if there is none. */
uint64_t acpi_find_rsdp(void);
/* The first table with signature sig that the XSDT (or, before ACPI 2.0,
 * the RSDT) lists; 0 if none. Checksums are not checked here. */
uint64_t acpi_find_table(const char *sig);
/* The MADT's entries: the first with prev 0, then the one after prev; 0 at
 * the end. Each starts with its type and length bytes. */
uint64_t madt_next(uint64_t madt, uint64_t prev);

static inline uint16_t rd16(uint64_t pa)
{
	return *(const uint16_t *)pa;
}

static inline uint32_t rd32(uint64_t pa)
{
	return *(const uint32_t *)pa;
}

static inline uint64_t rd64(uint64_t pa)
{
	return *(const uint64_t *)pa;
}
