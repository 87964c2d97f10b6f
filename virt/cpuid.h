/* CPUID as the guest sees it (virt/cpuid.c; the policy is in cpuid_policy.c). */
#pragma once
#include <stdbool.h>
#include "virt/cpuid_policy.h"

struct vcpu;

/* The signature of CPUID leaf 0x40000000 (EBX, ECX, EDX), by which guests
 * know they run under sprig. */
#define SPRIG_CPUID_SIGNATURE "sprig-hv\0\0\0\0"
#define SPRIG_CPUID_LEAF 0x40000000u

/* A CPUID exit. Returns true when the instruction completed and RIP may move past
 * it, false when it raised a fault in the guest or stopped the VM. */
bool emulate_cpuid(struct vcpu *v);
/* The CPU and the vCPU as the CPUID policy sees them. */
struct cpuid_host vcpu_cpuid_host(struct vcpu *v);
