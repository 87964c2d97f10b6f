/* Leaving the machine: power off and reboot, through ACPI where the tables
 * describe it, then through the fallbacks of emulators and legacy PCs. Neither
 * returns. Other CPUs should be stopped first. */
#pragma once

/* ACPI S5, then QEMU's isa-debug-exit (port 0xf4, QEMU exits with status 1),
 * then Bochs' shutdown port (0x8900); if all fail, halt with interrupts off. */
__attribute__((noreturn)) void power_off(void);
/* ACPI reset register, the keyboard controller, port 0xCF9, then a triple fault. */
__attribute__((noreturn)) void power_reboot(void);
