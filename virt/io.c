/* Port I/O: COM1 as a 16550 that is always ready to transmit, QEMU's
 * isa-debug-exit at 0xf4, the chipset's ports (virt/platform.c), and all
 * ones for everything else. */
#include "arch/x86/cpu.h"
#include "lib/print.h"
#include "virt/emulate.h"

#define COM1_BASE 0x3f8
#define DEBUG_EXIT_PORT 0xf4
#define LCR_DLAB 0x80
#define LSR_THR_EMPTY 0x20
#define LSR_TX_EMPTY 0x40
#define MSR_DCD_DSR_CTS 0xb0

void uart_flush_line(struct vm *vm)
{
	struct vm_uart *u = &vm->uart;

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

static uint32_t uart_read(struct vm *vm, unsigned reg)
{
	struct vm_uart *u = &vm->uart;
	bool dlab = u->lcr & LCR_DLAB;

	switch (reg) {
	case 0: return dlab ? u->dll : 0;     /* no input */
	case 1: return dlab ? u->dlm : u->ier;
	case 2: return 0x01;                  /* IIR: no interrupt pending */
	case 3: return u->lcr;
	case 4: return u->mcr;
	case 5: return LSR_THR_EMPTY | LSR_TX_EMPTY;
	case 6: return MSR_DCD_DSR_CTS;
	default: return u->scr;
	}
}

static void uart_write(struct vm *vm, unsigned reg, uint8_t val)
{
	struct vm_uart *u = &vm->uart;
	bool dlab = u->lcr & LCR_DLAB;

	switch (reg) {
	case 0:
		if (dlab)
			u->dll = val;
		else
			uart_transmit(vm, val);
		break;
	case 1:
		if (dlab)
			u->dlm = val;
		else
			u->ier = val & 0x0f;
		break;
	case 3: u->lcr = val; break;
	case 4: u->mcr = val & 0x1f; break;
	case 7: u->scr = val; break;
	default: break; /* FCR and the read-only registers */
	}
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

	if (e->io.string) {
		vm_fail(vm, "string I/O (INS/OUTS) on port 0x%x is not emulated", port);
		return false;
	}
	if (port == DEBUG_EXIT_PORT && !e->io.in) {
		vm_exit(vm, (int)((uint32_t)v->regs.rax & mask));
		return true;
	}
	vm_lock(vm);
	if (port >= COM1_BASE && port < COM1_BASE + 8) {
		if (e->io.in)
			val = uart_read(vm, port - COM1_BASE);
		else
			uart_write(vm, port - COM1_BASE, (uint8_t)v->regs.rax);
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
