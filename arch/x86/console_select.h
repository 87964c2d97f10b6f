/* Choosing the console at boot: console= of the kernel command line, the
 * ACPI SPCR, the UARTs that answer, and the screen GRUB left. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

struct acpi_info;
struct boot_framebuffer;

#define CONSOLE_VALUES "auto|com1|com2|0xPORT[,BAUD]|none"

/* Choose by console=VALUE ("auto" when absent; a bad value is reported and
 * auto used), mirror to the screen the boot loader describes (fb, when
 * present and below mapped_top; else VGA text on a BIOS boot), start the
 * console and say what was chosen and why. */
void console_select(const char *value, const struct boot_framebuffer *fb, bool bios,
		    const struct acpi_info *tables, uint64_t mapped_top);
/* Before console_select (a boot that stops early, an exception): COM1, else
 * COM2, no screen. */
void console_select_fallback(void);
