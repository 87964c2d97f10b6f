/* dev/uart16550.c: the 16550A model register by register, its FIFO and
 * trigger levels, the interrupt priorities, loopback and the IRQ line, and
 * the probe Linux's 8250 driver runs (drivers/tty/serial/8250/8250_port.c,
 * autoconfig). */
#include "check.h"
#include "dev/uart16550.h"
#include <string.h>

static void power_on(struct uart16550 *u)
{
	memset(u, 0, sizeof(*u));
}

static uint8_t iir_id(struct uart16550 *u)
{
	return uart16550_read(u, UART_IIR_FCR) & 0x0f;
}

TEST(uart_power_on)
{
	struct uart16550 u;

	power_on(&u);
	CHECK_EQ_U64(uart16550_read(&u, UART_IER), 0);
	CHECK_EQ_U64(uart16550_read(&u, UART_IIR_FCR), UART_IIR_NONE);
	CHECK_EQ_U64(uart16550_read(&u, UART_LCR), 0);
	CHECK_EQ_U64(uart16550_read(&u, UART_MCR), 0);
	CHECK_EQ_U64(uart16550_read(&u, UART_LSR), UART_LSR_THRE | UART_LSR_TEMT);
	CHECK_EQ_U64(uart16550_read(&u, UART_MSR), UART_MSR_DCD | UART_MSR_DSR | UART_MSR_CTS);
	CHECK(!uart16550_irq(&u));
}

TEST(uart_registers_and_divisor_latch)
{
	struct uart16550 u;

	power_on(&u);
	uart16550_write(&u, UART_SCR, 0xa5);
	CHECK_EQ_U64(uart16550_read(&u, UART_SCR), 0xa5);
	/* IER keeps its four bits; the upper ones read 0. */
	uart16550_write(&u, UART_IER, 0xff);
	CHECK_EQ_U64(uart16550_read(&u, UART_IER), 0x0f);
	uart16550_write(&u, UART_IER, 0);
	uart16550_write(&u, UART_MCR, 0xff);
	CHECK_EQ_U64(uart16550_read(&u, UART_MCR), 0x1f);
	uart16550_write(&u, UART_MCR, 0);
	/* Through loopback and out, RI fell: its trailing edge, read once. */
	CHECK_EQ_U64(uart16550_read(&u, UART_MSR), 0xb0 | UART_MSR_TERI);
	/* DLAB: offsets 0 and 1 are the divisor latch, not THR and IER. */
	uart16550_write(&u, UART_LCR, UART_LCR_DLAB | 0x03);
	CHECK_EQ_U64(uart16550_write(&u, UART_RBR_THR, 0x01), -1);
	uart16550_write(&u, UART_IER, 0x02);
	CHECK_EQ_U64(uart16550_read(&u, UART_RBR_THR), 0x01);
	CHECK_EQ_U64(uart16550_read(&u, UART_IER), 0x02);
	CHECK_EQ_U64(uart16550_read(&u, UART_LCR), 0x83);
	uart16550_write(&u, UART_LCR, 0x03);
	CHECK_EQ_U64(uart16550_read(&u, UART_IER), 0); /* IER untouched by the DLM write */
	CHECK_EQ_U64(uart16550_write(&u, UART_RBR_THR, 'x'), 'x');
	uart16550_write(&u, UART_LCR, UART_LCR_DLAB);
	CHECK_EQ_U64(uart16550_read(&u, UART_RBR_THR), 0x01); /* the byte sent did not land in DLL */
	/* LSR and MSR writes change nothing. */
	uart16550_write(&u, UART_LCR, 0);
	uart16550_write(&u, UART_LSR, 0);
	uart16550_write(&u, UART_MSR, 0);
	CHECK_EQ_U64(uart16550_read(&u, UART_LSR), UART_LSR_THRE | UART_LSR_TEMT);
	CHECK_EQ_U64(uart16550_read(&u, UART_MSR), 0xb0);
}

