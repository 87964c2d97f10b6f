/* COM1 driven as Linux's 8250 driver drives it: the guest first checks the
 * UART the way the driver's probe does (IER scratch bits, loopback, the FIFO
 * bits in IIR, a byte sent to itself in loopback), then turns the FIFOs on
 * (receive trigger 8), sets OUT2, enables the receive and line-status
 * interrupts and takes IRQ 4 through the I/O APIC (with the argument `pic`:
 * through the 8259 and LINT0 in ExtINT mode instead). Every received byte is
 * echoed, letters upper-cased and control bytes as ^X, from the
 * THR-empty interrupt (enabled only while there is output, as the driver's
 * start_tx/stop_tx do). Ctrl-D (0x04) ends it with status 0 after a line of
 * counts. Boots bare under QEMU and under sprig alike. */
#include "guests/rt/acpi.h"
#include "guests/rt/cpu.h"
#include "guests/rt/idt.h"
#include "guests/rt/lapic.h"
#include "guests/rt/rt.h"

#define COM1 0x3f8
#define COM1_IRQ 4
#define VEC_COM1 0x44
#define KEY_END 0x04 /* Ctrl-D */

#define REG_DATA 0
#define REG_IER 1
#define REG_IIR 2 /* FCR when written */
#define REG_MCR 4
#define REG_LSR 5
#define REG_MSR 6

#define IER_RDI 0x01
#define IER_THRI 0x02
#define IER_RLSI 0x04
#define IIR_NO_INT 0x01
#define IIR_ID 0x0e
#define IIR_THRI 0x02
#define IIR_RDI 0x04
#define IIR_RLSI 0x06
#define IIR_TIMEOUT 0x0c
#define FCR_FIFO_TRIGGER_8 0x87 /* enable, clear both, trigger 8 */
#define MCR_DTR 0x01
#define MCR_RTS 0x02
#define MCR_OUT2 0x08
#define MCR_LOOP 0x10
#define LSR_DR 0x01
#define LSR_OE 0x02
#define LSR_THRE 0x20
#define FIFO_BYTES 16

#define VEC_PIC_MASTER 0x20 /* IRQ n is vector 0x20 + n */
#define VEC_PIC_SLAVE 0x28
#define PIC_EOI 0x20

#define IOAPIC_BASE 0xfec00000ul
#define IOREDTBL_MASKED (1u << 16)
#define IOREDTBL_LEVEL (1u << 15)
#define IOREDTBL_LOW (1u << 13)

/* Output waiting for the transmitter: filled by the receive path, emptied
 * by the THR-empty interrupt. Both run in the interrupt handler. */
#define OUT_MAX 4096
static char out_buf[OUT_MAX];
static unsigned out_head, out_count;

static uint8_t ier;
static bool via_pic;
static volatile bool ended;
static volatile unsigned irqs, overruns, bytes_in;
static volatile unsigned seen[16]; /* interrupts by IIR identification */

static void fail(const char *what, unsigned got, unsigned want)
{
	outb(COM1 + REG_MCR, MCR_DTR | MCR_RTS); /* out of loopback, to be heard */
	printf("uart: FAIL %s: 0x%x, expected 0x%x\n", what, got, want);
	exit(1);
}

/* Linux's autoconfig checks, and a byte through loopback. */
static void probe(void)
{
	uint8_t v;

	outb(COM1 + REG_IER, 0);
	if ((v = inb(COM1 + REG_IER) & 0x0f) != 0)
		fail("IER after writing 0", v, 0);
	outb(COM1 + REG_IER, 0x0f);
	if ((v = inb(COM1 + REG_IER) & 0x0f) != 0x0f)
		fail("IER after writing 0x0f", v, 0x0f);
	outb(COM1 + REG_IER, 0);
	outb(COM1 + REG_MCR, MCR_LOOP | MCR_OUT2 | MCR_RTS);
	if ((v = inb(COM1 + REG_MSR) & 0xf0) != 0x90)
		fail("MSR in loopback with OUT2 and RTS", v, 0x90);
	outb(COM1 + REG_IIR, FCR_FIFO_TRIGGER_8);
	if ((v = inb(COM1 + REG_IIR) >> 6) != 3)
		fail("IIR bits 7:6 with the FIFOs on (a 16550A)", v, 3);
	outb(COM1 + REG_DATA, 0xa5);
	if (!((v = inb(COM1 + REG_LSR)) & LSR_DR))
		fail("LSR after a byte sent in loopback", v, LSR_DR | LSR_THRE);
	if ((v = inb(COM1 + REG_DATA)) != 0xa5)
		fail("the byte received in loopback", v, 0xa5);
	outb(COM1 + REG_MCR, MCR_DTR | MCR_RTS);
	inb(COM1 + REG_MSR); /* the deltas loopback left */
}

