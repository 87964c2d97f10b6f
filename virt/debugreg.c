/* Guest debug registers (virt/debugreg.h). The guest writes DR0-DR3 (and
 * DR6) without an exit, and VM entry and exit leave them in the CPU (SDM
 * vol. 3C 27.3, 28.5; APM vol. 2 15.5.1 switches DR6 and DR7 alone). sprig
 * sets no breakpoint of its own, so a CPU's hold the values of the last vCPU
 * that ran there: as the FPU state (virt/fpu.c), they are saved and another
 * vCPU's loaded only when a different vCPU enters, or when the CPU stops
 * running the vCPU. Without this, one guest read another's breakpoint
 * addresses, and lost its own when its vCPU moved or shared a CPU. */
#include "virt/debugreg.h"
#include "arch/x86/smp.h"
#include "virt/backend.h"

static struct vcpu *dr_owner[CPU_MAX]; /* per CPU: whose values are in its registers */

#define DR_READ(n, v) __asm__ volatile("mov %%db" #n ", %0" : "=r"(v))
#define DR_WRITE(n, v) __asm__ volatile("mov %0, %%db" #n ::"r"(v))

static void save(struct vcpu *v)
{
	DR_READ(0, v->db[0]);
	DR_READ(1, v->db[1]);
	DR_READ(2, v->db[2]);
	DR_READ(3, v->db[3]);
	if (!backend->dr6_in_control_block)
		DR_READ(6, v->dr6);
}

static void load(const struct vcpu *v)
{
	DR_WRITE(0, v->db[0]);
	DR_WRITE(1, v->db[1]);
	DR_WRITE(2, v->db[2]);
	DR_WRITE(3, v->db[3]);
	if (!backend->dr6_in_control_block)
		DR_WRITE(6, v->dr6);
}

void debugreg_enter(struct vcpu *v)
{
	struct vcpu **owner = &dr_owner[this_cpu_id()];

	if (*owner == v)
		return;
	if (*owner)
		save(*owner);
	load(v);
	*owner = v;
}

void debugreg_put(struct vcpu *v)
{
	struct vcpu **owner = &dr_owner[this_cpu_id()];

	if (*owner == v) {
		save(v);
		*owner = NULL;
	}
}

void debugreg_reset(struct vcpu *v)
{
	debugreg_put(v);
	v->db[0] = v->db[1] = v->db[2] = v->db[3] = 0;
	v->dr6 = DR6_RESET;
}

void debugreg_forget(struct vcpu *v)
{
	for (unsigned c = 0; c < CPU_MAX; c++)
		if (dr_owner[c] == v)
			dr_owner[c] = NULL;
}
