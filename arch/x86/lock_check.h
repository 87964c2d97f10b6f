/* The lock checker's per-CPU state (arch/x86/lock_check.c, the rules in
 * docs/locking.md): the locks this CPU holds, in the order it took them, and
 * whether its vCPU is in the entry window. Kernel only. */
#pragma once
#include "arch/x86/lock.h"
#include <stdbool.h>
#include <stdint.h>

#define LOCKCHECK_HELD_MAX 16

struct held_lock {
	const void *lock;
	uintptr_t ip; /* where it was taken */
	uint8_t class, mode;
};

struct lockcheck_cpu {
	unsigned depth; /* entries of held[] in use */
	bool in_window; /* between kick_sync_enter and kick_sync_exit */
	bool reporting; /* printing a report: its own locks are not checked */
	struct held_lock held[LOCKCHECK_HELD_MAX];
};

/* Set once this CPU's GS base holds its struct percpu (percpu_init_bsp):
 * the checker reads it. */
void lockcheck_start(void);
