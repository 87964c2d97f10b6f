/* The guest registers that neither the VMCB nor the VMCS switches and the
 * guest writes without an exit: DR0-DR3 on both backends, DR6 and CR2 under
 * VMX (virt/live_regs.c). */
#pragma once

struct vcpu;

/* DR6's value at reset (SDM vol. 3B 17.2.3): its reserved bits set. */
#define DR6_RESET 0xffff0ff0ull

/* INIT (and a new vCPU): DR0-DR3 and CR2 zero, DR6 at its reset value, on
 * this CPU too if v's were in it. */
void live_regs_reset(struct vcpu *v);
/* Before each entry: make v's values the CPU's. */
void live_regs_enter(struct vcpu *v);
/* This CPU stops running v: its values, if in the CPU, go to struct vcpu,
 * where another CPU and snapshots take them. */
void live_regs_put(struct vcpu *v);
/* v is freed: no CPU may keep it as the owner of its registers. */
void live_regs_forget(struct vcpu *v);
