/* vCPUs on host CPUs (sched.h). Each CPU that holds vCPUs of the running VM
 * runs them in turn, a slice each: a slice ends at every host interrupt
 * exit (sprig's 1 kHz tick, or a kick), when its vCPU halts, and after a
 * millisecond by the TSC, so vCPUs sharing a CPU get it round-robin. The
 * console CPU (CPU 0) runs its own share the same way, or only watches:
 * Ctrl-C (or, with `vm console` attached, the keys for the guest and
 * Ctrl-]), the deadline and the VM's observer. */
#include "virt/sched.h"
#include "arch/x86/cpu.h"
#include "arch/x86/percpu.h"
#include "arch/x86/tsc.h"
#include "lib/print.h"
#include "virt/fpu.h"
#include "virt/live_regs.h"
#include "virt/steal_time.h"
#include "virt/vcpu_run.h"

#define CONSOLE_CPU 0
#define SLICE_MS 1 /* at most, as long as the tick's period */
/* Halt polling, KVM's (halt_poll_ns and its grow and shrink): a CPU whose
 * vCPUs all wait polls for a wake-up before it halts, in a window that
 * starts at HALT_POLL_START_US, doubles each time a halt ended within the
 * largest window, and closes after a halt longer than that. */
#define HALT_POLL_START_US 10
#define HALT_POLL_MAX_US 200

bool vm_remote_flush = true;

/* A CPU's share of the running VM. */
struct sched_cpu {
	struct vm *vm;
	struct vcpu *vcpus[VM_VCPUS_MAX];
	unsigned n;
	unsigned next;        /* where the round goes on */
	struct vcpu *current; /* whose exit this CPU handles now, or NULL */
	uint64_t poll_tsc;    /* the halt-polling window, TSC cycles */
};

static struct sched_cpu sched_cpus[CPU_MAX];
static uint64_t run_deadline, next_poll; /* the console CPU's */
static const char *(*console_poll_fn)(struct vm *vm);

void sched_set_console_poll(const char *(*poll)(struct vm *vm))
{
	console_poll_fn = poll;
}

bool vm_place_vcpus(struct vm *vm, const uint8_t *list, unsigned len, char *err, size_t errlen)
{
	uint8_t spread[CPU_MAX];
	unsigned n = 0;

	for (unsigned i = 0; i < len; i++) {
		if (list[i] >= smp_cpu_count() || smp_cpu_state(list[i]) != CPU_ONLINE) {
			ksnprintf(err, errlen, "CPU %u %s (see 'cpus')", list[i],
				  list[i] >= smp_cpu_count() ? "does not exist" : "is not online");
			return false;
		}
	}
	if (!len) {
		for (unsigned c = 0; c < smp_cpu_count(); c++)
			if (c != CONSOLE_CPU && smp_cpu_state(c) == CPU_ONLINE)
				spread[n++] = (uint8_t)c;
		if (!n)
			spread[n++] = CONSOLE_CPU;
		list = spread;
		len = n;
	}
	for (unsigned i = 0; i < vm->nr_vcpus; i++)
		vm->vcpus[i]->kick.cpu = list[i % len];
	return true;
}

struct vcpu *vm_current_vcpu(void)
{
	return sched_cpus[this_cpu_id()].current;
}

static void kick_cpu(int cpu)
{
	if ((unsigned)cpu != this_cpu_id())
		smp_kick((unsigned)cpu);
}

void vm_lock(struct vm *vm)
{
	spin_lock(&vm->lock);
}

/* A vCPU whose APIC accepted something since it was last kicked for it:
 * post KICK_REQ_EVENT and wake its CPU if the vCPU may be in the guest or
 * asleep there (a halted CPU takes the kick even if it came before the hlt:
 * interrupts were off). The vCPU's own CPU needs no kick. */
void vm_unlock(struct vm *vm, struct vcpu *self)
{
	for (unsigned i = 0; i < vm->nr_vcpus; i++) {
		struct vcpu *t = vm->vcpus[i];
		uint32_t seq;

		if (t == self || t->apic->arrivals == t->arrivals_kicked)
			continue;
		t->arrivals_kicked = t->apic->arrivals;
		if (kick_sync_request(&t->kick, KICK_REQ_EVENT, &seq) || t->halted || t->wait_sipi)
			kick_cpu(t->kick.cpu);
	}
	spin_unlock(&vm->lock);
}

