/* CPUID exits: the guest's CPUID is virt/cpuid_policy.c's pure function of
 * the host's CPUID and of what sprig virtualizes; here it gets the real CPU,
 * the TSC rate, the XSAVE state fpu.c switches and the vCPU's registers. */
#include "arch/x86/cpu.h"
#include "arch/x86/regs.h"
#include "arch/x86/tsc.h"
#include "virt/cpuid_policy.h"
#include "virt/cpuid.h"
#include "virt/vm.h"
#include "virt/fpu.h"

_Static_assert(SPRIG_CPUID_LEAF == CPUID_LEAF_HYPERVISOR, "sprig's leaf is the hypervisor leaf");
_Static_assert(sizeof(SPRIG_CPUID_SIGNATURE) >= 12, "the signature fills EBX, ECX, EDX");
_Static_assert(CPUID_APIC_BUS_HZ == LAPIC_BUS_HZ, "leaves 0x15/0x16 state the APIC timer's clock");

static void host_cpuid(void *ctx, uint32_t leaf, uint32_t subleaf, struct cpuid_leaf *out)
{
	struct cpuid_regs r = cpuid(leaf, subleaf);

	(void)ctx;
	*out = (struct cpuid_leaf){ r.eax, r.ebx, r.ecx, r.edx };
}

struct cpuid_host vcpu_cpuid_host(struct vcpu *v)
{
	return (struct cpuid_host){
		.raw = host_cpuid,
		.ctx = NULL,
		.tsc_khz = tsc_khz(),
		.xsave = fpu_has_xsave(),
		.xcr0_allowed = fpu_guest_xcr0_allowed(),
		.guest_xcr0 = v->xcr0,
		.guest_cr4 = backend->guest_cr4(v),
		.pks = backend->pks_switched(),
		.apic_id = v->apic->initial_id,
		.apic_disabled = !lapic_hw_enabled(v->apic),
		.vcpu_count = v->vm->nr_vcpus,
		.hv_signature = SPRIG_CPUID_SIGNATURE,
		.no_kvm_pv = v->vm->no_kvm_pv,
	};
}

bool emulate_cpuid(struct vcpu *v)
{
	struct cpuid_host h = vcpu_cpuid_host(v);
	struct cpuid_leaf r;

	cpuid_guest(&h, (uint32_t)v->regs.rax, (uint32_t)v->regs.rcx, &r);
	v->regs.rax = r.eax;
	v->regs.rbx = r.ebx;
	v->regs.rcx = r.ecx;
	v->regs.rdx = r.edx;
	return true;
}
