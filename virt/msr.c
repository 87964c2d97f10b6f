/* RDMSR and WRMSR exits, for both backends: virt/msr_policy.c says which MSRs
 * exist and which writes are valid; the backend stores and loads the values
 * its control block holds (EFER, the syscall, sysenter and segment-base MSRs,
 * PAT), and the rest are here: the TSC through the TSC offset, TSC_AUX and
 * (on SVM) PKRS, which virt/backend.c switches into the CPU before each
 * entry, and the fixed values of a few MSRs that guests probe; the local
 * APIC's MSRs go to its model. Everything refused raises #GP. */
#include "arch/x86/cmos.h"
#include "arch/x86/cpu.h"
#include "arch/x86/cpuinfo.h"
#include "arch/x86/regs.h"
#include "arch/x86/tsc.h"
#include "lib/print.h"
#include "virt/cpuid_policy.h"
#include "virt/msr.h"
#include "virt/vm.h"
#include "dev/lapic.h"
#include "virt/msr_policy.h"
#include "virt/pv_eoi.h"
#include "virt/pvclock.h"
#include "virt/sched.h"
#include "virt/steal_time.h"

/* Console lines per vCPU and kind; the counters in `stats` go on. */
#define MSR_LOG_LINES 8

static uint64_t edx_eax(const struct vcpu *v)
{
	return (v->regs.rdx << 32) | (uint32_t)v->regs.rax;
}

uint64_t guest_tsc(const struct vcpu *v)
{
	return rdtsc() + (uint64_t)v->tsc_offset;
}

/* TSC_AUX exists with RDTSCP or RDPID, which the guest's CPUID passes
 * through (virt/cpuid_policy.c). */
bool cpu_has_tsc_aux(void)
{
	static int has = -1;

	if (has < 0)
		has = (cpuid(0x80000001, 0).edx & CPUID_81_EDX_RDTSCP) ||
		      (cpuid(0, 0).eax >= 7 && (cpuid(7, 0).ecx & CPUID_7_ECX_RDPID));
	return has;
}

/* The MSR_HOME_VIRT MSRs: the TSC through its offset, the vCPU's TSC_AUX,
 * PKRS, MISC_ENABLE, machine-check and pvclock MSRs, the policy's fixed
 * values. */
static bool virt_msr_read(struct vcpu *v, uint32_t msr, uint64_t *val)
{
	uint64_t *mce = mce_msr_slot(&v->mce, msr);

	if (mce) {
		*val = *mce;
		return true;
	}
	switch (msr) {
	case MSR_TSC:
		*val = guest_tsc(v);
		return true;
	case MSR_TSC_AUX:
		*val = v->tsc_aux;
		return cpu_has_tsc_aux();
	case MSR_PKRS:
		*val = v->pkrs;
		return backend->pks_switched();
	case MSR_MISC_ENABLE:
		*val = v->misc_enable;
		return true;
	case MSR_KVM_SYSTEM_TIME_NEW:
		*val = v->pvclock_msr;
		return true;
	case MSR_KVM_WALL_CLOCK_NEW:
		*val = v->vm->pvclock_wall_msr;
		return true;
	case MSR_KVM_STEAL_TIME:
		*val = v->steal.msr;
		return true;
	case MSR_KVM_PV_EOI_EN:
		*val = v->pv_eoi.msr;
		return true;
	default:
		return msr_fixed_value(msr, val);
	}
}

static bool apic_msr_read_locked(struct vcpu *v, uint32_t msr, uint64_t *val)
{
	if (msr == MSR_APIC_BASE) {
		*val = lapic_base_msr(v->apic);
		return true;
	}
	if (msr == MSR_TSC_DEADLINE) {
		*val = lapic_tsc_deadline_read(v->apic);
		return true;
	}
	return lapic_msr_read(v->apic, msr, val, guest_tsc(v));
}

static bool apic_msr_write_locked(struct vcpu *v, uint32_t msr, uint64_t val)
{
	if (msr == MSR_APIC_BASE)
		return lapic_set_base_msr(v->apic, val, cpuinfo.phys_bits);
	if (msr == MSR_TSC_DEADLINE) {
		lapic_tsc_deadline_write(v->apic, val, guest_tsc(v));
		return true;
	}
	return lapic_msr_write(v->apic, msr, val, guest_tsc(v));
}

/* The APICs are the VM's: an ICR write reaches the others. */
static bool apic_msr_read(struct vcpu *v, uint32_t msr, uint64_t *val)
{
	bool ok;

	vm_lock(v->vm);
	ok = apic_msr_read_locked(v, msr, val);
	vm_unlock(v->vm, v);
	return ok;
}

static bool apic_msr_write(struct vcpu *v, uint32_t msr, uint64_t val)
{
	bool ok;

	vm_lock(v->vm);
	ok = apic_msr_write_locked(v, msr, val);
	vm_unlock(v->vm, v);
	return ok;
}

/* KVM's clock MSRs (virt/pvclock.h): sprig writes the structure at the gpa
 * now; one it may not use (outside guest memory, or the system time across a
 * page) is left unwritten, as KVM leaves it, and the MSR keeps the value. */
