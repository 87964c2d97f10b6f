/* COM1 at 115200 8N1, no FIFO interrupts: the shell polls. console_write() is
 * the sink of kprintf, with "\n" sent as "\r\n" for serial terminals.
 *
 * A machine may have no UART at COM1: its ports then float and read 0xFF,
 * which as a line status says "data ready" for ever. sprig checks for one
 * (the scratch register keeps what is written, as Linux's 8250 probe checks)
 * and without one neither reads input nor waits to send. */
#include "arch/x86/uart.h"
#include "arch/x86/cpu.h"
#include "arch/x86/lock.h"
#include "lib/print.h"

#define COM1 0x3f8
#define UART_DATA 0
#define UART_IER 1
#define UART_FCR 2
#define UART_LCR 3
#define UART_MCR 4
#define UART_LSR 5
#define UART_SCR 7
#define LSR_DATA_READY 0x01
#define LSR_THR_EMPTY 0x20
#define LCR_DLAB 0x80
#define LCR_8N1 0x03

/* Polls of the line status before a byte is given up: far longer than a
 * byte takes at 115200 baud (87 us), bounded should the UART stop. */
#define TX_SPINS 1000000u

static struct spinlock uart_lock;
static bool present;

static bool scratch_keeps(uint8_t v)
{
	outb(COM1 + UART_SCR, v);
	return inb(COM1 + UART_SCR) == v;
}

bool uart_init(void)
{
	present = scratch_keeps(0x5a) && scratch_keeps(0xa5) && inb(COM1 + UART_LSR) != 0xff;
	if (!present)
		return false;
	outb(COM1 + UART_IER, 0);
	outb(COM1 + UART_LCR, LCR_DLAB);
	outb(COM1 + UART_DATA, 1); /* divisor 1: 115200 baud */
	outb(COM1 + UART_IER, 0);
	outb(COM1 + UART_LCR, LCR_8N1);
	outb(COM1 + UART_FCR, 0x07); /* enable and clear the FIFOs */
	outb(COM1 + UART_MCR, 0x03); /* DTR, RTS */
	return true;
}

static void uart_tx(char c)
{
	for (uint32_t spins = 0; !(inb(COM1 + UART_LSR) & LSR_THR_EMPTY); spins++) {
		if (spins == TX_SPINS)
			return;
		cpu_relax();
	}
	outb(COM1 + UART_DATA, (uint8_t)c);
}

void uart_putc(char c)
{
	if (!present)
		return;
	if (c == '\n')
		uart_tx('\r');
	uart_tx(c);
}

int uart_getc(void)
{
	if (!present || !(inb(COM1 + UART_LSR) & LSR_DATA_READY))
		return -1;
	return inb(COM1 + UART_DATA);
}

void console_write(const char *s, size_t n)
{
	/* Interrupt handlers print too (exception reports): keep lines whole. */
	uint64_t flags = read_rflags();
	cli();
	spin_lock(&uart_lock);
	for (size_t i = 0; i < n; i++)
		uart_putc(s[i]);
	spin_unlock(&uart_lock);
	if (flags & (1u << 9))
		sti();
}

void console_force_unlock(void)
{
	spin_unlock(&uart_lock);
}
