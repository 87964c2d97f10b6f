/* One vCPU on the CPU that runs it: entries, exits and their handlers,
 * interrupt delivery, its timers, INIT and SIPI. The per-CPU loop
 * (virt/sched.c) chooses the vCPU; this runs it. */
#pragma once
#include "virt/vm.h"

/* Could v run now, or has it INIT or a SIPI to take? Under the VM's lock;
 * the control block need not be loaded. A halted vCPU's timer wakes it only
 * once fired: call vcpu_fire_timers first. */
bool vcpu_wants_cpu(struct vcpu *v);
/* Fire what v's APIC timer and the chipset have due by now. Under the VM's lock. */
void vcpu_fire_timers(struct vcpu *v);
/* Run v, loaded on this CPU, interrupts off, until the VM stops, v halts or
 * waits for a SIPI, a host interrupt (the tick, a kick) makes it exit, or
 * the TSC reaches end: then another vCPU may have the CPU. The clock is
 * read after every exit: an emulator may never deliver a host interrupt
 * to a guest that exits without pause (Bochs' VMX does not). */
void vcpu_run_slice(struct vcpu *v, uint64_t end);
/* Make the host timer come by v's next guest timer or chipset event (its
 * sleep must end then). Under the VM's lock. */
void vcpu_arm_host_timer(struct vcpu *v);
/* The state INIT leaves: the backend's (real mode at the reset vector) and
 * the registers (EDX the processor signature). The control block loaded. */
void vcpu_init_state(struct vcpu *v);
