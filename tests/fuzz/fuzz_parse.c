/* lib/parse.c: every parser fed the input as a string (cut at its first NUL),
 * each result checked against the contract in lib/parse.h: numbers and sizes
 * against a plain reference reading of the documented grammar, word and
 * command splitting against counts made here, cmdline_get against the words
 * cmdline_next_word yields, and every output buffer is a heap block of exactly
 * its stated length, so a write past it is an ASan report. */
#include "lib/parse.h"
#include "tests/fuzz/fuzz.h"
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

static bool blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The grammar of lib/parse.h: 0x/0X and hex digits, or decimal digits.
 * false when there are no digits or the value does not fit. */
static bool ref_number(const char *s, uint64_t *out, const char **end)
{
	unsigned base = 10;
	uint64_t v = 0;
	bool overflow = false;
	const char *p = s;

	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		base = 16;
		p += 2;
	}
	const char *start = p;
	for (int d; (d = hex_digit(*p)) >= 0 && (unsigned)d < base; p++)
		overflow |= __builtin_mul_overflow(v, base, &v) || __builtin_add_overflow(v, d, &v);
	if (p == start || overflow)
		return false;
	*out = v;
	*end = p;
	return true;
}

static bool ref_u64(const char *s, uint64_t *out)
{
	const char *end;

	return ref_number(s, out, &end) && !*end;
}

static bool is_letter(char c, char lower)
{
	return c == lower || c == lower - 'a' + 'A';
}

static bool ref_size(const char *s, uint64_t *out)
{
	static const char units[] = "kmgt";
	const char *p;
	uint64_t v;
	unsigned shift = 0;

	if (!ref_number(s, &v, &p))
		return false;
	for (int i = 0; i < 4; i++)
		if (is_letter(*p, units[i]))
			shift = 10 * (i + 1);
	if (shift) {
		p++;
		if (is_letter(p[0], 'i') && is_letter(p[1], 'b'))
			p++;
	}
	if (is_letter(*p, 'b'))
		p++;
	if (*p || (shift && v >> (64 - shift)))
		return false;
	*out = v << shift;
	return true;
}

static void check_numbers(const char *s)
{
	uint64_t got = 0x5a5a, want = 0xa5a5;
	bool ok = parse_u64(s, &got), ref = ref_u64(s, &want);

	FUZZ_ASSERT(ok == ref);
	FUZZ_ASSERT(!ok || got == want);
	got = 0x5a5a;
	want = 0xa5a5;
	ok = parse_size(s, &got);
	ref = ref_size(s, &want);
	FUZZ_ASSERT(ok == ref);
	FUZZ_ASSERT(!ok || got == want);
}

static int count_words(const char *s)
{
	int n = 0;

	for (const char *p = s; *p; p++)
		if (!blank(*p) && (p == s || blank(p[-1])))
			n++;
	return n;
}

/* The last "key=value" or "key" word of argv, as opt_value documents it. */
static const char *ref_opt_value(int argc, char **argv, const char *key)
{
	size_t klen = strlen(key);
	const char *v = NULL;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], key))
			v = argv[i] + klen;
		else if (!strncmp(argv[i], key, klen) && argv[i][klen] == '=')
			v = argv[i] + klen + 1;
	}
	return v;
}

static void check_words(const char *s, size_t len)
{
	static const int maxes[] = { 0, 1, 4, 64 };
	char *line = malloc(len + 1), *argv[64];
	int words = count_words(s);

	for (size_t m = 0; m < sizeof(maxes) / sizeof(maxes[0]); m++) {
		int max = maxes[m];

		memcpy(line, s, len + 1);
		int n = split_words(line, argv, max);
		FUZZ_ASSERT(n == (words > max ? -1 : words));
		for (int i = 0; i < n; i++) {
			FUZZ_ASSERT(argv[i] >= line && argv[i] < line + len);
			FUZZ_ASSERT(i == 0 || argv[i] > argv[i - 1] + strlen(argv[i - 1]));
			FUZZ_ASSERT(*argv[i]);
			for (const char *p = argv[i]; *p; p++)
				FUZZ_ASSERT(!blank(*p));
		}
		if (n <= 0)
			continue;
		/* Keys: a fixed one, and the first word up to its '=' (always found). */
		char *key = strndup(argv[0], strcspn(argv[0], "="));
		FUZZ_ASSERT(opt_value(n, argv, key) == ref_opt_value(n, argv, key));
		FUZZ_ASSERT(opt_value(n, argv, key) != NULL);
		FUZZ_ASSERT(opt_value(n, argv, "mem") == ref_opt_value(n, argv, "mem"));
		free(key);
	}
	free(line);
}

/* The non-empty blank-trimmed ';'-separated pieces of s. */
static int count_commands(const char *s)
{
	int n = 0;
	bool content = false;

	for (const char *p = s;; p++) {
		if (!*p || *p == ';') {
			n += content;
			content = false;
			if (!*p)
				return n;
		} else if (!blank(*p)) {
			content = true;
		}
	}
}