TEST(uart_receive_without_fifos)
{
	struct uart16550 u;

	power_on(&u);
	CHECK_EQ_U64(uart16550_rx_room(&u), 1);
	CHECK(uart16550_receive(&u, 'a'));
	CHECK_EQ_U64(uart16550_rx_room(&u), 0);
	CHECK_EQ_U64(uart16550_read(&u, UART_LSR) & UART_LSR_DR, UART_LSR_DR);
	/* A second byte before the first is read replaces it: an overrun. */
	CHECK(!uart16550_receive(&u, 'b'));
	CHECK_EQ_U64(uart16550_read(&u, UART_LSR), UART_LSR_DR | UART_LSR_OE | 0x60);
	CHECK_EQ_U64(uart16550_read(&u, UART_LSR), UART_LSR_DR | 0x60); /* OE clears on read */
	CHECK_EQ_U64(uart16550_read(&u, UART_RBR_THR), 'b');
	CHECK_EQ_U64(uart16550_read(&u, UART_LSR), 0x60);
	/* No FIFOs: IIR bits 7:6 read 0, data interrupts at one byte. */
	uart16550_write(&u, UART_IER, UART_IER_RDA);
	CHECK_EQ_U64(uart16550_read(&u, UART_IIR_FCR), UART_IIR_NONE);
	uart16550_receive(&u, 'c');
	uart16550_rx_idle(&u);
	CHECK_EQ_U64(uart16550_read(&u, UART_IIR_FCR), UART_IIR_RDA); /* no timeout without FIFOs */
}

TEST(uart_fifo_and_trigger_levels)
{
	static const uint8_t levels[4] = { 1, 4, 8, 14 };
	struct uart16550 u;

	for (unsigned t = 0; t < 4; t++) {
		power_on(&u);
		uart16550_write(&u, UART_IIR_FCR, (uint8_t)(t << 6) | UART_FCR_ENABLE);
		uart16550_write(&u, UART_IER, UART_IER_RDA);
		CHECK_EQ_U64(uart16550_read(&u, UART_IIR_FCR), UART_IIR_FIFOS | UART_IIR_NONE);
		for (unsigned i = 0; i + 1 < levels[t]; i++)
			uart16550_receive(&u, (uint8_t)('a' + i));
		/* Below the trigger and the line still busy: nothing yet. */
		CHECK_EQ_U64(iir_id(&u), UART_IIR_NONE);
		uart16550_receive(&u, 'z');
		CHECK_EQ_U64(iir_id(&u), UART_IIR_RDA);
		/* Reading one byte drops below the trigger again. */
		uart16550_read(&u, UART_RBR_THR);
		CHECK_EQ_U64(iir_id(&u), UART_IIR_NONE);
	}
	/* Sixteen bytes, in order; the seventeenth overruns and is lost. */
	power_on(&u);
	uart16550_write(&u, UART_IIR_FCR, UART_FCR_ENABLE);
	CHECK_EQ_U64(uart16550_rx_room(&u), UART16550_FIFO_BYTES);
	for (unsigned i = 0; i < UART16550_FIFO_BYTES; i++)
		CHECK(uart16550_receive(&u, (uint8_t)i));
	CHECK_EQ_U64(uart16550_rx_room(&u), 0);
	CHECK(!uart16550_receive(&u, 0xee));
	CHECK_EQ_U64(uart16550_read(&u, UART_LSR), UART_LSR_DR | UART_LSR_OE | 0x60);
	for (unsigned i = 0; i < UART16550_FIFO_BYTES; i++)
		CHECK_EQ_U64(uart16550_read(&u, UART_RBR_THR), i);
	CHECK_EQ_U64(uart16550_read(&u, UART_LSR), 0x60);
	/* FCR bit 1 empties the receiver; bits other than 0 need bit 0. */
	uart16550_receive(&u, 1);
	uart16550_write(&u, UART_IIR_FCR, UART_FCR_ENABLE | UART_FCR_CLEAR_RX | UART_FCR_CLEAR_TX);
	CHECK_EQ_U64(uart16550_read(&u, UART_LSR) & UART_LSR_DR, 0);
	uart16550_receive(&u, 1);
	uart16550_write(&u, UART_IIR_FCR, 0); /* FIFOs off: emptied, IIR bits 7:6 clear */
	CHECK_EQ_U64(uart16550_read(&u, UART_LSR) & UART_LSR_DR, 0);
	CHECK_EQ_U64(uart16550_read(&u, UART_IIR_FCR), UART_IIR_NONE);
	CHECK_EQ_U64(uart16550_rx_room(&u), 1);
	uart16550_write(&u, UART_IIR_FCR, UART_FCR_ENABLE | 0xc0);
	uart16550_receive(&u, 1);
	uart16550_write(&u, UART_IIR_FCR, UART_FCR_ENABLE); /* no change of bit 0: kept */
	CHECK_EQ_U64(uart16550_read(&u, UART_LSR) & UART_LSR_DR, UART_LSR_DR);
}

