/* IN and OUT as the guest sees them (virt/io.c): the VM's port bus. */
#pragma once
#include <stdbool.h>

struct vcpu;
struct vexit;

/* An I/O exit. Returns true when the instruction completed and RIP may move past
 * it, false when it raised a fault in the guest or stopped the VM. */
bool emulate_io(struct vcpu *v, const struct vexit *e);
