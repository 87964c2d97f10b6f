/* The 16550A UART (National Semiconductor PC16550D datasheet) as a pure
 * model: registers are function calls, the serial line is what uart16550_write
 * returns and what uart16550_receive takes, the interrupt output is
 * uart16550_irq. No VM, no locking; dev/com1.c wires one to COM1 and IRQ 4.
 * Also built for the host (tests/unit/test_uart16550.c).
 *
 * Registers (offset from the base port; DLAB is LCR bit 7):
 *   0  RBR (read) / THR (write); DLL with DLAB
 *   1  IER, bits 3:0 (the rest read 0); DLM with DLAB
 *   2  IIR (read) / FCR (write), whatever DLAB
 *   3  LCR   4  MCR, bits 4:0   5  LSR   6  MSR   7  SCR
 *
 * Interrupts, highest priority first, each gated by its IER bit:
 *   receiver line status (IIR 0x06): an overrun, until LSR is read;
 *   received data (0x04): the FIFO holds its trigger level (one byte
 *   without FIFOs), until it drops below;
 *   character timeout (0x0C, FIFO mode): data below the trigger level and a
 *   quiet line, until RBR is read empty or more arrives;
 *   THR empty (0x02): set when THR empties or ETBEI is turned on with THR
 *   empty, cleared by writing THR or by an IIR read that reports it;
 *   modem status (0x00): an MSR delta bit, until MSR is read.
 * IIR bits 7:6 read 11 while the FIFOs are on (the 16550A's signature).
 *
 * Choices where an emulated line differs from a wire:
 *   - A byte written to THR leaves at once: THR and the transmitter are
 *     always empty (LSR THRE and TEMT set), the transmit FIFO never holds
 *     anything and FCR's transmit reset has nothing to clear. The divisor
 *     latch and LCR are kept and read back but set no rate.
 *   - The receive side is fed by the integrator, which asks for the room
 *     first (uart16550_rx_room) as a terminal with flow control would; a
 *     byte beyond it is an overrun as on the wire (FIFO mode: the byte is
 *     lost; without FIFOs it replaces the unread one). Only overruns occur:
 *     no parity, framing or break errors, so LSR bit 7 stays 0.
 *   - The character timeout needs no clock: the integrator says when the line
 *     went quiet (uart16550_rx_idle), and from then the four character times
 *     count as passed.
 *   - Outside loopback the modem inputs say a terminal is there and ready
 *     (DCD, DSR, CTS on, RI off) and never change; in loopback they are the
 *     modem outputs (RTS to CTS, DTR to DSR, OUT1 to RI, OUT2 to DCD), so
 *     entering or leaving loopback and MCR writes in it set the delta bits.
 *   - The interrupt output reaches the PC's IRQ line only with MCR OUT2 set
 *     (the PC gates the line with it) and not in loopback, where the OUT2 pin
 *     is forced inactive; IIR reports the interrupt either way.
 * All zero is the power-on state. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include "virt/state_record.h"

#define UART16550_FIFO_BYTES 16

enum uart16550_reg {
	UART_RBR_THR = 0, UART_IER = 1, UART_IIR_FCR = 2, UART_LCR = 3,
	UART_MCR = 4, UART_LSR = 5, UART_MSR = 6, UART_SCR = 7,
};

#define UART_IER_RDA 0x01  /* received data available (and the timeout) */
#define UART_IER_THRE 0x02 /* transmitter holding register empty */
#define UART_IER_RLS 0x04  /* receiver line status */
#define UART_IER_MS 0x08   /* modem status */

#define UART_IIR_NONE 0x01
#define UART_IIR_MS 0x00
#define UART_IIR_THRE 0x02
#define UART_IIR_RDA 0x04
#define UART_IIR_RLS 0x06
#define UART_IIR_TIMEOUT 0x0c
#define UART_IIR_FIFOS 0xc0

#define UART_FCR_ENABLE 0x01
#define UART_FCR_CLEAR_RX 0x02
#define UART_FCR_CLEAR_TX 0x04

#define UART_LCR_DLAB 0x80

#define UART_MCR_DTR 0x01
#define UART_MCR_RTS 0x02
#define UART_MCR_OUT1 0x04
#define UART_MCR_OUT2 0x08
#define UART_MCR_LOOP 0x10

#define UART_LSR_DR 0x01
#define UART_LSR_OE 0x02
#define UART_LSR_THRE 0x20
#define UART_LSR_TEMT 0x40

#define UART_MSR_DCTS 0x01
#define UART_MSR_DDSR 0x02
#define UART_MSR_TERI 0x04
#define UART_MSR_DDCD 0x08
#define UART_MSR_CTS 0x10
#define UART_MSR_DSR 0x20
#define UART_MSR_RI 0x40
#define UART_MSR_DCD 0x80

struct uart16550 {
	uint8_t ier, lcr, mcr, scr, dll, dlm;
	bool fifos;          /* FCR bit 0 */
	uint8_t fcr_trigger; /* FCR bits 7:6 */
	bool overrun;        /* LSR OE, until LSR is read */
	uint8_t msr_deltas;  /* MSR bits 3:0, until MSR is read */
	bool thre_pending;   /* the THR-empty interrupt's condition */
	bool rx_idle;        /* the line is quiet: the character timeout is due */
	uint8_t rx[UART16550_FIFO_BYTES];
	uint8_t rx_head, rx_count; /* rx_count <= UART16550_FIFO_BYTES */
};

/* Register reg (0-7, enum uart16550_reg) read by the guest, with the read's
 * side effects (RBR takes a byte, IIR may clear THRE, LSR and MSR clear). */
uint8_t uart16550_read(struct uart16550 *u, unsigned reg);
/* Register reg written: the byte sent on the line when it was THR outside
 * loopback, else -1. */
int uart16550_write(struct uart16550 *u, unsigned reg, uint8_t val);
/* Bytes the receiver takes now without an overrun: 0 in loopback (the line
 * is disconnected). */
unsigned uart16550_rx_room(const struct uart16550 *u);
/* A byte arrives on the line (ignored in loopback); false when it overran. */
bool uart16550_receive(struct uart16550 *u, uint8_t c);
/* Nothing more arrives for now: received data below the trigger level
 * raises the character timeout. */
void uart16550_rx_idle(struct uart16550 *u);
/* The interrupt as the PC's IRQ line sees it: one is pending and enabled,
 * OUT2 is set and loopback is off. */
bool uart16550_irq(const struct uart16550 *u);

/* The saved state (REC_UART): registers, the receiver and pending interrupts. */
extern const struct record_type uart16550_record;
