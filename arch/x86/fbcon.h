/* The console mirrored to a linear RGB framebuffer (GRUB's, under UEFI GOP):
 * output only, in the built-in 8x16 font. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "arch/x86/framebuffer.h"

/* Use the framebuffer and clear it; false (with the reason) when its pixel
 * size is not one sprig draws (15, 16, 24 or 32 bits) or it has no room for
 * a line of text. */
bool fbcon_init(const struct boot_framebuffer *f, const char **why);
/* Text columns and rows on the screen. */
unsigned fbcon_cols(void);
unsigned fbcon_rows(void);
/* As vga_write, on the framebuffer. */
void fbcon_write(const char *s, size_t n);
