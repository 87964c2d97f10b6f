/* Guest-physical addresses outside guest memory (virt/mmio.c). */
#pragma once
#include "virt/guest_mode.h"
#include "virt/vm.h"

/* A nested page fault at an address no memory slot holds: emulate the
 * instruction against the device there (the vCPU's local APIC, or one on
 * the VM's MMIO bus) or, where nothing is, as a PC does (reads all ones,
 * writes dropped; vm->strict_mmio stops the guest instead). RIP moves past it when done; a failure stops the VM. */
void mmio_exit(struct vcpu *v, const struct vexit *e);
/* An I/O exit of INS or OUTS: one iteration (the CPU runs a REP again),
 * memory sent where its address belongs as for MMIO. Always false: RIP has
 * moved, if at all, with the emulation. */
bool string_io_exit(struct vcpu *v, const struct vexit *e);
/* Up to len bytes at the guest's CS:RIP in mode m, read through its own
 * page tables: how many could be read (instructions that exit without their
 * bytes: an MMIO access, a #UD the backend intercepts). */
size_t fetch_at_rip(struct vcpu *v, const struct guest_mode *m, uint8_t *buf, size_t len);
