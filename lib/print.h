/* Freestanding formatted output. Conversions: %d %i %u %x %X %o %c %s %p %%, with
 * flags '-' '0' ' ' '+', a field width and precision (numbers or '*'), and the
 * length modifiers hh h l ll z t j. kprintf writes to the console registered at
 * boot: the kernel's UART and screen (arch/x86/console.c), a host program's
 * stdout (tests/unit/host_env.c). */
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

/* A console: where kprintf's output goes. lock is held around each kprintf
 * so that the output of several CPUs (or threads) does not interleave within
 * it; the holder may take it again, and write is called with it held. */
struct console {
	void (*write)(const char *s, size_t n);
	void (*lock)(void);
	void (*unlock)(void);
};

/* Send kprintf's output to con from now on (NULL: nowhere); returns the
 * console registered before. Until the first registration, output is
 * dropped: the kernel registers its console before its first line and keeps
 * what comes before the choice of device itself. */
const struct console *register_console(const struct console *con);

/* The registered console's write, lock and unlock; nothing without one. */
void console_write(const char *s, size_t n);
void console_lock(void);
void console_unlock(void);
