/* lib/: printf against the host's snprintf, string functions against libc,
 * and the parse helpers. */
#include "check.h"
#include "lib/parse.h"
#include "lib/print.h"
#include "lib/range.h"
#include "lib/sort.h"
#include "tests/rng.h"
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* lib/string.c under its test names (tests/unit/string_rename.h). */
void *sprig_memset(void *dst, int c, size_t n);
void *sprig_memcpy(void *restrict dst, const void *restrict src, size_t n);
void *sprig_memmove(void *dst, const void *src, size_t n);
int sprig_memcmp(const void *a, const void *b, size_t n);
size_t sprig_strlen(const char *s);
size_t sprig_strnlen(const char *s, size_t max);
int sprig_strcmp(const char *a, const char *b);
int sprig_strncmp(const char *a, const char *b, size_t n);
char *sprig_strchr(const char *s, int c);
char *sprig_strrchr(const char *s, int c);

/* Shared by cmp_printf and the random tests. Each test that draws seeds it
 * first, so its draws do not depend on which tests ran before. */
static struct rng rng;

static int sign(int v)
{
	return (v > 0) - (v < 0);
}

/* Format with ksnprintf and vsnprintf, in full and cut to a random size;
 * returns false (reporting the format) on any difference. */
static bool cmp_printf(const char *fmt, ...)
{
	char mine[512], host[512];
	va_list ap, aq;
	bool same = true;

	va_start(ap, fmt);
	va_copy(aq, ap);
	int rm = kvsnprintf(mine, sizeof(mine), fmt, ap);
	int rh = vsnprintf(host, sizeof(host), fmt, aq);
	va_end(aq);
	va_end(ap);
	if (rm != rh || strcmp(mine, host) != 0) {
		char msg[1400];
		snprintf(msg, sizeof(msg), "format \"%s\": got %d \"%s\", want %d \"%s\"", fmt, rm, mine,
			 rh, host);
		unit_fail(__FILE__, __LINE__, msg);
		same = false;
	}

	/* Truncation: same bytes, terminated, nothing written past size. */
	size_t size = rng_below(&rng, 24);
	memset(mine, 'Z', sizeof(mine));
	memset(host, 'Z', sizeof(host));
	va_start(ap, fmt);
	va_copy(aq, ap);
	rm = kvsnprintf(mine, size, fmt, ap);
	rh = vsnprintf(host, size, fmt, aq);
	va_end(aq);
	va_end(ap);
	if (rm != rh || memcmp(mine, host, size + 1) != 0) {
		char msg[256];
		snprintf(msg, sizeof(msg), "format \"%s\" cut to %zu differs", fmt, size);
		unit_fail(__FILE__, __LINE__, msg);
		same = false;
	}
	return same;
}

