/* COM1 at 0x3f8 on ISA IRQ 4 (docs/platform.md, "COM1: a 16550A"): the
 * 16550A model (dev/uart16550.c) wired to a VM, its output to sprig's
 * console by lines (or raw while `vm console` holds it) and its input from
 * `vm console`. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "dev/bus.h"
#include "dev/uart16550.h"

#define COM1_BASE 0x3f8
#define COM1_IRQ 4

/* What the guest sent through COM1 and sprig has not printed yet: a partial
 * line, kept in snapshots (virt/vcpu_state.h, REC_VM). */
struct com1_out {
	char line[160];
	unsigned len;
};

/* A VM's COM1: the 16550A (a device record of its own in snapshots), the
 * level its IRQ line was last given, the output not printed yet, and whether
 * `vm console` holds sprig's console (keys to the receiver, output raw) with
 * the guest's last raw line unfinished. */
struct vm_com1 {
	struct uart16550 uart;
	bool irq_level;
	struct com1_out out;
	bool attached;
	bool mid_line;
};

struct vm;

extern const struct device_spec com1_device; /* its model: the vm_com1's uart */

/* A byte the guest sends through COM1: the console prints it by lines,
 * prefixed with the VM's name, or as it comes while `vm console` is attached.
 * Under the VM's lock. */
void com1_transmit(struct vm *vm, uint8_t c);
/* Raw output (`vm console`) the guest left mid-line: end it, so that what
 * sprig prints next starts on a line of its own. */
void com1_end_raw_line(struct vm *vm);
/* Print what the guest left in its COM1 line buffer (attached: end its raw
 * line). */
void com1_flush_line(struct vm *vm);
/* Bytes from the line into COM1's receiver (which may interrupt), as many
 * as it has room for: the rest wait, as behind a terminal's flow control.
 * When all were taken the line goes quiet (the character timeout). Returns
 * how many were taken. Takes the VM's lock; from the console. */
size_t com1_receive(struct vm *vm, const uint8_t *buf, size_t n);
/* `vm console` takes sprig's console for the guest's COM1 or gives it back;
 * a partial line is printed first. Takes the VM's lock. */
void com1_attach(struct vm *vm, bool attach);
