/* Per-CPU data: one struct percpu per CPU, found through GS. Each CPU's
 * IA32_GS_BASE holds the address of its own, whose first field points at
 * itself, so that this_cpu() is one load from GS:0 (sprig never loads a GS
 * selector, which would clear the base). The bootstrap CPU's is static, set
 * first thing in kmain; an AP's comes from the frame allocator and is loaded
 * by the AP itself at its first C instruction (arch/x86/smp.c). Kernel only. */
#pragma once
#include "arch/x86/apic.h"
#include "arch/x86/gdt.h"
#include "arch/x86/lock_check.h"
#include "arch/x86/smp.h"
#include "arch/x86/trap.h"
#include <stdint.h>

/* A function handed to an idle CPU (smp_call). */
enum smp_call_state {
	SMP_CALL_IDLE,    /* nothing to run: smp_call may claim it */
	SMP_CALL_CLAIMED, /* a caller is filling fn and arg */
	SMP_CALL_READY,   /* fn and arg set: the CPU runs it, then goes idle */
};

struct percpu {
	struct percpu *self; /* at GS:0 */
	unsigned id;         /* 0 .. smp_cpu_count() - 1, the bootstrap CPU 0 */
	uint32_t apic_id;
	struct apic_timer timer;
	uint64_t kicks;      /* kick IPIs taken (smp_kick) */
	uint64_t host_nmis;  /* NMIs taken: every one is counted and survived */
	uint32_t call_state; /* enum smp_call_state */
	void (*call_fn)(void *arg);
	void *call_arg;
	/* The console lock (arch/x86/uart.c): how deep this CPU holds it, and
	 * its RFLAGS from before the outermost lock. */
	unsigned console_depth;
	uint64_t console_flags;
	struct lockcheck_cpu lockcheck; /* the locks it holds (arch/x86/lock_check.c) */
	void *virt;  /* the backend's state for this CPU (svm_cpu, vmx_cpu) */
	void *sched; /* virt/'s scheduler state for this CPU */
	uint64_t gdt[GDT_ENTRIES] __attribute__((aligned(16)));
	struct tss tss __attribute__((aligned(16)));
	struct idt_gate idt[IDT_GATES] __attribute__((aligned(16)));
	uint8_t ist_stacks[IST_STACKS][IST_STACK_SIZE] __attribute__((aligned(16)));
};

static inline struct percpu *this_cpu(void)
{
	struct percpu *pc;

	__asm__ volatile("mov %%gs:0, %0" : "=r"(pc));
	return pc;
}

/* The bootstrap CPU's area (id 0), loaded into its GS base. Call first:
 * the console lock already reads it. */
void percpu_init_bsp(void);
/* Give pc (zeroed) its id and APIC ID and record it as CPU id's. */
void percpu_setup(struct percpu *pc, unsigned id, uint32_t apic_id);
/* Make pc this CPU's: its GS base; and the control state every CPU runs
 * sprig with (IA32_PAT's WB and UC entries, CR4.MCE). */
void percpu_load(struct percpu *pc);
/* CPU id's area; NULL for an id that was never set up. */
struct percpu *percpu_of(unsigned id);