TEST(uart_character_timeout)
{
	struct uart16550 u;

	power_on(&u);
	uart16550_write(&u, UART_IIR_FCR, UART_FCR_ENABLE | 0x80); /* trigger 8 */
	uart16550_write(&u, UART_IER, UART_IER_RDA);
	uart16550_receive(&u, 'a');
	uart16550_receive(&u, 'b');
	CHECK_EQ_U64(iir_id(&u), UART_IIR_NONE);
	uart16550_rx_idle(&u);
	CHECK_EQ_U64(uart16550_read(&u, UART_IIR_FCR), UART_IIR_FIFOS | UART_IIR_TIMEOUT);
	/* Reading IIR does not clear it; reading the data empty does. */
	CHECK_EQ_U64(iir_id(&u), UART_IIR_TIMEOUT);
	uart16550_read(&u, UART_RBR_THR);
	CHECK_EQ_U64(iir_id(&u), UART_IIR_TIMEOUT);
	uart16550_read(&u, UART_RBR_THR);
	CHECK_EQ_U64(iir_id(&u), UART_IIR_NONE);
	/* A new byte restarts the wait. */
	uart16550_receive(&u, 'c');
	CHECK_EQ_U64(iir_id(&u), UART_IIR_NONE);
	/* Without ERBFI neither data nor timeout interrupts. */
	uart16550_rx_idle(&u);
	uart16550_write(&u, UART_IER, 0);
	CHECK_EQ_U64(iir_id(&u), UART_IIR_NONE);
}

TEST(uart_thre_interrupt)
{
	struct uart16550 u;

	power_on(&u);
	/* Turning ETBEI on with THR empty interrupts at once ... */
	uart16550_write(&u, UART_IER, UART_IER_THRE);
	CHECK_EQ_U64(iir_id(&u), UART_IIR_THRE);
	/* ... the IIR read that reported it cleared it ... */
	CHECK_EQ_U64(iir_id(&u), UART_IIR_NONE);
	/* ... writing IER again with ETBEI still on does not bring it back,
	 * turning it off and on does (Linux's UART_BUG_THRE test). */
	uart16550_write(&u, UART_IER, UART_IER_THRE);
	CHECK_EQ_U64(iir_id(&u), UART_IIR_NONE);
	uart16550_write(&u, UART_IER, 0);
	uart16550_write(&u, UART_IER, UART_IER_THRE);
	CHECK_EQ_U64(iir_id(&u), UART_IIR_THRE);
	/* A byte sent leaves THR empty again: the interrupt again. */
	CHECK_EQ_U64(uart16550_write(&u, UART_RBR_THR, 'q'), 'q');
	CHECK_EQ_U64(iir_id(&u), UART_IIR_THRE);
	/* Pending but disabled: not reported, and it stays for later. */
	uart16550_write(&u, UART_RBR_THR, 'r');
	uart16550_write(&u, UART_IER, 0);
	CHECK_EQ_U64(iir_id(&u), UART_IIR_NONE);
	uart16550_write(&u, UART_IER, UART_IER_MS);
	CHECK_EQ_U64(iir_id(&u), UART_IIR_NONE);
}

