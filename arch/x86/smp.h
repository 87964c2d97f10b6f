/* Every CPU: bring-up of the application processors (INIT-SIPI-SIPI through
 * the local APIC, from the trampoline below 1 MiB), their states, and the two
 * ways one CPU asks another for something: hand an idle CPU a function to run,
 * and kick a CPU with an IPI (a guest running there exits, a halted CPU wakes).
 * Per-CPU data is reached through GS (arch/x86/percpu.h), never by scanning. */
#pragma once
#include "arch/x86/direct_map.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CPU_MAX 64

enum cpu_state {
	CPU_OFFLINE, /* left in INIT: beyond maxcpus=, or never started */
	CPU_ONLINE,
	CPU_FAILED,  /* did not come up (or could not enable virtualization): left in INIT */
};

/* What a client needs of every AP before it counts as online (as Linux's
 * cpuhp_setup_state): run on the AP, interrupts off; false, with the reason
 * in err, leaves the AP in INIT. One client (virtualization, which enables
 * itself on each AP); registered before smp_init. */
typedef bool (*smp_online_fn)(char *err, size_t len);
void smp_on_online(smp_online_fn fn);

/* The memory bring-up takes from its caller, for each AP's per-CPU area and
 * stack: 2^order zeroed 4 KiB pages (0 when there are none), and their
 * return when an AP cannot start. The frame allocator's functions fit. */
struct smp_memory {
	paddr_t (*alloc)(unsigned order);
	void (*free)(paddr_t pa, unsigned order);
};

/* Bring up every enabled CPU the MADT lists, at most maxcpus in all (0: no
 * limit). Call on the bootstrap CPU once mem, the APIC and the online
 * hook's client are ready. */
void smp_init(unsigned maxcpus, const struct smp_memory *mem);
/* The AP's first C, where its trampoline (arch/x86/trampoline.S) ends: long
 * mode, its own stack, interrupts off. */
void __attribute__((noreturn)) ap_main(void *percpu);

/* CPUs the MADT lists as enabled, the bootstrap CPU first (id 0): ids are
 * 0 .. smp_cpu_count() - 1 whatever their state. */
unsigned smp_cpu_count(void);
unsigned smp_online_count(void);
enum cpu_state smp_cpu_state(unsigned id);
uint32_t smp_apic_id(unsigned id);
/* The id of the CPU this runs on (from GS). */
unsigned this_cpu_id(void);

/* Have the online, idle CPU id run fn(arg), with interrupts on as in the
 * shell; it returns to its idle loop afterwards. False if id is this CPU, not
 * online, or still running an earlier function. */
bool smp_call(unsigned id, void (*fn)(void *arg), void *arg);
/* True from smp_call until fn has returned on that CPU. */
bool smp_busy(unsigned id);
/* Send CPU id the kick IPI (its handler only acknowledges it): a guest running
 * there exits to sprig, a CPU halted in its idle or run loop wakes. */
void smp_kick(unsigned id);
