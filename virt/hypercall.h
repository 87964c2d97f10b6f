/* The hypercall ABI, shared by sprig (virt/hypercall.c) and its guests
 * (guests/). A guest executes VMMCALL (AMD) or VMCALL (Intel) with
 *   RAX = hypercall number, RBX, RCX, RDX, RSI = arguments;
 * the result comes back in RAX, and every other register is preserved.
 * Outside 64-bit mode the number, the arguments and the result are 32 bits
 * wide (as KVM has it). Errors are small negative numbers.
 *
 * sprig's own numbers start at HC_BASE ("SP"), clear of KVM's (0 to 12,
 * include/uapi/linux/kvm_para.h), so that a kernel written for KVM gets
 * KVM's answers: its paravirtual IPIs, kick and yield (virt/kvm_pv.h), 0
 * for KVM_HC_VAPIC_POLL_IRQ, -KVM_EOPNOTSUPP for KVM_HC_CLOCK_PAIRING (a
 * host clock it cannot pair), and -KVM_ENOSYS for every other number, as
 * KVM answers a guest it advertised no such feature to. An unknown number within sprig's range [HC_BASE, HC_BASE +
 * HC_RANGE) stops the guest: a sprig guest that calls what does not exist
 * is broken. Guest-physical ranges passed as arguments are checked against
 * the guest's memslots. */
#pragma once

#define HC_BASE 0x53500000u   /* 'S' 'P' in bits 31:20 */
#define HC_RANGE 0x100000u
#define HC_VERSION (HC_BASE + 0)         /* () -> HC_ABI_VERSION */
#define HC_EXIT (HC_BASE + 1)            /* (status) -> does not return: the VM exits with status */
#define HC_BALLOON_RELEASE (HC_BASE + 2) /* (gpa, len) -> 0: the host drops the pages' backing
					  * and mappings; the next access gets zeroed (or
					  * restored) pages */
#define HC_TSC_KHZ (HC_BASE + 3)         /* () -> the guest TSC's frequency in kHz */
#define HC_TIME_NS (HC_BASE + 4)         /* () -> nanoseconds since the VM was created */
#define HC_PUTS (HC_BASE + 5)            /* (gpa, len) -> 0: write len bytes (at most 4096) to
					  * the console */
#define HC_SNAPSHOT_POINT (HC_BASE + 6)  /* () -> 0: the VM pauses here, after the call, so that
					  * the console can snapshot it (`vm snapshot`); `vm
					  * run` continues it */
#define HC_ARGS (HC_BASE + 7)            /* (gpa, len) -> length: the arguments of `vm create
					  * ... -- ARGS` as a NUL-terminated string (cut to
					  * len); for a VM restored from a snapshot, those of
					  * the restore, not of the boot */
#define HC_LOST_RANGES (HC_BASE + 8)     /* (gpa, max) -> n: the ranges sprig discarded behind
					  * the guest's back (their pages now read as zero)
					  * since the last call, as n struct hc_range at gpa
					  * (at most max); the rest stay for the next call.
					  * HC_ELOST if more were discarded than sprig could
					  * remember: the guest cannot know which */
#define HC_CLONE_POINT (HC_BASE + 9)     /* () -> 0 in a clone, the clone's number (> 0) in this
					  * VM: the VM pauses here, after the call, so that the
					  * console can clone it (`vm clone`), as with fork;
					  * `vm run` continues it */
#define HC_COUNT 10 /* sprig's numbers: HC_BASE to HC_BASE + HC_COUNT - 1 */

/* KVM's hypercalls that sprig answers as KVM does (include/uapi/linux/
 * kvm_para.h; arguments a0-a3 in RBX, RCX, RDX, RSI): the paravirtual ones
 * as virt/kvm_pv.h describes them, the rest as KVM without paravirtual
 * features; and KVM's errors. */
#define KVM_HC_VAPIC_POLL_IRQ 1
#define KVM_HC_KICK_CPU 5     /* (flags, APIC ID) -> 0: wake that vCPU from HLT, yield to it */
#define KVM_HC_CLOCK_PAIRING 9
#define KVM_HC_SEND_IPI 10    /* (bitmap low, bitmap high, min, ICR) -> IPIs delivered */
#define KVM_HC_SCHED_YIELD 11 /* (APIC ID) -> 0: yield to that vCPU if it waits for its CPU */
#define KVM_ENOSYS 1000
#define KVM_EINVAL 22
#define KVM_EOPNOTSUPP 95

#define HC_ABI_VERSION 0x00020000 /* major << 16 | minor; 2: the numbers moved to HC_BASE */

#define HC_EPERM (-1)   /* called from CPL 1-3: only the guest kernel may call */
#define HC_EINVAL (-22) /* a bad argument (length, alignment, or range outside guest memory) */
#define HC_ELOST (-5)   /* HC_LOST_RANGES: discards were forgotten (too many since the last call) */

#include <stdint.h>

/* A guest-physical range, as HC_LOST_RANGES writes them. */
struct hc_range {
	uint64_t gpa;
	uint64_t len;
};

/* sprig's side (virt/hypercall.c): a VMMCALL or VMCALL exit. Returns true when
 * the instruction completed and RIP may move past it, false when it raised a
 * fault in the guest or stopped the VM. */
#include <stdbool.h>
struct vcpu;
bool emulate_hypercall(struct vcpu *v);
