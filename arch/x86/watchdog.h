/* The console's watchdog (watchdog=S): armed around each command, checked by
 * the console CPU's timer tick, which runs even while a guest spins with
 * interrupts off (the guest's physical interrupts exit to sprig). A command
 * that overruns is named and the machine reset. */
#pragma once

/* Arm for `seconds` (0 disarms) on behalf of command `what` (copied). */
void watchdog_arm(const char *what, unsigned seconds);
/* From the console CPU's timer interrupt. */
void watchdog_tick(void);
