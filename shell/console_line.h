/* The console's line editor: bytes typed in, a finished line out, with
 * backspace, Ctrl-U and Ctrl-C. A line is accepted whole or refused whole:
 * one over CONSOLE_LINE_MAX bytes, or with a byte the console does not take
 * (printable ASCII and tab only), never runs in part. Pure code, built for
 * the host and fuzzed (tests/fuzz). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CONSOLE_LINE_MAX 4096
#define KEY_CTRL_C 0x03

struct line_editor {
	char line[CONSOLE_LINE_MAX + 1]; /* the first CONSOLE_LINE_MAX bytes typed */
	size_t len;                      /* bytes typed, kept or not */
};

enum line_status {
	LINE_MORE,      /* keep feeding */
	LINE_DONE,      /* Enter: line_accept says whether it may run */
	LINE_CANCELLED, /* Ctrl-C: the line is abandoned */
};

void line_reset(struct line_editor *ed);
/* Feed one byte; echo prints what the terminal should show for it. */
enum line_status line_feed(struct line_editor *ed, uint8_t c,
			   void (*echo)(const char *s, size_t len));
/* After LINE_DONE: true if the line may run (ed->line is then terminated),
 * else false with the reason. */
bool line_accept(struct line_editor *ed, char *err, size_t errlen);
/* The same rule for a line that did not come through the editor (run=). */
bool line_check(const char *line, size_t len, char *err, size_t errlen);
