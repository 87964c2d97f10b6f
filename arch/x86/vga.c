/* VGA text mode: 16-bit cells (character, attribute) in rows, scrolled by
 * moving the rows up. The hardware cursor follows the output so that the
 * prompt shows where typing goes. */
#include "arch/x86/vga.h"
#include "arch/x86/cpu.h"
#include "arch/x86/direct_map.h"
#include "lib/string.h"

#define ATTR_GREY_ON_BLACK 0x0700
#define BLANK (ATTR_GREY_ON_BLACK | ' ')
#define CRTC_INDEX 0x3d4
#define CRTC_DATA 0x3d5
#define CRTC_CURSOR_HIGH 0x0e
#define CRTC_CURSOR_LOW 0x0f

static uint16_t *cells;
static unsigned cols, rows, col, row;

static void clear_cells(uint16_t *p, size_t n)
{
	while (n--)
		*p++ = BLANK;
}

static void cursor_update(void)
{
	unsigned pos = row * cols + col;

	outb(CRTC_INDEX, CRTC_CURSOR_HIGH);
	outb(CRTC_DATA, (uint8_t)(pos >> 8));
	outb(CRTC_INDEX, CRTC_CURSOR_LOW);
	outb(CRTC_DATA, (uint8_t)pos);
}

void vga_init(uint64_t pa, unsigned width, unsigned height)
{
	cells = pa_to_va(pa);
	cols = width;
	rows = height;
	col = row = 0;
	clear_cells(cells, (size_t)cols * rows);
	cursor_update();
}

static void newline(void)
{
	col = 0;
	if (row + 1 < rows) {
		row++;
		return;
	}
	memmove(cells, cells + cols, (size_t)(rows - 1) * cols * sizeof(*cells));
	clear_cells(cells + (size_t)(rows - 1) * cols, cols);
}

void vga_write(const char *s, size_t n)
{
	if (!cells)
		return;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (c == '\n')
			newline();
		else if (c == '\r')
			col = 0;
		else if (c == '\b')
			col -= col > 0;
		else if (c >= 0x20 && c < 0x7f) {
			if (col == cols)
				newline();
			cells[row * cols + col++] = ATTR_GREY_ON_BLACK | (uint8_t)c;
		}
	}
	cursor_update();
}
