/* The vendor-neutral handlers of guest exits (virt/cpuid.c, msr.c, io.c,
 * hypercall.c). Each returns true when the instruction completed and RIP may
 * move past it, false when it raised a fault in the guest or stopped the VM. */
#pragma once
#include <stdbool.h>
#include "virt/cpuid_policy.h"
#include "virt/vm.h"

/* The signature of CPUID leaf 0x40000000 (EBX, ECX, EDX), by which guests
 * know they run under sprig. */
#define SPRIG_CPUID_SIGNATURE "sprig-hv\0\0\0\0"
#define SPRIG_CPUID_LEAF 0x40000000u

bool emulate_cpuid(struct vcpu *v);
/* The CPU and the vCPU as the CPUID policy sees them (virt/cpuid.c). */
struct cpuid_host vcpu_cpuid_host(struct vcpu *v);
/* The guest's TSC now (the host's plus its offset): the local APIC's clock. */
uint64_t guest_tsc(const struct vcpu *v);
bool emulate_rdmsr(struct vcpu *v);
bool emulate_wrmsr(struct vcpu *v);
/* Does this CPU have IA32_TSC_AUX (RDTSCP or RDPID)? */
bool cpu_has_tsc_aux(void);
/* A restored vCPU's paravirtual clock: its structure written anew for this
 * machine's TSC rate, when the guest enabled it (virt/msr.c). */
void msr_pvclock_resume(struct vcpu *v);
bool emulate_io(struct vcpu *v, const struct vexit *e);
bool emulate_hypercall(struct vcpu *v);
