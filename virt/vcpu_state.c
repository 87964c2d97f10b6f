/* vCPU state capture and load (vcpu_state.h). */
#include "virt/vcpu_state.h"
#include "arch/x86/cpu.h"
#include "arch/x86/cpuinfo.h"
#include "arch/x86/tsc.h"
#include "lib/print.h"
#include "lib/string.h"
#include "virt/fpu.h"
#include "virt/state_check.h"

bool vcpu_state_save(struct vm *vm, struct vcpu_state *st, char *err, size_t errlen)
{
	struct vcpu *v = vm->vcpus[0];
	uint32_t xsave_bytes = fpu_vcpu_area_bytes();

	if (vm->state == VM_RUNNING) {
		ksnprintf(err, errlen, "'%s' is running", vm->name);
		return false;
	}
	if (vm->nr_vcpus > 1) {
		ksnprintf(err, errlen, "'%s' has %u vCPUs; images and clones hold one", vm->name,
			  vm->nr_vcpus);
		return false;
	}
	if (xsave_bytes > VCPU_XSAVE_MAX) {
		ksnprintf(err, errlen, "the FPU area takes %u bytes", xsave_bytes);
		return false;
	}
	memset(st, 0, sizeof(*st));
	memcpy(st->backend, backend->name, strnlen(backend->name, sizeof(st->backend) - 1));
	vcpu_load(v);
	st->arch_bytes = (uint32_t)backend->state_save(v, st->arch);
	vcpu_put(v);
	if (!st->arch_bytes) {
		ksnprintf(err, errlen, "the %s backend could not read the guest state", backend->name);
		return false;
	}
	st->regs = v->regs;
	st->xcr0 = v->xcr0;
	st->guest_tsc = rdtsc() + (uint64_t)v->tsc_offset;
	st->uart = vm->uart;
	st->lost = vm->lost;
	lapic_state_save(&v->apic, &st->apic);
	st->xsave_bytes = xsave_bytes;
	memcpy(st->xsave, v->xsave, xsave_bytes);
	return true;
}

bool vcpu_state_check(const struct vcpu_state *st, char *err, size_t errlen)
{
	struct fpu_limits lim;
	struct apic_limits apic = { .phys_bits = cpuinfo.phys_bits, .apic_id = VCPU_APIC_ID };

	fpu_limits(&lim);
	return vcpu_state_check_common(st, backend->name, &lim, &apic, err, errlen) &&
	       backend->state_check(st->arch, st->arch_bytes, &st->regs, err, errlen);
}

bool vcpu_state_load(struct vm *vm, const struct vcpu_state *st, char *err, size_t errlen)
{
	struct vcpu *v = vm->vcpus[0];

	if (!vcpu_state_check(st, err, errlen))
		return false;
	if (vm->nr_vcpus > 1) {
		ksnprintf(err, errlen, "a state of one vCPU for %u vCPUs", vm->nr_vcpus);
		return false;
	}
	if (!backend->state_load(v, st->arch, st->arch_bytes)) {
		ksnprintf(err, errlen, "the %s backend could not load the guest state", backend->name);
		return false;
	}
	v->regs = st->regs;
	v->xcr0 = st->xcr0;
	memcpy(v->xsave, st->xsave, st->xsave_bytes);
	vm->uart = st->uart;
	vm->lost = st->lost;
	/* After the backend's state: the APIC's TPR is whole, VMX's CR8 only its
	 * bits 7:4. The APIC keeps this VM's bus and TSC rate. */
	lapic_state_load(&v->apic, &st->apic);
	/* The guest's clock goes on from where it was captured. */
	vm->created_tsc = rdtsc() - st->guest_tsc;
	v->tsc_offset = -(int64_t)vm->created_tsc;
	return true;
}
