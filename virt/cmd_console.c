/* `vm console NAME [timeout=S]`: run or continue a VM as `vm run` does, with
 * sprig's console attached to the guest's COM1. Keys typed go to its receiver
 * (Ctrl-C included, as byte 0x03), its output is shown raw; Ctrl-] detaches
 * and leaves the VM paused. */
#include "virt/cmd_console.h"
#include "arch/x86/uart.h"
#include "lib/parse.h"
#include "lib/print.h"
#include "lib/string.h"
#include "virt/emulate.h"
#include "virt/shell.h"

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
	taken = uart_receive(vm, pending.key, pending.count);
	memmove(pending.key, pending.key + taken, pending.count - taken);
	pending.count -= taken;
	return detach;
}

int vm_console_cmd(int argc, char **argv)
{
	struct vm *vm;
	uint64_t timeout_s = shell_default_run_timeout();

	if (argc < 3)
		return shell_usage_error("vm", "which VM?");
	if (!(vm = vm_find(argv[2]))) {
		kprintf("vm: no VM named '%s' (see 'vm list')\n", argv[2]);
		return 1;
	}
	for (int i = 3; i < argc; i++) {
		if (strncmp(argv[i], "timeout=", 8) != 0 ||
		    !parse_u64_in(argv[i] + 8, 1, 86400, &timeout_s))
			return shell_usage_error("vm", "bad argument '%s' (timeout=SECONDS, 1-86400)",
						 argv[i]);
	}
	if (vm->state != VM_READY && vm->state != VM_PAUSED) {
		kprintf("vm: '%s' has %s; destroy it and create it again\n", vm->name,
			vm->state == VM_EXITED ? "exited" : "stopped");
		return 1;
	}
	kprintf("vm %s: console attached (Ctrl-] detaches)\n", vm->name);
	pending.count = 0;
	pending.dropped = 0;
	uart_attach(vm, true);
	vm_run(vm, timeout_s * 1000);
	uart_attach(vm, false);
	if (pending.count || pending.dropped)
		kprintf("vm %s: %zu keys typed were not delivered\n", vm->name,
			pending.count + (size_t)pending.dropped);
	return 0;
}