TEST(uart_interrupt_priorities)
{
	struct uart16550 u;

	power_on(&u);
	uart16550_write(&u, UART_IIR_FCR, UART_FCR_ENABLE); /* trigger 1 */
	uart16550_write(&u, UART_IER, 0x0f);
	/* All four at once: THRE (IER just enabled), a modem delta (loopback
	 * on and off), data, an overrun. */
	uart16550_write(&u, UART_MCR, UART_MCR_LOOP);
	uart16550_write(&u, UART_MCR, 0);
	for (unsigned i = 0; i <= UART16550_FIFO_BYTES; i++)
		uart16550_receive(&u, (uint8_t)i);
	CHECK_EQ_U64(iir_id(&u), UART_IIR_RLS);
	CHECK_EQ_U64(iir_id(&u), UART_IIR_RLS); /* IIR does not clear it: LSR does */
	uart16550_read(&u, UART_LSR);
	CHECK_EQ_U64(iir_id(&u), UART_IIR_RDA);
	while (uart16550_read(&u, UART_LSR) & UART_LSR_DR)
		uart16550_read(&u, UART_RBR_THR);
	CHECK_EQ_U64(iir_id(&u), UART_IIR_THRE); /* reported, so cleared */
	CHECK_EQ_U64(iir_id(&u), UART_IIR_MS);
	CHECK_EQ_U64(uart16550_read(&u, UART_MSR) & 0x0f, UART_MSR_DCTS | UART_MSR_DDSR | UART_MSR_DDCD);
	CHECK_EQ_U64(iir_id(&u), UART_IIR_NONE);
	/* RLS only with ELSI: an overrun without it interrupts for the data. */
	uart16550_write(&u, UART_IER, UART_IER_RDA);
	for (unsigned i = 0; i <= UART16550_FIFO_BYTES; i++)
		uart16550_receive(&u, (uint8_t)i);
	CHECK_EQ_U64(iir_id(&u), UART_IIR_RDA);
}

TEST(uart_loopback)
{
	struct uart16550 u;

	power_on(&u);
	uart16550_write(&u, UART_IIR_FCR, UART_FCR_ENABLE);
	/* The outputs come back as the inputs: RTS->CTS, DTR->DSR, OUT1->RI,
	 * OUT2->DCD. Entering loopback drops DCD, DSR and CTS: deltas. */
	uart16550_write(&u, UART_MCR, UART_MCR_LOOP);
	CHECK_EQ_U64(uart16550_read(&u, UART_MSR), UART_MSR_DCTS | UART_MSR_DDSR | UART_MSR_DDCD);
	uart16550_write(&u, UART_MCR, UART_MCR_LOOP | UART_MCR_RTS);
	CHECK_EQ_U64(uart16550_read(&u, UART_MSR), UART_MSR_CTS | UART_MSR_DCTS);
	uart16550_write(&u, UART_MCR, UART_MCR_LOOP | UART_MCR_DTR);
	CHECK_EQ_U64(uart16550_read(&u, UART_MSR), UART_MSR_DSR | UART_MSR_DCTS | UART_MSR_DDSR);
	uart16550_write(&u, UART_MCR, UART_MCR_LOOP | UART_MCR_OUT1);
	CHECK_EQ_U64(uart16550_read(&u, UART_MSR), UART_MSR_RI | UART_MSR_DDSR);
	/* RI going off is the trailing edge: TERI. */
	uart16550_write(&u, UART_MCR, UART_MCR_LOOP | UART_MCR_OUT2);
	CHECK_EQ_U64(uart16550_read(&u, UART_MSR), UART_MSR_DCD | UART_MSR_TERI | UART_MSR_DDCD);
	/* Sent bytes come back to the receiver, not out; the line is cut. */
	CHECK_EQ_U64(uart16550_write(&u, UART_RBR_THR, 0x5a), -1);
	CHECK_EQ_U64(uart16550_rx_room(&u), 0);
	CHECK(!uart16550_receive(&u, 'x'));
	CHECK_EQ_U64(uart16550_read(&u, UART_LSR) & UART_LSR_DR, UART_LSR_DR);
	CHECK_EQ_U64(uart16550_read(&u, UART_RBR_THR), 0x5a);
	CHECK_EQ_U64(uart16550_read(&u, UART_LSR) & UART_LSR_DR, 0);
	/* Interrupts are reported in IIR but never reach the IRQ line. */
	uart16550_write(&u, UART_IER, UART_IER_RDA);
	uart16550_write(&u, UART_RBR_THR, 0x11);
	CHECK_EQ_U64(iir_id(&u), UART_IIR_RDA);
	CHECK(!uart16550_irq(&u));
	uart16550_write(&u, UART_MCR, UART_MCR_OUT2);
	CHECK(uart16550_irq(&u));
}