void vm_kick_all(struct vm *vm)
{
	for (unsigned i = 0; i < vm->nr_vcpus; i++) {
		struct vcpu *t = vm->vcpus[i];
		uint32_t seq;

		if (kick_sync_in_guest(&t->kick, &seq) || t->halted || t->wait_sipi)
			kick_cpu(t->kick.cpu);
	}
}

bool vm_yield_to(struct vcpu *self, struct vcpu *target)
{
	int cpu = target->kick.cpu;
	struct sched_cpu *c = &sched_cpus[cpu];
	bool yield = false;

	vm_lock(self->vm);
	if (vcpu_wants_cpu(target) && __atomic_load_n(&c->current, __ATOMIC_RELAXED) != target) {
		/* Its CPU's round goes on at it (pick runs under this lock). */
		for (unsigned k = 0; k < c->n; k++)
			if (c->vcpus[k] == target)
				c->next = k;
		yield = true;
	}
	vm_unlock(self->vm, self);
	if (!yield)
		return false;
	if (cpu == self->kick.cpu)
		self->yielded = true;
	else
		kick_cpu(cpu); /* ends the slice of whichever vCPU runs there */
	return true;
}

void vm_flush_tlb(void *ctx)
{
	struct vm *vm = ctx;
	uint32_t seq[VM_VCPUS_MAX];

	kick_remote_flush(vm->kicks, vm->nr_vcpus, vm_remote_flush ? kick_cpu : NULL, seq);
}

/* Console CPU only: the deadline and the console, once a millisecond (the
 * tick ends a slice or a sleep at least that often), and the VM's hook. */
static void console_watch(struct vm *vm)
{
	uint64_t now = rdtsc();

	if (run_deadline && now >= run_deadline) {
		vm_pause(vm, "timeout");
	} else if (now >= next_poll) {
		const char *reason = console_poll_fn ? console_poll_fn(vm) : NULL;

		next_poll = now + tsc_khz();
		if (reason)
			vm_pause(vm, reason);
		else if (vm->observer && vm->observer->on_watch)
			vm->observer->on_watch(vm, vm->observer_ctx);
	}
}

/* The next vCPU of the round that wants the CPU, or NULL; the others that
 * want it wait, which their steal time counts (virt/steal_time.h). */
static struct vcpu *pick(struct sched_cpu *c)
{
	bool waits[VM_VCPUS_MAX];
	struct vcpu *v = NULL;
	uint64_t now;

	vm_lock(c->vm);
	for (unsigned k = 0; k < c->n; k++) {
		unsigned i = (c->next + k) % c->n;
		struct vcpu *t = c->vcpus[i];

		/* A halted vCPU's timer that came due is what wakes it. */
		if (t->halted)
			vcpu_fire_timers(t);
		bool wants = vcpu_wants_cpu(t);

		waits[i] = v && wants;
		if (!v && wants) {
			v = t;
			c->next = (i + 1) % c->n;
		}
	}
	if (!v)
		for (unsigned k = 0; k < c->n; k++)
			vcpu_arm_host_timer(c->vcpus[k]);
	vm_unlock(c->vm, NULL);
	now = rdtsc();
	for (unsigned i = 0; i < c->n; i++)
		steal_time_sched(c->vcpus[i], c->vcpus[i] == v, waits[i], now);
	return v;
}

/* What a halt would wait for, without halting: interrupts on until one
 * arrives (what wakes a vCPU comes as a kick or a timer interrupt) or the
 * CPU's polling window ends. The vCPU that wants the CPU then, or NULL. */
static struct vcpu *halt_poll(struct sched_cpu *c)
{
	struct percpu *cpu = this_cpu();
	uint64_t end = rdtsc() + c->poll_tsc;
	uint64_t kicks = cpu->kicks, timer = cpu->timer.ticks;
	struct vcpu *v;