static void check_commands(const char *s, size_t len)
{
	static const int maxes[] = { 0, 1, 3, 64 };
	char *line = malloc(len + 1), *cmds[64];
	int want = count_commands(s);

	for (size_t m = 0; m < sizeof(maxes) / sizeof(maxes[0]); m++) {
		memcpy(line, s, len + 1);
		int n = split_commands(line, cmds, maxes[m]);
		FUZZ_ASSERT(n == (want > maxes[m] ? -1 : want));
		for (int i = 0; i < n; i++) {
			size_t cl = strlen(cmds[i]);
			FUZZ_ASSERT(cmds[i] >= line && cmds[i] + cl <= line + len);
			FUZZ_ASSERT(cl > 0 && !blank(cmds[i][0]) && !blank(cmds[i][cl - 1]));
			FUZZ_ASSERT(!strchr(cmds[i], ';'));
			FUZZ_ASSERT(i == 0 || cmds[i] > cmds[i - 1] + strlen(cmds[i - 1]));
		}
	}
	free(line);
}

/* Every word, unquoted, into one buffer with room for them all (a word
 * unquotes to at most its raw length): the reference for cmdline_get. Checks
 * cmdline_next_word's progress on the way. words[0] is the buffer. */
static char **all_words(const char *s, size_t len, int *count)
{
	size_t room = 2 * len + 2, used = 0;
	char **words = malloc((len + 1) * sizeof(*words)), *buf = malloc(room);
	const char *p = s;
	int n = 0;

	words[0] = buf;
	for (;;) {
		char *w = buf + used;
		size_t full = SIZE_MAX;
		const char *next = cmdline_next_word(p, w, room - used, &full);
		if (!next)
			break;
		FUZZ_ASSERT(next > p && next <= s + len);
		FUZZ_ASSERT(full == strlen(w) && full < room - used);
		words[n++] = w;
		used += full + 1;
		p = next;
	}
	*count = n;
	return words;
}

/* cmdline_next_word into buffers of every small size: always terminated
 * (len > 0), cut to len - 1, full_len right, never written at len 0. */
static void check_next_word(const char *s, size_t len, char **words, int count)
{
	static const size_t lens[] = { 0, 1, 2, 5, 16 };

	for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
		size_t wl = lens[k];
		char *w = malloc(wl ? wl : 1);
		const char *p = s;
		int n = 0;

		w[0] = 'Z';
		for (;;) {
			size_t full = SIZE_MAX;
			const char *next = cmdline_next_word(p, w, wl, n & 1 ? NULL : &full);
			if (!next)
				break;
			FUZZ_ASSERT(n < count);
			FUZZ_ASSERT(next > p && next <= s + len);
			if (wl) {
				size_t got = strnlen(w, wl);
				FUZZ_ASSERT(got < wl);
				size_t ref = strlen(words[n]);
				FUZZ_ASSERT(got == (ref < wl ? ref : wl - 1));
				FUZZ_ASSERT(!memcmp(w, words[n], got));
			} else {
				FUZZ_ASSERT(w[0] == 'Z');
			}
			if (!(n & 1))
				FUZZ_ASSERT(full == strlen(words[n]));
			n++;
			p = next;
		}
		FUZZ_ASSERT(n == count);
		free(w);
	}
}

/* What cmdline_get must answer for key, from the unquoted words: the last
 * word "key" or "key=value" decides. */
static enum cmdline_status ref_get(char **words, int count, const char *key, size_t outlen,
				   const char **value)
{
	size_t klen = strlen(key);
	enum cmdline_status st = CMDLINE_ABSENT;

	*value = "";
	for (int i = 0; i < count; i++) {
		const char *w = words[i];
		if (strncmp(w, key, klen))
			continue;
		if (!w[klen]) {
			st = outlen ? CMDLINE_FOUND : CMDLINE_TOO_LONG;
			*value = "";
		} else if (w[klen] == '=') {
			*value = w + klen + 1;
			st = strlen(*value) < outlen ? CMDLINE_FOUND : CMDLINE_TOO_LONG;
		}
	}
	if (st != CMDLINE_FOUND)
		*value = "";
	return st;
}

static void check_get(const char *s, char **words, int count)
{
	static const size_t outlens[] = { 0, 3, 1024 };
	char first[65] = "";

	if (count) {
		size_t n = strcspn(words[0], "=");
		if (n > 64)
			n = 64;
		memcpy(first, words[0], n);
		first[n] = '\0';
	}
	const char *keys[] = { "run", "", first };
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		for (size_t o = 0; o < sizeof(outlens) / sizeof(outlens[0]); o++) {
			size_t outlen = outlens[o];
			char *out = malloc(outlen ? outlen : 1);
			const char *want;

			memset(out, 'Z', outlen ? outlen : 1);
			enum cmdline_status st = cmdline_get(s, keys[k], out, outlen);
			FUZZ_ASSERT(st == ref_get(words, count, keys[k], outlen, &want));
			if (outlen) {
				FUZZ_ASSERT(strnlen(out, outlen) < outlen);
				FUZZ_ASSERT(!strcmp(out, want));
			} else {
				FUZZ_ASSERT(out[0] == 'Z');
			}
			free(out);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t len = strnlen((const char *)data, size);
	char *s = malloc(len + 1);
	int count;

	memcpy(s, data, len);
	s[len] = '\0';
	check_numbers(s);
	check_words(s, len);
	check_commands(s, len);
	char **words = all_words(s, len, &count);
	check_next_word(s, len, words, count);
	check_get(s, words, count);
	free(words[0]);
	free(words);
	free(s);
	return 0;
}
