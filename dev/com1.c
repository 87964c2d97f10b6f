/* COM1 (com1.h). */
#include "dev/com1.h"
#include "lib/print.h"
#include "virt/sched.h"
#include "virt/vm.h"

void com1_end_raw_line(struct vm *vm)
{
	if (vm->com1.attached && vm->com1.mid_line) {
		kprintf("\n");
		vm->com1.mid_line = false;
	}
}

/* A line of the guest's, without its end, to the console and the VM's
 * observer; the line buffer empty again. */
static void com1_print_line(struct vm *vm)
{
	struct com1_out *out = &vm->com1.out;

	kprintf("[%s] %.*s\n", vm->name, (int)out->len, out->line);
	if (vm->observer && vm->observer->on_line)
		vm->observer->on_line(vm, out->line, out->len, vm->observer_ctx);
	out->len = 0;
}

void com1_flush_line(struct vm *vm)
{
	com1_end_raw_line(vm);
	if (vm->com1.out.len)
		com1_print_line(vm);
}

void com1_transmit(struct vm *vm, uint8_t c)
{
	struct com1_out *out = &vm->com1.out;

	if (vm->com1.attached) {
		char ch = (char)c;

		console_write(&ch, 1);
		vm->com1.mid_line = c != '\n';
		return;
	}
	if (c == '\n') {
		com1_print_line(vm);
		return;
	}
	if (c == '\r')
		return;
	/* Keep the console printable: show other control bytes as '.'. */
	out->line[out->len++] = (c >= 0x20 && c < 0x7f) || c == '\t' ? (char)c : '.';
	if (out->len == sizeof(out->line))
		com1_print_line(vm);
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

size_t com1_receive(struct vm *vm, const uint8_t *buf, size_t n)
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

void com1_attach(struct vm *vm, bool attach)
{
	vm_lock(vm);
	com1_flush_line(vm);
	vm->com1.attached = attach;
	vm_unlock(vm, NULL);
}

static bool com1_read(struct vm *vm, struct vm_device *dev, uint64_t port, unsigned size,
		      uint64_t *val)
{
	(void)size;
	*val = uart16550_read(dev->model, (unsigned)(port - COM1_BASE));
	com1_update_irq(vm);
	return true;
}

static bool com1_write(struct vm *vm, struct vm_device *dev, uint64_t port, unsigned size,
		       uint64_t val)
{
	int sent = uart16550_write(dev->model, (unsigned)(port - COM1_BASE), (uint8_t)val);

	(void)size;
	if (sent >= 0)
		com1_transmit(vm, (uint8_t)sent);
	com1_update_irq(vm);
	return true;
}

/* A loaded UART's line: the PIC's and the I/O APIC's records hold its level. */
static void com1_loaded(struct vm *vm, void *model)
{
	vm->com1.irq_level = uart16550_irq(model);
}

static const struct bus_ops com1_ops = { .read = com1_read, .write = com1_write };

const struct device_spec com1_device = {
	.name = "com1", .record = &uart16550_record, .loaded = com1_loaded, .port_ops = &com1_ops, .ports = { { COM1_BASE, 8 } },
};
