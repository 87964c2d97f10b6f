/* One vCPU's entries and exits (vcpu_run.h): deliver what its APIC holds,
 * enter through the backend inside the kick_sync sequence, hand each
 * decoded exit to its handler. sprig and the other VMs go on whatever the
 * guest does. */
#include "virt/vcpu_run.h"
#include "arch/x86/apic.h"
#include "arch/x86/cpu.h"
#include "arch/x86/regs.h"
#include "arch/x86/tsc.h"
#include "virt/cpuid.h"
#include "virt/hypercall.h"
#include "virt/io.h"
#include "virt/msr.h"
#include "virt/vm.h"
#include "virt/fpu.h"
#include "virt/live_regs.h"
#include "virt/mmio.h"
#include "virt/pv_eoi.h"
#include "virt/sched.h"
#include "mm/tdp_mmu.h"

#define RESET_RIP 0xfff0 /* with CS base FFFF0000: the reset vector */

static const char *access_name(unsigned access)
{
	return access & TDP_ACC_EXEC ? "fetch" : access & TDP_ACC_WRITE ? "write" : "read";
}

static bool handle_npf(struct vcpu *v, const struct vexit *e)
{
	struct vm *vm = v->vm;

	switch (tdp_map_cached(&vm->mmu, v->table_cache, e->npf.gpa, e->npf.access)) {
	case TDP_FIXED:
	case TDP_SPURIOUS:
	case TDP_RETRY:
		break;
	case TDP_NO_SLOT:
		/* The CPU was delivering an event (its IDT, GDT or stack lie
		 * outside guest memory): no instruction made the access, so
		 * none is emulated. As KVM, a delivery failure. */
		if (e->vectoring) {
			vm_fail(vm, "fault delivering vector %u: gpa 0x%llx is not guest memory",
				e->vector, (unsigned long long)e->npf.gpa);
			break;
		}
		mmio_exit(v, e);
		break;
	case TDP_PERMISSION:
		vm_fail(vm, "%s to gpa 0x%llx is not allowed by its memslot",
			access_name(e->npf.access), (unsigned long long)e->npf.gpa);
		break;
	case TDP_NO_MEMORY:
		vm_fail(vm, "out of host memory backing gpa 0x%llx", (unsigned long long)e->npf.gpa);
		break;
	}
	return false; /* the faulting instruction runs again */
}

/* The instructions a backend hands over rather than runs: true when the
 * instruction is done (skipped), false when it faults. */
static bool emulate_insn(struct vcpu *v, enum vexit_insn insn)
{
	switch (insn) {
	case VEXIT_INSN_INVD:
		/* As KVM: nothing to invalidate that the guest could tell from
		 * keeping it; never the host's caches. */
		return true;
	case VEXIT_INSN_RDPMC:
		/* No counters are offered: every ECX is out of range. */
		backend->inject_exception(v, X86_VEC_GP, 0);
		return false;
	case VEXIT_INSN_MONITOR_MWAIT:
	case VEXIT_INSN_VIRT:
		break;
	}
	backend->inject_exception(v, X86_VEC_UD, 0);
	return false;
}

/* Handle one exit; true when the exiting instruction completed. */
static bool handle_exit(struct vcpu *v, const struct vexit *e)
{
	struct vm *vm = v->vm;

	switch (e->kind) {
	case VEXIT_NPF:
		return handle_npf(v, e);
	case VEXIT_IO:
		return emulate_io(v, e);
	case VEXIT_HYPERCALL:
		return emulate_hypercall(v);
	case VEXIT_CPUID:
		return emulate_cpuid(v);
	case VEXIT_RDMSR:
		return emulate_rdmsr(v);
	case VEXIT_WRMSR:
		return emulate_wrmsr(v);
	case VEXIT_XSETBV:
		if (fpu_guest_xsetbv(v, (uint32_t)v->regs.rcx,
				     (v->regs.rdx << 32) | (uint32_t)v->regs.rax))
			return true;
		backend->inject_exception(v, X86_VEC_GP, 0);
		return false;
	case VEXIT_INSN:
		return emulate_insn(v, e->insn);
	case VEXIT_HLT:
		/* With interrupts off only an NMI or an INIT wakes it: another
		 * vCPU can send those, but nothing sends them to a VM's only
		 * vCPU, for which this is the guest's end. */
		if (!(v->regs.rflags & RFLAGS_IF) && vm->nr_vcpus == 1 && !v->pv_unhalted) {
			vm_fail(vm, "halted with interrupts off");
			return false;
		}
		v->halted = true;
		return true;
	case VEXIT_WINDOW:
		v->stats.irq_window_exits++;
		return false;
	case VEXIT_PAUSE:
		/* A spinning vCPU waits for another: the slice goes to the
		 * next of its CPU's round (kvm_vcpu_on_spin's yield). */
		v->yielded = true;
		return true;
	case VEXIT_SHUTDOWN:
		vm_fail(vm, "triple fault (shutdown)");
		return false;
	case VEXIT_FAILED:
		vm_fail(vm, "%s", e->text);
		return false;
	case VEXIT_UNKNOWN:
		vm_fail(vm, "unexpected exit: %s", e->text);
		return false;
	case VEXIT_INTR:
	case VEXIT_HANDLED:
	case VEXIT_BACKEND: /* finished in enter() */
	case VEXIT_KINDS:
		break;
	}
	return false;
}

