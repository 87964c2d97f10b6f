/* Formatted output: one formatter (vformat) feeding a sink, with a bounded
 * buffer sink for ksnprintf and a chunked sink for kprintf that writes to the
 * registered console. */
#include "lib/print.h"
#include "lib/string.h"
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

enum {
	FL_LEFT = 1 << 0,  /* '-' */
	FL_ZERO = 1 << 1,  /* '0' */
	FL_SPACE = 1 << 2, /* ' ' */
	FL_PLUS = 1 << 3,  /* '+' */
	FL_ALT = 1 << 4,   /* '#' */
};

enum length { LEN_INT, LEN_CHAR, LEN_SHORT, LEN_LONG, LEN_LLONG, LEN_SIZE, LEN_PTRDIFF, LEN_MAX };

struct out {
	print_sink_fn sink;
	void *ctx;
	int count;
};

static void emit(struct out *o, const char *s, size_t n)
{
	if (n) {
		o->sink(o->ctx, s, n);
		o->count += n;
	}
}

static void emit_repeat(struct out *o, char c, int n)
{
	static const char spaces[] = "                                ";
	static const char zeros[] = "00000000000000000000000000000000";
	const char *run = c == '0' ? zeros : spaces;

	while (n > 0) {
		int k = n < (int)sizeof(spaces) - 1 ? n : (int)sizeof(spaces) - 1;
		emit(o, run, k);
		n -= k;
	}
}

struct spec {
	unsigned flags;
	int width;     /* 0 when absent */
	int precision; /* -1 when absent */
};

/* Field layout: [spaces][prefix][zeros][body][spaces]. */
static void emit_field(struct out *o, const struct spec *sp, const char *prefix, size_t prefix_len,
		       int zeros, const char *body, size_t body_len)
{
	int pad = sp->width - (int)(prefix_len + body_len) - zeros;

	if (pad < 0)
		pad = 0;
	if (!(sp->flags & FL_LEFT) && !(sp->flags & FL_ZERO))
		emit_repeat(o, ' ', pad);
	emit(o, prefix, prefix_len);
	if (!(sp->flags & FL_LEFT) && (sp->flags & FL_ZERO))
		emit_repeat(o, '0', pad);
	emit_repeat(o, '0', zeros);
	emit(o, body, body_len);
	if (sp->flags & FL_LEFT)
		emit_repeat(o, ' ', pad);
}

static void emit_number(struct out *o, struct spec sp, uint64_t v, bool negative, char conv)
{
	char digits[24]; /* 22 octal digits cover 64 bits */
	char prefix[2];
	size_t prefix_len = 0;
	unsigned base = conv == 'o' ? 8 : (conv == 'x' || conv == 'X' || conv == 'p') ? 16 : 10;
	const char *symbols = conv == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
	int n = 0;

	for (uint64_t x = v; x; x /= base)
		digits[sizeof(digits) - ++n] = symbols[x % base];
	/* Without a precision a zero still shows one digit; "%.0d" of 0 shows none. */
	if (sp.precision < 0 && n == 0)
		digits[sizeof(digits) - ++n] = '0';

	if (negative)
		prefix[prefix_len++] = '-';
	else if (sp.flags & FL_PLUS)
		prefix[prefix_len++] = '+';
	else if (sp.flags & FL_SPACE)
		prefix[prefix_len++] = ' ';
	if (base == 16 && (sp.flags & FL_ALT) && v) {
		prefix[prefix_len++] = '0';
		prefix[prefix_len++] = conv == 'X' ? 'X' : 'x';
	}

	int zeros = sp.precision > n ? sp.precision - n : 0;
	/* '#' with 'o' makes the first digit a 0. */
	if (base == 8 && (sp.flags & FL_ALT) && zeros == 0 && (n == 0 || digits[sizeof(digits) - n] != '0'))
		zeros = 1;
	if (sp.precision >= 0)
		sp.flags &= ~FL_ZERO;
	emit_field(o, &sp, prefix, prefix_len, zeros, digits + sizeof(digits) - n, n);
}

