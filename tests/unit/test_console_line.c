/* The console's line editor (shell/console_line.c): lines are accepted or
 * refused whole. */
#include "check.h"
#include "shell/console_line.h"
#include <string.h>

static char screen[16384];
static size_t screen_len;

static void echo(const char *s, size_t len)
{
	if (screen_len + len < sizeof(screen)) {
		memcpy(screen + screen_len, s, len);
		screen_len += len;
	}
}

/* Feed bytes up to and including the first Enter or Ctrl-C. */
static enum line_status feed(struct line_editor *ed, const char *bytes, size_t n)
{
	enum line_status st = LINE_MORE;

	line_reset(ed);
	screen_len = 0;
	for (size_t i = 0; i < n && st == LINE_MORE; i++)
		st = line_feed(ed, (uint8_t)bytes[i], echo);
	return st;
}

#define FEED(ed, lit) feed(ed, lit, sizeof(lit) - 1)

TEST(console_line_editing)
{
	static struct line_editor ed;
	char err[160];

	REQUIRE(FEED(&ed, "vm list\r") == LINE_DONE);
	CHECK(line_accept(&ed, err, sizeof(err)) && strcmp(ed.line, "vm list") == 0);
	CHECK(FEED(&ed, "vm lisx\x7ft\n") == LINE_DONE && line_accept(&ed, err, sizeof(err)) &&
	      strcmp(ed.line, "vm list") == 0);
	CHECK(FEED(&ed, "junk\x15mem\r") == LINE_DONE && line_accept(&ed, err, sizeof(err)) &&
	      strcmp(ed.line, "mem") == 0);
	CHECK(FEED(&ed, "mem\x03") == LINE_CANCELLED && ed.len == 0);
	/* A byte the console refuses refuses the line, until it is erased. */
	CHECK(FEED(&ed, "mem\x01\r") == LINE_DONE && !line_accept(&ed, err, sizeof(err)) &&
	      strstr(err, "byte 0x01 at column 4") != NULL);
	CHECK(FEED(&ed, "mem\xc3\xa9\x08\x08\r") == LINE_DONE && line_accept(&ed, err, sizeof(err)) &&
	      strcmp(ed.line, "mem") == 0);
	CHECK(FEED(&ed, "a\tb\r") == LINE_DONE && line_accept(&ed, err, sizeof(err)));
	/* Echo: one column a byte, so that backspace stays in step. */
	FEED(&ed, "m\xc3\x08\r");
	CHECK(screen_len == 6 && memcmp(screen, "m?\b \b\n", 6) == 0);
}

TEST(console_line_length_limit)
{
	static struct line_editor ed;
	static char bytes[CONSOLE_LINE_MAX + 2];
	char err[160];

	memset(bytes, 'x', sizeof(bytes));
	bytes[CONSOLE_LINE_MAX] = '\r';
	CHECK(feed(&ed, bytes, CONSOLE_LINE_MAX + 1) == LINE_DONE &&
	      line_accept(&ed, err, sizeof(err)) && strlen(ed.line) == CONSOLE_LINE_MAX);
	bytes[CONSOLE_LINE_MAX] = 'x';
	bytes[CONSOLE_LINE_MAX + 1] = '\r';
	CHECK(feed(&ed, bytes, CONSOLE_LINE_MAX + 2) == LINE_DONE &&
	      !line_accept(&ed, err, sizeof(err)) &&
	      strcmp(err, "error: line longer than 4096 bytes") == 0);
	/* Erasing back under the limit makes it whole again. */
	CHECK(line_feed(&ed, 0x7f, echo) == LINE_MORE && line_accept(&ed, err, sizeof(err)));
	CHECK(!line_check("abc", 5000, err, sizeof(err)));
}
