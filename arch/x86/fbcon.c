/* Text on a linear framebuffer. The framebuffer is written through the direct
 * map; on hardware that memory is uncached (the firmware's MTRRs), where
 * reading it back is slow, so the text is kept in a shadow grid too and a
 * scroll redraws from it only the cells whose character changed: writes only,
 * and few of them, since most of a console's cells are blank. */
#include "arch/x86/fbcon.h"
#include "arch/x86/text_cursor.h"
#include "arch/x86/direct_map.h"
#include "arch/x86/font.h"
#include "lib/string.h"

#define MAX_COLS 240
#define MAX_ROWS 135

static uint8_t *base;
static uint32_t pitch, bytes_per_pixel, white;
static struct text_cursor cur;
static char grid[MAX_ROWS][MAX_COLS];

static uint32_t channel_max(uint8_t pos, uint8_t size)
{
	return size >= 32 ? 0xffffffffu << pos : ((1u << size) - 1) << pos;
}

static void put_pixel(uint8_t *p, uint32_t v)
{
	switch (bytes_per_pixel) {
	case 4:
		*(uint32_t *)p = v;
		break;
	case 3:
		p[0] = (uint8_t)v;
		p[1] = (uint8_t)(v >> 8);
		p[2] = (uint8_t)(v >> 16);
		break;
	default:
		*(uint16_t *)p = (uint16_t)v;
		break;
	}
}

static void draw_cell(unsigned r, unsigned c, char ch)
{
	uint8_t *cell = base + (size_t)r * FONT_HEIGHT * pitch + (size_t)c * FONT_WIDTH * bytes_per_pixel;

	grid[r][c] = ch;
	for (unsigned y = 0; y < FONT_HEIGHT; y++) {
		uint8_t bits = font_row(ch, y);
		uint8_t *p = cell + (size_t)y * pitch;

		for (unsigned x = 0; x < FONT_WIDTH; x++, p += bytes_per_pixel)
			put_pixel(p, bits & (0x80 >> x) ? white : 0);
	}
}

bool fbcon_init(const struct boot_framebuffer *f, const char **why)
{
	if (f->bpp != 15 && f->bpp != 16 && f->bpp != 24 && f->bpp != 32) {
		*why = "pixel size not 15, 16, 24 or 32 bits";
		return false;
	}
	if (f->width < FONT_WIDTH || f->height < FONT_HEIGHT) {
		*why = "smaller than one character";
		return false;
	}
	base = pa_to_va(f->addr);
	pitch = f->pitch;
	bytes_per_pixel = (f->bpp + 7) / 8;
	white = channel_max(f->red_pos, f->red_size) | channel_max(f->green_pos, f->green_size) |
		channel_max(f->blue_pos, f->blue_size);
	cur = (struct text_cursor){
		.cols = f->width / FONT_WIDTH < MAX_COLS ? f->width / FONT_WIDTH : MAX_COLS,
		.rows = f->height / FONT_HEIGHT < MAX_ROWS ? f->height / FONT_HEIGHT : MAX_ROWS,
	};
	for (uint32_t y = 0; y < f->height; y++)
		memset(base + (size_t)y * pitch, 0, (size_t)f->width * bytes_per_pixel);
	memset(grid, ' ', sizeof(grid));
	return true;
}

unsigned fbcon_cols(void)
{
	return cur.cols;
}

unsigned fbcon_rows(void)
{
	return cur.rows;
}

/* Each cell redrawn only where the row below differs: the framebuffer is
 * never read back. */
static void scroll(void)
{
	for (unsigned r = 0; r < cur.rows; r++)
		for (unsigned c = 0; c < cur.cols; c++) {
			char next = r + 1 < cur.rows ? grid[r + 1][c] : ' ';
			if (grid[r][c] != next)
				draw_cell(r, c, next);
		}
}

void fbcon_write(const char *s, size_t n)
{
	static const struct text_screen_ops ops = { draw_cell, scroll };

	if (!base)
		return;
	text_cursor_write(&cur, &ops, s, n);
}
