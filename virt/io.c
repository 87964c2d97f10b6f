/* Port I/O: the bench port (virt/bench_port.h), then the device on the VM's
 * port bus (dev/bus.h: COM1, QEMU's isa-debug-exit, the chipset), and all
 * ones for everything else. */
#include "virt/bench_port.h"
#include "virt/io.h"
#include "virt/mmio.h"
#include "virt/vm.h"
#include "virt/sched.h"

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

void io_port_access(struct vcpu *v, uint16_t port, unsigned size, uint64_t *val, bool in)
{
	struct vm *vm = v->vm;

	vm_lock(vm);
	if (!bus_access(&vm->port_bus, vm, port, size, val, !in)) {
		count_other_port(v, port);
		*val = 0xffffffffu;
	}
	vm_unlock(vm, v);
}

bool emulate_io(struct vcpu *v, const struct vexit *e)
{
	uint16_t port = e->io.port;
	uint32_t mask = e->io.size == 4 ? 0xffffffffu : (1u << (8 * e->io.size)) - 1;
	uint32_t val = e->io.in ? 0xffffffffu : (uint32_t)v->regs.rax & mask;
	uint64_t bus_val = val;
	bool retry;

	if (e->io.string) /* INS, OUTS: their memory operand is emulated */
		return string_io_exit(v, e);
	/* Not a device: the scenario's side pauses the VM, outside its lock. */
	if (bench_port_io(v, port, e->io.size, e->io.in, &val, &retry)) {
		if (e->io.in)
			v->regs.rax = (v->regs.rax & ~(uint64_t)mask) | (val & mask);
		return !retry;
	}
	io_port_access(v, port, e->io.size, &bus_val, e->io.in);
	if (e->io.in)
		v->regs.rax = (v->regs.rax & ~(uint64_t)mask) | (bus_val & mask);
	return true;
}
