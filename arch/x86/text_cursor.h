/* Where console output goes on a text screen (vga.c, fbcon.c): the cursor
 * moves the same way on both; each screen puts its cells and scrolls its own
 * way. Newline, carriage return and backspace move it; other control bytes
 * are dropped; a line longer than the screen wraps. */
#pragma once
#include <stddef.h>

struct text_cursor {
	unsigned rows, cols, row, col;
};

struct text_screen_ops {
	void (*put)(unsigned row, unsigned col, char c);
	void (*scroll)(void); /* every row up by one, the last one blank */
};

static inline void text_cursor_newline(struct text_cursor *t, const struct text_screen_ops *ops)
{
	t->col = 0;
	if (t->row + 1 < t->rows)
		t->row++;
	else
		ops->scroll();
}

static inline void text_cursor_write(struct text_cursor *t, const struct text_screen_ops *ops,
				     const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (c == '\n') {
			text_cursor_newline(t, ops);
		} else if (c == '\r') {
			t->col = 0;
		} else if (c == '\b') {
			t->col -= t->col > 0;
		} else if (c >= 0x20 && c < 0x7f) {
			if (t->col == t->cols)
				text_cursor_newline(t, ops);
			ops->put(t->row, t->col++, c);
		}
	}
}
