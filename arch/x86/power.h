/* Leaving the machine: power off and reboot, through ACPI where the tables
 * describe it, then through the fallbacks of emulators and legacy PCs; and
 * what a fatal error does (panic=). Neither returns. Each first stops the
 * other CPUs (an NMI: each leaves VMX operation or clears EFER.SVME and
 * halts) and leaves virtualization on its own CPU, since INIT, which a
 * reset may be, is blocked in VMX root operation and while GIF is clear. */
#pragma once
#include <stdbool.h>

/* panic=: what an exception or a failed power-off does. */
enum panic_action { PANIC_HALT, PANIC_REBOOT, PANIC_POWEROFF, PANIC_ACTIONS };
extern int power_panic_action;
extern const char *const panic_action_names[PANIC_ACTIONS + 1];

/* ACPI S5 (after clearing the PM1 status bits); under QEMU or Bochs (their
 * ACPI tables say so) their exit ports, isa-debug-exit at 0xf4 (QEMU exits
 * with status 1) and the shutdown port 0x8900; if all fail, panic=. */
__attribute__((noreturn)) void power_off(void);
/* Set when a `selftest` check failed: under an emulator, power_off then
 * first writes 1 to isa-debug-exit (QEMU exits with status 3). */
extern bool power_exit_failed;
/* ACPI reset register, the keyboard controller, port 0xCF9, then a triple fault. */
__attribute__((noreturn)) void power_reboot(void);
/* Say what panic= does and do it: halt this CPU, reboot or power off. */
__attribute__((noreturn)) void power_panic(void);

/* For the NMI handler: whether another CPU is stopping every CPU, and
 * stopping this one (out of VMX or SVM, halted for good). */
bool power_stop_requested(void);
__attribute__((noreturn)) void power_stop_this_cpu(void);
