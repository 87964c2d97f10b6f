/* Every CPU of the machine, started the PC way: the CPUs from the ACPI MADT,
 * each AP woken by INIT, SIPI, SIPI through the local APIC (SDM vol. 3
 * 9.4.4.1, Intel MP specification B.4) into a trampoline below 1 MiB
 * (ap_boot.S) that takes it through protected mode to long mode on the BSP's
 * page tables, its own stack, the runtime's IDT and GDT. CPU indexes: 0 is
 * the BSP, the APs follow in MADT order. */
#pragma once

#define SMP_CPU_MAX 128	/* sprig's VM_VCPUS_MAX */
#define SMP_AP_STACK 16384	/* bytes of stack per AP */

#ifndef __ASSEMBLY__
#include <stdbool.h>
#include <stdint.h>
#include "guests/rt/rt.h"

enum smp_state {
	SMP_OFFLINE,	/* not started (yet) */
	SMP_ONLINE,	/* running: ap_main called */
	SMP_FAILED,	/* did not come up within the bound; sent INIT again */
};

struct smp_cpu {
	uint32_t apic_id;	/* from the MADT; the BSP's from its register */
	uint32_t acpi_uid;
	bool madt;		/* listed as enabled in the MADT */
	volatile uint32_t state;	/* enum smp_state */
	/* What the CPU itself read once up: */
	uint32_t apic_id_reg;	/* its APIC ID register */
	uint32_t cpuid_apic_id;	/* CPUID.1:EBX[31:24], the initial APIC ID */
	uint32_t cpuid_x2apic_id;	/* CPUID.0xB:EDX; ~0 without leaf 0xB */
};

/* The CPUs the MADT lists as enabled (at most SMP_CPU_MAX), after
 * smp_start(); 1 (this CPU) without a MADT or an APIC. */
extern unsigned int smp_cpu_count;
extern struct smp_cpu smp_cpus[SMP_CPU_MAX];

/* Starts every AP, one at a time; each runs ap_main(its index) once up (with
 * interrupts off) and halts if it returns. An AP that does not report within
 * the bound is reported on an info: line, marked SMP_FAILED and sent INIT.
 * Calibrates the TSC if tsc_khz is 0. idt_install() first: every CPU takes
 * its interrupts through that dispatcher. In x2APIC mode if this CPU is in it
 * (every AP is switched too). Returns the number of CPUs running, this one
 * included; a second call only returns it. */
unsigned int smp_start(const struct mb1_info *mbi, void (*ap_main)(unsigned int cpu));

/* This CPU's index (0 before smp_start), through GS: no exit under sprig. */
unsigned int smp_index(void);
/* The index of the CPU with that APIC ID, -1 if none. */
int smp_index_of(uint32_t apic_id);

/* Waits until every running CPU has reached it (a generation count); false if
 * they did not within 10 s. */
bool smp_barrier(void);

/* An ap_main that runs what smp_run() hands out, forever. */
void smp_serve(unsigned int cpu);
/* Runs fn(index) on every running CPU, this one included, and returns once
 * all have returned; false (with an info: line per CPU) if one did not
 * within 10 s plus ten times this CPU's own run. The APs must be in
 * smp_serve. */
bool smp_run(void (*fn)(unsigned int cpu));

/* For a guest whose workload runs on every CPU (`cpus=N`): starts the APs
 * into smp_serve unless want is 1; true when exactly want CPUs run, indexes
 * 0 to want - 1 (otherwise a line "guest: ..." says what came up). */
bool smp_workers(const struct mb1_info *mbi, unsigned int want, const char *guest);
/* CPU cpu's share [*first, *end) of n items split over count CPUs, in
 * multiples of align items (the last CPU takes what remains). */
void smp_share(uint64_t n, uint64_t align, unsigned int cpu, unsigned int count, uint64_t *first,
	       uint64_t *end);
#endif
