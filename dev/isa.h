/* The ISA devices' adapters (isa.c): the 8259 pair, the PIT, the CMOS
 * clock, the ACPI PM block with its timer and the reset ports, fw_cfg,
 * pc-testdev (its MMIO window too) and QEMU's isa-debug-exit, each on the
 * VM's buses (dev/bus.h), which platform_init attaches. */
#pragma once
#include "dev/bus.h"

extern const struct device_spec pic_device, pit_device, rtc_device, pmtimer_device,
	acpi_pm_device, fwcfg_device, testdev_device, debug_exit_device;