TEST(uart_irq_line)
{
	struct uart16550 u;

	power_on(&u);
	uart16550_write(&u, UART_IER, UART_IER_RDA);
	uart16550_receive(&u, 'k');
	/* Pending, but OUT2 off: a PC's IRQ line stays low. */
	CHECK_EQ_U64(iir_id(&u), UART_IIR_RDA);
	CHECK(!uart16550_irq(&u));
	uart16550_write(&u, UART_MCR, UART_MCR_OUT2 | UART_MCR_RTS | UART_MCR_DTR);
	CHECK(uart16550_irq(&u));
	uart16550_read(&u, UART_RBR_THR);
	CHECK(!uart16550_irq(&u));
	/* THRE: high until the IIR read that reports it. */
	uart16550_write(&u, UART_IER, UART_IER_RDA | UART_IER_THRE);
	CHECK(uart16550_irq(&u));
	CHECK_EQ_U64(iir_id(&u), UART_IIR_THRE);
	CHECK(!uart16550_irq(&u));
	uart16550_write(&u, UART_RBR_THR, '!');
	CHECK(uart16550_irq(&u));
	uart16550_write(&u, UART_IER, UART_IER_RDA);
	CHECK(!uart16550_irq(&u));
}

/* What autoconfig in Linux's 8250_port.c does to call a port a 16550A. */
TEST(uart_linux_probe_finds_16550a)
{
	struct uart16550 u;
	uint8_t scratch, scratch2, status, mcr;

	power_on(&u);
	/* IER scratch test: 0 reads 0, 0x0f reads 0x0f. */
	uart16550_write(&u, UART_IER, 0);
	scratch = uart16550_read(&u, UART_IER) & 0x0f;
	uart16550_write(&u, UART_IER, 0x0f);
	scratch2 = uart16550_read(&u, UART_IER) & 0x0f;
	uart16550_write(&u, UART_IER, 0);
	CHECK_EQ_U64(scratch, 0);
	CHECK_EQ_U64(scratch2, 0x0f);
	/* Loopback: OUT2 and RTS read back as DCD and CTS. */
	mcr = uart16550_read(&u, UART_MCR);
	uart16550_write(&u, UART_MCR, UART_MCR_LOOP | 0x0a);
	status = uart16550_read(&u, UART_MSR) & 0xf0;
	uart16550_write(&u, UART_MCR, mcr);
	CHECK_EQ_U64(status, 0x90);
	/* EFR at offset 2 in the 0xBF configuration mode: a 16550A has none
	 * and takes the write as FCR's. */
	uart16550_write(&u, UART_LCR, 0xbf);
	uart16550_write(&u, UART_IIR_FCR, 0);
	uart16550_write(&u, UART_LCR, 0);
	uart16550_write(&u, UART_IIR_FCR, UART_FCR_ENABLE);
	CHECK_EQ_U64(uart16550_read(&u, UART_IIR_FCR) >> 6, 3); /* FIFOs: a 16550A */
	/* Not an ST16C650 (EFR under DLAB reads non-zero: it is IIR) ... */
	uart16550_write(&u, UART_LCR, UART_LCR_DLAB);
	CHECK(uart16550_read(&u, UART_IIR_FCR) != 0);
	uart16550_write(&u, UART_LCR, 0xbf);
	CHECK(uart16550_read(&u, UART_IIR_FCR) != 0);
	/* ... not a National SuperIO (offset 2 under LCR 0xE0 does not follow
	 * MCR's loopback bit) ... */
	uart16550_write(&u, UART_LCR, 0);
	mcr = uart16550_read(&u, UART_MCR);
	uart16550_write(&u, UART_LCR, 0xe0);
	CHECK_EQ_U64((uart16550_read(&u, UART_IIR_FCR) ^ mcr) & UART_MCR_LOOP, 0);
	uart16550_write(&u, UART_LCR, 0);
	uart16550_write(&u, UART_MCR, mcr ^ UART_MCR_LOOP);
	uart16550_write(&u, UART_LCR, 0xe0);
	status = uart16550_read(&u, UART_IIR_FCR);
	uart16550_write(&u, UART_LCR, 0);
	uart16550_write(&u, UART_MCR, mcr);
	CHECK_EQ_U64((status ^ mcr) & UART_MCR_LOOP, 0);
	/* ... not a 16750 (FCR bit 5 gives no 64-byte FIFO: IIR >> 5 stays 6) ... */
	uart16550_write(&u, UART_IIR_FCR, UART_FCR_ENABLE | 0x20);
	CHECK_EQ_U64(uart16550_read(&u, UART_IIR_FCR) >> 5, 6);
	uart16550_write(&u, UART_IIR_FCR, UART_FCR_ENABLE);
	/* ... not a U6 16550A: 256 bytes sent to itself in loopback leave 16
	 * to read, not 64 ... */
	uart16550_write(&u, UART_IIR_FCR, UART_FCR_ENABLE | UART_FCR_CLEAR_RX | UART_FCR_CLEAR_TX);
	uart16550_write(&u, UART_MCR, UART_MCR_LOOP);
	uart16550_write(&u, UART_LCR, UART_LCR_DLAB);
	uart16550_write(&u, UART_RBR_THR, 1);
	uart16550_write(&u, UART_IER, 0);
	uart16550_write(&u, UART_LCR, 0x03);
	for (unsigned i = 0; i < 256; i++)
		uart16550_write(&u, UART_RBR_THR, (uint8_t)i);
	unsigned count = 0;
	while ((uart16550_read(&u, UART_LSR) & UART_LSR_DR) && count < 256) {
		CHECK_EQ_U64(uart16550_read(&u, UART_RBR_THR), count);
		count++;
	}
	CHECK_EQ_U64(count, UART16550_FIFO_BYTES);
	uart16550_write(&u, UART_MCR, mcr);
	uart16550_write(&u, UART_LCR, 0);
	/* ... and IER bit 6 (XScale's UUE) does not stick. */
	uart16550_write(&u, UART_IER, 0x40);
	CHECK_EQ_U64(uart16550_read(&u, UART_IER) & 0x40, 0);
	uart16550_write(&u, UART_IER, 0);
	/* Start-up: THRI turned on with the transmitter empty interrupts
	 * (else Linux marks UART_BUG_TXEN / UART_BUG_THRE). */
	uart16550_write(&u, UART_IER, UART_IER_THRE);
	CHECK(uart16550_read(&u, UART_LSR) & UART_LSR_TEMT);
	CHECK_EQ_U64(uart16550_read(&u, UART_IIR_FCR) & UART_IIR_NONE, 0);
}

