/* The guest-visible MSR policy (msr_policy.h). */
#include "virt/msr_policy.h"
#include "arch/x86/msr.h"
#include "arch/x86/regs.h"
#include "virt/kvm_pv.h"
#include "virt/pvclock.h"

#define LOW32 0xffffffffull

/* The legacy performance counters, which KVM answers without a vPMU (reads 0,
 * writes dropped: kvm_get_msr_common / kvm_set_msr_common). PERFCTR_CORE's
 * F15H counters are not among them: KVM raises #GP for those. */
static bool legacy_perf_msr(uint32_t msr)
{
	return (msr >= MSR_K7_EVNTSEL0 && msr <= MSR_K7_PERFCTR3) ||
	       msr == MSR_P6_PERFCTR0 || msr == MSR_P6_PERFCTR1 ||
	       msr == MSR_P6_EVNTSEL0 || msr == MSR_P6_EVNTSEL1;
}

/* A bank MSR of the banks the vCPU has (bank = (msr - MC0_CTL) / 4). */
static bool mce_bank_msr(uint32_t msr)
{
	return msr >= MSR_MC0_CTL && msr < MSR_MC0_CTL + 4 * MCE_BANKS;
}

void mce_msrs_reset(struct mce_msrs *m)
{
	m->mcg_status = 0;
	m->mcg_ctl = ~0ull;
	for (unsigned i = 0; i < MCE_BANKS * 4; i++)
		m->bank[i] = i % 4 == 0 ? ~0ull : 0;
}

uint64_t *mce_msr_slot(struct mce_msrs *m, uint32_t msr)
{
	if (msr == MSR_MCG_STATUS)
		return &m->mcg_status;
	if (msr == MSR_MCG_CTL)
		return &m->mcg_ctl;
	return mce_bank_msr(msr) ? &m->bank[msr - MSR_MC0_CTL] : NULL;
}

/* KVM's set_msr_mce: a bank's CTL takes 0 or all ones, but Linux clears bit
 * 10 of bank 4 on AMD K8 (GART TLB erratum) and UnixWare bit 0 of bank 1. */
static const char *check_mce(uint32_t msr, uint64_t val)
{
	if (msr == MSR_MCG_CTL && val != 0 && val != ~0ull)
		return "MCG_CTL neither 0 nor all ones";
	if (!mce_bank_msr(msr))
		return NULL;
	if ((msr - MSR_MC0_CTL) % 4 == 0 && val != 0 && (val | (1ull << 10) | 1) != ~0ull)
		return "MCi_CTL neither 0 nor all ones";
	if ((msr - MSR_MC0_CTL) % 4 == 1 && val != 0)
		return "MCi_STATUS written with a value other than 0";
	return NULL;
}

enum msr_home msr_home(uint32_t msr)
{
	if (msr >= MSR_X2APIC_BASE && msr <= MSR_X2APIC_LAST)
		return MSR_HOME_APIC;
	if (legacy_perf_msr(msr) || mce_bank_msr(msr))
		return MSR_HOME_VIRT;
	switch (msr) {
	case MSR_APIC_BASE:
	case MSR_TSC_DEADLINE:
		return MSR_HOME_APIC;
	case MSR_EFER:
	case MSR_STAR:
	case MSR_LSTAR:
	case MSR_CSTAR:
	case MSR_SFMASK:
	case MSR_FS_BASE:
	case MSR_GS_BASE:
	case MSR_KERNEL_GS_BASE:
	case MSR_SYSENTER_CS:
	case MSR_SYSENTER_ESP:
	case MSR_SYSENTER_EIP:
	case MSR_PAT:
		return MSR_HOME_BACKEND;
	case MSR_TSC:
	case MSR_MISC_ENABLE:
	case MSR_P5_MC_ADDR:
	case MSR_P5_MC_TYPE:
	case MSR_MCG_CAP:
	case MSR_MCG_STATUS:
	case MSR_MCG_CTL:
	case MSR_MTRRCAP:
	case MSR_MTRR_DEF_TYPE:
	case MSR_TSC_AUX:
	case MSR_PKRS:
	case MSR_K8_INT_PENDING_MSG:
	case MSR_UCODE_REV:
	case MSR_KVM_SYSTEM_TIME_NEW:
	case MSR_KVM_WALL_CLOCK_NEW:
	case MSR_KVM_STEAL_TIME:
	case MSR_KVM_PV_EOI_EN:
		return MSR_HOME_VIRT;
	default:
		return MSR_HOME_NONE;
	}
}

bool msr_fixed_value(uint32_t msr, uint64_t *val)
{
	if (legacy_perf_msr(msr)) {
		*val = 0;
		return true;
	}
	switch (msr) {
	case MSR_P5_MC_ADDR: /* no Pentium machine check to report */
	case MSR_P5_MC_TYPE:
	case MSR_MTRRCAP:       /* no fixed-range or variable MTRRs to program */
	case MSR_MTRR_DEF_TYPE: /* MTRRs disabled: guest memory is write-back */
	case MSR_K8_INT_PENDING_MSG: /* no C1E and no SMI on CMP halt */
		*val = 0;
		return true;
	case MSR_UCODE_REV: /* the revision in bits 63:32 */
		*val = 1ull << 32;
		return true;
	case MSR_MCG_CAP:
		*val = MCG_CAP_VALUE;
		return true;
	default:
		return false;
	}
}

