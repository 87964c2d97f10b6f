/* A vCPU's entry sequence and requests, and the remote TLB flush built on
 * them (as KVM's kvm_make_all_cpus_request with a wait). Header-only and free
 * of kernel dependencies, so that the host concurrency tests run the same code
 * with threads standing in for CPUs.
 *
 * The vCPU's CPU, with interrupts off: kick_sync_enter (seq becomes odd, a full
 * barrier, the requests taken), then re-check whatever other CPUs change before
 * they kick (pending interrupts, the VM's state) and either enter the guest or
 * give up, then kick_sync_exit (seq even). Another CPU: change that state or
 * post a request, then kick_sync_request / kick_sync_in_guest; if the vCPU may be
 * in guest mode, kick its CPU (interrupts being off there, a kick that arrives
 * before the entry makes the guest exit at once). To wait for the vCPU to have
 * left guest mode, wait for seq to move from the value seen: once it has, the
 * vCPU either exited or entered again after taking the request.
 *
 * Between kick_sync_enter and kick_sync_exit (the entry window) the vCPU's CPU
 * must not wait for another CPU, nor take a lock whose holder may (the rule
 * and the lock order: docs/locking.md; lockcheck_window marks the window). */
#pragma once
#include "arch/x86/lock.h"
#include <stdbool.h>
#include <stdint.h>

#define KICK_REQ_FLUSH_TLB (1u << 0) /* flush the guest's TLB before the next entry */
#define KICK_REQ_EVENT (1u << 1)     /* its APIC accepted an event: deliver before entering */

struct kick_sync {
	uint32_t seq;      /* odd while the vCPU is in (or about to enter) guest mode */
	uint32_t requests; /* KICK_REQ_*, posted by anyone, taken by the vCPU */
	int cpu;           /* the host CPU the vCPU runs on */
};

/* vCPU side, interrupts off, before the entry: returns the requests taken. */
static inline uint32_t kick_sync_enter(struct kick_sync *s)
{
	__atomic_store_n(&s->seq, __atomic_load_n(&s->seq, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	lockcheck_window(true);
	return __atomic_exchange_n(&s->requests, 0, __ATOMIC_ACQUIRE);
}

/* vCPU side, after the exit (or instead of the entry). */
static inline void kick_sync_exit(struct kick_sync *s)
{
	lockcheck_window(false);
	__atomic_store_n(&s->seq, __atomic_load_n(&s->seq, __ATOMIC_RELAXED) + 1, __ATOMIC_RELEASE);
}

/* Another CPU, after changing what the vCPU re-checks before entering: true if
 * the vCPU may be in guest mode now; *seq gets the sequence to wait on. */
static inline bool kick_sync_in_guest(const struct kick_sync *s, uint32_t *seq)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	*seq = __atomic_load_n(&s->seq, __ATOMIC_SEQ_CST);
	return *seq & 1;
}

static inline bool kick_sync_request(struct kick_sync *s, uint32_t req, uint32_t *seq)
{
	__atomic_fetch_or(&s->requests, req, __ATOMIC_SEQ_CST);
	return kick_sync_in_guest(s, seq);
}

/* Until the vCPU has left the guest mode it was in at seq. The caller
 * declares the wait (lockcheck_wait), as kick_remote_flush does. */
static inline void kick_sync_wait(const struct kick_sync *s, uint32_t seq)
{
	while (__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) == seq)
		cpu_relax();
}

/* The remote flush: each of the n vCPUs flushes before its next entry; those
 * that may be in guest mode are kicked through kick(cpu) and waited for, so
 * that on return no CPU runs the guest on translations from before the call.
 * kick NULL (the debug switch `mmu remote_flush=off`): post the request only,
 * neither kick nor wait. seq: scratch space for n sequences. */
static inline void kick_remote_flush(struct kick_sync *const *vcpus, unsigned n,
				     void (*kick)(int cpu), uint32_t *seq)
{
	bool in_guest[n ? n : 1];

	/* It may wait whether or not it does this time: checked every call. */
	if (kick)
		lockcheck_wait("kick_remote_flush");
	for (unsigned i = 0; i < n; i++) {
		in_guest[i] = kick_sync_request(vcpus[i], KICK_REQ_FLUSH_TLB, &seq[i]);
		if (in_guest[i] && kick)
			kick(vcpus[i]->cpu);
	}
	if (!kick)
		return;
	for (unsigned i = 0; i < n; i++)
		if (in_guest[i])
			kick_sync_wait(vcpus[i], seq[i]);
}