/* ---- the saved state (uart16550_record) ---- */

static const struct record_limits one_vcpu = { .nr_vcpus = 1, .mem_bytes = 64 << 20 };

static uint32_t save(struct uart16550 *u, uint8_t *buf, uint32_t len)
{
	struct field_io io = field_saver(buf, len);

	uart16550_record.fields(u, &io);
	CHECK(!io.overrun);
	return io.pos;
}

/* A fresh (power-on) model loaded from buf; the loader's report. */
static struct field_io load(struct uart16550 *u, const uint8_t *buf, uint32_t len)
{
	struct field_io io = field_loader(buf, len);

	power_on(u);
	uart16550_record.fields(u, &io);
	return io;
}

/* Both models answer every register alike, side effects included (IIR
 * clears THRE, LSR the overrun, MSR the deltas, RBR takes a byte). */
static void check_same_reads(struct uart16550 *a, struct uart16550 *b)
{
	CHECK_EQ_U64(uart16550_irq(a), uart16550_irq(b));
	CHECK_EQ_U64(uart16550_rx_room(a), uart16550_rx_room(b));
	for (unsigned reg = 0; reg < 8; reg++)
		CHECK_EQ_U64(uart16550_read(a, reg), uart16550_read(b, reg));
	CHECK_EQ_U64(uart16550_irq(a), uart16550_irq(b));
}

