/* Hypercalls (ABI in virt/hypercall.h). Guest-physical ranges are checked
 * against the VM's memory before sprig touches them (mmu_read_guest and
 * mmu_write_guest check what they copy; a buffer's declared length is checked
 * here); results written go through mmu_write_guest, into the dirty log. */
#include "arch/x86/cpu.h"
#include "arch/x86/tsc.h"
#include "lib/print.h"
#include "lib/range.h"
#include "lib/string.h"
#include "virt/clone.h"
#include "virt/vm.h"
#include "virt/hypercall.h"
#include "virt/kvm_pv.h"
#include "virt/sched.h"
#include "mm/cow.h"

#define PUTS_MAX 4096

/* [gpa, gpa + len) lies in the guest's RAM, without wrapping. */
static bool guest_range_ok(struct vm *vm, uint64_t gpa, uint64_t len)
{
	return len && range_within(gpa, len, vm->mem_bytes);
}

static uint64_t hc_balloon_release(struct vm *vm, uint64_t gpa, uint64_t len)
{
	if ((gpa | len) & (PAGE_SIZE - 1) || !guest_range_ok(vm, gpa, len))
		return (uint64_t)HC_EINVAL;
	mmu_discard(&vm->mmu, gpa, len);
	return 0;
}

/* The buffer is the VM's, used under its lock: vCPUs may print at once. */
static uint64_t hc_puts(struct vcpu *v, uint64_t gpa, uint64_t len)
{
	static char buf[PUTS_MAX];
	struct vm *vm = v->vm;
	uint64_t ret = 0;

	if (len > PUTS_MAX || !guest_range_ok(vm, gpa, len))
		return (uint64_t)HC_EINVAL;
	vm_lock(vm);
	if (mmu_read_guest(&vm->mmu, gpa, buf, len))
		ret = (uint64_t)HC_EINVAL;
	for (uint64_t i = 0; !ret && i < len; i++)
		com1_transmit(vm, (uint8_t)buf[i]);
	vm_unlock(vm, v);
	return ret;
}

/* The arguments NUL-terminated, cut to len; returns their full length. */
static uint64_t hc_args(struct vm *vm, uint64_t gpa, uint64_t len)
{
	uint64_t n = strnlen(vm->args, VM_ARGS_MAX);
	uint64_t copy = n + 1 < len ? n + 1 : len;

	if (!guest_range_ok(vm, gpa, len) || mmu_write_guest(&vm->mmu, gpa, vm->args, copy))
		return (uint64_t)HC_EINVAL;
	if (copy == len)
		mmu_write_guest(&vm->mmu, gpa + len - 1, "", 1);
	return n;
}

/* The oldest ranges first, as many as fit; the rest wait for the next call. */
static uint64_t take_lost_ranges(struct vm *vm, uint64_t gpa, uint64_t max)
{
	struct vm_lost *l = &vm->lost;
	unsigned n = l->count < max ? l->count : (unsigned)max;

	if (l->overflow) {
		l->overflow = false;
		l->count = 0;
		return (uint64_t)HC_ELOST;
	}
	if (!n)
		return 0;
	if (mmu_write_guest(&vm->mmu, gpa, l->range, n * sizeof(struct hc_range)))
		return (uint64_t)HC_EINVAL;
	memmove(l->range, l->range + n, (l->count - n) * sizeof(struct hc_range));
	l->count -= n;
	return n;
}

static uint64_t hc_lost_ranges(struct vcpu *v, uint64_t gpa, uint64_t max)
{
	uint64_t ret;

	vm_lock(v->vm);
	ret = take_lost_ranges(v->vm, gpa, max);
	vm_unlock(v->vm, v);
	return ret;
}

/* The vCPU whose enabled APIC has that physical ID (KVM's apic_map), or
 * NULL. Under the VM's lock. */
static struct vcpu *vcpu_by_apic_id(struct vm *vm, uint64_t id)
{
	if (id >= 0xff) /* beyond sprig's IDs, or an xAPIC broadcast */
		return NULL;
	for (unsigned i = 0; i < vm->nr_vcpus; i++)
		if (lapic_match_dest(vm->vcpus[i]->apic, (uint32_t)id, false))
			return vm->vcpus[i];
	return NULL;
}

/* KVM's kvm_sched_yield: give the CPU to the vCPU of that APIC ID if it
 * waits for one (virt/sched.c). */
static void sched_yield(struct vcpu *v, uint64_t apic_id)
{
	struct vcpu *t;

	v->stats.directed_yield_attempted++;
	vm_lock(v->vm);
	t = vcpu_by_apic_id(v->vm, apic_id);
	vm_unlock(v->vm, v);
	if (t && t != v && vm_yield_to(v, t))
		v->stats.directed_yield_successful++;
}

/* KVM's kvm_pv_kick_cpu_op: the target's next or current HLT ends
 * (pv_unhalted). KVM sends the kick as an APIC message (APIC_DM_REMRD):
 * here too it is an arrival, for which vm_unlock wakes the target's CPU. */