TEST(lib_printf_fixed)
{
	/* cmp_printf cuts each output to a random size: seeded here, so the
	 * sizes do not hang on what ran before. */
	rng = rng_seeded(0xf1bedull);
	cmp_printf("plain text");
	cmp_printf("%d %i %u %x %X %o", -42, 42, 42u, 0xbeefu, 0xbeefu, 8u);
	cmp_printf("%lld %llu", (long long)INT64_MIN, (unsigned long long)UINT64_MAX);
	cmp_printf("%ld %lx %lo", (long)INT64_MIN, (unsigned long)UINT64_MAX, (unsigned long)UINT64_MAX);
	cmp_printf("%hhd %hhu %hd %hu", 255, 511, 65535, 131071);
	cmp_printf("%zu %zd %td %jd %ju", (size_t)-1, (ssize_t)-5, (ptrdiff_t)-7, (intmax_t)INT64_MIN,
		   (uintmax_t)UINT64_MAX);
	cmp_printf("[%5d] [%-5d] [%05d] [%+d] [% d] [%+05d] [%-+5d]", 42, 42, -42, 0, 0, 7, 7);
	cmp_printf("[%.0d] [%.0x] [%5.0u] [%+.0d] [% .0d]", 0, 0u, 0u, 0, 0);
	cmp_printf("[%.3d] [%08.3d] [%-8.3x] [%.10o]", -5, 5, 0xau, 8u);
	cmp_printf("[%#x] [%#X] [%#o] [%#.0o] [%#.3o] [%#010x] [%#x]", 0xabu, 0xabu, 8u, 0u, 8u, 0x1u, 0u);
	cmp_printf("[%*d] [%-*d] [%*d] [%.*d] [%.*d] [%*.*x]", 6, 1, 6, 1, -6, 1, 4, 1, -4, 1, 8, 3, 0xfu);
	cmp_printf("[%s] [%10s] [%-10s] [%.2s] [%10.2s] [%.*s]", "abc", "abc", "abc", "abc", "abc", 1, "xyz");
	cmp_printf("[%c] [%3c] [%-3c] [%%]", 'a', 'b', 'c');
	cmp_printf("[%s]", (char *)NULL);
	cmp_printf("[%p] [%20p] [%-20p]", (void *)0x1234, (void *)0xffff800000001000, (void *)1);
	cmp_printf("%.100d|%120d|%-120x|", 1, 2, 3u);
}

/* Behaviour the host's printf does not define or does differently. */
static int fmt_unchecked(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	int n = kvsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n;
}

TEST(lib_printf_own_rules)
{
	char buf[64];

	CHECK(ksnprintf(buf, sizeof(buf), "%p", (void *)0) == 3 && strcmp(buf, "0x0") == 0);
	CHECK(ksnprintf(buf, sizeof(buf), "[%5p]", (void *)0) == 7 && strcmp(buf, "[  0x0]") == 0);
	CHECK(ksnprintf(buf, sizeof(buf), "%p", (void *)0xdead) == 6 && strcmp(buf, "0xdead") == 0);
	/* Unknown or cut-off conversions are shown as written. */
	CHECK(fmt_unchecked(buf, sizeof(buf), "a%qb") == 4 && strcmp(buf, "a%qb") == 0);
	CHECK(fmt_unchecked(buf, sizeof(buf), "a%-5") == 4 && strcmp(buf, "a%-5") == 0);
	CHECK(fmt_unchecked(buf, sizeof(buf), "%08s|%-05c", "ab", 'x') == 14 &&
	      strcmp(buf, "      ab|x    ") == 0);
}

TEST(lib_printf_truncation)
{
	char buf[16];

	memset(buf, 'Z', sizeof(buf));
	CHECK(ksnprintf(buf, 6, "hello %s", "world") == 11);
	CHECK(strcmp(buf, "hello") == 0 && buf[6] == 'Z');
	memset(buf, 'Z', sizeof(buf));
	CHECK(ksnprintf(buf, 1, "%d", 12345) == 5);
	CHECK(buf[0] == '\0' && buf[1] == 'Z');
	CHECK(ksnprintf(NULL, 0, "%s-%d", "abc", -1) == 6);
	memset(buf, 'Z', sizeof(buf));
	CHECK(ksnprintf(buf, 0, "x") == 1 && buf[0] == 'Z');
	CHECK(ksnprintf(buf, sizeof(buf), "%s", "") == 0 && buf[0] == '\0');
}

static const char *const flag_chars = "-0 +#";
static const char *const lengths[] = { "", "hh", "h", "l", "ll", "z", "t", "j" };

