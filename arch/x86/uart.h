/* 16550 UART at an I/O port: polled transmit, polled receive for the console
 * shell. One UART at a time is the console's. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#define COM1_PORT 0x3f8
#define COM2_PORT 0x2f8

/* Whether a UART answers at port: NULL if it does, else the check it failed
 * ("scratch register", "line status 0xff", "loopback"). Leaves it as found. */
const char *uart_probe(uint16_t port);
/* A rate the UART's 115200-baud clock divides into. */
bool uart_baud_valid(uint32_t baud);
/* Use the UART at port (probed first) at baud, 8N1; baud 0 keeps the divisor
 * the firmware set. */
void uart_open(uint16_t port, uint32_t baud);
/* Whether a UART was opened: without one output is dropped and no input comes. */
bool uart_in_use(void);
void uart_putc(char c);
/* The next received byte, or -1 when none is waiting. */
int uart_getc(void);
