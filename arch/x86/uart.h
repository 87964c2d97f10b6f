/* 16550 UART on COM1: polled transmit, polled receive for the console shell. */
#pragma once
#include <stdbool.h>

/* Sets COM1 up; false when there is no UART there (output is then dropped
 * and no input comes). */
bool uart_init(void);
void uart_putc(char c);
/* The next received byte, or -1 when none is waiting. */
int uart_getc(void);
/* For an exception report: the interrupted code may hold the console lock. */
void console_force_unlock(void);
