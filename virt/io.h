/* IN and OUT as the guest sees them (virt/io.c): the VM's port bus. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

struct vcpu;
struct vexit;

/* An I/O exit. Returns true when the instruction completed and RIP may move past
 * it, false when it raised a fault in the guest or stopped the VM. */
bool emulate_io(struct vcpu *v, const struct vexit *e);
/* IN (in) or OUT of size bytes at port on the VM's port bus, under its lock:
 * a port no device claims reads all ones. */
void io_port_access(struct vcpu *v, uint16_t port, unsigned size, uint64_t *val, bool in);
