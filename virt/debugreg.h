/* The guest's debug registers that neither the VMCB nor the VMCS switches:
 * DR0-DR3 on both, DR6 under VMX (virt/debugreg.c). */
#pragma once

struct vcpu;

/* DR6's value at reset (SDM vol. 3B 17.2.3): its reserved bits set. */
#define DR6_RESET 0xffff0ff0ull

/* INIT (and a new vCPU): DR0-DR3 zero, DR6 at its reset value, on this CPU
 * too if v's were in it. */
void debugreg_reset(struct vcpu *v);
/* Before each entry: make v's values the CPU's. */
void debugreg_enter(struct vcpu *v);
/* This CPU stops running v: its values, if in the CPU, go to struct vcpu,
 * where another CPU and snapshots take them. */
void debugreg_put(struct vcpu *v);
/* v is freed: no CPU may keep it as the owner of its registers. */
void debugreg_forget(struct vcpu *v);
