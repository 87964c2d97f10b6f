/* KVM's paravirtual interface for Linux guests beyond the clock (Linux
 * Documentation/virt/kvm/x86/cpuid.rst, hypercalls.rst and msr.rst; KVM's
 * arch/x86/kvm/x86.c and lapic.c): the features sprig offers in CPUID
 * 0x40000101 EAX beside the clock's (virt/pvclock.h), PV send-IPI's walk
 * of the guest's APIC ID bitmaps, the steal-time record (how long a
 * vCPU waited for its CPU, virt/steal_time.c) with PV TLB flush, and the
 * PV EOI word (virt/pv_eoi.c). Pure: the
 * APICs and guest memory come in (dev/lapic.h, mm/mmu.h); virt/hypercall.c,
 * virt/msr.c and virt/sched.c call in. Also built for the host
 * (tests/unit/test_kvm_pv.c). */
#pragma once
#include <stdbool.h>
#include <stdint.h>

struct kick_sync;
struct lapic;
struct lapic_bus;
struct mmu;

#define KVM_FEATURE_STEAL_TIME (1u << 5)      /* MSR_KVM_STEAL_TIME */
#define KVM_FEATURE_PV_EOI (1u << 6)          /* MSR_KVM_PV_EOI_EN */
#define KVM_FEATURE_PV_UNHALT (1u << 7)       /* KVM_HC_KICK_CPU */
#define KVM_FEATURE_PV_TLB_FLUSH (1u << 9)    /* KVM_VCPU_FLUSH_TLB in the steal-time record */
#define KVM_FEATURE_PV_SEND_IPI (1u << 11)    /* KVM_HC_SEND_IPI */
#define KVM_FEATURE_PV_SCHED_YIELD (1u << 13) /* KVM_HC_SCHED_YIELD */
/* What sprig offers beyond the clock. */
#define KVM_PV_FEATURES (KVM_FEATURE_STEAL_TIME | KVM_FEATURE_PV_EOI | KVM_FEATURE_PV_UNHALT | \
			 KVM_FEATURE_PV_TLB_FLUSH | KVM_FEATURE_PV_SEND_IPI |                \
			 KVM_FEATURE_PV_SCHED_YIELD)

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

/* MSR_KVM_STEAL_TIME: the gpa of the vCPU's 64-byte struct kvm_steal_time
 * (steal u64 at 0, version u32 at 8, flags u32 at 12, preempted u8 at 16),
 * bit 0 enabling it; bits 5:1 are reserved (KVM: #GP), so the record never
 * crosses a page. */
#define MSR_KVM_STEAL_TIME 0x4b564d03u
#define KVM_MSR_ENABLED 1ull
#define KVM_STEAL_RESERVED_MASK 0x3eull
#define KVM_STEAL_TIME_SIZE 64
#define KVM_VCPU_PREEMPTED 1u
/* PV TLB flush: another vCPU that would IPI a preempted one for a TLB
 * flush sets this beside KVM_VCPU_PREEMPTED (LOCK CMPXCHG) instead. */
#define KVM_VCPU_FLUSH_TLB 2u

/* A vCPU's steal time: what its MSR says and how long it waited. */
struct kvm_steal {
	uint64_t msr;         /* MSR_KVM_STEAL_TIME as written */
	uint64_t waited_ns;   /* runnable but not running, since the VM began */
	uint64_t recorded_ns; /* waited_ns when the record last took it */
	uint64_t wait_tsc;    /* since when it waits, 0 while it does not */
	bool preempted;       /* the record says KVM_VCPU_PREEMPTED */
};

/* KVM's record_steal_time on the record at gpa: preempted exchanged for 0
 * in one atomic access (a vCPU's LOCK CMPXCHG adding KVM_VCPU_FLUSH_TLB
 * lands before or after, never lost), the version made odd (a guest's odd
 * version first even: junk at the first write), delta_ns added to steal,
 * the version even again. A flush the old value asked for is posted to the
 * vCPU's requests (tlb: KICK_REQ_FLUSH_TLB), so that its next entry
 * flushes its TLB context on the CPU it enters on. 1 then, else 0; -1 if
 * the record is not in guest memory (nothing written). */
int kvm_steal_time_record(struct mmu *mmu, uint64_t gpa, uint64_t delta_ns,
			  struct kick_sync *tlb);
/* KVM's kvm_steal_time_set_preempted: preempted = KVM_VCPU_PREEMPTED. 0 or -1. */
int kvm_steal_time_preempt(struct mmu *mmu, uint64_t gpa);

/* MSR_KVM_PV_EOI_EN: the gpa of the vCPU's 4-byte PV EOI word, bit 0
 * enabling it; bit 1 is reserved (the word 4-byte aligned: KVM's #GP).
 * Bit 0 of the word (KVM_PV_EOI_ENABLED), which the host sets before an
 * entry, lets the guest clear it instead of writing the APIC's EOI; the
 * host then does the EOI at the next exit. */
#define MSR_KVM_PV_EOI_EN 0x4b564d04u
#define KVM_PV_EOI_RESERVED_MASK 0x2ull
#define KVM_PV_EOI_ENABLED 1u

/* A vCPU's PV EOI: its MSR, and whether the word now says enabled. */
struct kvm_pv_eoi {
	uint64_t msr; /* MSR_KVM_PV_EOI_EN as written */
	bool pending; /* set in the word since the last exit (KVM's KVM_APIC_PV_EOI_PENDING) */
};

/* KVM's apic_sync_pv_eoi_to_guest, before an entry (the APIC locked, its
 * events delivered): when PV EOI is enabled and the EOI to come would only
 * clear one ISR bit (lapic_eoi_is_plain), the word's low byte becomes
 * KVM_PV_EOI_ENABLED and p is pending. */
void kvm_pv_eoi_before_entry(struct kvm_pv_eoi *p, const struct lapic *a, struct mmu *mmu);
/* KVM's apic_sync_pv_eoi_from_guest, after the exit or an entry given up:
 * true when the guest signalled its EOI, which the caller then does
 * (lapic_eoi) — the guest cleared the word, or it could not be read or
 * cleared (taken for an EOI, as KVM does); a word that still says enabled
 * is cleared. Nothing pending stays: false. */
bool kvm_pv_eoi_after_exit(struct kvm_pv_eoi *p, struct mmu *mmu);
