/* KVM's paravirtual interface for Linux guests beyond the clock (Linux
 * Documentation/virt/kvm/x86/cpuid.rst, hypercalls.rst and msr.rst; KVM's
 * arch/x86/kvm/x86.c and lapic.c): the features sprig offers in CPUID
 * 0x40000101 EAX beside the clock's (virt/pvclock.h), PV send-IPI's walk
 * of the guest's APIC ID bitmaps. Pure: the
 * APICs come in (dev/lapic.h); virt/hypercall.c calls in. Also built for the host
 * (tests/unit/test_kvm_pv.c). */
#pragma once
#include <stdbool.h>
#include <stdint.h>

struct lapic_bus;
struct mmu;

#define KVM_FEATURE_PV_UNHALT (1u << 7)       /* KVM_HC_KICK_CPU */
#define KVM_FEATURE_PV_SEND_IPI (1u << 11)    /* KVM_HC_SEND_IPI */
#define KVM_FEATURE_PV_SCHED_YIELD (1u << 13) /* KVM_HC_SCHED_YIELD */
/* What sprig offers beyond the clock. */
#define KVM_PV_FEATURES (KVM_FEATURE_PV_UNHALT | KVM_FEATURE_PV_SEND_IPI | \
			 KVM_FEATURE_PV_SCHED_YIELD)

#define KVM_EINVAL 22

/* KVM_HC_SEND_IPI (KVM's kvm_pv_send_ipi): bit i of low names APIC ID
 * min + i, bit i of high APIC ID min + 64 + i (32 and 32 + i outside
 * 64-bit mode, wide false, where the bitmaps are 32 bits), min wrapping
 * at 2^32 as KVM's u32 does; IDs above 255 (KVM's map of a VM of fewer
 * than 256 vCPUs) and 0xff name nobody. icr is the ICR's low word: its vector, delivery mode,
 * level and trigger mode go to each APIC named, physically, over the bus
 * (lapic_bus_deliver); a logical destination or a shorthand is
 * -KVM_EINVAL. Returns the number of APICs that accepted the message. */
int64_t kvm_pv_send_ipi(struct lapic_bus *bus, uint64_t low, uint64_t high, uint32_t min,
			uint64_t icr, bool wide);

