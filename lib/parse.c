/* Number, size, word and kernel command-line parsing. */
#include "lib/parse.h"
#include "lib/string.h"

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int digit_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return 99;
}

/* Parse the number at the start of s; *end gets the first character after it. */
static bool parse_number(const char *s, uint64_t *out, const char **end)
{
	unsigned base = 10;
	uint64_t v = 0;
	const char *p = s;

	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		base = 16;
		p += 2;
	}
	const char *digits = p;
	for (int d; (d = digit_value(*p)) < (int)base; p++) {
		if (v > (UINT64_MAX - d) / base)
			return false;
		v = v * base + d;
	}
	if (p == digits)
		return false;
	*out = v;
	*end = p;
	return true;
}

bool parse_u64(const char *s, uint64_t *out)
{
	const char *end;
	uint64_t v;

	if (!parse_number(s, &v, &end) || *end)
		return false;
	*out = v;
	return true;
}

bool parse_u64_in(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	uint64_t v;

	if (!parse_u64(s, &v) || v < min || v > max)
		return false;
	*out = v;
	return true;
}

bool parse_on_off(const char *s, bool *on)
{
	if (strcmp(s, "on") != 0 && strcmp(s, "off") != 0)
		return false;
	*on = strcmp(s, "on") == 0;
	return true;
}

bool parse_u64_list(const char *s, uint64_t min, uint64_t max, uint64_t *out, unsigned max_n,
		    unsigned *n)
{
	char item[24];

	for (*n = 0;; s++) {
		size_t len = 0;

		while (s[len] && s[len] != ',')
			len++;
		if (*n == max_n || len >= sizeof(item))
			return false;
		memcpy(item, s, len);
		item[len] = 0;
		if (!parse_u64_in(item, min, max, &out[(*n)++]))
			return false;
		s += len;
		if (!*s)
			return true;
	}
}

bool parse_size_in(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	uint64_t v;

	if (!parse_size(s, &v) || v < min || v > max)
		return false;
	*out = v;
	return true;
}

bool name_valid(const char *s)
{
	size_t n = strnlen(s, NAME_LEN_MAX + 1);

	if (n == 0 || n > NAME_LEN_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-'))
			return false;
	}
	return true;
}

bool parse_size(const char *s, uint64_t *out)
{
	const char *p;
	uint64_t v;
	unsigned shift = 0;

	if (!parse_number(s, &v, &p))
		return false;
	switch (*p | 0x20) {
	case 'k': shift = 10; break;
	case 'm': shift = 20; break;
	case 'g': shift = 30; break;
	case 't': shift = 40; break;
	}
	if (shift) {
		p++;
		if ((*p | 0x20) == 'i' && (p[1] | 0x20) == 'b')
			p++;
	}
	if ((*p | 0x20) == 'b')
		p++;
	if (*p || v > UINT64_MAX >> shift)
		return false;
	*out = v << shift;
	return true;
}

int split_words(char *line, char **argv, int max)
{
	int n = 0;
	char *p = line;

	for (;;) {
		while (is_blank(*p))
			p++;
		if (!*p)
			return n;
		if (n == max)
			return -1;
		argv[n++] = p;
		while (*p && !is_blank(*p))
			p++;
		if (*p)
			*p++ = '\0';
	}
}

const char *opt_value(int argc, char **argv, const char *key)
{
	size_t klen = strlen(key);
	const char *value = NULL;

	for (int i = 0; i < argc; i++) {
		if (strncmp(argv[i], key, klen) != 0)
			continue;
		if (argv[i][klen] == '=')
			value = argv[i] + klen + 1;
		else if (argv[i][klen] == '\0')
			value = argv[i] + klen;
	}
	return value;
}

int split_commands(char *s, char **cmds, int max)
{
	int n = 0;
	char *p = s;

	for (;;) {
		char *start = p;
		while (*p && *p != ';')
			p++;
		bool last = !*p;
		*p = '\0';
		while (is_blank(*start))
			start++;
		for (char *e = p; e > start && is_blank(e[-1]);)
			*--e = '\0';
		if (*start) {
			if (n == max)
				return -1;
			cmds[n++] = start;
		}
		if (last)
			return n;
		p++;
	}
}

/* Reads one command-line word character by character with quoting removed. */
struct word_reader {
	const char *p;
	char quote; /* the open quote character, 0 outside quotes */
};

/* The next character of the word, or -1 at its end. */
static int word_next(struct word_reader *r)
{
	for (;;) {
		char c = *r->p;
		if (!c || (!r->quote && is_blank(c)))
			return -1;
		r->p++;
		if (c == '\\' && *r->p)
			return (unsigned char)*r->p++;
		if (r->quote && c == r->quote) {
			r->quote = 0;
			continue;
		}
		if (!r->quote && (c == '"' || c == '\'')) {
			r->quote = c;
			continue;
		}
		return (unsigned char)c;
	}
}

static const char *skip_blanks(const char *p)
{
	while (is_blank(*p))
		p++;
	return p;
}

/* Copy the rest of the word into out; returns the number of characters it had. */
static size_t word_copy_rest(struct word_reader *r, char *out, size_t outlen)
{
	size_t n = 0;

	for (int c; (c = word_next(r)) >= 0; n++)
		if (n + 1 < outlen)
			out[n] = (char)c;
	if (outlen)
		out[n < outlen ? n : outlen - 1] = '\0';
	return n;
}

const char *cmdline_next_word(const char *p, char *word, size_t len, size_t *full_len)
{
	p = skip_blanks(p);
	if (!*p)
		return NULL;
	struct word_reader r = { p, 0 };
	size_t n = word_copy_rest(&r, word, len);
	if (full_len)
		*full_len = n;
	return r.p;
}

enum cmdline_status cmdline_get(const char *cmdline, const char *key, char *out, size_t outlen)
{
	enum cmdline_status status = CMDLINE_ABSENT;
	const char *p = skip_blanks(cmdline);

	if (outlen)
		out[0] = '\0';
	while (*p) {
		struct word_reader r = { p, 0 };
		size_t i = 0;
		int c;

		while (key[i] && (c = word_next(&r)) == (unsigned char)key[i])
			i++;
		if (!key[i]) {
			c = word_next(&r);
			if (c < 0) {
				status = outlen ? CMDLINE_FOUND : CMDLINE_TOO_LONG;
				if (outlen)
					out[0] = '\0';
			} else if (c == '=') {
				/* A value that does not fit is reported, never cut. */
				size_t n = word_copy_rest(&r, out, outlen);
				status = n < outlen ? CMDLINE_FOUND : CMDLINE_TOO_LONG;
				if (status == CMDLINE_TOO_LONG && outlen)
					out[0] = '\0';
			}
		}
		while (word_next(&r) >= 0)
			;
		p = skip_blanks(r.p);
	}
	return status;
}