TEST(lib_printf_random)
{
	static const char *const strings[] = { "", "a", "hello", "sprig hypervisor", "tab\there" };
	int mismatches = 0;

	rng = rng_seeded(0x5eed5eed12345678ull);
	for (int iter = 0; iter < 20000 && mismatches < 10; iter++) {
		char fmt[64], *f = fmt;
		const char *convs = "diuxXocsp";
		char conv = convs[rng_below(&rng, 9)];
		bool numeric = strchr("diuxXo", conv) != NULL;
		int stars[2], nstars = 0;

		f += sprintf(f, "<");
		*f++ = '%';
		for (int i = 0; i < 5; i++) {
			char fl = flag_chars[i];
			/* C leaves these combinations undefined. */
			if ((fl == '#' && !strchr("xXo", conv)) || (fl == '0' && !numeric) ||
			    (strchr("+ ", fl) && conv == 'p'))
				continue;
			if (rng_below(&rng, 4) == 0)
				*f++ = fl;
		}
		switch (rng_below(&rng, 4)) {
		case 1:
			f += sprintf(f, "%d", (int)rng_below(&rng, 30));
			break;
		case 2:
			*f++ = '*';
			stars[nstars++] = (int)rng_below(&rng, 41) - 20;
			break;
		}
		if (conv != 'c' && conv != 'p') {
			switch (rng_below(&rng, 4)) {
			case 1:
				f += sprintf(f, ".%d", (int)rng_below(&rng, 25));
				break;
			case 2:
				f += sprintf(f, ".*");
				stars[nstars++] = (int)rng_below(&rng, 31) - 5;
				break;
			case 3:
				*f++ = '.';
				break;
			}
		}
		int len = numeric ? (int)rng_below(&rng, 8) : 0;
		f += sprintf(f, "%s%c>", lengths[len], conv);
		*f = '\0';

		/* Values of every magnitude, both signs. */
		uint64_t v = rng_next(&rng) >> rng_below(&rng, 64);
		if (rng_below(&rng, 2))
			v = -v;
		bool ok;
#define WITH_STARS(arg)                                                              \
	(nstars == 0 ? cmp_printf(fmt, arg)                                           \
	 : nstars == 1 ? cmp_printf(fmt, stars[0], arg)                               \
		       : cmp_printf(fmt, stars[0], stars[1], arg))
		if (conv == 's')
			ok = WITH_STARS(strings[v % 5]);
		else if (conv == 'c')
			ok = WITH_STARS((int)(' ' + v % 95));
		else if (conv == 'p')
			ok = WITH_STARS((void *)(uintptr_t)(v | 1));
		else if (len <= 2)
			ok = WITH_STARS((int)v);
		else if (len == 3)
			ok = WITH_STARS((long)v);
		else if (len == 4)
			ok = WITH_STARS((long long)v);
		else if (len == 5)
			ok = WITH_STARS((size_t)v);
		else if (len == 6)
			ok = WITH_STARS((ptrdiff_t)v);
		else
			ok = WITH_STARS((intmax_t)v);
#undef WITH_STARS
		if (!ok)
			mismatches++;
	}
}

struct collected {
	char text[1024];
	size_t len;
	int calls;
};

static void collect(void *ctx, const char *s, size_t n)
{
	struct collected *c = ctx;

	if (c->len + n < sizeof(c->text)) {
		memcpy(c->text + c->len, s, n);
		c->len += n;
	}
	c->calls++;
}

static int format_to(struct collected *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	int n = vformat(collect, c, fmt, ap);
	va_end(ap);
	return n;
}

TEST(lib_printf_vformat)
{
	struct collected c = { .len = 0 };

	CHECK(format_to(&c, "a%sb%5dc%%", "xyz", 42) == 12);
	c.text[c.len] = '\0';
	CHECK(c.len == 12 && strcmp(c.text, "axyzb   42c%") == 0);
	/* Padding arrives in runs, not one call per character. */
	c.len = 0;
	c.calls = 0;
	CHECK(format_to(&c, "%300d", 1) == 300);
	CHECK(c.len == 300 && c.calls < 20);
}