static void pvclock_msr_write(struct vcpu *v, uint32_t msr, uint64_t val)
{
	struct pvclock_scale s;
	uint64_t khz = tsc_khz();

	if (msr == MSR_KVM_WALL_CLOCK_NEW) {
		/* The host's wall clock when this VM's TSC read 0. */
		uint64_t sec = cmos_unix_seconds() - (khz ? guest_tsc(v) / (khz * 1000) : 0);

		v->vm->pvclock_wall_msr = val;
		pvclock_publish_wall_clock(v->mmu, val, (uint32_t)sec);
		return;
	}
	v->pvclock_msr = val;
	if (!(val & 1) || !khz)
		return;
	pvclock_scale_for(khz, &s);
	pvclock_publish_time_info(v->mmu, val & ~1ull, &v->pvclock_version, &s);
}

void msr_pvclock_resume(struct vcpu *v)
{
	if (v->pvclock_msr & 1)
		pvclock_msr_write(v, MSR_KVM_SYSTEM_TIME_NEW, v->pvclock_msr);
}

static void msr_unknown(struct vcpu *v, uint32_t msr, bool write)
{
	v->stats.msr_unknown++;
	if (v->stats.msr_unknown <= MSR_LOG_LINES)
		kprintf("[%s] %s of unknown MSR 0x%x: #GP\n", v->vm->name,
			write ? "write" : "read", msr);
	backend->inject_exception(v, X86_VEC_GP, 0);
}

static void msr_refused(struct vcpu *v, uint32_t msr, const char *why)
{
	v->stats.msr_refused++;
	if (v->stats.msr_refused <= MSR_LOG_LINES)
		kprintf("[%s] refused write of MSR 0x%x (%s): #GP\n", v->vm->name, msr, why);
	backend->inject_exception(v, X86_VEC_GP, 0);
}

bool emulate_rdmsr(struct vcpu *v)
{
	uint32_t msr = (uint32_t)v->regs.rcx;
	uint64_t val = 0;
	bool ok;

	switch (msr_home(msr)) {
	case MSR_HOME_BACKEND:
		ok = backend->msr_read(v, msr, &val);
		break;
	case MSR_HOME_VIRT:
		ok = virt_msr_read(v, msr, &val);
		break;
	case MSR_HOME_APIC:
		ok = apic_msr_read(v, msr, &val);
		break;
	default:
		ok = false;
		break;
	}
	if (!ok) {
		msr_unknown(v, msr, false);
		return false;
	}
	v->regs.rax = (uint32_t)val;
	v->regs.rdx = val >> 32;
	return true;
}

bool emulate_wrmsr(struct vcpu *v)
{
	uint32_t msr = (uint32_t)v->regs.rcx;
	uint64_t val = edx_eax(v), store;
	enum msr_home home = msr_home(msr);
	struct msr_guest g = {
		.cr0 = backend->guest_cr0(v),
		.nx = cpuinfo.nx,
		.va_bits = cpuinfo.va_bits, /* the guest's CPUID passes LA57 through */
		.tsc_aux = cpu_has_tsc_aux(),
		.intel = cpuinfo.is_intel,
		.pks = backend->pks_switched(),
		.misc_enable = v->misc_enable,
	};
	const char *why;
	uint64_t *mce;

	if (home == MSR_HOME_NONE) {
		msr_unknown(v, msr, true);
		return false;
	}
	if (home == MSR_HOME_APIC) {
		if (apic_msr_write(v, msr, val))
			return true;
		msr_refused(v, msr, "the local APIC refuses it");
		return false;
	}
	if (!backend->msr_read(v, MSR_EFER, &g.efer)) {
		msr_refused(v, msr, "the guest's EFER cannot be read");
		return false;
	}
	if ((why = msr_check_write(msr, val, &g, &store))) {
		msr_refused(v, msr, why);
		return false;
	}
	if (home == MSR_HOME_BACKEND) {
		if (!backend->msr_write(v, msr, store)) {
			msr_refused(v, msr, "the backend cannot hold it");
			return false;
		}
	} else if (msr == MSR_TSC) {
		/* Never the host's TSC: only this guest's view moves. */
		v->tsc_offset = (int64_t)(store - rdtsc());
	} else if (msr == MSR_TSC_AUX) {
		v->tsc_aux = (uint32_t)store; /* loaded at the next entry */
	} else if (msr == MSR_PKRS) {
		v->pkrs = (uint32_t)store; /* loaded at the next entry */
	} else if (msr == MSR_MISC_ENABLE) {
		v->misc_enable = store;
	} else if ((mce = mce_msr_slot(&v->mce, msr))) {
		*mce = store;
	} else if (msr == MSR_KVM_SYSTEM_TIME_NEW || msr == MSR_KVM_WALL_CLOCK_NEW) {
		pvclock_msr_write(v, msr, store);
	} else if (msr == MSR_KVM_STEAL_TIME && !steal_time_msr_write(v, store)) {
		msr_refused(v, msr, "steal-time record outside guest memory");
		return false;
	} else if (msr == MSR_KVM_PV_EOI_EN && !pv_eoi_msr_write(v, store)) {
		msr_refused(v, msr, "PV EOI word outside guest memory");
		return false;
	}
	/* The other MSR_HOME_VIRT MSRs keep their fixed values. */
	return true;
}