static void kick_cpu(struct vcpu *v, uint64_t apic_id)
{
	struct vcpu *t;

	v->stats.pv_kick_cpu++;
	vm_lock(v->vm);
	if ((t = vcpu_by_apic_id(v->vm, apic_id))) {
		t->pv_unhalted = true;
		t->apic->arrivals++;
	}
	vm_unlock(v->vm, v);
}

/* a2 (the lowest APIC ID) in RDX, a3 (the ICR) in RSI. */
static uint64_t send_ipi(struct vcpu *v, uint64_t a0, uint64_t a1, bool wide)
{
	uint64_t icr = wide ? v->regs.rsi : (uint32_t)v->regs.rsi;
	int64_t n;

	v->stats.pv_send_ipi++;
	vm_lock(v->vm);
	n = kvm_pv_send_ipi(&v->vm->apic_bus, a0, a1, (uint32_t)v->regs.rdx, icr, wide);
	vm_unlock(v->vm, v);
	if (n > 0)
		v->stats.pv_ipi_delivered += (uint64_t)n;
	return (uint64_t)n;
}

/* A number outside sprig's range: KVM's answers, its paravirtual features
 * offered whatever the guest's CPUID says (as KVM unless the VMM enforces
 * it), the rest as to a guest it advertised none to (kvm_emulate_hypercall). */
static uint64_t kvm_hypercall(struct vcpu *v, uint64_t nr, uint64_t a0, uint64_t a1, bool wide)
{
	switch (nr) {
	case KVM_HC_VAPIC_POLL_IRQ:
		return 0;
	case KVM_HC_KICK_CPU:
		kick_cpu(v, a1);
		sched_yield(v, a1);
		return 0;
	case KVM_HC_SEND_IPI:
		return send_ipi(v, a0, a1, wide);
	case KVM_HC_SCHED_YIELD:
		sched_yield(v, a0);
		return 0;
	case KVM_HC_CLOCK_PAIRING: /* sprig's clock is no host clocksource to pair */
		return (uint64_t)-KVM_EOPNOTSUPP;
	default:
		return (uint64_t)-KVM_ENOSYS;
	}
}

/* RAX as the result; outside 64-bit mode its low 32 bits, as KVM writes it. */
static void hypercall_return(struct vcpu_regs *r, uint64_t ret, bool wide)
{
	r->rax = wide ? ret : (uint32_t)ret;
}

bool emulate_hypercall(struct vcpu *v)
{
	struct vm *vm = v->vm;
	struct vcpu_regs *r = &v->regs;
	struct guest_mode m;
	uint64_t ret, nr = r->rax, a0 = r->rbx, a1 = r->rcx;
	bool wide;

	v->stats.hypercalls++;
	backend->guest_mode(v, &m);
	wide = m.code_bits == 64;
	if (!wide) {
		nr = (uint32_t)nr;
		a0 = (uint32_t)a0;
		a1 = (uint32_t)a1;
	}
	/* As KVM: the guest's user programs may not exit it or give its
	 * memory away; they get an error and nothing happens. */
	if (backend->guest_cpl(v) != 0) {
		hypercall_return(r, (uint64_t)HC_EPERM, wide);
		return true;
	}
	if (nr - HC_BASE >= HC_RANGE) {
		hypercall_return(r, kvm_hypercall(v, nr, a0, a1, wide), wide);
		return true;
	}
	switch (nr) {
	case HC_VERSION:
		ret = HC_ABI_VERSION;
		break;
	case HC_EXIT:
		vm_exit(vm, (int)a0);
		return true;
	case HC_BALLOON_RELEASE:
		ret = hc_balloon_release(vm, a0, a1);
		break;
	case HC_TSC_KHZ:
		ret = tsc_khz();
		break;
	case HC_TIME_NS:
		ret = tsc_to_ns(rdtsc() - vm->created_tsc);
		break;
	case HC_PUTS:
		ret = hc_puts(v, a0, a1);
		break;
	case HC_LOST_RANGES:
		ret = hc_lost_ranges(v, a0, a1);
		break;
	case HC_SNAPSHOT_POINT:
		vm_pause(vm, "snapshot point");
		ret = 0;
		break;
	case HC_CLONE_POINT:
		vm_pause(vm, VM_PAUSE_CLONE_POINT);
		/* Another stop came first (a timeout, another vCPU's clone
		 * point): this call did not pause the VM, and runs again when it
		 * resumes, so that each call is the one a clone returns from. */
		if (__atomic_load_n(&vm->stopped_by, __ATOMIC_RELAXED) != (int)v->index)
			return false;
		ret = 0; /* the clones' value; vm_clone gives the parent its own */
		break;
	case HC_ARGS:
		ret = hc_args(vm, a0, a1);
		break;
	default:
		vm_fail(vm, "unknown hypercall 0x%llx (sprig's range)", (unsigned long long)nr);
		return false;
	}
	hypercall_return(r, ret, wide);
	return true;
}
