/* A VM's chipset, the PC half that is not the CPU (docs/platform.md, part 2):
 * the I/O APIC, the 8259 pair, the PIT, the CMOS clock, the ACPI PM block
 * with its timer and the reset ports, fw_cfg, PCI configuration, COM1,
 * QEMU's isa-debug-exit and pc-testdev. The device models are pure
 * (dev/ioapic.c, pic.c, pit.c, rtc.c, acpi_pm.c, pmtimer.c, fwcfg.c, pci.c,
 * uart16550.c, testdev.c); this wires them to a VM: each device into the
 * VM's table and its ports and pages onto the VM's buses (dev/bus.h) behind
 * a small adapter, ISA IRQ lines to the PIC and the I/O APIC, timers to the
 * run loop, power-off and reset to the VM's end. */
#pragma once
#include "loader/e820.h"
#include "dev/acpi_pm.h"
#include "dev/balloon.h"
#include "dev/disk.h"
#include "dev/fwcfg.h"
#include "dev/ioapic.h"
#include "dev/pci.h"
#include "dev/pic.h"
#include "dev/pit.h"
#include "dev/pmtimer.h"
#include "dev/rtc.h"
#include "dev/testdev.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vm;
struct vexit;

/* Where the ACPI tables go: in the BIOS area the memory map reserves, RSDP
 * first (the guest finds it on a 16-byte boundary in 0xE0000-0xFFFFF). */
#define PLATFORM_ACPI_GPA PC_BIOS_START
#define PLATFORM_ACPI_SIZE (PC_HIGH_RAM - PC_BIOS_START)

struct platform {
	struct ioapic ioapic;
	struct pic pic;
	struct pit pit;
	struct rtc rtc;
	struct pmtimer pmtimer;
	struct acpi_pm acpi_pm;
	struct fwcfg fwcfg;
	struct pci pci;
	struct testdev testdev;
	struct vm_disk disk; /* virtio-blk, when the VM has a disk */
	struct vm_balloon balloon; /* virtio-balloon, when on */
};

/* Set up the chipset of a VM whose vCPUs exist, their APICs on vm->apic_bus, with
 * pc-testdev's ranges when testdev (its 64 KiB MMIO window is allocated here)
 * a virtio disk when disk->bytes (dev/disk.h) and a balloon when balloon
 * (dev/balloon.h), and register every device. 0, or -1 with the reason in
 * err. */
int platform_init(struct vm *vm, bool testdev, const struct disk_args *disk, bool balloon,
		  char *err, size_t errlen);
void platform_destroy(struct vm *vm);
/* The host's wall clock (Unix seconds) when the VM's guest TSC read 0: the
 * RTC's time base, at creation and after a restore. */
uint64_t platform_wall_at_tsc0(struct vm *vm);
/* A VM that boots a kernel starts as the firmware leaves the PC
 * (dev/firmware.h): the PIC and PIT programmed, the BSP's APIC passing the
 * PIC on, the real-mode IVT and its handlers in guest memory. A restored VM
 * has its own state. 0, or -1 when guest memory cannot hold the IVT. */
int platform_firmware_start(struct vm *vm);
/* Write the ACPI tables into guest memory (a VM that boots a kernel). */
int platform_write_acpi(struct vm *vm);
/* The functions below are called under the VM's lock (vm_lock). */
/* ISA IRQ line irq is now high or low: to the PIC and the I/O APIC. */
void platform_set_isa_irq(struct vm *vm, unsigned irq, bool level);
/* Fire what the chipset's timers have due by the guest TSC now. */
void platform_update(struct vm *vm, uint64_t now);
/* The VM is about to run again: its timers do not make up for the time it
 * was paused (or saved in a snapshot) as they do for a starved vCPU's. */
void platform_resume(struct vm *vm, uint64_t now);
/* Guest TSC of the chipset's next timer event, 0 for none. */
uint64_t platform_next_event(struct vm *vm, uint64_t now);
/* The PIC's interrupt for the BSP (vCPU 0), when its LINT0 takes it (ExtINT,
 * or the APIC hardware-disabled): true while one is pending. */
bool platform_extint_pending(struct vm *vm);
/* The CPU takes it: the vector. */
uint8_t platform_extint_ack(struct vm *vm);
void platform_print_stats(const struct vm *vm);
