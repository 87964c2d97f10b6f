/* A linear framebuffer as the boot loader describes it (multiboot2's tag type
 * 8, which boot/multiboot2.c parses): what the console draws on. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

enum boot_fb_type {
	BOOT_FB_INDEXED = 0,
	BOOT_FB_RGB = 1,
	BOOT_FB_EGA_TEXT = 2,
};

struct boot_framebuffer {
	bool present;
	uint8_t type; /* enum boot_fb_type */
	uint64_t addr;
	uint32_t pitch, width, height; /* EGA text: characters */
	uint8_t bpp;
	uint8_t red_pos, red_size, green_pos, green_size, blue_pos, blue_size; /* RGB only */
};
