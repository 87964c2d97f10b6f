/* The console's line editor (console_line.h). */
#include "shell/console_line.h"
#include "lib/print.h"
#include "lib/string.h"

#define KEY_BACKSPACE 0x08
#define KEY_CTRL_U 0x15
#define KEY_DELETE 0x7f

static bool byte_accepted(uint8_t c)
{
	return (c >= 0x20 && c < 0x7f) || c == '\t';
}

void line_reset(struct line_editor *ed)
{
	ed->len = 0;
	ed->line[0] = 0;
}

enum line_status line_feed(struct line_editor *ed, uint8_t c,
			   void (*echo)(const char *s, size_t len))
{
	char shown;

	switch (c) {
	case '\r':
	case '\n':
		echo("\n", 1);
		return LINE_DONE;
	case KEY_CTRL_C:
		echo("^C\n", 3);
		line_reset(ed);
		return LINE_CANCELLED;
	case KEY_CTRL_U:
		while (ed->len) {
			ed->len--;
			echo("\b \b", 3);
		}
		return LINE_MORE;
	case KEY_BACKSPACE:
	case KEY_DELETE:
		if (ed->len) {
			ed->len--;
			echo("\b \b", 3);
		}
		return LINE_MORE;
	}
	if (ed->len < CONSOLE_LINE_MAX)
		ed->line[ed->len] = (char)c;
	ed->len++;
	/* One column a byte, so that backspace stays in step. */
	shown = c == '\t' ? ' ' : byte_accepted(c) ? (char)c : '?';
	echo(&shown, 1);
	return LINE_MORE;
}

bool line_check(const char *line, size_t len, char *err, size_t errlen)
{
	if (len > CONSOLE_LINE_MAX) {
		ksnprintf(err, errlen, "error: line longer than %d bytes", CONSOLE_LINE_MAX);
		return false;
	}
	for (size_t i = 0; i < len; i++) {
		if (!byte_accepted((uint8_t)line[i])) {
			ksnprintf(err, errlen, "error: byte 0x%02x at column %zu is not accepted "
				  "(printable ASCII and tab only); nothing run", (uint8_t)line[i], i + 1);
			return false;
		}
	}
	return true;
}

bool line_accept(struct line_editor *ed, char *err, size_t errlen)
{
	if (!line_check(ed->line, ed->len, err, errlen))
		return false;
	ed->line[ed->len] = 0;
	return true;
}