TEST(lib_printf_kprintf)
{
	/* kprintf goes to the registered console (stdout here): capture it. */
	char expect[700];
	int n = snprintf(expect, sizeof(expect), "kprintf %s %600d|", "long", -12345);
	fflush(stdout);
	int saved = dup(1);
	FILE *tmp = tmpfile();
	REQUIRE(saved >= 0 && tmp);
	dup2(fileno(tmp), 1);
	int r = kprintf("kprintf %s %600d|", "long", -12345);
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	char got[700] = { 0 };
	rewind(tmp);
	size_t got_n = fread(got, 1, sizeof(got) - 1, tmp);
	fclose(tmp);
	CHECK(r == n);
	CHECK(got_n == (size_t)n && strcmp(got, expect) == 0);
}

/* A console that keeps what it is given and checks that each write comes
 * with its lock held. */
static struct {
	char text[700];
	size_t len;
	int depth, locks, unlocked_writes;
} cap;

static void cap_write(const char *s, size_t n)
{
	cap.unlocked_writes += cap.depth == 0;
	for (size_t i = 0; i < n && cap.len < sizeof(cap.text) - 1; i++)
		cap.text[cap.len++] = s[i];
}

static void cap_lock(void)
{
	cap.depth++;
	cap.locks++;
}

static void cap_unlock(void)
{
	cap.depth--;
}

TEST(lib_console_registered)
{
	static const struct console capture = { cap_write, cap_lock, cap_unlock };
	char expect[700];
	int n = snprintf(expect, sizeof(expect), "to the console %s %400d|", "registered", 7);

	memset(&cap, 0, sizeof(cap));
	const struct console *host = register_console(&capture);
	REQUIRE(host != NULL); /* tests/unit/host_env.c's, from before main */
	int r = kprintf("to the console %s %400d|", "registered", 7);
	/* Nothing registered: the output goes nowhere. */
	const struct console *was = register_console(NULL);
	int dropped = kprintf("nowhere %d", 1);
	register_console(host);
	CHECK(was == &capture);
	CHECK(r == n && cap.len == (size_t)n && memcmp(cap.text, expect, n) == 0);
	CHECK(cap.locks == 1 && cap.depth == 0 && cap.unlocked_writes == 0);
	CHECK(dropped == 9 && cap.len == (size_t)n);
}

TEST(lib_string_mem_random)
{
	static unsigned char a[320], b[320], src[320];

	rng = rng_seeded(0x0123456789abcdefull);
	for (int iter = 0; iter < 4000; iter++) {
		for (size_t i = 0; i < sizeof(src); i++)
			src[i] = rng_next(&rng);
		size_t n = rng_below(&rng, 257), da = rng_below(&rng, 16), sa = rng_below(&rng, 16);

		/* memcpy at every alignment of source and destination. */
		memcpy(a, src, sizeof(a));
		memcpy(b, src, sizeof(b));
		CHECK(sprig_memcpy(a + da, src + sa, n) == a + da);
		memcpy(b + da, src + sa, n);
		CHECK(memcmp(a, b, sizeof(a)) == 0);

		/* memset with values beyond a byte: only the low byte counts. */
		int c = (int)rng_below(&rng, 1024) - 512;
		CHECK(sprig_memset(a + da, c, n) == a + da);
		memset(b + da, c, n);
		CHECK(memcmp(a, b, sizeof(a)) == 0);

		/* memmove in one buffer, overlapping either way. */
		memcpy(a, src, sizeof(a));
		memcpy(b, src, sizeof(b));
		size_t from = rng_below(&rng, 48), to = rng_below(&rng, 48);
		CHECK(sprig_memmove(a + to, a + from, n) == a + to);
		memmove(b + to, b + from, n);
		CHECK(memcmp(a, b, sizeof(a)) == 0);

		/* memcmp: equal prefix, then a difference (or none). */
		memcpy(a, src, sizeof(a));
		memcpy(b, src, sizeof(b));
		if (n && rng_below(&rng, 4))
			b[rng_below(&rng, n)] = rng_next(&rng);
		CHECK(sign(sprig_memcmp(a, b, n)) == sign(memcmp(a, b, n)));
	}
	CHECK(sprig_memcmp("\x80", "\x01", 1) > 0); /* bytes compare unsigned */
	CHECK(sprig_memmove(a, a, 10) == a);
	CHECK(sprig_memcpy(a, src, 0) == a && sprig_memset(a, 0, 0) == a);
}

