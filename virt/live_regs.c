/* Guest registers that stay in the CPU (virt/live_regs.h). VM entry and exit
 * leave DR0-DR3 in the CPU, and under VMX DR6 and CR2 too (SDM vol. 3C 27.3,
 * 28.5; APM vol. 2 15.5.1: the VMCB holds DR6, DR7 and CR2, the VMCS DR7);
 * the guest writes them without an exit (a page fault writes CR2). sprig
 * sets no breakpoint and takes no page fault of its own, so a CPU's hold
 * the values of the last vCPU that ran there: as the FPU state
 * (virt/fpu.c), they are saved and another vCPU's loaded only when a
 * different vCPU enters, or when the CPU stops running the vCPU. Without
 * this, one guest read another's breakpoint addresses or page-fault
 * address, and lost its own when its vCPU moved or shared a CPU. */
#include "virt/live_regs.h"
#include "arch/x86/smp.h"
#include "virt/backend.h"

static struct vcpu *owner_of[CPU_MAX]; /* per CPU: whose values are in its registers */

#define DR_READ(n, v) __asm__ volatile("mov %%db" #n ", %0" : "=r"(v))
#define DR_WRITE(n, v) __asm__ volatile("mov %0, %%db" #n ::"r"(v))

static void save(struct vcpu *v)
{
	DR_READ(0, v->db[0]);
	DR_READ(1, v->db[1]);
	DR_READ(2, v->db[2]);
	DR_READ(3, v->db[3]);
	if (backend->dr6_cr2_in_control_block)
		return;
	DR_READ(6, v->dr6);
	__asm__ volatile("mov %%cr2, %0" : "=r"(v->cr2));
}

static void load(const struct vcpu *v)
{
	DR_WRITE(0, v->db[0]);
	DR_WRITE(1, v->db[1]);
	DR_WRITE(2, v->db[2]);
	DR_WRITE(3, v->db[3]);
	if (backend->dr6_cr2_in_control_block)
		return;
	DR_WRITE(6, v->dr6);
	__asm__ volatile("mov %0, %%cr2" ::"r"(v->cr2));
}

void live_regs_enter(struct vcpu *v)
{
	struct vcpu **owner = &owner_of[this_cpu_id()];

	if (*owner == v)
		return;
	if (*owner)
		save(*owner);
	load(v);
	*owner = v;
}

void live_regs_put(struct vcpu *v)
{
	struct vcpu **owner = &owner_of[this_cpu_id()];

	if (*owner == v) {
		save(v);
		*owner = NULL;
	}
}

void live_regs_reset(struct vcpu *v)
{
	live_regs_put(v);
	v->db[0] = v->db[1] = v->db[2] = v->db[3] = 0;
	v->dr6 = DR6_RESET;
	v->cr2 = 0;
}

void live_regs_forget(struct vcpu *v)
{
	for (unsigned c = 0; c < CPU_MAX; c++)
		if (owner_of[c] == v)
			owner_of[c] = NULL;
}