	sti();
	while (rdtsc() < end && __atomic_load_n(&cpu->kicks, __ATOMIC_RELAXED) == kicks &&
	       __atomic_load_n(&cpu->timer.ticks, __ATOMIC_RELAXED) == timer)
		cpu_relax();
	cli();
	v = pick(c);
	__atomic_fetch_add(v ? &c->vm->halt_polls_ok : &c->vm->halt_polls_failed, 1,
			   __ATOMIC_RELAXED);
	return v;
}

/* Nothing wants the CPU: poll, then halt until an interrupt (the tick, a
 * one-shot for a guest timer, a kick), and size the next window by how long
 * the halt lasted. The vCPU that wants the CPU now, or NULL. */
static struct vcpu *cpu_idle(struct sched_cpu *c)
{
	uint64_t max = tsc_khz() * HALT_POLL_MAX_US / 1000, start;
	struct vcpu *v;

	if (c->poll_tsc && (v = halt_poll(c)))
		return v;
	start = rdtsc();
	sti_hlt_cli();
	v = c->n ? pick(c) : NULL;
	if (rdtsc() - start > max)
		c->poll_tsc = 0;
	else if (v)
		c->poll_tsc = c->poll_tsc ? (c->poll_tsc * 2 < max ? c->poll_tsc * 2 : max) :
					    tsc_khz() * HALT_POLL_START_US / 1000;
	return v;
}

/* This CPU stops running v: its control block, FPU state and the registers
 * the control block lacks go where another CPU (or the console) can take
 * them. */
static void cpu_leaves(struct vcpu *v)
{
	fpu_vcpu_put(v);
	live_regs_put(v);
	vcpu_put(v);
}

/* A CPU's loop over its share, interrupts off, until the VM stops. */
static void cpu_loop(struct sched_cpu *c)
{
	struct vm *vm = c->vm;
	struct vcpu *loaded = NULL;
	bool console = this_cpu_id() == CONSOLE_CPU;
	uint64_t nmis = this_cpu()->host_nmis;

	cli();
	while (vm_running(vm)) {
		struct vcpu *v = c->n ? pick(c) : NULL;

		if (!v && c->n)
			v = cpu_idle(c);
		else if (!v)
			sti_hlt_cli(); /* the console CPU without vCPUs: the tick wakes it */
		if (v) {
			if (v != loaded) {
				if (loaded)
					cpu_leaves(loaded);
				vcpu_load(v);
				loaded = v;
			}
			uint64_t start = rdtsc();

			c->current = v;
			vcpu_run_slice(v, start + tsc_khz() * SLICE_MS);
			c->current = NULL;
			v->stats.run_tsc += rdtsc() - start;
			/* Let sprig's own interrupts (the tick, a kick) in. */
			sti();
			__asm__ volatile("nop");
			cli();
		}
		if (console)
			console_watch(vm);
	}
	if (loaded)
		cpu_leaves(loaded);
	__atomic_fetch_add(&vm->host_nmis, this_cpu()->host_nmis - nmis, __ATOMIC_RELAXED);
	sti();
}

static void cpu_loop_call(void *arg)
{
	cpu_loop(arg);
}

void sched_run(struct vm *vm, uint64_t deadline)
{
	bool started[CPU_MAX] = { false };

	for (unsigned c = 0; c < CPU_MAX; c++)
		sched_cpus[c] = (struct sched_cpu){ .vm = vm };
	for (unsigned i = 0; i < vm->nr_vcpus; i++) {
		struct sched_cpu *c = &sched_cpus[vm->vcpus[i]->kick.cpu];

		c->vcpus[c->n++] = vm->vcpus[i];
	}
	for (unsigned i = 0; i < vm->nr_vcpus; i++)
		vm->vcpus[i]->spin_exits = sched_cpus[vm->vcpus[i]->kick.cpu].n > 1;
	run_deadline = deadline;
	next_poll = rdtsc();
	for (unsigned c = 0; c < CPU_MAX; c++) {
		if (c == CONSOLE_CPU || !sched_cpus[c].n)
			continue;
		if (!(started[c] = smp_call(c, cpu_loop_call, &sched_cpus[c])))
			vm_fail(vm, "CPU %u cannot take its vCPUs (offline or busy)", c);
	}
	cpu_loop(&sched_cpus[CONSOLE_CPU]);
	for (unsigned c = 0; c < CPU_MAX; c++)
		while (started[c] && smp_busy(c))
			cpu_relax();
}