TEST(lib_string_str_random)
{
	static char a[200], b[200];

	rng = rng_seeded(0xfeedfacecafebeefull);
	for (int iter = 0; iter < 4000; iter++) {
		/* Small alphabet with high-bit bytes, so matches and ties are common. */
		size_t la = rng_below(&rng, 150), lb = rng_below(&rng, 150), off = rng_below(&rng, 16);
		for (size_t i = 0; i < la; i++)
			a[off + i] = "ab\x80\xff"[rng_below(&rng, 4)];
		a[off + la] = '\0';
		for (size_t i = 0; i < lb; i++)
			b[i] = i < la && rng_below(&rng, 8) ? a[off + i] : "ab\x80\xff"[rng_below(&rng, 4)];
		b[lb] = '\0';
		const char *s = a + off;

		CHECK(sprig_strlen(s) == strlen(s));
		size_t max = rng_below(&rng, 160);
		CHECK(sprig_strnlen(s, max) == strnlen(s, max));
		CHECK(sign(sprig_strcmp(s, b)) == sign(strcmp(s, b)));
		size_t n = rng_below(&rng, 160);
		CHECK(sign(sprig_strncmp(s, b, n)) == sign(strncmp(s, b, n)));
		int c = 0;
		if (rng_below(&rng, 3) != 0)
			c = (int)(signed char)"ab\x80\xff"[rng_below(&rng, 4)] +
			    (int)rng_below(&rng, 2) * 256;
		CHECK(sprig_strchr(s, c) == strchr(s, c));
		CHECK(sprig_strrchr(s, c) == strrchr(s, c));
	}
	/* strnlen must not look past max: the buffer below has no terminator. */
	char unterminated[4] = { 'x', 'y', 'z', 'w' };
	CHECK(sprig_strnlen(unterminated, 4) == 4);
	CHECK(sprig_strncmp("abc", "abd", 2) == 0 && sprig_strncmp("abc", "abd", 0) == 0);
}

TEST(lib_parse_u64)
{
	uint64_t v = 7;

	CHECK(parse_u64("0", &v) && v == 0);
	CHECK(parse_u64("1234567890", &v) && v == 1234567890);
	CHECK(parse_u64("010", &v) && v == 10); /* decimal, not octal */
	CHECK(parse_u64("0x1f", &v) && v == 0x1f);
	CHECK(parse_u64("0XABCdef", &v) && v == 0xabcdef);
	CHECK(parse_u64("18446744073709551615", &v) && v == UINT64_MAX);
	CHECK(parse_u64("0xffffffffffffffff", &v) && v == UINT64_MAX);
	v = 7;
	CHECK(!parse_u64("18446744073709551616", &v));
	CHECK(!parse_u64("99999999999999999999", &v));
	CHECK(!parse_u64("0x10000000000000000", &v));
	CHECK(!parse_u64("", &v));
	CHECK(!parse_u64("0x", &v));
	CHECK(!parse_u64("12a", &v));
	CHECK(!parse_u64("-1", &v));
	CHECK(!parse_u64("+1", &v));
	CHECK(!parse_u64(" 1", &v));
	CHECK(!parse_u64("1 ", &v));
	CHECK(!parse_u64("0x1g", &v));
	CHECK(v == 7); /* untouched on failure */
}

