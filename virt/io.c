/* Port I/O: COM1 (a 16550A, dev/uart16550.c, on IRQ 4), QEMU's
 * isa-debug-exit at 0xf4, the bench port (virt/bench_port.h), the chipset's
 * ports (dev/platform.c), and all ones for everything else. */
#include "arch/x86/cpu.h"
#include "lib/print.h"
#include "virt/bench_port.h"
#include "virt/emulate.h"

#define COM1_BASE 0x3f8
#define COM1_IRQ 4
#define DEBUG_EXIT_PORT 0xf4

void uart_flush_line(struct vm *vm)
{
	struct vm_uart *u = &vm->uart;

	/* Raw output the guest left mid-line: what sprig prints next starts
	 * on a line of its own. */
	if (vm->com1.attached && vm->com1.mid_line) {
		kprintf("\n");
		vm->com1.mid_line = false;
	}
	if (!u->len)
		return;
	kprintf("[%s] %.*s\n", vm->name, (int)u->len, u->line);
	if (vm->on_line)
		vm->on_line(vm, u->line, u->len, vm->on_line_ctx);
	u->len = 0;
}

void uart_transmit(struct vm *vm, uint8_t c)
{
	struct vm_uart *u = &vm->uart;

	if (vm->com1.attached) {
		char ch = (char)c;

		console_write(&ch, 1);
		vm->com1.mid_line = c != '\n';
		return;
	}
	if (c == '\n') {
		if (u->len) {
			uart_flush_line(vm);
			return;
		}
		kprintf("[%s] \n", vm->name);
		if (vm->on_line)
			vm->on_line(vm, "", 0, vm->on_line_ctx);
		return;
	}
	if (c == '\r')
		return;
	/* Keep the console printable: show other control bytes as '.'. */
	u->line[u->len++] = (c >= 0x20 && c < 0x7f) || c == '\t' ? (char)c : '.';
	if (u->len == sizeof(u->line))
		uart_flush_line(vm);
}

/* IRQ 4 follows the UART's output: the PIC and the I/O APIC see its edges
 * (ISA IRQ 4 is edge-triggered, active high, on QEMU's pc machine). */
static void com1_update_irq(struct vm *vm)
{
	bool level = uart16550_irq(&vm->com1.uart);

	if (level == vm->com1.irq_level)
		return;
	vm->com1.irq_level = level;
	platform_set_isa_irq(vm, COM1_IRQ, level);
}

size_t uart_receive(struct vm *vm, const uint8_t *buf, size_t n)
{
	struct uart16550 *u = &vm->com1.uart;
	size_t taken = 0;

	vm_lock(vm);
	for (unsigned room = uart16550_rx_room(u); taken < n && room; room--)
		uart16550_receive(u, buf[taken++]);
	if (taken == n)
		uart16550_rx_idle(u);
	com1_update_irq(vm);
	vm_unlock(vm, NULL);
	return taken;
}

void uart_attach(struct vm *vm, bool attach)
{
	vm_lock(vm);
	uart_flush_line(vm);
	vm->com1.attached = attach;
	vm_unlock(vm, NULL);
}

static uint32_t com1_read(struct vm *vm, unsigned reg)
{
	uint8_t v = uart16550_read(&vm->com1.uart, reg);

	com1_update_irq(vm);
	return v;
}

static void com1_write(struct vm *vm, unsigned reg, uint8_t val)
{
	int sent = uart16550_write(&vm->com1.uart, reg, val);

	if (sent >= 0)
		uart_transmit(vm, (uint8_t)sent);
	com1_update_irq(vm);
}

static void count_other_port(struct vcpu *v, uint16_t port)
{
	struct vcpu_port_count *pc = v->stats.io_ports;

	v->stats.io_other++;
	for (unsigned i = 0; i < VCPU_IO_PORTS_TRACKED; i++) {
		if (pc[i].count && pc[i].port != port)
			continue;
		pc[i].port = port;
		pc[i].count++;
		return;
	}
}

bool emulate_io(struct vcpu *v, const struct vexit *e)
{
	struct vm *vm = v->vm;
	uint16_t port = e->io.port;
	uint32_t mask = e->io.size == 4 ? 0xffffffffu : (1u << (8 * e->io.size)) - 1;
	uint32_t val = 0xffffffffu;
	bool retry;

	if (e->io.string) {
		vm_fail(vm, "string I/O (INS/OUTS) on port 0x%x is not emulated", port);
		return false;
	}
	if (port == DEBUG_EXIT_PORT && !e->io.in) {
		vm_exit(vm, (int)((uint32_t)v->regs.rax & mask));
		return true;
	}
	if (!e->io.in)
		val = (uint32_t)v->regs.rax & mask;
	if (bench_port_io(v, port, e->io.size, e->io.in, &val, &retry)) {
		if (e->io.in)
			v->regs.rax = (v->regs.rax & ~(uint64_t)mask) | (val & mask);
		return !retry;
	}
	vm_lock(vm);
	if (port >= COM1_BASE && port < COM1_BASE + 8) {
		if (e->io.in)
			val = com1_read(vm, port - COM1_BASE);
		else
			com1_write(vm, port - COM1_BASE, (uint8_t)v->regs.rax);
	} else if (!e->io.in) {
		uint32_t out = (uint32_t)v->regs.rax & mask;

		if (!platform_io(vm, port, e->io.size, false, &out))
			count_other_port(v, port);
	} else if (!platform_io(vm, port, e->io.size, true, &val)) {
		count_other_port(v, port);
	}
	vm_unlock(vm, v);
	if (e->io.in)
		v->regs.rax = (v->regs.rax & ~(uint64_t)mask) | (val & mask);
	return true;
}