static int parse_decimal(const char **fmt)
{
	int v = 0;

	while (**fmt >= '0' && **fmt <= '9') {
		if (v < 100000000) /* beyond any sane width; keeps v from overflowing */
			v = v * 10 + (**fmt - '0');
		(*fmt)++;
	}
	return v;
}

int vformat(print_sink_fn sink, void *ctx, const char *fmt, va_list ap)
{
	struct out o = { sink, ctx, 0 };

	while (*fmt) {
		const char *start = fmt;

		while (*fmt && *fmt != '%')
			fmt++;
		emit(&o, start, fmt - start);
		if (!*fmt)
			break;
		start = fmt++; /* at the '%', for echoing an unknown conversion */

		struct spec sp = { 0, 0, -1 };
		for (;; fmt++) {
			if (*fmt == '-')
				sp.flags |= FL_LEFT;
			else if (*fmt == '0')
				sp.flags |= FL_ZERO;
			else if (*fmt == ' ')
				sp.flags |= FL_SPACE;
			else if (*fmt == '+')
				sp.flags |= FL_PLUS;
			else if (*fmt == '#')
				sp.flags |= FL_ALT;
			else
				break;
		}
		if (*fmt == '*') {
			fmt++;
			sp.width = va_arg(ap, int);
			if (sp.width < 0) {
				sp.flags |= FL_LEFT;
				sp.width = sp.width == INT_MIN ? 0 : -sp.width;
			}
		} else {
			sp.width = parse_decimal(&fmt);
		}
		if (*fmt == '.') {
			fmt++;
			if (*fmt == '*') {
				fmt++;
				sp.precision = va_arg(ap, int);
				if (sp.precision < 0)
					sp.precision = -1;
			} else {
				sp.precision = parse_decimal(&fmt);
			}
		}

		enum length len = LEN_INT;
		switch (*fmt) {
		case 'h':
			len = LEN_SHORT;
			if (*++fmt == 'h') {
				len = LEN_CHAR;
				fmt++;
			}
			break;
		case 'l':
			len = LEN_LONG;
			if (*++fmt == 'l') {
				len = LEN_LLONG;
				fmt++;
			}
			break;
		case 'z':
			len = LEN_SIZE;
			fmt++;
			break;
		case 't':
			len = LEN_PTRDIFF;
			fmt++;
			break;
		case 'j':
			len = LEN_MAX;
			fmt++;
			break;
		}

		char conv = *fmt;
		if (conv)
			fmt++;
		switch (conv) {
		case 'd':
		case 'i': {
			int64_t v;
			switch (len) {
			case LEN_CHAR: v = (signed char)va_arg(ap, int); break;
			case LEN_SHORT: v = (short)va_arg(ap, int); break;
			case LEN_LONG: v = va_arg(ap, long); break;
			case LEN_LLONG: v = va_arg(ap, long long); break;
			case LEN_SIZE: v = (int64_t)va_arg(ap, size_t); break;
			case LEN_PTRDIFF: v = va_arg(ap, ptrdiff_t); break;
			case LEN_MAX: v = va_arg(ap, intmax_t); break;
			default: v = va_arg(ap, int); break;
			}
			/* Negate in unsigned arithmetic: INT64_MIN has no positive twin. */
			uint64_t mag = v < 0 ? -(uint64_t)v : (uint64_t)v;
			sp.flags &= ~FL_ALT;
			emit_number(&o, sp, mag, v < 0, conv);
			break;
		}
		case 'u':
		case 'x':
		case 'X':
		case 'o': {
			uint64_t v;
			switch (len) {
			case LEN_CHAR: v = (unsigned char)va_arg(ap, unsigned); break;
			case LEN_SHORT: v = (unsigned short)va_arg(ap, unsigned); break;
			case LEN_LONG: v = va_arg(ap, unsigned long); break;
			case LEN_LLONG: v = va_arg(ap, unsigned long long); break;
			case LEN_SIZE: v = va_arg(ap, size_t); break;
			case LEN_PTRDIFF: v = (uint64_t)va_arg(ap, ptrdiff_t); break;
			case LEN_MAX: v = va_arg(ap, uintmax_t); break;
			default: v = va_arg(ap, unsigned); break;
			}
			/* Signs are for signed conversions only. */
			sp.flags &= ~(FL_PLUS | FL_SPACE);
			emit_number(&o, sp, v, false, conv);
			break;
		}
		case 'p': {
			uintptr_t v = (uintptr_t)va_arg(ap, void *);
			sp.flags &= ~(FL_PLUS | FL_SPACE);
			sp.flags |= FL_ALT;
			/* Unlike '#x', a null pointer still reads as 0x0. */
			if (!v) {
				sp.flags &= ~FL_ZERO;
				sp.precision = -1;
				emit_field(&o, &sp, "0x", 2, 0, "0", 1);
			} else {
				emit_number(&o, sp, v, false, 'p');
			}
			break;
		}
		case 'c': {
			char c = (char)va_arg(ap, int);
			sp.flags &= ~FL_ZERO;
			emit_field(&o, &sp, NULL, 0, 0, &c, 1);
			break;
		}
		case 's': {
			const char *s = va_arg(ap, const char *);
			if (!s)
				s = "(null)";
			size_t n = sp.precision >= 0 ? strnlen(s, sp.precision) : strlen(s);
			sp.flags &= ~FL_ZERO;
			emit_field(&o, &sp, NULL, 0, 0, s, n);
			break;
		}
		case '%':
			emit(&o, "%", 1);
			break;
		default:
			/* Unknown or truncated conversion: show it as written. */
			emit(&o, start, fmt - start);
			break;
		}
	}
	return o.count;
}

