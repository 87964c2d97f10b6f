/* The framebuffer console's 8x16 font for printable ASCII. */
#pragma once
#include <stdint.h>

#define FONT_WIDTH 8
#define FONT_HEIGHT 16
#define FONT_FIRST 0x20
#define FONT_LAST 0x7e

/* Row y (0 at the top) of c's cell, bit 7 the leftmost pixel; blank for
 * anything but printable ASCII. */
uint8_t font_row(char c, unsigned y);