static void ioapic_write(uint32_t reg, uint32_t v)
{
	*(volatile uint32_t *)IOAPIC_BASE = reg;
	*(volatile uint32_t *)(IOAPIC_BASE + 0x10) = v;
}

/* IRQ 4's GSI and its redirection-entry polarity and trigger bits: ISA's
 * (GSI 4, high, edge) unless the MADT overrides them. */
static unsigned com1_gsi(uint32_t *bits)
{
	uint64_t madt = acpi_find_rsdp() ? acpi_find_table("APIC") : 0;

	*bits = 0;
	for (uint64_t e = madt ? madt_next(madt, 0) : 0; e; e = madt_next(madt, e)) {
		uint8_t *p = (uint8_t *)e;
		uint16_t flags;

		if (p[0] != MADT_OVERRIDE || p[3] != COM1_IRQ)
			continue;
		flags = rd16(e + 8);
		if ((flags & 3) == 3)
			*bits |= IOREDTBL_LOW;
		if (((flags >> 2) & 3) == 3)
			*bits |= IOREDTBL_LEVEL;
		return rd32(e + 4);
	}
	return COM1_IRQ;
}

static void set_ier(uint8_t v)
{
	ier = v;
	outb(COM1 + REG_IER, v);
}

static void queue(char c)
{
	if (out_count < OUT_MAX)
		out_buf[(out_head + out_count++) % OUT_MAX] = c;
}

static void echo(uint8_t c)
{
	if (c >= 'a' && c <= 'z') {
		queue((char)(c - 'a' + 'A'));
	} else if (c == '\r') {
		queue('\r');
		queue('\n');
	} else if (c < 0x20 || c == 0x7f) {
		queue('^');
		queue(c == 0x7f ? '?' : (char)(c + 0x40));
	} else {
		queue((char)c);
	}
}

static void receive(void)
{
	uint8_t lsr;

	while ((lsr = inb(COM1 + REG_LSR)) & (LSR_DR | LSR_OE)) {
		if (lsr & LSR_OE)
			overruns++;
		if (!(lsr & LSR_DR))
			continue;
		uint8_t c = inb(COM1 + REG_DATA);

		bytes_in++;
		if (c == KEY_END)
			ended = true;
		else
			echo(c);
	}
	/* start_tx: THRI on with THR empty interrupts at once. */
	if (out_count && !(ier & IER_THRI))
		set_ier(ier | IER_THRI);
}

/* The driver's tx_chars: a FIFO's worth, then stop_tx when nothing is left. */
static void transmit(void)
{
	for (unsigned n = 0; n < FIFO_BYTES && out_count; n++) {
		outb(COM1 + REG_DATA, (uint8_t)out_buf[out_head]);
		out_head = (out_head + 1) % OUT_MAX;
		out_count--;
	}
	if (!out_count)
		set_ier(ier & ~IER_THRI);
}

static void com1_interrupt(void)
{
	uint8_t iir;

	irqs++;
	while (!((iir = inb(COM1 + REG_IIR)) & IIR_NO_INT)) {
		seen[iir & IIR_ID]++;
		switch (iir & IIR_ID) {
		case IIR_RLSI:
		case IIR_RDI:
		case IIR_TIMEOUT:
			receive();
			break;
		case IIR_THRI:
			transmit();
			break;
		default:
			inb(COM1 + REG_MSR);
			break;
		}
	}
	if (via_pic)
		outb(0x20, PIC_EOI);
	else
		apic_eoi();
}

