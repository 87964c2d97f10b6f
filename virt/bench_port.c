/* The bench port (virt/bench_port.h). */
#include "virt/bench_port.h"
#include "virt/sched.h"
#include "virt/vm.h"

bool bench_port_io(struct vcpu *v, uint16_t port, unsigned size, bool in, uint32_t *val,
		   bool *retry)
{
	struct vm *vm = v->vm;

	*retry = false;
	if (size != 4 || (port != BENCH_PORT_CMD && port != BENCH_PORT_DATA))
		return false;
	if (in) {
		*val = port == BENCH_PORT_CMD ? BENCH_PORT_MAGIC : 0xffffffffu;
		return true;
	}
	if (port == BENCH_PORT_DATA) {
		vm_lock(vm);
		if (vm->observer && vm->observer->on_bench_word)
			vm->observer->on_bench_word(vm, *val, vm->observer_ctx);
		vm_unlock(vm, v);
		return true;
	}
	if (*val < 1 || *val > BENCH_CMD_MAX) {
		vm_fail(vm, "bench port: command %u is not 1..%u", *val, BENCH_CMD_MAX);
		return true;
	}
	vm_pause(vm, VM_PAUSE_BENCH_POINT);
	/* Another stop came first: the write runs again when the VM resumes,
	 * so that the scenario sees every command. */
	if (__atomic_load_n(&vm->stopped_by, __ATOMIC_RELAXED) != (int)v->index) {
		*retry = true;
		return true;
	}
	vm->bench_port.cmd = *val;
	return true;
}
