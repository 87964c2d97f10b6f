/* The console mirrored to VGA text memory (under BIOS): output only. */
#pragma once
#include <stddef.h>
#include <stdint.h>

/* Use the text buffer at pa, cols x rows cells, and clear it. */
void vga_init(uint64_t pa, unsigned cols, unsigned rows);
/* Draw s (newline, carriage return, backspace; other control bytes dropped),
 * scrolling at the bottom; nothing before vga_init. */
void vga_write(const char *s, size_t n);