/* FIFOs on at trigger 8 with a wrapped FIFO, an overrun, a modem delta, THRE
 * pending, the line quiet, the divisor set; after loopback, OUT2 on. */
static void busy_uart(struct uart16550 *u)
{
	power_on(u);
	uart16550_write(u, UART_LCR, UART_LCR_DLAB | 0x03);
	uart16550_write(u, UART_RBR_THR, 0x0c);
	uart16550_write(u, UART_IER, 0x01);
	uart16550_write(u, UART_LCR, 0x03);
	uart16550_write(u, UART_SCR, 0x5a);
	uart16550_write(u, UART_IIR_FCR, UART_FCR_ENABLE | 0x80); /* trigger 8 */
	for (int i = 0; i < 12; i++)
		uart16550_receive(u, (uint8_t)('a' + i));
	for (int i = 0; i < 10; i++)
		uart16550_read(u, UART_RBR_THR);
	for (int i = 0; i < 15; i++) /* the head wraps; the last byte overruns */
		uart16550_receive(u, (uint8_t)('A' + i));
	uart16550_write(u, UART_MCR, UART_MCR_LOOP);
	uart16550_write(u, UART_MCR, UART_MCR_OUT2 | UART_MCR_DTR); /* deltas on leaving */
	uart16550_write(u, UART_IER, 0x0f);
	uart16550_write(u, UART_RBR_THR, 'x'); /* THRE pending */
	uart16550_rx_idle(u);
}

TEST(uart_record_round_trip)
{
	struct uart16550 a, b;
	uint8_t buf[64];
	uint32_t n;
	struct field_io io;
	char err[128] = "";

	busy_uart(&a);
	REQUIRE(a.rx_count == 16 && a.rx_head == 10 && a.overrun && a.msr_deltas && a.rx_idle);
	n = save(&a, buf, sizeof buf);
	io = load(&b, buf, n);
	CHECK(!io.overrun && !io.bad && io.pos == n);
	CHECK(uart16550_record.check(&b, &one_vcpu, err, sizeof err));
	CHECK(uart16550_irq(&b));
	CHECK_EQ_U64(uart16550_read(&b, UART_IIR_FCR), UART_IIR_FIFOS | UART_IIR_RLS);
	CHECK_EQ_U64(uart16550_read(&a, UART_IIR_FCR), UART_IIR_FIFOS | UART_IIR_RLS);
	/* The divisor latch, then every register with its side effects, until
	 * the FIFO is drained (16 bytes, one RBR read a round). */
	uart16550_write(&a, UART_LCR, UART_LCR_DLAB);
	uart16550_write(&b, UART_LCR, UART_LCR_DLAB);
	check_same_reads(&a, &b);
	uart16550_write(&a, UART_LCR, 0x03);
	uart16550_write(&b, UART_LCR, 0x03);
	for (int i = 0; i < 17; i++)
		check_same_reads(&a, &b);
	CHECK(a.rx_count == 0 && b.rx_count == 0);
	/* and they go on alike: more data, the timeout, a byte sent */
	for (int i = 0; i < 3; i++) {
		CHECK_EQ_U64(uart16550_receive(&a, (uint8_t)i), uart16550_receive(&b, (uint8_t)i));
		check_same_reads(&a, &b);
	}
	uart16550_rx_idle(&a);
	uart16550_rx_idle(&b);
	CHECK_EQ_U64(uart16550_write(&a, UART_RBR_THR, 'y'), uart16550_write(&b, UART_RBR_THR, 'y'));
	check_same_reads(&a, &b);
}

