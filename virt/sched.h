/* Which vCPU runs on which host CPU, and how CPUs reach each other's vCPUs:
 * placement at creation, the per-CPU run loops that share a CPU between its
 * vCPUs, kicks, and the MMU's remote TLB flush (virt/kick.h underneath). */
#pragma once
#include "virt/vm.h"

/* `mmu remote_flush=on|off` (shell/mmu_options.c): off posts the flush
 * request without kicking or waiting (kick_remote_flush with kick NULL). */
extern bool vm_remote_flush;

/* Give each vCPU its host CPU: the CPUs of list[] in turn (each must exist and
 * be online), else the online CPUs but the console's (CPU 0) in turn, else
 * CPU 0. False with a reason. */
bool vm_place_vcpus(struct vm *vm, const uint8_t *list, unsigned len, char *err, size_t errlen);

/* Run every vCPU of vm on its CPU until a stop (vm_running false), the
 * console CPU polling for Ctrl-C and the deadline (TSC, 0 for none) and
 * calling its observer's on_watch; returns when every CPU has left the VM. */
void sched_run(struct vm *vm, uint64_t deadline);

/* What the console CPU asks about once a millisecond while a VM runs: the
 * console layer registers it at start-up (the shell's Ctrl-C, `vm console`'s
 * keys). It returns why to pause the VM, or NULL to go on. */
void sched_set_console_poll(const char *(*poll)(struct vm *vm));

/* The VM's lock (struct vm.lock), taken with interrupts off; the unlock
 * first wakes every other vCPU whose APIC accepted something meanwhile
 * (kicking its CPU out of the guest or its halt). self: the vCPU whose CPU
 * this is, NULL on the console. */
void vm_lock(struct vm *vm);
void vm_unlock(struct vm *vm, struct vcpu *self);
/* The vCPU whose exit is being handled on this CPU (vm_fail and the others
 * record it), or NULL on the console. */
struct vcpu *vm_current_vcpu(void);

/* Kick every vCPU of vm that may be in guest mode or asleep. */
void vm_kick_all(struct vm *vm);

/* A directed yield (KVM_HC_SCHED_YIELD, KVM_HC_KICK_CPU): if target wants
 * its CPU and is not running, its CPU takes it next; self's slice ends if
 * that CPU is self's, else whatever runs there is kicked out. True if
 * target gets the CPU so. */
bool vm_yield_to(struct vcpu *self, struct vcpu *target);

/* The MMU's flush callback (mmu_init), ctx the VM: every vCPU flushes before
 * its next entry; those in guest mode are kicked and waited for. */
void vm_flush_tlb(void *ctx);