/* Fire what the guest's APIC timer and the chipset have due by now, noting
 * how late. */
static void update_timers(struct vcpu *v, uint64_t now)
{
	struct lapic *a = v->apic;
	uint64_t due = lapic_timer_next(a);

	platform_update(v->vm, vm_guest_tsc(v->vm));
	if (!due || now < due)
		return;
	lapic_timer_update(a, now);
	if (tsc_to_ns(now - due) > v->stats.timer_late_max_ns)
		v->stats.timer_late_max_ns = tsc_to_ns(now - due);
}

void vcpu_fire_timers(struct vcpu *v)
{
	update_timers(v, guest_tsc(v));
}

void vcpu_arm_host_timer(struct vcpu *v)
{
	uint64_t due = lapic_timer_next(v->apic);
	uint64_t now = vm_guest_tsc(v->vm);
	uint64_t chipset = platform_next_event(v->vm, now);

	/* The chipset's clock is vCPU 0's: its events in v's TSC. */
	if (chipset)
		chipset += (uint64_t)(v->tsc_offset - v->vm->vcpus[0]->tsc_offset);
	if (chipset && (!due || chipset < due))
		due = chipset;
	if (due)
		apic_timer_wake_by(due - (uint64_t)v->tsc_offset);
}

/* What ends a halt: an NMI, an INIT or a PV kick always; an interrupt when
 * the guest halted with interrupts on. */
static bool wakes_halted(struct vcpu *v)
{
	if (v->apic->nmi_pending || v->apic->init_pending || v->pv_unhalted)
		return true;
	return (v->regs.rflags & RFLAGS_IF) &&
	       (lapic_pending_irq(v->apic) >= 0 || (v->index == 0 && platform_extint_pending(v->vm)));
}

bool vcpu_wants_cpu(struct vcpu *v)
{
	if (v->apic->init_pending || (v->apic->sipi_pending && v->wait_sipi))
		return true;
	return !v->wait_sipi && (!v->halted || wakes_halted(v));
}

void vcpu_init_state(struct vcpu *v)
{
	backend->init_state(v);
	live_regs_reset(v);
	v->regs = (struct vcpu_regs){ .rip = RESET_RIP, .rflags = RFLAGS_FIXED,
				      .rdx = cpuid(1, 0).eax /* the processor signature */ };
	v->halted = false;
	v->pv_eoi = (struct kvm_pv_eoi){ 0 }; /* disabled, as KVM's kvm_lapic_reset leaves it */
}

/* INIT and SIPI (lapic_accept_start), with the control block loaded. */
static void take_start(struct vcpu *v)
{
	uint8_t vector = 0;
	unsigned got = lapic_accept_start(v->apic, &v->wait_sipi, &vector);

	if (got & LAPIC_ACCEPT_INIT)
		vcpu_init_state(v);
	if (got & LAPIC_ACCEPT_SIPI) {
		backend->sipi(v, vector);
		v->regs.rip = 0;
	}
}

/* Before an entry: inject what the APIC holds for the vCPU when it can take
 * it, otherwise ask for an exit when it can (the window). */
