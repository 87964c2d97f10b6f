/* The local APIC timer (lapic.h; SDM vol. 3A 10.5.4): one-shot, periodic and
 * TSC-deadline modes, counted in guest TSC time without a host timer: the
 * vCPU loop calls lapic_timer_update and asks lapic_timer_next. Apart from
 * the register file (lapic.c) so the counting arithmetic stands on its own;
 * its hooks for the register file are declared in lapic_internal.h. */
#include "dev/lapic_internal.h"

#define DEFAULT_TSC_KHZ 1000000ull       /* used when tsc_khz is 0: 1 GHz */

/* ---- the timer (10.5.4) ---- */

static unsigned timer_mode(const struct lapic *a)
{
	return (a->lvt[LAPIC_LVT_TIMER] >> LAPIC_TIMER_MODE_SHIFT) & 3;
}

/* Divide configuration bits 3,1,0: 000 -> 2, 001 -> 4, ... 110 -> 128, 111 -> 1 (Figure 10-10). */
static unsigned timer_divisor(const struct lapic *a)
{
	unsigned code = ((a->timer_divide >> 1) & 4) | (a->timer_divide & 3);

	return 1u << ((code + 1) & 7);
}

static uint64_t tsc_hz(const struct lapic *a)
{
	return (a->tsc_khz ? a->tsc_khz : DEFAULT_TSC_KHZ) * 1000;
}

static uint64_t clamp_u64(unsigned __int128 x)
{
	return x > UINT64_MAX ? UINT64_MAX : (uint64_t)x;
}

/* Bus ticks to TSC cycles, rounded up (an expiry never comes early), and TSC
 * cycles to whole bus ticks, rounded down. With these two, an expiry at tick
 * offset T is due at TSC offset d exactly when T <= tsc_to_ticks(d). */
static uint64_t ticks_to_tsc(const struct lapic *a, uint64_t ticks)
{
	unsigned __int128 x = (unsigned __int128)ticks * tsc_hz(a);

	return clamp_u64((x + LAPIC_BUS_HZ - 1) / LAPIC_BUS_HZ);
}

static uint64_t tsc_to_ticks(const struct lapic *a, uint64_t tsc)
{
	return clamp_u64((unsigned __int128)tsc * LAPIC_BUS_HZ / tsc_hz(a));
}

/* Counts (bus ticks / divisor) elapsed since timer_base. */
static uint64_t counts_since_base(const struct lapic *a, uint64_t now)
{
	if (now <= a->timer_base)
		return 0;
	return tsc_to_ticks(a, now - a->timer_base) / timer_divisor(a);
}

static uint64_t expiry_count(const struct lapic *a, uint64_t k)
{
	return a->timer_first + k * a->timer_initial;
}

static uint64_t expiry_tsc(const struct lapic *a, uint64_t k)
{
	return a->timer_base + ticks_to_tsc(a, expiry_count(a, k) * timer_divisor(a));
}

uint32_t timer_current_count(const struct lapic *a, uint64_t now)
{
	uint64_t counts;

	if (!a->timer_armed)
		return 0;
	counts = counts_since_base(a, now);
	if (counts < a->timer_first)
		return (uint32_t)(a->timer_first - counts);
	if (timer_mode(a) != LAPIC_TIMER_PERIODIC || !a->timer_initial)
		return 0;
	return a->timer_initial - (uint32_t)((counts - a->timer_first) % a->timer_initial);
}

/* Count from `first` starting now. */
static void timer_start(struct lapic *a, uint32_t first, uint64_t now)
{
	unsigned mode = timer_mode(a);

	a->timer_armed = first && (mode == LAPIC_TIMER_ONESHOT || mode == LAPIC_TIMER_PERIODIC);
	a->timer_first = first;
	a->timer_base = now;
	a->timer_expiries = 0;
}

void timer_disarm(struct lapic *a)
{
	a->timer_armed = false;
	a->tsc_deadline = 0;
}

static void timer_fire(struct lapic *a)
{
	uint32_t lvt = a->lvt[LAPIC_LVT_TIMER];

	if (lvt & LAPIC_LVT_MASKED)
		return; /* counts on, delivers nothing */
	lapic_set_irq(a, lvt & 0xff, false);
	a->timer_fires++;
}

void lapic_timer_update(struct lapic *a, uint64_t now)
{
	uint64_t counts;

	if (timer_mode(a) == LAPIC_TIMER_TSC_DEADLINE) {
		if (a->tsc_deadline && now >= a->tsc_deadline) {
			a->tsc_deadline = 0;
			timer_fire(a);
		}
		return;
	}
	if (!a->timer_armed || now < expiry_tsc(a, a->timer_expiries))
		return;
	timer_fire(a);
	if (timer_mode(a) != LAPIC_TIMER_PERIODIC || !a->timer_initial) {
		a->timer_armed = false;
		return;
	}
	/* Once, however many periods passed: the next expiry after `now`. */
	counts = counts_since_base(a, now);
	a->timer_expiries = (counts - a->timer_first) / a->timer_initial + 1;
}

uint64_t lapic_timer_next(const struct lapic *a)
{
	if (timer_mode(a) == LAPIC_TIMER_TSC_DEADLINE)
		return a->tsc_deadline;
	if (!a->timer_armed)
		return 0;
	return expiry_tsc(a, a->timer_expiries);
}

uint64_t lapic_tsc_deadline_read(const struct lapic *a)
{
	return timer_mode(a) == LAPIC_TIMER_TSC_DEADLINE ? a->tsc_deadline : 0;
}

void lapic_tsc_deadline_write(struct lapic *a, uint64_t val, uint64_t now)
{
	if (!lapic_hw_enabled(a) || timer_mode(a) != LAPIC_TIMER_TSC_DEADLINE)
		return;
	a->tsc_deadline = val;
	lapic_timer_update(a, now); /* a deadline in the past fires at once */
}

void write_timer_initial(struct lapic *a, uint32_t val, uint64_t now)
{
	lapic_timer_update(a, now);
	if (timer_mode(a) == LAPIC_TIMER_TSC_DEADLINE)
		return; /* ignored in TSC-deadline mode */
	a->timer_initial = val;
	timer_start(a, val, now); /* 0 stops the timer */
}

/* A new divisor takes effect from now; the count reached so far carries on. */
void write_timer_divide(struct lapic *a, uint32_t val, uint64_t now)
{
	uint32_t count;

	lapic_timer_update(a, now);
	count = timer_current_count(a, now);
	a->timer_divide = val;
	if (a->timer_armed)
		timer_start(a, count, now);
}

/* 10.5.4.1: moving into or out of TSC-deadline mode disarms the timer (and, as
 * KVM does, clears the initial count); one-shot <-> periodic keeps counting
 * the current period and applies the new mode at its end. */
void write_lvt_timer(struct lapic *a, uint32_t val, uint64_t now)
{
	unsigned old_mode, new_mode;
	uint32_t count;

	lapic_timer_update(a, now);
	count = timer_current_count(a, now);
	old_mode = timer_mode(a);
	a->lvt[LAPIC_LVT_TIMER] = val;
	new_mode = timer_mode(a);
	if (old_mode == new_mode)
		return;
	if (old_mode >= LAPIC_TIMER_TSC_DEADLINE || new_mode >= LAPIC_TIMER_TSC_DEADLINE) {
		timer_disarm(a);
		a->timer_initial = 0;
	} else if (a->timer_armed) {
		timer_start(a, count, now);
	}
}
