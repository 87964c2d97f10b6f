/* A device's window on its VM's memory (DMA, in PCI terms): every guest
 * physical range a device model reads or writes on the guest's say (a
 * virtqueue's rings, a descriptor's buffer) is checked here first. A range
 * must lie whole inside one RAM range of the VM's memory map (loader/e820.h):
 * one that wraps, runs past the end of RAM, or touches a hole (the VGA and
 * BIOS areas, the PCI window with its MMIO: the I/O APIC, the local APIC,
 * BARs) is refused, and nothing is copied. The copy itself is the
 * integrator's (mmu_read_guest / mmu_write_guest in a VM, a buffer in the
 * host tests). Pure. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#define GUEST_RAM_RANGES 4

struct guest_mem {
	struct {
		uint64_t base, len;
	} ram[GUEST_RAM_RANGES];
	unsigned nr_ram;
	/* Copy len bytes at a checked gpa; false: the copy failed (no memory
	 * for a page), nothing to rely on in buf. */
	bool (*copy_from)(void *ctx, uint64_t gpa, void *buf, uint32_t len);
	bool (*copy_to)(void *ctx, uint64_t gpa, const void *buf, uint32_t len);
	void *ctx;
};

/* The RAM ranges of a PC VM with mem_bytes of memory at 0 (pc_e820's). */
void guest_mem_init_pc(struct guest_mem *m, uint64_t mem_bytes);
/* [gpa, gpa + len) lies inside one RAM range (len 0: gpa itself does). */
bool guest_mem_ok(const struct guest_mem *m, uint64_t gpa, uint64_t len);
/* Checked copies: false when the range is not RAM or the copy failed. */
bool guest_mem_read(const struct guest_mem *m, uint64_t gpa, void *buf, uint32_t len);
bool guest_mem_write(const struct guest_mem *m, uint64_t gpa, const void *buf, uint32_t len);