static void deliver_events(struct vcpu *v)
{
	struct vm *vm = v->vm;
	bool want_nmi = false, want_irq = false;
	int vector;

	if (lapic_nmi_pending(v->apic, backend->nmi_masked(v))) {
		if (backend->nmi_allowed(v)) {
			backend->inject_nmi(v);
			lapic_ack_nmi(v->apic);
			v->stats.nmi_injected++;
		} else {
			want_nmi = true;
		}
	}
	if ((vector = lapic_pending_irq(v->apic)) >= 0) {
		if (backend->irq_allowed(v)) {
			backend->inject_irq(v, (uint8_t)vector);
			lapic_ack_irq(v->apic, (uint8_t)vector);
			v->stats.irq_injected++;
		} else {
			want_irq = true;
		}
	} else if (v->index == 0 && platform_extint_pending(vm)) {
		/* The 8259's interrupt through the BSP's LINT0: the vector is
		 * the PIC's, taken (its INTA cycle) only when it is delivered. */
		if (backend->irq_allowed(v)) {
			backend->inject_irq(v, platform_extint_ack(vm));
			v->stats.irq_injected++;
		} else {
			want_irq = true;
		}
	}
	backend->event_window(v, want_irq, want_nmi);
}

/* Enter inside the kick_sync sequence: false (no entry) when the VM stopped
 * or something arrived since deliver_events looked. Between kick_sync_enter
 * and kick_sync_exit (the entry window) the vCPU counts as in the guest and
 * a CPU flushing its TLB waits for it: nothing there may take a lock that
 * such a CPU could hold, or wait for another CPU (docs/locking.md); what an
 * exit needs of that kind the backend does after the window (VEXIT_BACKEND). */
static bool enter(struct vcpu *v, struct vexit *e)
{
	uint32_t req = kick_sync_enter(&v->kick);

	if (req & KICK_REQ_FLUSH_TLB)
		v->flush_pending = true;
	if ((req & KICK_REQ_EVENT) || !vm_running(v->vm)) {
		kick_sync_exit(&v->kick);
		return false;
	}
	/* A host NMI exits, and sprig's handler takes it before run returns
	 * (after STGI on SVM; VMX delivers it to itself with INT 2). */
	backend->run(v, e);
	kick_sync_exit(&v->kick);
	if (e->kind == VEXIT_BACKEND)
		backend->finish_exit(v, e);
	return true;
}

void vcpu_run_slice(struct vcpu *v, uint64_t end)
{
	struct vm *vm = v->vm;
	struct vexit e;

	while (vm_running(vm) && rdtsc() < end) {
		/* The guest's clock, once for the timers of this round. */
		uint64_t now = guest_tsc(v);
		uint64_t rip;
		bool ready, entered;

		vm_lock(vm);
		take_start(v);
		update_timers(v, now);
		ready = !v->wait_sipi && (!v->halted || wakes_halted(v));
		if (ready) {
			/* As KVM, a kick is spent by the halt it ends. */
			if (v->halted)
				v->pv_unhalted = false;
			v->halted = false;
			deliver_events(v);
			kvm_pv_eoi_before_entry(&v->pv_eoi, v->apic, v->mmu);
			vcpu_arm_host_timer(v);
		}
		vm_unlock(vm, v);
		if (!ready)
			return;
		fpu_enter(v);
		live_regs_enter(v);
		entered = enter(v, &e);
		fpu_exit(v);
		pv_eoi_after_exit(v);
		if (!entered)
			continue;
		v->stats.exits++;
		v->stats.exits_by_kind[e.kind]++;
		v->stats.events_requeued += e.requeued;
		rip = v->regs.rip;
		if (handle_exit(v, &e))
			v->regs.rip += e.insn_len;
		/* A trap flag the guest set steps what sprig ran for it too. */
		if ((v->regs.rflags & RFLAGS_TF) && v->regs.rip != rip)
			backend->single_step_trap(v);
		if (vm->observer && vm->observer->on_exit && vm_running(vm))
			vm->observer->on_exit(vm, &e, vm->observer_ctx);
		if (e.kind == VEXIT_INTR)
			return; /* the tick or a kick: the CPU takes it, then maybe another vCPU */
		if (v->yielded) {
			v->yielded = false;
			return;
		}
	}
}