struct buf_sink {
	char *buf;
	size_t size; /* room including the terminating NUL */
	size_t used;
};

static void buf_write(void *ctx, const char *s, size_t n)
{
	struct buf_sink *b = ctx;

	if (b->used + 1 < b->size) {
		size_t room = b->size - 1 - b->used;
		memcpy(b->buf + b->used, s, n < room ? n : room);
	}
	b->used += n;
}

int kvsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
	struct buf_sink b = { buf, size, 0 };
	int n = vformat(buf_write, &b, fmt, ap);

	if (size)
		buf[b.used < size ? b.used : size - 1] = '\0';
	return n;
}

int ksnprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	int n = kvsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n;
}

static const struct console *console;

const struct console *register_console(const struct console *con)
{
	const struct console *old = console;

	console = con;
	return old;
}

void console_write(const char *s, size_t n)
{
	if (console)
		console->write(s, n);
}

void console_lock(void)
{
	if (console)
		console->lock();
}

void console_unlock(void)
{
	if (console)
		console->unlock();
}

/* kprintf batches output so the console sees a few long writes, not one per
 * field, without needing the heap; it holds the console lock across them. */
struct console_sink {
	char buf[128];
	size_t used;
};

static void console_sink_write(void *ctx, const char *s, size_t n)
{
	struct console_sink *c = ctx;

	while (n) {
		if (c->used == sizeof(c->buf)) {
			console_write(c->buf, c->used);
			c->used = 0;
		}
		size_t k = sizeof(c->buf) - c->used;
		if (k > n)
			k = n;
		memcpy(c->buf + c->used, s, k);
		c->used += k;
		s += k;
		n -= k;
	}
}

int kvprintf(const char *fmt, va_list ap)
{
	struct console_sink c;

	c.used = 0;
	console_lock();
	int n = vformat(console_sink_write, &c, fmt, ap);
	if (c.used)
		console_write(c.buf, c.used);
	console_unlock();
	return n;
}

int kprintf(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	int n = kvprintf(fmt, ap);
	va_end(ap);
	return n;
}