static const char *check_efer(uint64_t val, const struct msr_guest *g)
{
	if (val & ~efer_guest_bits(1))
		return "reserved EFER bit";
	if ((val & EFER_NXE) && !g->nx)
		return "EFER.NXE without NX";
	if ((val ^ g->efer) & EFER_LMA)
		return "EFER.LMA changed: it is the CPU's";
	if (((val ^ g->efer) & EFER_LME) && (g->cr0 & CR0_PG))
		return "EFER.LME changed while paging";
	return NULL;
}

/* The MTRR memory types: the PAT's but UC- (7). */
static bool mtrr_type_valid(uint64_t type)
{
	return type == PAT_UC || type == PAT_WC || type == PAT_WT || type == PAT_WP ||
	       type == PAT_WB;
}

const char *msr_check_write(uint32_t msr, uint64_t val, const struct msr_guest *g,
			    uint64_t *store)
{
	const char *why = NULL;

	*store = val;
	if (legacy_perf_msr(msr))
		return NULL; /* any value, dropped: no counter counts */
	if (mce_bank_msr(msr))
		return check_mce(msr, val);
	switch (msr) {
	case MSR_EFER:
		why = check_efer(val, g);
		break;
	case MSR_FS_BASE:
	case MSR_GS_BASE:
	case MSR_KERNEL_GS_BASE:
	case MSR_LSTAR:
	case MSR_CSTAR:
	case MSR_SYSENTER_ESP:
	case MSR_SYSENTER_EIP:
		if (!x86_canonical(val, g->va_bits))
			why = "non-canonical address";
		break;
	case MSR_PAT:
		if (!x86_pat_valid(val))
			why = "reserved PAT memory type";
		break;
	case MSR_STAR:
	case MSR_TSC:
		break;
	case MSR_SFMASK:
	case MSR_SYSENTER_CS:
		*store = val & LOW32;
		break;
	case MSR_MISC_ENABLE:
		/* kvm_set_msr_common: no vPMU, so BTS and PEBS stay
		 * unavailable and EMON reads as it was. */
		if ((val ^ g->misc_enable) & (MISC_ENABLE_BTS_UNAVAIL | MISC_ENABLE_PEBS_UNAVAIL))
			why = "MISC_ENABLE's BTS_UNAVAIL or PEBS_UNAVAIL changed";
		*store = (val & ~MISC_ENABLE_EMON) | (g->misc_enable & MISC_ENABLE_EMON);
		break;
	case MSR_MCG_STATUS:
		break;
	case MSR_MCG_CTL:
		why = check_mce(msr, val);
		break;
	case MSR_K8_INT_PENDING_MSG:
		if (val != 0)
			why = "read-only";
		break;
	case MSR_MTRRCAP:
	case MSR_MCG_CAP:
	case MSR_P5_MC_ADDR:
	case MSR_P5_MC_TYPE:
		why = "read-only";
		break;
	case MSR_MTRR_DEF_TYPE:
		if ((val & ~MTRR_DEF_TYPE_VALID_BITS) || !mtrr_type_valid(val & 0xff))
			why = "reserved MTRR_DEF_TYPE bit or type";
		break;
	case MSR_TSC_AUX:
		/* Intel reserves bits 63:32; AMD CPUs ignore them (KVM: #GP for
		 * an Intel-compatible guest, else the bits are cleared). */
		if (!g->tsc_aux)
			why = "TSC_AUX without RDTSCP or RDPID";
		else if ((val >> 32) && g->intel)
			why = "TSC_AUX bits 63:32 set";
		*store = val & LOW32;
		break;
	case MSR_PKRS:
		if (!g->pks)
			why = "PKRS without PKS";
		else if (val >> 32)
			why = "PKRS bits 63:32 set";
		break;
	case MSR_UCODE_REV: /* any value, dropped (a microcode load's trigger) */
		break;
	case MSR_KVM_SYSTEM_TIME_NEW: /* bit 0 enables; the gpa is 4-byte aligned */
		if (val & 2)
			why = "pvclock structure not 4-byte aligned";
		break;
	case MSR_KVM_WALL_CLOCK_NEW:
		if (val & 3)
			why = "pvclock wall clock not 4-byte aligned";
		break;
	case MSR_KVM_STEAL_TIME: /* bit 0 enables; virt/msr.c checks the gpa is memory */
		if (val & KVM_STEAL_RESERVED_MASK)
			why = "steal-time record not 64-byte aligned";
		break;
	case MSR_KVM_PV_EOI_EN: /* bit 0 enables; virt/msr.c checks the gpa is memory */
		if (val & KVM_PV_EOI_RESERVED_MASK)
			why = "PV EOI word not 4-byte aligned";
		break;
	default:
		why = "unknown MSR";
		break;
	}
	return why;
}
