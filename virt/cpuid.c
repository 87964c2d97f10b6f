/* CPUID as the guest sees it: the host's CPU, with the hypervisor bit set, the
 * virtualization extensions and the local APIC hidden (no virtual APIC yet),
 * XSAVE limited to the state sprig switches, and sprig's own leaf. */
#include "arch/x86/cpu.h"
#include "arch/x86/regs.h"
#include "lib/string.h"
#include "virt/emulate.h"
#include "virt/fpu.h"

#define CPUID1_ECX_MONITOR (1u << 3)
#define CPUID1_ECX_VMX (1u << 5)
#define CPUID1_ECX_TSC_DEADLINE (1u << 24)
#define CPUID1_ECX_X2APIC (1u << 21)
#define CPUID1_ECX_XSAVE (1u << 26)
#define CPUID1_ECX_OSXSAVE (1u << 27)
#define CPUID1_ECX_HYPERVISOR (1u << 31)
#define CPUID1_EDX_APIC (1u << 9)
#define CPUID80000001_ECX_SVM (1u << 2)
#define CPUID80000001_ECX_PERFCTR_CORE (1u << 23)
#define CPUID_LEAF_PMU 0xa
#define CPUID7_EDX_ARCH_CAPS (1u << 29)

bool emulate_cpuid(struct vcpu *v)
{
	uint32_t leaf = (uint32_t)v->regs.rax, sub = (uint32_t)v->regs.rcx;
	struct cpuid_regs r = { 0, 0, 0, 0 };
	uint32_t max_basic = cpuid(0, 0).eax, max_ext = cpuid(0x80000000, 0).eax;

	if (leaf >= 0x40000000 && leaf < 0x40000100) {
		if (leaf == SPRIG_CPUID_LEAF) {
			r.eax = SPRIG_CPUID_LEAF;
			memcpy(&r.ebx, SPRIG_CPUID_SIGNATURE, 4);
			memcpy(&r.ecx, SPRIG_CPUID_SIGNATURE + 4, 4);
			memcpy(&r.edx, SPRIG_CPUID_SIGNATURE + 8, 4);
		}
	} else if ((leaf < 0x80000000 && leaf <= max_basic) ||
		   (leaf >= 0x80000000 && leaf <= max_ext)) {
		r = cpuid(leaf, sub);
	}

	switch (leaf) {
	case 1:
		/* MONITOR/MWAIT and the VM extensions raise #UD (virt/vm.c). */
		r.ecx &= ~(CPUID1_ECX_MONITOR | CPUID1_ECX_VMX | CPUID1_ECX_X2APIC |
			   CPUID1_ECX_TSC_DEADLINE | CPUID1_ECX_OSXSAVE);
		if (!fpu_has_xsave())
			r.ecx &= ~CPUID1_ECX_XSAVE;
		r.ecx |= CPUID1_ECX_HYPERVISOR;
		/* OSXSAVE mirrors the guest's CR4, not sprig's. */
		if (fpu_has_xsave() && (backend->guest_cr4(v) & CR4_OSXSAVE))
			r.ecx |= CPUID1_ECX_OSXSAVE;
		r.edx &= ~CPUID1_EDX_APIC;
		/* One logical processor, APIC ID 0. */
		r.ebx = (r.ebx & 0xffff) | (1u << 16);
		break;
	case 7:
		if (sub == 0)
			r.edx &= ~CPUID7_EDX_ARCH_CAPS; /* the MSR is not emulated */
		break;
	case 0xb:
	case 0x1f:
		r = (struct cpuid_regs){ 0, 0, sub, 0 }; /* no topology to enumerate */
		break;
	case 0xd:
		if (!fpu_has_xsave()) {
			r = (struct cpuid_regs){ 0, 0, 0, 0 };
		} else if (sub == 0) {
			uint64_t allowed = fpu_guest_xcr0_allowed();
			r.eax = (uint32_t)allowed;
			r.edx = (uint32_t)(allowed >> 32);
			r.ebx = fpu_xsave_size(v->xcr0);
			r.ecx = fpu_xsave_size(allowed);
		} else if (sub == 1) {
			r.eax &= 0x7; /* XSAVEOPT, XSAVEC, XGETBV1; no XSAVES (IA32_XSS) */
			r.ebx = 0;
			r.ecx = r.edx = 0;
		} else if (sub < 64 && !(fpu_guest_xcr0_allowed() & (1ull << sub))) {
			r = (struct cpuid_regs){ 0, 0, 0, 0 };
		}
		break;
	case 0x80000001:
		r.ecx &= ~(CPUID80000001_ECX_SVM | CPUID80000001_ECX_PERFCTR_CORE);
		break;
	case CPUID_LEAF_PMU: /* no performance counters: RDPMC raises #GP */
	case 0x8000000a:     /* no SVM */
		r = (struct cpuid_regs){ 0, 0, 0, 0 };
		break;
	}
	v->regs.rax = r.eax;
	v->regs.rbx = r.ebx;
	v->regs.rcx = r.ecx;
	v->regs.rdx = r.edx;
	return true;
}
