/* A 16550 UART at an I/O port, polled: no interrupts, the shell polls.
 * uart_putc sends "\n" as "\r\n" for serial terminals.
 *
 * A port with no UART behind it floats and reads 0xFF, which as a line status
 * says "data ready" for ever; a silent device may also answer some registers.
 * So a port is used only after two checks, as Linux's 8250 probe does: the
 * scratch register keeps what is written, and in loopback mode the modem
 * status inputs follow the modem control outputs (DTR->DSR, RTS->CTS,
 * OUT1->RI, OUT2->DCD). Without a UART sprig neither reads input nor waits to
 * send. */
#include "arch/x86/uart.h"
#include "arch/x86/cpu.h"
#include "arch/x86/lock.h"
#include <stddef.h>

#define UART_DATA 0
#define UART_IER 1
#define UART_DLM 1
#define UART_FCR 2
#define UART_LCR 3
#define UART_MCR 4
#define UART_LSR 5
#define UART_MSR 6
#define UART_SCR 7
#define LSR_DATA_READY 0x01
#define LSR_THR_EMPTY 0x20
#define LCR_DLAB 0x80
#define LCR_8N1 0x03
#define MCR_DTR 0x01
#define MCR_RTS 0x02
#define MCR_OUT1 0x04
#define MCR_OUT2 0x08
#define MCR_LOOP 0x10
#define MSR_CTS 0x10
#define MSR_DSR 0x20
#define MSR_RI 0x40
#define MSR_DCD 0x80
#define MSR_INPUTS 0xf0
#define UART_CLOCK_BAUD 115200u

/* Polls of the line status before a byte is given up: far longer than a
 * byte takes at 115200 baud (87 us), bounded should the UART stop. */
#define TX_SPINS 1000000u

static uint16_t base; /* 0: no UART in use */

static bool scratch_keeps(uint16_t port, uint8_t v)
{
	outb(port + UART_SCR, v);
	return inb(port + UART_SCR) == v;
}

static bool loopback_reflects(uint16_t port, uint8_t outputs, uint8_t inputs)
{
	outb(port + UART_MCR, MCR_LOOP | outputs);
	return (inb(port + UART_MSR) & MSR_INPUTS) == inputs;
}

const char *uart_probe(uint16_t port)
{
	if (!scratch_keeps(port, 0x5a) || !scratch_keeps(port, 0xa5))
		return "scratch register";
	if (inb(port + UART_LSR) == 0xff)
		return "line status 0xff";
	uint8_t mcr = inb(port + UART_MCR);
	bool loops = loopback_reflects(port, MCR_OUT2 | MCR_RTS, MSR_DCD | MSR_CTS) &&
		     loopback_reflects(port, MCR_OUT1 | MCR_DTR, MSR_RI | MSR_DSR);
	outb(port + UART_MCR, mcr);
	return loops ? NULL : "loopback";
}

bool uart_baud_valid(uint32_t baud)
{
	return baud && baud <= UART_CLOCK_BAUD && UART_CLOCK_BAUD % baud == 0;
}

void uart_open(uint16_t port, uint32_t baud)
{
	base = port;
	outb(port + UART_IER, 0);
	if (baud) {
		uint32_t divisor = UART_CLOCK_BAUD / baud;
		outb(port + UART_LCR, LCR_DLAB);
		outb(port + UART_DATA, divisor & 0xff);
		outb(port + UART_DLM, divisor >> 8);
	}
	outb(port + UART_LCR, LCR_8N1);
	outb(port + UART_FCR, 0x07); /* enable and clear the FIFOs */
	outb(port + UART_MCR, MCR_DTR | MCR_RTS);
}

bool uart_in_use(void)
{
	return base != 0;
}

static void uart_tx(char c)
{
	for (uint32_t spins = 0; !(inb(base + UART_LSR) & LSR_THR_EMPTY); spins++) {
		if (spins == TX_SPINS)
			return;
		cpu_relax();
	}
	outb(base + UART_DATA, (uint8_t)c);
}

void uart_putc(char c)
{
	if (!base)
		return;
	if (c == '\n')
		uart_tx('\r');
	uart_tx(c);
}

int uart_getc(void)
{
	if (!base || !(inb(base + UART_LSR) & LSR_DATA_READY))
		return -1;
	return inb(base + UART_DATA);
}
