/* shell/console_line.c and the argument helpers of lib/parse.h: the bytes a
 * console receives, fed key by key to the line editor; every finished line
 * that the editor accepts is split into words, and each word is read as the
 * commands read their arguments (KEY=VALUE numbers and sizes with ranges,
 * names). Properties: an accepted line holds at most CONSOLE_LINE_MAX bytes,
 * all printable ASCII or tab; a refused one says why; a name that passes has
 * 1-15 characters of the allowed set; a ranged number lies in its range. */
#include "lib/parse.h"
#include "tests/fuzz/fuzz.h"
#include "shell/console_line.h"
#include <string.h>

static void no_echo(const char *s, size_t len)
{
	(void)s;
	(void)len;
}

static void check_words(char *line)
{
	char *argv[32];
	int argc = split_words(line, argv, 32);

	for (int i = 0; i < argc; i++) {
		const char *val = strchr(argv[i], '=');
		uint64_t v;

		if (name_valid(argv[i])) {
			size_t n = strlen(argv[i]);
			FUZZ_ASSERT(n >= 1 && n <= NAME_LEN_MAX);
			FUZZ_ASSERT(strspn(argv[i], "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
						 "0123456789_-") == n);
		}
		if (!val)
			continue;
		if (parse_u64_in(val + 1, 1, 86400, &v))
			FUZZ_ASSERT(v >= 1 && v <= 86400);
		if (parse_size_in(val + 1, 2u << 20, 3ull << 30, &v))
			FUZZ_ASSERT(v >= 2u << 20 && v <= 3ull << 30);
	}
	(void)opt_value(argc < 0 ? 0 : argc, argv, "mem");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct line_editor ed;
	char err[160];

	line_reset(&ed);
	for (size_t i = 0; i < size; i++) {
		switch (line_feed(&ed, data[i], no_echo)) {
		case LINE_MORE:
			break;
		case LINE_CANCELLED:
			FUZZ_ASSERT(ed.len == 0);
			break;
		case LINE_DONE:
			if (line_accept(&ed, err, sizeof(err))) {
				size_t n = strlen(ed.line);
				FUZZ_ASSERT(n == ed.len && n <= CONSOLE_LINE_MAX);
				for (size_t j = 0; j < n; j++)
					FUZZ_ASSERT((ed.line[j] >= 0x20 && ed.line[j] < 0x7f) ||
						    ed.line[j] == '\t');
				check_words(ed.line);
			} else {
				FUZZ_ASSERT(strncmp(err, "error: ", 7) == 0);
			}
			line_reset(&ed);
			break;
		}
	}
	return 0;
}
