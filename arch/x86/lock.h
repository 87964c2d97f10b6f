/* Spinlock and reader-writer lock on GCC atomics. Header-only and free of
 * kernel dependencies, so that the MMU's locking protocol runs unchanged in the
 * host concurrency tests (pthreads, ThreadSanitizer). */
#pragma once
#include <stdbool.h>
#include <stdint.h>

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

struct spinlock {
	uint32_t locked;
};

static inline void spin_lock(struct spinlock *l)
{
	while (__atomic_exchange_n(&l->locked, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(&l->locked, __ATOMIC_RELAXED))
			cpu_relax();
}

static inline bool spin_trylock(struct spinlock *l)
{
	return !__atomic_exchange_n(&l->locked, 1, __ATOMIC_ACQUIRE);
}

static inline void spin_unlock(struct spinlock *l)
{
	__atomic_store_n(&l->locked, 0, __ATOMIC_RELEASE);
}

/* Writer-preferring reader-writer lock. `state` holds the writer bit and the
 * reader count. New readers hold back while a writer waits, so that a zap is not
 * starved by a stream of faults. `waiters` counts every CPU spinning for the
 * lock, so that a long walk under it knows to yield. */
struct rwlock {
	uint32_t state;
	uint32_t writers_waiting;
	uint32_t waiters;
};

#define RWLOCK_WRITER 0x80000000u

static inline void read_lock(struct rwlock *l)
{
	bool counted = false;
	for (;;) {
		uint32_t s = __atomic_load_n(&l->state, __ATOMIC_RELAXED);
		if (!(s & RWLOCK_WRITER) &&
		    !__atomic_load_n(&l->writers_waiting, __ATOMIC_RELAXED) &&
		    __atomic_compare_exchange_n(&l->state, &s, s + 1, false,
						__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			break;
		if (!counted) {
			__atomic_fetch_add(&l->waiters, 1, __ATOMIC_RELAXED);
			counted = true;
		}
		cpu_relax();
	}
	if (counted)
		__atomic_fetch_sub(&l->waiters, 1, __ATOMIC_RELAXED);
}

static inline void read_unlock(struct rwlock *l)
{
	__atomic_fetch_sub(&l->state, 1, __ATOMIC_RELEASE);
}

static inline void write_lock(struct rwlock *l)
{
	__atomic_fetch_add(&l->writers_waiting, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&l->waiters, 1, __ATOMIC_RELAXED);
	for (;;) {
		uint32_t s = 0;
		if (__atomic_compare_exchange_n(&l->state, &s, RWLOCK_WRITER, false,
						__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			break;
		cpu_relax();
	}
	__atomic_fetch_sub(&l->waiters, 1, __ATOMIC_RELAXED);
	__atomic_fetch_sub(&l->writers_waiting, 1, __ATOMIC_RELAXED);
}

static inline void write_unlock(struct rwlock *l)
{
	__atomic_fetch_and(&l->state, ~RWLOCK_WRITER, __ATOMIC_RELEASE);
}

/* True when another CPU waits for the lock: a long walk under it should yield. */
static inline bool rwlock_contended(struct rwlock *l)
{
	return __atomic_load_n(&l->waiters, __ATOMIC_RELAXED) != 0;
}
