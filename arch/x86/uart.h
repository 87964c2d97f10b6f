/* 16550 UART on COM1: polled transmit, polled receive for the console shell. */
#pragma once
#include <stdbool.h>

/* Sets COM1 up; false when there is no UART there (output is then dropped
 * and no input comes). */
bool uart_init(void);
void uart_putc(char c);
/* The next received byte, or -1 when none is waiting. */
int uart_getc(void);
/* An exception report takes the console whoever holds it: this CPU's
 * interrupted code, or another CPU that does not let go within a moment; and
 * gives it up whole afterwards, since the interrupted holder never resumes. */
void console_lock_for_report(void);
void console_unlock_after_report(void);
