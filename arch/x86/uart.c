/* COM1 at 115200 8N1, no FIFO interrupts: the shell polls. console_write() is
 * the sink of kprintf, with "\n" sent as "\r\n" for serial terminals.
 *
 * Every CPU prints: the console lock keeps a kprintf's output whole. A CPU
 * may take it again while it holds it (kprintf's writes, an interrupt
 * handler's report), and holds it with interrupts off.
 *
 * A machine may have no UART at COM1: its ports then float and read 0xFF,
 * which as a line status says "data ready" for ever. sprig checks for one
 * (the scratch register keeps what is written, as Linux's 8250 probe checks)
 * and without one neither reads input nor waits to send. */
#include "arch/x86/uart.h"
#include "arch/x86/cpu.h"
#include "arch/x86/lock.h"
#include "arch/x86/percpu.h"
#include "arch/x86/regs.h"
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
/* How long an exception report waits for another CPU's line to end: longer
 * than a 128-byte line takes at 115200 baud (11 ms). */
#define REPORT_WAIT_SPINS 10000000u
#define NO_OWNER (-1)

static struct spinlock console;
static int console_owner = NO_OWNER; /* the CPU that holds the lock */
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

void console_lock(void)
{
	struct percpu *pc = this_cpu();
	uint64_t flags = read_rflags();

	cli();
	if (pc->console_depth++)
		return;
	pc->console_flags = flags;
	spin_lock(&console);
	__atomic_store_n(&console_owner, (int)pc->id, __ATOMIC_RELAXED);
}

void console_unlock(void)
{
	struct percpu *pc = this_cpu();

	if (--pc->console_depth)
		return;
	/* A report may have taken the lock from this CPU: then it is not ours
	 * to release. */
	if (__atomic_load_n(&console_owner, __ATOMIC_RELAXED) == (int)pc->id) {
		__atomic_store_n(&console_owner, NO_OWNER, __ATOMIC_RELAXED);
		spin_unlock(&console);
	}
	if (pc->console_flags & RFLAGS_IF)
		sti();
}

void console_write(const char *s, size_t n)
{
	console_lock();
	for (size_t i = 0; i < n; i++)
		uart_putc(s[i]);
	console_unlock();
}

void console_lock_for_report(void)
{
	struct percpu *pc = this_cpu();

	cli();
	if (__atomic_load_n(&console_owner, __ATOMIC_RELAXED) != (int)pc->id) {
		uint32_t spins = 0;

		while (!spin_trylock(&console) && ++spins < REPORT_WAIT_SPINS)
			cpu_relax();
		__atomic_store_n(&console_owner, (int)pc->id, __ATOMIC_RELAXED);
	}
	pc->console_depth = 1;
	pc->console_flags = 0;
}

void console_unlock_after_report(void)
{
	this_cpu()->console_depth = 0;
	__atomic_store_n(&console_owner, NO_OWNER, __ATOMIC_RELAXED);
	spin_unlock(&console);
}
