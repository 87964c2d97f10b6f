/* The vendor-neutral handlers of guest exits (virt/cpuid.c, msr.c, io.c,
 * hypercall.c). Each returns true when the instruction completed and RIP may
 * move past it, false when it raised a fault in the guest or stopped the VM. */
#pragma once
#include <stdbool.h>
#include "virt/vm.h"

/* The signature of CPUID leaf 0x40000000 (EBX, ECX, EDX), by which guests
 * know they run under sprig. */
#define SPRIG_CPUID_SIGNATURE "sprig-hv\0\0\0\0"
#define SPRIG_CPUID_LEAF 0x40000000u

bool emulate_cpuid(struct vcpu *v);
/* The guest's TSC now (the host's plus its offset): the local APIC's clock. */
uint64_t guest_tsc(const struct vcpu *v);
bool emulate_rdmsr(struct vcpu *v);
bool emulate_wrmsr(struct vcpu *v);
bool emulate_io(struct vcpu *v, const struct vexit *e);
bool emulate_hypercall(struct vcpu *v);
/* A byte the guest sends through COM1: the console prints it by lines,
 * prefixed with the VM's name, or as it comes while `vm console` is attached.
 * Under the VM's lock. */
void uart_transmit(struct vm *vm, uint8_t c);
/* Print what the guest left in its COM1 line buffer (attached: end its raw
 * line). */
void uart_flush_line(struct vm *vm);
/* Bytes from the line into COM1's receiver (which may interrupt), as many
 * as it has room for: the rest wait, as behind a terminal's flow control.
 * When all were taken the line goes quiet (the character timeout). Returns
 * how many were taken. Takes the VM's lock; from the console. */
size_t uart_receive(struct vm *vm, const uint8_t *buf, size_t n);
/* `vm console` takes sprig's console for the guest's COM1 or gives it back;
 * a partial line is printed first. Takes the VM's lock. */
void uart_attach(struct vm *vm, bool attach);