TEST(lib_parse_size)
{
	uint64_t v = 7;

	CHECK(parse_size("4096", &v) && v == 4096);
	CHECK(parse_size("512B", &v) && v == 512);
	CHECK(parse_size("4k", &v) && v == 4096);
	CHECK(parse_size("4K", &v) && v == 4096);
	CHECK(parse_size("4KB", &v) && v == 4096);
	CHECK(parse_size("4KiB", &v) && v == 4096);
	CHECK(parse_size("4kib", &v) && v == 4096);
	CHECK(parse_size("2M", &v) && v == 2ull << 20);
	CHECK(parse_size("3g", &v) && v == 3ull << 30);
	CHECK(parse_size("1TiB", &v) && v == 1ull << 40);
	CHECK(parse_size("0x10M", &v) && v == 16ull << 20);
	CHECK(parse_size("0x1B", &v) && v == 0x1b); /* B is a hex digit there */
	CHECK(parse_size("16777215T", &v) && v == 16777215ull << 40);
	v = 7;
	CHECK(!parse_size("16777216T", &v));
	CHECK(!parse_size("17179869184G", &v));
	CHECK(!parse_size("", &v));
	CHECK(!parse_size("K", &v));
	CHECK(!parse_size("4X", &v));
	CHECK(!parse_size("4KK", &v));
	CHECK(!parse_size("4iB", &v));
	CHECK(!parse_size("4KiBx", &v));
	CHECK(!parse_size("4 K", &v));
	CHECK(v == 7);
}

TEST(lib_parse_on_off)
{
	bool on = false;

	CHECK(parse_on_off("on", &on) && on);
	CHECK(parse_on_off("off", &on) && !on);
	on = true;
	CHECK(!parse_on_off("ON", &on) && on);
	CHECK(!parse_on_off("", &on) && !parse_on_off("onn", &on) && !parse_on_off("1", &on) && on);
}

TEST(lib_parse_u64_list)
{
	uint64_t v[4];
	unsigned n = 9;

	CHECK(parse_u64_list("1,2,4", 1, 128, v, 4, &n) && n == 3 && v[0] == 1 && v[1] == 2 &&
	      v[2] == 4);
	CHECK(parse_u64_list("0x10", 1, 128, v, 4, &n) && n == 1 && v[0] == 16);
	CHECK(parse_u64_list("1,2,3,4", 1, 128, v, 4, &n) && n == 4);
	CHECK(!parse_u64_list("1,2,3,4,5", 1, 128, v, 4, &n)); /* more than max_n */
	CHECK(!parse_u64_list("", 1, 128, v, 4, &n));
	CHECK(!parse_u64_list("1,", 1, 128, v, 4, &n));
	CHECK(!parse_u64_list(",1", 1, 128, v, 4, &n));
	CHECK(!parse_u64_list("1,,2", 1, 128, v, 4, &n));
	CHECK(!parse_u64_list("0", 1, 128, v, 4, &n));   /* below min */
	CHECK(!parse_u64_list("129", 1, 128, v, 4, &n)); /* above max */
	CHECK(!parse_u64_list("1,x", 1, 128, v, 4, &n));
	CHECK(!parse_u64_list("123456789012345678901234", 1, ~0ull, v, 4, &n));
}

TEST(lib_parse_split_words)
{
	char line[] = "  vm  create\tname=a   mem=64M ";
	char *argv[4];

	CHECK(split_words(line, argv, 4) == 4);
	CHECK(strcmp(argv[0], "vm") == 0 && strcmp(argv[1], "create") == 0);
	CHECK(strcmp(argv[2], "name=a") == 0 && strcmp(argv[3], "mem=64M") == 0);

	char too_many[] = "a b c d e";
	CHECK(split_words(too_many, argv, 4) == -1);
	char blank[] = " \t ";
	CHECK(split_words(blank, argv, 4) == 0);
	char empty[] = "";
	CHECK(split_words(empty, argv, 0) == 0);
	char one[] = "x";
	CHECK(split_words(one, argv, 0) == -1);

	char opts[] = "vm create name=a mem=64M debug name=b nam=x";
	char *many[8];
	int argc = split_words(opts, many, 8);
	REQUIRE(argc == 7);
	CHECK(strcmp(opt_value(argc, many, "name"), "b") == 0); /* the last one wins */
	CHECK(strcmp(opt_value(argc, many, "mem"), "64M") == 0);
	CHECK(strcmp(opt_value(argc, many, "debug"), "") == 0);
	CHECK(opt_value(argc, many, "na") == NULL);
	CHECK(opt_value(argc, many, "cpus") == NULL);
}

