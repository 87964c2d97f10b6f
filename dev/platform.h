/* A VM's chipset, the PC half that is not the CPU (docs/platform.md, part 2):
 * the I/O APIC, the 8259 pair, the PIT, the CMOS clock, the ACPI PM block
 * with its timer, fw_cfg, PCI configuration, the reset ports and QEMU's
 * pc-testdev. The device models are pure (dev/ioapic.c, pic.c, pit.c,
 * rtc.c, pmtimer.c, fwcfg.c, pci.c, testdev.c); this wires them to a VM:
 * ports and pages to devices, ISA IRQ lines to the PIC and the I/O APIC,
 * timers to the run loop, power-off and reset to the VM's end. */
#pragma once
#include "virt/e820.h"
#include "dev/fwcfg.h"
#include "dev/ioapic.h"
#include "dev/pci.h"
#include "dev/pic.h"
#include "dev/pit.h"
#include "dev/pmtimer.h"
#include "dev/rtc.h"
#include "dev/testdev.h"
#include <stdbool.h>
#include <stdint.h>

struct vm;
struct vexit;

/* Where the ACPI tables go: in the BIOS area the memory map reserves, RSDP
 * first (the guest finds it on a 16-byte boundary in 0xE0000-0xFFFFF). */
#define PLATFORM_ACPI_GPA PC_BIOS_START
#define PLATFORM_ACPI_SIZE (PC_HIGH_RAM - PC_BIOS_START)

enum platform_device {
	DEV_IOAPIC, DEV_PIC, DEV_PIT, DEV_RTC, DEV_PMTIMER, DEV_FWCFG, DEV_PCI, DEV_TESTDEV,
	DEV_COUNT
};
extern const char *const platform_device_names[DEV_COUNT];

struct platform {
	struct ioapic ioapic;
	struct pic pic;
	struct pit pit;
	struct rtc rtc;
	struct pmtimer pmtimer;
	struct fwcfg fwcfg;
	struct pci pci;
	struct testdev testdev;
	bool testdev_on;
	uint16_t pm1_sts, pm1_en, pm1_cnt;
	uint8_t reset_control; /* port 0xCF9 */
	uint64_t exits[DEV_COUNT];
};

/* Set up the chipset of a VM whose vCPUs exist, their APICs on vm->apic_bus, with
 * pc-testdev when testdev (its 64 KiB MMIO window is allocated here). 0, or
 * -1 when out of memory. */
int platform_init(struct vm *vm, bool testdev);
void platform_destroy(struct vm *vm);
/* Write the ACPI tables into guest memory (a VM that boots a kernel). */
int platform_write_acpi(struct vm *vm);
/* The functions below are called under the VM's lock (vm_lock). */
/* A port access: true when a chipset device took it (*val holds a read). */
bool platform_io(struct vm *vm, uint16_t port, unsigned size, bool in, uint32_t *val);
/* Does a chipset device own guest-physical gpa? */
bool platform_claims(const struct vm *vm, uint64_t gpa);
/* An access to device memory: true when a chipset device owns gpa. */
bool platform_mmio(struct vm *vm, uint64_t gpa, unsigned size, uint64_t *val, bool write);
/* ISA IRQ line irq is now high or low: to the PIC and the I/O APIC. */
void platform_set_isa_irq(struct vm *vm, unsigned irq, bool level);
/* Fire what the chipset's timers have due by the guest TSC now. */
void platform_update(struct vm *vm, uint64_t now);
/* Guest TSC of the chipset's next timer event, 0 for none. */
uint64_t platform_next_event(struct vm *vm, uint64_t now);
/* The PIC's interrupt for the BSP (vCPU 0), when its LINT0 takes it (ExtINT,
 * or the APIC hardware-disabled): true while one is pending. */
bool platform_extint_pending(struct vm *vm);
/* The CPU takes it: the vector. */
uint8_t platform_extint_ack(struct vm *vm);
void platform_print_stats(const struct vm *vm);
