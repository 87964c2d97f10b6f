/* Spinlock and reader-writer lock on GCC atomics. Header-only and free of
 * kernel dependencies, so that the MMU's locking protocol runs unchanged in the
 * host concurrency tests (pthreads, ThreadSanitizer).
 *
 * Each lock names its class (enum lock_class); in the kernel every acquire,
 * release and cross-CPU wait is checked against the rules of
 * docs/locking.md (arch/x86/lock_check.c). The host tests do without. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

/* The lock classes in the order they nest (docs/locking.md has the same
 * table, which a unit test compares): a CPU may take a lock only while every
 * lock it holds comes earlier. X(ENUM, name, leaf, nest): a leaf's holder
 * never waits for another CPU, so a leaf may be taken in the entry window
 * and nothing that waits may be done under it; nest is the class whose lock
 * must be held to take two locks of this class at once (NONE: never). */
#define LOCK_CLASSES(X)                          \
	X(VM, "vm", false, NONE)                 \
	X(COW_SHARE, "cow_share", false, NONE)   \
	X(SLOTS, "slots_lock", false, COW_SHARE) \
	X(MMU, "mmu_lock", false, COW_SHARE)     \
	X(RMAP, "rmap_head", true, NONE)         \
	X(SLAB_REGISTRY, "slab_registry", true, NONE) \
	X(SLAB, "slab", true, NONE)              \
	X(FRAME, "frame", true, NONE)            \
	X(CONSOLE, "console", true, NONE)

#define LOCK_CLASS_ENUM(e, name, leaf, nest) LOCK_##e,
enum lock_class {
	LOCK_NONE, /* not checked (the host tests' locks) */
	LOCK_CLASSES(LOCK_CLASS_ENUM) LOCK_CLASS_COUNT
};
#undef LOCK_CLASS_ENUM

enum lock_mode { LOCK_EXCLUSIVE, LOCK_READ, LOCK_WRITE };

#ifdef HOST_TEST
#define lockcheck_acquire(lock, class, mode, try) ((void)0)
#define lockcheck_release(lock) ((void)0)
#define lockcheck_wait(what) ((void)0)
#define lockcheck_window(in) ((void)0)
#else
/* arch/x86/lock_check.c: a lock of that class taken (try: by a trylock, which
 * does not wait) or released by this CPU; this CPU about to wait for another
 * (what: for the report); this CPU's vCPU entering or leaving the entry
 * window (kick_sync_enter .. kick_sync_exit). */
void lockcheck_acquire(const void *lock, enum lock_class class, enum lock_mode mode, bool try);
void lockcheck_release(const void *lock);
void lockcheck_wait(const char *what);
void lockcheck_window(bool in);
#endif

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

struct spinlock {
	uint32_t locked;
	uint32_t class; /* enum lock_class */
};

static inline void spin_lock(struct spinlock *l)
{
	if (l->class)
		lockcheck_acquire(l, (enum lock_class)l->class, LOCK_EXCLUSIVE, false);
	while (__atomic_exchange_n(&l->locked, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(&l->locked, __ATOMIC_RELAXED))
			cpu_relax();
}

static inline bool spin_trylock(struct spinlock *l)
{
	bool got = !__atomic_exchange_n(&l->locked, 1, __ATOMIC_ACQUIRE);

	if (got && l->class)
		lockcheck_acquire(l, (enum lock_class)l->class, LOCK_EXCLUSIVE, true);
	return got;
}

static inline void spin_unlock(struct spinlock *l)
{
	if (l->class)
		lockcheck_release(l);
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
	uint32_t class; /* enum lock_class */
};

#define RWLOCK_WRITER 0x80000000u

static inline void read_lock(struct rwlock *l)
{
	bool counted = false;

	if (l->class)
		lockcheck_acquire(l, (enum lock_class)l->class, LOCK_READ, false);
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
	if (l->class)
		lockcheck_release(l);
	__atomic_fetch_sub(&l->state, 1, __ATOMIC_RELEASE);
}

static inline void write_lock(struct rwlock *l)
{
	if (l->class)
		lockcheck_acquire(l, (enum lock_class)l->class, LOCK_WRITE, false);
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
	if (l->class)
		lockcheck_release(l);
	__atomic_fetch_and(&l->state, ~RWLOCK_WRITER, __ATOMIC_RELEASE);
}

/* True when another CPU waits for the lock: a long walk under it should yield. */
static inline bool rwlock_contended(struct rwlock *l)
{
	return __atomic_load_n(&l->waiters, __ATOMIC_RELAXED) != 0;
}

/* Hand the lock to whoever waits for it, then take it back (a long walk's
 * yield point, as Linux's cond_resched_rwlock_write): after the unlock, wait
 * until a waiter has taken the lock or none waits any more (at most
 * RWLOCK_HANDOFF_SPINS pauses, should a waiter not be running), so that the
 * writer does not retake it before anyone could get in. */
#define RWLOCK_HANDOFF_SPINS 1024u
static inline void write_unlock_handoff(struct rwlock *l)
{
	write_unlock(l);
	for (uint32_t spins = 0; spins < RWLOCK_HANDOFF_SPINS &&
				 __atomic_load_n(&l->waiters, __ATOMIC_RELAXED) &&
				 !__atomic_load_n(&l->state, __ATOMIC_RELAXED);
	     spins++)
		cpu_relax();
	write_lock(l);
}

/* Lock assertions. The lock records no owner, so they check that the lock is
 * held in that mode by someone, which catches a caller that took no lock or
 * the wrong mode. A failed assertion calls rwlock_assert_failed (arch/x86/lock.c: a
 * report, then a trap). */
void rwlock_assert_failed(const struct rwlock *l, const char *what, const char *file, int line);

static inline bool rwlock_held_write(const struct rwlock *l)
{
	return (__atomic_load_n(&l->state, __ATOMIC_RELAXED) & RWLOCK_WRITER) != 0;
}

static inline bool rwlock_held_read(const struct rwlock *l)
{
	return (__atomic_load_n(&l->state, __ATOMIC_RELAXED) & ~RWLOCK_WRITER) != 0;
}

#define rwlock_assert_held_write(l)                                                 \
	do {                                                                        \
		if (__builtin_expect(!rwlock_held_write(l), 0))                     \
			rwlock_assert_failed((l), "held for writing", __FILE__, __LINE__); \
	} while (0)

#define rwlock_assert_held_read(l)                                                 \
	do {                                                                       \
		if (__builtin_expect(!rwlock_held_read(l), 0))                     \
			rwlock_assert_failed((l), "held for reading", __FILE__, __LINE__); \
	} while (0)

/* Either mode: walks that only read the tables. */
#define rwlock_assert_held(l)                                                        \
	do {                                                                         \
		if (__builtin_expect(!rwlock_held_read(l) && !rwlock_held_write(l), 0)) \
			rwlock_assert_failed((l), "held", __FILE__, __LINE__);          \
	} while (0)