static void dispatch(struct frame *f)
{
	if (f->vector == (via_pic ? VEC_PIC_MASTER + COM1_IRQ : VEC_COM1)) {
		com1_interrupt();
		return;
	}
	/* Spurious: the APIC's, or the 8259's IRQ 7 (no EOI for either). */
	if (f->vector == SPURIOUS_VEC || (via_pic && f->vector == VEC_PIC_MASTER + 7))
		return;
	printf("uart: FAIL vector %lu at RIP 0x%lx\n", f->vector, f->rip);
	exit(3);
}

/* The 8259 pair at vectors 0x20-0x2f, edge-triggered, every IRQ but `irq`
 * masked. */
static void pic_route(unsigned irq)
{
	outb(0x20, 0x11); /* ICW1: edge, cascade, ICW4 follows */
	outb(0xa0, 0x11);
	outb(0x21, VEC_PIC_MASTER);
	outb(0xa1, VEC_PIC_SLAVE);
	outb(0x21, 0x04); /* the slave on IR2 */
	outb(0xa1, 0x02);
	outb(0x21, 0x01); /* 8086 mode, normal EOI */
	outb(0xa1, 0x01);
	outb(0x21, (uint8_t)~(1u << irq));
	outb(0xa1, 0xff);
}

int main(const struct mb1_info *mbi)
{
	uint32_t bits;
	unsigned gsi;

	via_pic = first_arg_is(mbi, "pic");
	if (!under_sprig())
		serial_setup();
	probe();
	idt_install(dispatch);
	outb(0x21, 0xff); /* the 8259s masked until one is routed */
	outb(0xa1, 0xff);
	set_uncached(APIC_DEFAULT);
	set_uncached(IOAPIC_BASE);
	apic_write(APIC_SVR, SVR_ENABLE | SPURIOUS_VEC);
	apic_write(APIC_LVT_TIMER, LVT_MASKED);
	gsi = com1_gsi(&bits);
	/* Programmed before the banner: keys typed once it shows are kept (the
	 * FCR write empties the receiver). Interrupts wait for the sti below. */
	outb(COM1 + REG_IIR, FCR_FIFO_TRIGGER_8);
	outb(COM1 + REG_MCR, MCR_DTR | MCR_RTS | MCR_OUT2);
	set_ier(IER_RDI | IER_RLSI);
	if (via_pic) {
		/* Virtual wire: the 8259's INTR through LINT0, the pin masked
		 * at the I/O APIC. */
		ioapic_write(0x10 + 2 * gsi, IOREDTBL_MASKED);
		apic_write(APIC_LVT_LINT0, LVT_EXTINT);
		pic_route(COM1_IRQ);
		printf("uart: 16550A at 0x%x, IRQ %u through the 8259; typed keys come back "
		       "upper-cased, Ctrl-D ends\n", COM1, COM1_IRQ);
	} else {
		apic_write(APIC_LVT_LINT0, LVT_MASKED);
		ioapic_write(0x10 + 2 * gsi, IOREDTBL_MASKED);
		ioapic_write(0x11 + 2 * gsi, (apic_read(APIC_ID) >> 24) << 24);
		ioapic_write(0x10 + 2 * gsi, bits | VEC_COM1);
		printf("uart: 16550A at 0x%x, IRQ %u on GSI %u; typed keys come back "
		       "upper-cased, Ctrl-D ends\n", COM1, COM1_IRQ, gsi);
	}

	/* Sleep until Ctrl-D has come and the echo has gone out. */
	cli();
	while (!ended || out_count)
		asm volatile("sti; hlt; cli" ::: "memory");
	set_ier(0);
	ioapic_write(0x10 + 2 * gsi, IOREDTBL_MASKED);
	outb(0x21, 0xff);
	printf("\nuart: %u bytes in %u interrupts (data %u, timeout %u, THR empty %u, "
	       "line status %u), %u overruns\n", bytes_in, irqs, seen[IIR_RDI], seen[IIR_TIMEOUT],
	       seen[IIR_THRI], seen[IIR_RLSI], overruns);
	return 0;
}
