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
