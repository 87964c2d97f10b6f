/* A small lock checker, after Linux's lockdep and KVM's lockdep assertions,
 * for the rules of docs/locking.md: locks nest in the order of LOCK_CLASSES
 * (arch/x86/lock.h); nothing but a leaf lock is taken, and nothing waits for
 * another CPU, while this CPU's vCPU is in the entry window; nothing waits
 * for another CPU under a leaf lock. Each CPU keeps the locks it holds with
 * where it took them. A violation prints one block, every line starting with
 * "lockcheck: " (the rule, the locks held and where, the call chain by frame
 * pointers: tests/e2e/machine.py fails the boot's test and symbolizes it),
 * then sprig goes on: the harness, not the hypervisor, decides. Each call
 * site reports once. Always compiled in: the cost is a few loads per lock
 * (docs/locking.md has the measurement). */
#include "arch/x86/lock_check.h"
#include "arch/x86/percpu.h"
#include "lib/print.h"

#define BACKTRACE_MAX 16
#define BACKTRACE_SPAN 0x10000 /* a frame chain that leaves this span is corrupt */
#define REPORTED_SITES_MAX 32

struct lock_class_info {
	const char *name;
	bool leaf;
	enum lock_class nest;
};

#define LOCK_CLASS_INFO(e, n, l, g) [LOCK_##e] = { .name = n, .leaf = l, .nest = LOCK_##g },
static const struct lock_class_info classes[LOCK_CLASS_COUNT] = {
	[LOCK_NONE] = { .name = "none" },
	LOCK_CLASSES(LOCK_CLASS_INFO)
};
#undef LOCK_CLASS_INFO

static const char *const mode_names[] = { "exclusive", "read", "write" };

static bool started;
static uintptr_t reported[REPORTED_SITES_MAX];

void lockcheck_start(void)
{
	started = true;
}

static struct lockcheck_cpu *this_lc(void)
{
	return started ? &this_cpu()->lockcheck : NULL;
}

/* A site reports once (the first REPORTED_SITES_MAX sites): a hot path
 * that breaks a rule would otherwise flood the console. */
static bool first_report(uintptr_t site)
{
	for (unsigned i = 0; i < REPORTED_SITES_MAX; i++) {
		uintptr_t seen = __atomic_load_n(&reported[i], __ATOMIC_RELAXED);

		if (seen == site)
			return false;
		if (!seen && __atomic_compare_exchange_n(&reported[i], &seen, site, false,
							 __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			return true;
		if (seen == site)
			return false;
	}
	return false;
}

/* The return addresses up the frame-pointer chain, from the caller of the
 * lockcheck function that found the violation (report's caller's caller). */
static __attribute__((noinline)) void backtrace(void)
{
	const uintptr_t *fp = __builtin_frame_address(0);
	uintptr_t lo = (uintptr_t)fp;

	kprintf("lockcheck:   call chain:");
	for (unsigned i = 0; i < BACKTRACE_MAX + 2 && fp; i++) {
		uintptr_t f = (uintptr_t)fp;

		if ((f & 7) || f < lo || f - lo > BACKTRACE_SPAN || !fp[1])
			break;
		if (i >= 2) /* report's and the checker's own frames */
			kprintf(" 0x%llx", (unsigned long long)fp[1]);
		fp = (const uintptr_t *)fp[0];
	}
	kprintf("\n");
}

/* site: the caller of the lockcheck function (the lock operation's site). */
static __attribute__((noinline)) void report(struct lockcheck_cpu *lc, uintptr_t site,
					     const char *fmt, const char *what, const char *detail)
{
	unsigned depth = lc->depth; /* without the console lock taken here */

	if (lc->reporting || !first_report(site))
		return;
	lc->reporting = true;
	console_lock();
	kprintf("lockcheck: cpu %u%s: ", this_cpu_id(), lc->in_window ? " (in the entry window)" : "");
	kprintf(fmt, what, detail);
	kprintf("\nlockcheck:   at 0x%llx\n", (unsigned long long)site);
	for (unsigned i = 0; i < depth; i++)
		kprintf("lockcheck:   held: %s (%s) taken at 0x%llx\n", classes[lc->held[i].class].name,
			mode_names[lc->held[i].mode], (unsigned long long)lc->held[i].ip);
	backtrace();
	kprintf("lockcheck: end\n");
	console_unlock();
	lc->reporting = false;
}

static bool holds_class(const struct lockcheck_cpu *lc, enum lock_class class)
{
	for (unsigned i = 0; i < lc->depth; i++)
		if (lc->held[i].class == class)
			return true;
	return false;
}

static void check_order(struct lockcheck_cpu *lc, enum lock_class class, uintptr_t site)
{
	for (unsigned i = 0; i < lc->depth; i++) {
		enum lock_class h = (enum lock_class)lc->held[i].class;

		if (h < class)
			continue;
		if (h == class && classes[class].nest != LOCK_NONE &&
		    holds_class(lc, classes[class].nest))
			continue;
		report(lc, site, "%s taken under %s, against the lock order", classes[class].name,
		       classes[h].name);
		return;
	}
}

void lockcheck_acquire(const void *lock, enum lock_class class, enum lock_mode mode, bool try)
{
	struct lockcheck_cpu *lc = this_lc();
	uintptr_t site = (uintptr_t)__builtin_return_address(0);
	unsigned d;

	if (!lc)
		return;
	/* A trylock does not wait: no order to keep, nothing to deadlock. */
	if (!try && !lc->reporting) {
		if (lc->in_window && !classes[class].leaf)
			report(lc, site, "%s taken%s, where no lock but a leaf may be",
			       classes[class].name, "");
		else
			check_order(lc, class, site);
	}
	if ((d = lc->depth) == LOCKCHECK_HELD_MAX)
		return; /* deeper than any path of sprig: not recorded */
	/* The slot is claimed before it is filled: an NMI that takes a lock
	 * meanwhile pushes above it and pops before returning. */
	lc->depth = d + 1;
	__asm__ volatile("" ::: "memory");
	lc->held[d] = (struct held_lock){ .lock = lock, .ip = site, .class = (uint8_t)class,
					  .mode = (uint8_t)mode };
}

void lockcheck_release(const void *lock)
{
	struct lockcheck_cpu *lc = this_lc();

	if (!lc)
		return;
	/* Usually the last one taken; not found: taken before the checker
	 * started, or by a report that took the console over. */
	for (unsigned i = lc->depth; i-- > 0;) {
		if (lc->held[i].lock != lock)
			continue;
		for (unsigned j = i; j + 1 < lc->depth; j++)
			lc->held[j] = lc->held[j + 1];
		__asm__ volatile("" ::: "memory");
		lc->depth--;
		return;
	}
}

void lockcheck_wait(const char *what)
{
	struct lockcheck_cpu *lc = this_lc();
	uintptr_t site = (uintptr_t)__builtin_return_address(0);

	if (!lc || lc->reporting)
		return;
	if (lc->in_window) {
		report(lc, site, "%s waits for another CPU%s", what, "");
		return;
	}
	for (unsigned i = 0; i < lc->depth; i++) {
		if (classes[lc->held[i].class].leaf) {
			report(lc, site, "%s waits for another CPU under the leaf lock %s", what,
			       classes[lc->held[i].class].name);
			return;
		}
	}
}

void lockcheck_window(bool in)
{
	struct lockcheck_cpu *lc = this_lc();

	if (lc)
		lc->in_window = in;
}
