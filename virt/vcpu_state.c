/* VM state capture and load (vcpu_state.h). */
#include "virt/vcpu_state.h"
#include "arch/x86/cpu.h"
#include "arch/x86/cpuinfo.h"
#include "arch/x86/tsc.h"
#include "lib/print.h"
#include "lib/string.h"
#include "virt/fpu.h"
#include "virt/state_check.h"

static bool save_vcpu(struct vcpu *v, struct vcpu_state *st, uint32_t xsave_bytes, uint64_t now,
		      char *err, size_t errlen)
{
	memcpy(st->backend, backend->name, strnlen(backend->name, sizeof(st->backend) - 1));
	vcpu_load(v);
	st->arch_bytes = (uint32_t)backend->state_save(v, st->arch);
	vcpu_put(v);
	if (!st->arch_bytes) {
		ksnprintf(err, errlen, "the %s backend could not read vCPU %u's state", backend->name,
			  v->index);
		return false;
	}
	st->regs = v->regs;
	st->xcr0 = v->xcr0;
	st->guest_tsc = now + (uint64_t)v->tsc_offset;
	lapic_state_save(&v->apic, &st->apic);
	st->halted = v->halted;
	st->wait_sipi = v->wait_sipi;
	st->xsave_bytes = xsave_bytes;
	memcpy(st->xsave, v->xsave, xsave_bytes);
	return true;
}

bool vm_state_save(struct vm *vm, struct vm_saved_state *st, char *err, size_t errlen)
{
	uint32_t xsave_bytes = fpu_vcpu_area_bytes();
	/* One instant for every vCPU: their TSCs keep their distances. */
	uint64_t now = rdtsc();

	if (vm->state == VM_RUNNING) {
		ksnprintf(err, errlen, "'%s' is running", vm->name);
		return false;
	}
	if (xsave_bytes > VCPU_XSAVE_MAX) {
		ksnprintf(err, errlen, "the FPU area takes %u bytes", xsave_bytes);
		return false;
	}
	memset(st, 0, vm_saved_state_bytes(vm->nr_vcpus));
	st->nr_vcpus = vm->nr_vcpus;
	st->uart = vm->uart;
	st->lost = vm->lost;
	for (unsigned i = 0; i < vm->nr_vcpus; i++)
		if (!save_vcpu(vm->vcpus[i], &st->vcpu[i], xsave_bytes, now, err, errlen))
			return false;
	return true;
}

bool vm_state_check(const struct vm_saved_state *st, char *err, size_t errlen)
{
	struct fpu_limits lim;

	fpu_limits(&lim);
	if (!vm_state_check_common(st, backend->name, &lim, cpuinfo.phys_bits, err, errlen))
		return false;
	for (unsigned i = 0; i < st->nr_vcpus; i++) {
		const struct vcpu_state *v = &st->vcpu[i];
		char why[144];

		if (!backend->state_check(v->arch, v->arch_bytes, &v->regs, why, sizeof(why))) {
			ksnprintf(err, errlen, "vCPU %u: %s", i, why);
			return false;
		}
	}
	return true;
}

static bool load_vcpu(struct vcpu *v, const struct vcpu_state *st, uint64_t now)
{
	if (!backend->state_load(v, st->arch, st->arch_bytes))
		return false;
	v->regs = st->regs;
	v->xcr0 = st->xcr0;
	memcpy(v->xsave, st->xsave, st->xsave_bytes);
	/* After the backend's state: the APIC's TPR is whole, VMX's CR8 only its
	 * bits 7:4. The APIC keeps this VM's bus and TSC rate. */
	lapic_state_load(&v->apic, &st->apic);
	v->halted = st->halted;
	v->wait_sipi = st->wait_sipi;
	/* The vCPU's clock goes on from where it was captured. */
	v->tsc_offset = (int64_t)(st->guest_tsc - now);
	return true;
}

bool vm_state_load(struct vm *vm, const struct vm_saved_state *st, char *err, size_t errlen)
{
	uint64_t now = rdtsc();

	if (!vm_state_check(st, err, errlen))
		return false;
	if (vm->nr_vcpus != st->nr_vcpus) {
		ksnprintf(err, errlen, "a state of %u vCPUs for %u", st->nr_vcpus, vm->nr_vcpus);
		return false;
	}
	for (unsigned i = 0; i < st->nr_vcpus; i++)
		if (!load_vcpu(vm->vcpus[i], &st->vcpu[i], now)) {
			ksnprintf(err, errlen, "the %s backend could not load vCPU %u's state",
				  backend->name, i);
			return false;
		}
	vm->uart = st->uart;
	vm->lost = st->lost;
	/* The VM's clock (HC_TIME_NS) is vCPU 0's. */
	vm->created_tsc = now - st->vcpu[0].guest_tsc;
	return true;
}