TEST(lib_parse_split_commands)
{
	char s[] = " mem; cpus ;;  vm run a \t; ";
	char *cmds[4];

	CHECK(split_commands(s, cmds, 4) == 3);
	CHECK(strcmp(cmds[0], "mem") == 0 && strcmp(cmds[1], "cpus") == 0);
	CHECK(strcmp(cmds[2], "vm run a") == 0);

	char one[] = "mem";
	CHECK(split_commands(one, cmds, 4) == 1 && strcmp(cmds[0], "mem") == 0);
	char none[] = " ; ;";
	CHECK(split_commands(none, cmds, 4) == 0);
	char many[] = "a;b;c";
	CHECK(split_commands(many, cmds, 2) == -1);
}

TEST(lib_parse_cmdline_get)
{
	char v[32];

	/* What GRUB 2.06 makes of: multiboot2 /boot/sprig.elf run="mem; cpus" leaf_hint=off */
	const char *grub = "\"run=mem; cpus\" leaf_hint=off";
	CHECK(cmdline_get(grub, "run", v, sizeof(v)) == CMDLINE_FOUND && strcmp(v, "mem; cpus") == 0);
	CHECK(cmdline_get(grub, "leaf_hint", v, sizeof(v)) == CMDLINE_FOUND && strcmp(v, "off") == 0);
	CHECK(cmdline_get(grub, "cpus", v, sizeof(v)) == CMDLINE_ABSENT && v[0] == '\0');
	CHECK(cmdline_get(grub, "ru", v, sizeof(v)) == CMDLINE_ABSENT);
	CHECK(cmdline_get(grub, "leaf", v, sizeof(v)) == CMDLINE_ABSENT);

	/* run="echo \"a b\"" arrives with the inner quotes and backslashes escaped. */
	const char *escaped = "\"run=echo \\\"a b\\\" c:\\\\d it\\'s\" x=1";
	CHECK(cmdline_get(escaped, "run", v, sizeof(v)) == CMDLINE_FOUND &&
	      strcmp(v, "echo \"a b\" c:\\d it's") == 0);
	CHECK(cmdline_get(escaped, "x", v, sizeof(v)) == CMDLINE_FOUND && strcmp(v, "1") == 0);

	/* Unquoted forms, a path first (as some loaders pass it), a bare flag. */
	const char *plain = "/boot/sprig.elf run=mem;cpus  debug\tmem=1G";
	CHECK(cmdline_get(plain, "run", v, sizeof(v)) == CMDLINE_FOUND && strcmp(v, "mem;cpus") == 0);
	CHECK(cmdline_get(plain, "debug", v, sizeof(v)) == CMDLINE_FOUND && strcmp(v, "") == 0);
	CHECK(cmdline_get(plain, "mem", v, sizeof(v)) == CMDLINE_FOUND && strcmp(v, "1G") == 0);
	CHECK(cmdline_get("", "run", v, sizeof(v)) == CMDLINE_ABSENT);
	CHECK(cmdline_get("   ", "run", v, sizeof(v)) == CMDLINE_ABSENT);

	/* Quotes in mid-word, an unterminated quote, the last occurrence winning. */
	CHECK(cmdline_get("run=\"a b\"c", "run", v, sizeof(v)) == CMDLINE_FOUND && strcmp(v, "a bc") == 0);
	CHECK(cmdline_get("run=\"a b", "run", v, sizeof(v)) == CMDLINE_FOUND && strcmp(v, "a b") == 0);
	CHECK(cmdline_get("run=a run=b", "run", v, sizeof(v)) == CMDLINE_FOUND && strcmp(v, "b") == 0);
	CHECK(cmdline_get("trail\\", "trail\\", v, sizeof(v)) == CMDLINE_FOUND);

	/* A value that does not fit is reported, not cut. */
	CHECK(cmdline_get("run=0123456789", "run", v, 10) == CMDLINE_TOO_LONG && v[0] == '\0');
	CHECK(cmdline_get("run=012345678", "run", v, 10) == CMDLINE_FOUND && strcmp(v, "012345678") == 0);
	CHECK(cmdline_get("run=x", "run", v, 0) == CMDLINE_TOO_LONG);
}

