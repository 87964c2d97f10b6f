/* The ACPI tables (acpi.h). */
#include "guests/rt/acpi.h"

#define EBDA_SEGMENT_PTR 0x40e	/* in the BIOS data area */
#define MADT_ENTRIES 44

uint8_t acpi_checksum(uint64_t pa, uint32_t len)
{
	uint8_t sum = 0;

	for (uint32_t i = 0; i < len; i++)
		sum += *(const uint8_t *)(pa + i);
	return sum;
}

bool acpi_sig_is(uint64_t pa, const char *sig)
{
	for (int i = 0; i < 4; i++)
		if (*(const char *)(pa + i) != sig[i])
			return false;
	return true;
}

static uint64_t rsdp_in(uint64_t from, uint64_t to)
{
	for (uint64_t pa = from; pa + 20 <= to; pa += 16)
		if (acpi_sig_is(pa, "RSD ") && acpi_sig_is(pa + 4, "PTR ") &&
		    acpi_checksum(pa, 20) == 0)
			return pa;
	return 0;
}

uint64_t acpi_find_rsdp(void)
{
	uint64_t bda = EBDA_SEGMENT_PTR, ebda, rsdp = 0;

	asm("" : "+r"(bda));	/* for GCC, a low address is no null pointer's offset */
	ebda = (uint64_t)rd16(bda) << 4;
	if (ebda >= 0x80000 && ebda < 0xa0000)
		rsdp = rsdp_in(ebda, ebda + 1024);
	return rsdp ? rsdp : rsdp_in(0xe0000, 0x100000);
}

uint64_t acpi_find_table(const char *sig)
{
	uint64_t rsdp = acpi_find_rsdp(), root;
	unsigned int entry_size;

	if (!rsdp)
		return 0;
	if (*(const uint8_t *)(rsdp + 15) >= 2 && rd64(rsdp + 24)) {
		root = rd64(rsdp + 24);
		entry_size = 8;
	} else {
		root = rd32(rsdp + 16);
		entry_size = 4;
	}
	for (uint32_t off = 36; off + entry_size <= rd32(root + 4); off += entry_size) {
		uint64_t t = entry_size == 8 ? rd64(root + off) : rd32(root + off);

		if (acpi_sig_is(t, sig))
			return t;
	}
	return 0;
}

uint64_t madt_next(uint64_t madt, uint64_t prev)
{
	uint64_t end = madt + rd32(madt + 4);
	uint64_t p = prev ? prev + *(const uint8_t *)(prev + 1) : madt + MADT_ENTRIES;

	if (p + 2 > end || *(const uint8_t *)(p + 1) < 2 || p + *(const uint8_t *)(p + 1) > end)
		return 0;
	return p;
}
