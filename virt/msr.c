/* MSRs as the guest sees them. The backend owns those its control block holds
 * (EFER, the syscall and segment-base MSRs, PAT); here are the rest: the TSC
 * through the TSC offset, a few that guests probe, and #GP for the others. */
#include "arch/x86/cpu.h"
#include "lib/print.h"
#include "virt/emulate.h"

#define MSR_TSC 0x10
#define MSR_MISC_ENABLE 0x1a0
#define MSR_MTRRCAP 0xfe
#define MSR_MTRR_DEF_TYPE 0x2ff
#define MSR_TSC_AUX 0xc0000103
#define MISC_ENABLE_FAST_STRINGS 1

static uint64_t edx_eax(const struct vcpu *v)
{
	return (v->regs.rdx << 32) | (uint32_t)v->regs.rax;
}

static void msr_unknown(struct vcpu *v, uint32_t msr, bool write)
{
	v->vm->stats.msr_unknown++;
	if (v->vm->stats.msr_unknown <= 4)
		kprintf("[%s] %s of unknown MSR 0x%x: #GP\n", v->vm->name,
			write ? "write" : "read", msr);
	backend->inject_gp(v);
}

bool emulate_rdmsr(struct vcpu *v)
{
	uint32_t msr = (uint32_t)v->regs.rcx;
	uint64_t val;

	if (!backend->msr_read(v, msr, &val)) {
		switch (msr) {
		case MSR_TSC:
			val = rdtsc() + (uint64_t)v->tsc_offset;
			break;
		case MSR_MISC_ENABLE:
			val = MISC_ENABLE_FAST_STRINGS;
			break;
		case MSR_MTRRCAP:
		case MSR_MTRR_DEF_TYPE:
		case MSR_TSC_AUX:
			val = 0; /* no MTRRs to program; guest memory is write-back */
			break;
		default:
			msr_unknown(v, msr, false);
			return false;
		}
	}
	v->regs.rax = (uint32_t)val;
	v->regs.rdx = val >> 32;
	return true;
}

bool emulate_wrmsr(struct vcpu *v)
{
	uint32_t msr = (uint32_t)v->regs.rcx;
	uint64_t val = edx_eax(v);

	if (backend->msr_write(v, msr, val))
		return true;
	switch (msr) {
	case MSR_TSC:
		/* Never the host's TSC: only this guest's view moves. */
		v->tsc_offset = (int64_t)(val - rdtsc());
		return true;
	case MSR_MTRR_DEF_TYPE:
	case MSR_TSC_AUX:
		return true;
	default:
		msr_unknown(v, msr, true);
		return false;
	}
}
