/* A small printf straight to COM1: %d %i %u %x %X %p %s %c %%, the l and ll
 * length modifiers, a field width and the '0' and '-' flags. "\n" goes out
 * as "\n" alone, so bare and sprig consoles see the same bytes. */
#include "guests/rt/rt.h"

struct field {
	unsigned int width;
	bool zero_pad;
	bool left;
};

static int emit_padded(const char *s, size_t len, const struct field *f)
{
	size_t pad = f->width > len ? f->width - len : 0;
	size_t i;

	if (!f->left)
		for (i = 0; i < pad; i++)
			putchar_serial(f->zero_pad ? '0' : ' ');
	for (i = 0; i < len; i++)
		putchar_serial(s[i]);
	if (f->left)
		for (i = 0; i < pad; i++)
			putchar_serial(' ');
	return len + pad;
}

static int emit_number(unsigned long long v, bool negative, unsigned int base,
		       bool upper, const struct field *f)
{
	const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
	char buf[24];
	size_t n = sizeof(buf);
	int count = 0;
	struct field rest = *f;

	do {
		buf[--n] = digits[v % base];
		v /= base;
	} while (v);
	if (negative) {
		/* The sign goes before zero padding, and counts in the width. */
		if (f->zero_pad && !f->left) {
			putchar_serial('-');
			count++;
			rest.width = f->width ? f->width - 1 : 0;
		} else {
			buf[--n] = '-';
		}
	}
	return count + emit_padded(buf + n, sizeof(buf) - n, &rest);
}

int vprintf(const char *fmt, va_list ap)
{
	int count = 0;

	for (; *fmt; fmt++) {
		struct field f = { 0 };
		unsigned int longs = 0;
		unsigned long long u;
		long long s;
		const char *str;
		char c;

		if (*fmt != '%') {
			putchar_serial(*fmt);
			count++;
			continue;
		}
		fmt++;
		for (; *fmt == '0' || *fmt == '-'; fmt++) {
			if (*fmt == '0')
				f.zero_pad = true;
			else
				f.left = true;
		}
		for (; *fmt >= '0' && *fmt <= '9'; fmt++)
			f.width = f.width * 10 + (*fmt - '0');
		for (; *fmt == 'l'; fmt++)
			longs++;

		switch (*fmt) {
		case 'd':
		case 'i':
			s = longs == 0 ? va_arg(ap, int) :
			    longs == 1 ? va_arg(ap, long) : va_arg(ap, long long);
			u = s < 0 ? -(unsigned long long)s : (unsigned long long)s;
			count += emit_number(u, s < 0, 10, false, &f);
			break;
		case 'u':
		case 'x':
		case 'X':
			u = longs == 0 ? va_arg(ap, unsigned int) :
			    longs == 1 ? va_arg(ap, unsigned long) :
					 va_arg(ap, unsigned long long);
			count += emit_number(u, false, *fmt == 'u' ? 10 : 16,
					     *fmt == 'X', &f);
			break;
		case 'p':
			putchar_serial('0');
			putchar_serial('x');
			count += 2 + emit_number((uintptr_t)va_arg(ap, void *),
						 false, 16, false, &f);
			break;
		case 's':
			str = va_arg(ap, const char *);
			if (!str)
				str = "(null)";
			for (u = 0; str[u]; u++)
				;
			count += emit_padded(str, u, &f);
			break;
		case 'c':
			c = (char)va_arg(ap, int);
			count += emit_padded(&c, 1, &f);
			break;
		case '%':
			putchar_serial('%');
			count++;
			break;
		case '\0':
			return count;
		default:
			/* Unknown conversions print as written, to be noticed. */
			putchar_serial('%');
			putchar_serial(*fmt);
			count += 2;
			break;
		}
	}
	return count;
}

int printf(const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vprintf(fmt, ap);
	va_end(ap);
	return n;
}
