/* I/O APIC registers through IOREGSEL/IOWIN (82093AA datasheet, 3.0): the
 * version register gives the last redirection entry; each entry is two
 * 32-bit registers from 0x10, the mask bit 16 of the low one. */
#include "arch/x86/ioapic.h"
#include "arch/x86/acpi.h"
#include "arch/x86/direct_map.h"
#include "lib/print.h"
#include <stdint.h>

#define IOREGSEL 0x00
#define IOWIN 0x10
#define IOAPIC_VERSION 0x01
#define IOAPIC_REDTBL(n) (0x10 + 2 * (n))
#define REDTBL_MASKED (1u << 16)

static uint32_t ioapic_read(volatile uint32_t *base, uint32_t reg)
{
	base[IOREGSEL / 4] = reg;
	return base[IOWIN / 4];
}

static void ioapic_write(volatile uint32_t *base, uint32_t reg, uint32_t v)
{
	base[IOREGSEL / 4] = reg;
	base[IOWIN / 4] = v;
}

void ioapic_mask_all(void)
{
	unsigned n = acpi.ioapic_count < ACPI_MAX_IOAPICS ? acpi.ioapic_count : ACPI_MAX_IOAPICS;

	for (unsigned i = 0; i < n; i++) {
		volatile uint32_t *base = pa_to_va(acpi.ioapic_addrs[i]);
		uint32_t version = ioapic_read(base, IOAPIC_VERSION);
		unsigned pins = ((version >> 16) & 0xff) + 1, was_unmasked = 0;

		/* Nothing answers there: the MADT is wrong, leave it alone. */
		if (version == 0xffffffffu) {
			kprintf("ioapic: nothing at 0x%llx\n", (unsigned long long)acpi.ioapic_addrs[i]);
			continue;
		}
		for (unsigned pin = 0; pin < pins; pin++) {
			uint32_t lo = ioapic_read(base, IOAPIC_REDTBL(pin));

			was_unmasked += !(lo & REDTBL_MASKED);
			ioapic_write(base, IOAPIC_REDTBL(pin), lo | REDTBL_MASKED);
		}
		kprintf("ioapic: 0x%llx version 0x%x: %u pins masked (%u were not)\n",
			(unsigned long long)acpi.ioapic_addrs[i], version & 0xff, pins, was_unmasked);
	}
	if (acpi.ioapic_count > n)
		kprintf("ioapic: %u more not masked (sprig reads the first %u)\n",
			acpi.ioapic_count - n, n);
}
