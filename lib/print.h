/* Freestanding formatted output. Conversions: %d %i %u %x %X %o %c %s %p %%, with
 * flags '-' '0' ' ' '+', a field width and precision (numbers or '*'), and the
 * length modifiers hh h l ll z t j. The console sink is console_write(), which the
 * kernel implements on its UART and the host test programs on stdout. */
#pragma once
#include <stdarg.h>
#include <stddef.h>

/* Sink for formatted output: called with runs of characters. */
typedef void (*print_sink_fn)(void *ctx, const char *s, size_t n);

/* Returns the number of characters produced. */
int vformat(print_sink_fn sink, void *ctx, const char *fmt, va_list ap);

/* As C99 snprintf: always NUL-terminates when size > 0; returns the full length. */
int ksnprintf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int kvsnprintf(char *buf, size_t size, const char *fmt, va_list ap);

int kprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int kvprintf(const char *fmt, va_list ap);

/* Provided by the environment (kernel console or host test program). */
void console_write(const char *s, size_t n);
/* Held around each kprintf so that the output of several CPUs (or threads)
 * does not interleave within it; the holder may take it again, and
 * console_write takes it too. */
void console_lock(void);
void console_unlock(void);