TEST(lib_parse_cmdline_words)
{
	const char *line = "  \"run=mem; cpus\" leaf_hint=off \"\" a\\ b";
	static const char *const want[] = { "run=mem; cpus", "leaf_hint=off", "", "a b" };
	char word[16];
	size_t full;
	int n = 0;

	for (const char *p = line; (p = cmdline_next_word(p, word, sizeof(word), &full)); n++) {
		REQUIRE(n < 4);
		CHECK(strcmp(word, want[n]) == 0 && full == strlen(want[n]));
	}
	CHECK(n == 4);

	/* A word cut to fit still reports its length. */
	const char *p = cmdline_next_word("abcdefghij k", word, 5, &full);
	CHECK(p && strcmp(word, "abcd") == 0 && full == 10);
	CHECK(cmdline_next_word(p, word, sizeof(word), NULL) && strcmp(word, "k") == 0);
	CHECK(cmdline_next_word(" \t", word, sizeof(word), &full) == NULL);
}

TEST(lib_sort_u64)
{
	uint64_t v[64];

	rng = rng_seeded(7);
	for (size_t n = 0; n <= 64; n++) {
		for (size_t i = 0; i < n; i++)
			v[i] = rng_below(&rng, 16); /* duplicates on purpose */
		uint64_t sum = 0, sorted_sum = 0;
		for (size_t i = 0; i < n; i++)
			sum += v[i];
		sort_u64(v, n);
		for (size_t i = 0; i < n; i++) {
			sorted_sum += v[i];
			if (i)
				CHECK(v[i - 1] <= v[i]);
		}
		CHECK_EQ_U64(sum, sorted_sum);
	}
}

TEST(lib_spread_of)
{
	const uint64_t odd[] = { 9, 1, 5 }, even[] = { 4, 10, 2, 8 };
	struct spread s = spread_of(odd, 3);

	CHECK_EQ_U64(s.median, 5);
	CHECK_EQ_U64(s.min, 1);
	CHECK_EQ_U64(s.max, 9);
	s = spread_of(even, 4);
	CHECK_EQ_U64(s.median, 6); /* the mean of 4 and 8 */
	CHECK_EQ_U64(s.min, 2);
	CHECK_EQ_U64(s.max, 10);
	CHECK_EQ_U64(spread_of(odd, 0).max, 0);
}

/* A guest-supplied base near 2^64 must not wrap past the check (bench zap
 * guest=linux took one before). */
TEST(lib_range_within)
{
	const uint64_t mem = 512ull << 20, win = 32ull << 20;

	CHECK(range_within(0, win, mem));
	CHECK(range_within(mem - win, win, mem));
	CHECK(!range_within(mem - win + 1, win, mem));
	CHECK(!range_within(mem, win, mem));
	CHECK(!range_within(0 - win, win, mem));      /* base + len wraps to 0 */
	CHECK(!range_within(UINT64_MAX, 1, mem));
	CHECK(!range_within(0, mem + 1, mem));
	CHECK(range_within(mem, 0, mem));
	CHECK(!range_within(mem + 1, 0, mem));
}
