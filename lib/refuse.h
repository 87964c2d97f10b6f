/* A parser's refusal, as the image loaders give it: the reason into err
 * (unless errlen is 0), and -1 for the caller to return. */
#pragma once
#include <stdarg.h>
#include <stddef.h>
#include "lib/print.h"

static inline int refuse(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static inline int refuse(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (errlen) {
		va_start(ap, fmt);
		kvsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}