/* Power-on, busy, FIFOs off with a byte held, loopback: all pass. */
TEST(uart_record_check_passes_model_states)
{
	struct uart16550 u, l;
	uint8_t buf[64];
	uint32_t n;
	char err[128] = "";

	power_on(&u);
	n = save(&u, buf, sizeof buf);
	load(&l, buf, n);
	CHECK(uart16550_record.check(&l, &one_vcpu, err, sizeof err));
	busy_uart(&u);
	n = save(&u, buf, sizeof buf);
	load(&l, buf, n);
	CHECK(uart16550_record.check(&l, &one_vcpu, err, sizeof err));
	uart16550_write(&u, UART_IIR_FCR, 0xc0); /* FIFOs off: emptied, trigger kept */
	uart16550_receive(&u, 'o');
	uart16550_read(&u, UART_RBR_THR);
	uart16550_receive(&u, 'p');
	uart16550_receive(&u, 'q'); /* overruns the holding register */
	REQUIRE(u.rx_count == 1 && u.rx_head == 1 && u.fcr_trigger == 2);
	n = save(&u, buf, sizeof buf);
	load(&l, buf, n);
	CHECK(uart16550_record.check(&l, &one_vcpu, err, sizeof err));
	CHECK_EQ_U64(uart16550_read(&l, UART_RBR_THR), 'q');
	if (err[0])
		fprintf(stderr, "  refused: %s\n", err);
}

TEST(uart_record_check_refuses)
{
	static const struct {
		size_t field;
		uint8_t val;
		const char *reason;
	} cases[] = {
		{ offsetof(struct uart16550, ier), 0x10, "ier 0x10 sets bits outside 0xf" },
		{ offsetof(struct uart16550, mcr), 0x20, "mcr 0x20 sets bits outside 0x1f" },
		{ offsetof(struct uart16550, fcr_trigger), 4, "fcr_trigger 0x4" },
		{ offsetof(struct uart16550, msr_deltas), 0x80, "msr_deltas 0x80" },
		{ offsetof(struct uart16550, rx_head), 16, "rx_head 16 is not 0-15" },
		{ offsetof(struct uart16550, rx_count), 17, "rx_count 17 is beyond the receiver's 16 bytes" },
	};
	struct uart16550 u, bad;
	char err[128];

	busy_uart(&u);
	for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		bad = u;
		((uint8_t *)&bad)[cases[i].field] = cases[i].val;
		err[0] = 0;
		CHECK(!uart16550_record.check(&bad, &one_vcpu, err, sizeof err));
		if (!strstr(err, cases[i].reason))
			fprintf(stderr, "  case %u: '%s' lacks '%s'\n", i, err, cases[i].reason);
		CHECK(strstr(err, cases[i].reason) != NULL);
	}
	/* Without FIFOs the receiver holds one byte. */
	bad = u;
	bad.fifos = false;
	bad.rx_count = 2;
	CHECK(!uart16550_record.check(&bad, &one_vcpu, err, sizeof err));
	CHECK(strstr(err, "rx_count 2 is beyond the receiver's 1 bytes (FIFOs off)") != NULL);
}

/* A flag byte other than 0 or 1 is no state: the loader names it. */
TEST(uart_record_bool_byte_refused)
{
	struct uart16550 u, l;
	uint8_t buf[64];
	uint32_t n, at;
	struct field_io io;

	busy_uart(&u);
	n = save(&u, buf, sizeof buf);
	at = 6; /* ier, lcr, mcr, scr, dll, dlm, then fifos */
	REQUIRE(buf[at] == 1);
	buf[at] = 2;
	io = load(&l, buf, n);
	CHECK(io.bad && strstr(io.bad, "fifos"));
	CHECK(!l.fifos);
	io = load(&l, buf, n - 1);
	CHECK(io.overrun);
}
