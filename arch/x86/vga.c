/* VGA text mode: 16-bit cells (character, attribute) in rows, scrolled by
 * moving the rows up. The hardware cursor follows the output so that the
 * prompt shows where typing goes. */
#include "arch/x86/vga.h"
#include "arch/x86/cpu.h"
#include "arch/x86/direct_map.h"
#include "arch/x86/text_cursor.h"
#include "lib/string.h"

#define ATTR_GREY_ON_BLACK 0x0700
#define BLANK (ATTR_GREY_ON_BLACK | ' ')
#define CRTC_INDEX 0x3d4
#define CRTC_DATA 0x3d5
#define CRTC_CURSOR_HIGH 0x0e
#define CRTC_CURSOR_LOW 0x0f

static uint16_t *cells;
static struct text_cursor cur;

static void clear_cells(uint16_t *p, size_t n)
{
	while (n--)
		*p++ = BLANK;
}

static void cursor_update(void)
{
	unsigned pos = cur.row * cur.cols + cur.col;

	outb(CRTC_INDEX, CRTC_CURSOR_HIGH);
	outb(CRTC_DATA, (uint8_t)(pos >> 8));
	outb(CRTC_INDEX, CRTC_CURSOR_LOW);
	outb(CRTC_DATA, (uint8_t)pos);
}

void vga_init(uint64_t pa, unsigned width, unsigned height)
{
	cells = pa_to_va(pa);
	cur = (struct text_cursor){ .rows = height, .cols = width };
	clear_cells(cells, (size_t)width * height);
	cursor_update();
}

static void put(unsigned row, unsigned col, char c)
{
	cells[row * cur.cols + col] = ATTR_GREY_ON_BLACK | (uint8_t)c;
}

static void scroll(void)
{
	memmove(cells, cells + cur.cols, (size_t)(cur.rows - 1) * cur.cols * sizeof(*cells));
	clear_cells(cells + (size_t)(cur.rows - 1) * cur.cols, cur.cols);
}

void vga_write(const char *s, size_t n)
{
	static const struct text_screen_ops ops = { put, scroll };

	if (!cells)
		return;
	text_cursor_write(&cur, &ops, s, n);
	cursor_update();
}
