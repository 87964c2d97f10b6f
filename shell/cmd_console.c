/* `vm console NAME [timeout=S]`: run or continue a VM as `vm run` does, with
 * sprig's console attached to the guest's COM1. Keys typed go to its receiver
 * (Ctrl-C included, as byte 0x03), its output is shown raw; Ctrl-] detaches
 * and leaves the VM paused. */
#include "shell/cmd_console.h"
#include "shell/cmd_vm.h"
#include "arch/x86/uart.h"
#include "lib/print.h"
#include "lib/string.h"
#include "shell/shell.h"

#define KEY_DETACH 0x1d /* Ctrl-] */
/* Keys typed that the guest's receiver had no room for yet. */
#define PENDING_MAX 4096

static struct {
	uint8_t key[PENDING_MAX];
	size_t count;
	uint64_t dropped;
} pending;

bool vm_console_poll(struct vm *vm)
{
	bool detach = false;
	size_t taken;
	int c;

	/* Bounded: a UART that always reads "data ready" must not hold the run. */
	for (unsigned n = 0; n < PENDING_MAX && (c = uart_getc()) >= 0; n++) {
		if (c == KEY_DETACH) {
			detach = true;
			break;
		}
		if (pending.count == PENDING_MAX)
			pending.dropped++;
		else
			pending.key[pending.count++] = (uint8_t)c;
	}
	taken = com1_receive(vm, pending.key, pending.count);
	memmove(pending.key, pending.key + taken, pending.count - taken);
	pending.count -= taken;
	return detach;
}

const char *vm_run_console_poll(struct vm *vm)
{
	if (vm->com1.attached)
		return vm_console_poll(vm) ? "detached" : NULL;
	return console_poll() ? "Ctrl-C" : NULL;
}

int vm_console_cmd(int argc, char **argv)
{
	uint64_t timeout_s;
	struct vm *vm;
	int rc = vm_run_args(argc, argv, &vm, &timeout_s);

	if (rc)
		return rc;
	kprintf("vm %s: console attached (Ctrl-] detaches)\n", vm->name);
	pending.count = 0;
	pending.dropped = 0;
	com1_attach(vm, true);
	vm_run(vm, timeout_s * 1000);
	com1_attach(vm, false);
	if (pending.count || pending.dropped)
		kprintf("vm %s: %zu keys typed were not delivered\n", vm->name,
			pending.count + (size_t)pending.dropped);
	return 0;
}
