/* PCI configuration mechanism 1 (PCI Local Bus 3.0, 3.2.2.3.2) with the
 * devices of QEMU's `pc` machine that a kernel scanning bus 0 looks for.
 * Pure model, also built for the host (tests/unit/test_pci.c): ports are
 * function calls, nothing here touches a VM.
 *
 * Ports (what QEMU 7.2's i440FX host answers, hw/pci/pci_host.c):
 *   - 0xCF8 CONFIG_ADDRESS: only a 32-bit write at 0xCF8 sets it (all 32 bits
 *     stored as written). Byte/word writes to 0xCF8-0xCFB are ignored. Reads of
 *     any size at 0xCF8-0xCFB return the low `size` bytes of the register
 *     (QEMU ignores the offset: a byte read of 0xCFA returns bits 7:0). 0xCF9
 *     (reset control) belongs to the integrator and never reaches here.
 *   - 0xCFC-0xCFF CONFIG_DATA: with bit 31 set, accesses config offset
 *     (addr & 0xFC) + (port - 0xCFC) of bus (addr >> 16) & 0xFF, device
 *     (addr >> 11) & 0x1F, function (addr >> 8) & 7. Bit 31 clear, a bus other
 *     than 0, or an absent function: reads all ones, writes dropped. Bytes of
 *     an access that run past 0xCFF read 0xFF and are not written.
 *
 * Devices (IDs, classes, revisions as QEMU 7.2; registers as SeaBIOS leaves
 * them before a -kernel boot):
 *   00:00.0 i440FX host bridge  8086:1237 rev 02 class 060000, header 00
 *   00:01.0 PIIX3 ISA bridge    8086:7000 rev 00 class 060100, header 80
 *           (multifunction); command 0x0007, status 0x0200 (PIIX3 reset);
 *           PIRQA-D route (0x60-0x63) = 10, 10, 11, 11 (SeaBIOS's choice)
 *   00:01.3 PIIX4 ACPI (PM)     8086:7113 rev 03 class 068000, status 0x0280,
 *           interrupt pin A, line 9 (the SCI); PMBA (0x40) = 0x601 (PM block
 *           at ACPI_PM_BASE 0x600), PMREGMISC (0x80) = 1 (enabled); SMBus base
 *           (0x90) = 0xb101, SMBHSTCFG (0xd2) = 0x09.
 *   Subsystem 1af4:1100 on each (QEMU's default). No BARs, no capabilities.
 * Not present (QEMU pc has them): PIIX3 IDE 00:01.1, VGA 00:02.0, the NIC
 * 00:03.0, USB. Kernels find only the three functions above.
 *
 * Writes follow a per-byte writable mask as QEMU's: command bits 0x0547
 * (I/O, memory, bus master, parity, SERR, INTx disable), cache line size,
 * interrupt line, and the device-specific area 0x40-0xFF, except the PIIX4 PM
 * and SMBus base/enable registers (0x40-0x43, 0x80, 0x90-0x93, 0xd2), which
 * sprig does not move: read-only here (QEMU would remap its ports). Writes to
 * the i440FX PAM/SMRAM and PIIX3 registers are stored and have no effect.
 * Everything else in the header (IDs, class, status, BARs) is read-only. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include "virt/state_record.h"

#define PCI_PORT_ADDR 0xcf8
#define PCI_PORT_DATA 0xcfc /* to 0xcff */
#define PCI_ADDR_ENABLE (1u << 31)
#define PCI_NFUNCS 3

struct pci_function {
	uint8_t devfn; /* device << 3 | function, bus 0 */
	uint8_t cfg[256];
	uint8_t wmask[256];
};

/* A function a device model adds (virtio): its configuration space is the
 * model's, saved in the model's record; written() after each write to it. */
struct pci_extra {
	struct pci_function *fn;
	void (*written)(void *ctx);
	void *ctx;
};
#define PCI_EXTRA_MAX 4

struct pci {
	uint32_t addr; /* CONFIG_ADDRESS as last written with a 32-bit OUT */
	struct pci_function fn[PCI_NFUNCS];
	/* Not saved: fixed when the VM is made. */
	struct pci_extra extra[PCI_EXTRA_MAX];
	unsigned nr_extra;
};

void pci_init(struct pci *p);
/* Ports 0xCF8-0xCFB (not 0xCF9's reset control, which the caller keeps) and
 * 0xCFC-0xCFF; size 1, 2 or 4. Other ports read all ones. */
uint32_t pci_port_read(struct pci *p, uint16_t port, unsigned size);
void pci_port_write(struct pci *p, uint16_t port, unsigned size, uint32_t val);
/* Add a device model's function on bus 0 (its devfn free): false when full. */
bool pci_add_function(struct pci *p, struct pci_function *fn, void (*written)(void *ctx), void *ctx);
/* Direct config access for the integrator and tests: bus 0 devfn, offset;
 * all ones for an absent function. */
uint32_t pci_config_read(const struct pci *p, uint8_t devfn, uint8_t off, unsigned size);
/* PIIX3 PIRQ route register n (0-3): 0x80 bit = disabled, else the ISA IRQ. */
uint8_t pci_piix3_pirq(const struct pci *p, unsigned n);

/* The saved state (REC_PCI): CONFIG_ADDRESS and each function's config space. */
extern const struct record_type pci_record;
