/* VMX capabilities: the controls adjusted to the capability MSRs, the MSR
 * bitmap's layout and the preemption timer's arithmetic. No MSR is read here
 * (vmx.c does), so the host unit tests run this against recorded CPUs. */
#include "vmx/caps.h"
#include "arch/x86/cpuinfo.h"
#include "arch/x86/msr.h"
#include "arch/x86/regs.h"
#include "lib/print.h"
#include "lib/string.h"
#include "vmx/vmcs.h"

bool vmx_adjust_controls(uint32_t msr, uint64_t cap, uint32_t need, uint32_t want, uint32_t *out,
			 const char *what, char *err, size_t len)
{
	uint32_t must = (uint32_t)cap, may = (uint32_t)(cap >> 32);

	if (need & ~may) {
		ksnprintf(err, len, "VMX %s controls 0x%x not allowed (MSR 0x%x allows 0x%x)", what,
			  need & ~may, msr, may);
		return false;
	}
	*out = must | need | (want & may);
	return true;
}

bool vmx_caps_init(struct vmx_caps *c, const struct vmx_cap_msrs *m, char *err, size_t len)
{
	uint64_t basic = m->basic, ept = m->ept_vpid_cap;
	bool true_ctls = basic & VMX_BASIC_TRUE_CTLS;
	bool secondary = m->proc >> 63; /* activate secondary controls may be 1 */
	uint32_t ctls2 = secondary ? (uint32_t)(m->proc2 >> 32) : 0;
	uint32_t proc2_want = PROC2_ENABLE_RDTSCP | PROC2_ENABLE_INVPCID;
	unsigned memtype = (basic >> VMX_BASIC_MEMTYPE_SHIFT) & 0xf;
	unsigned vmcs_size = (basic >> 32) & 0x1fff;

	memset(c, 0, sizeof(*c));
	if (vmcs_size > PAGE_SIZE) {
		ksnprintf(err, len, "VMCS of %u bytes", vmcs_size);
		return false;
	}
	if (memtype != VMX_BASIC_MEMTYPE_WB) {
		ksnprintf(err, len, "VMCS memory type %u is not write-back", memtype);
		return false;
	}
	if (!secondary || !(ctls2 & VMX_CTLS2_EPT)) {
		ksnprintf(err, len, "VMX without EPT");
		return false;
	}
	if (!(ctls2 & VMX_CTLS2_UNRESTRICTED)) {
		ksnprintf(err, len, "VMX without unrestricted guest");
		return false;
	}
	if (!(ept & EPT_CAP_WALK_4) || !(ept & EPT_CAP_WB)) {
		ksnprintf(err, len, "EPT without 4-level write-back tables (EPT_VPID_CAP 0x%llx)",
			  (unsigned long long)ept);
		return false;
	}
	if (!(ept & EPT_CAP_INVEPT) || !(ept & (EPT_CAP_INVEPT_SINGLE | EPT_CAP_INVEPT_ALL))) {
		ksnprintf(err, len, "EPT without INVEPT (EPT_VPID_CAP 0x%llx)",
			  (unsigned long long)ept);
		return false;
	}
	c->invept_type = ept & EPT_CAP_INVEPT_SINGLE ? INVEPT_SINGLE_CONTEXT : INVEPT_ALL_CONTEXT;
	/* VPIDs only with a way to flush what a reused tag left behind. */
	if ((ctls2 & VMX_CTLS2_VPID) && (ept & EPT_CAP_INVVPID) &&
	    (ept & (VPID_CAP_INVVPID_SINGLE | VPID_CAP_INVVPID_ALL))) {
		proc2_want |= PROC2_ENABLE_VPID;
		c->invvpid_type = ept & VPID_CAP_INVVPID_SINGLE ? INVVPID_SINGLE_CONTEXT
								: INVVPID_ALL_CONTEXT;
	}
	c->regions_below_4g = basic & VMX_BASIC_PA_32BIT;

	/* Host interrupts and NMIs exit (and are not acknowledged: sprig takes
	 * them when it opens its interrupt window); I/O, HLT, CR8 and MSRs
	 * exit; RDTSC runs with the TSC offset; the guest's IA32_PKRS is
	 * loaded at entry where the CPU can (PKS is offered only then). */
	if (!vmx_adjust_controls(true_ctls ? MSR_VMX_TRUE_PINBASED_CTLS : MSR_VMX_PINBASED_CTLS,
				 m->pin, PIN_EXT_INTR_EXITING,
				 PIN_NMI_EXITING | PIN_VIRTUAL_NMIS | PIN_PREEMPTION_TIMER, &c->pin,
				 "pin-based", err,
				 len) ||
	    !vmx_adjust_controls(true_ctls ? MSR_VMX_TRUE_PROCBASED_CTLS : MSR_VMX_PROCBASED_CTLS,
				 m->proc,
				 PROC_HLT_EXITING | PROC_UNCOND_IO_EXITING | PROC_USE_MSR_BITMAPS |
					 PROC_SECONDARY_CONTROLS | PROC_USE_TSC_OFFSETTING |
					 PROC_CR8_LOAD_EXITING | PROC_CR8_STORE_EXITING,
				 PROC_RDPMC_EXITING | PROC_MWAIT_EXITING | PROC_MONITOR_EXITING,
				 &c->proc, "processor-based", err, len) ||
	    !vmx_adjust_controls(MSR_VMX_PROCBASED_CTLS2, m->proc2,
				 PROC2_ENABLE_EPT | PROC2_UNRESTRICTED_GUEST, proc2_want, &c->proc2,
				 "secondary", err, len) ||
	    !vmx_adjust_controls(true_ctls ? MSR_VMX_TRUE_EXIT_CTLS : MSR_VMX_EXIT_CTLS, m->exit,
				 EXIT_HOST_ADDR_SPACE_SIZE | EXIT_SAVE_EFER | EXIT_LOAD_EFER,
				 EXIT_SAVE_PREEMPTION_TIMER, &c->exit, "VM-exit", err, len) ||
	    !vmx_adjust_controls(true_ctls ? MSR_VMX_TRUE_ENTRY_CTLS : MSR_VMX_ENTRY_CTLS,
				 m->entry, ENTRY_LOAD_EFER | ENTRY_IA32E_MODE_GUEST, ENTRY_LOAD_PKRS,
				 &c->entry,
				 "VM-entry", err, len))
		return false;
	/* Virtual NMIs need NMI exiting (SDM 26.2.1.1); with them the CPU
	 * tracks the guest's NMI blocking and offers an NMI window. */
	if (!(c->pin & PIN_NMI_EXITING))
		c->pin &= ~PIN_VIRTUAL_NMIS;
	c->irq_window = (m->proc >> 32) & PROC_INTR_WINDOW_EXITING;
	c->nmi_window = (c->pin & PIN_VIRTUAL_NMIS) && ((m->proc >> 32) & PROC_NMI_WINDOW_EXITING);
	c->pause_exit = (m->proc >> 32) & PROC_PAUSE_EXITING;
	c->pause_loop_exit = (c->proc & PROC_SECONDARY_CONTROLS) &&
			     ((m->proc2 >> 32) & PROC2_PAUSE_LOOP_EXITING);
	/* Guests start outside long mode; run() sets it as EFER.LMA says. */
	c->entry &= ~ENTRY_IA32E_MODE_GUEST;

	c->misc = m->misc;
	c->cr0_fixed0 = m->cr0_fixed0;
	c->cr0_fixed1 = m->cr0_fixed1;
	c->cr4_fixed0 = m->cr4_fixed0;
	c->cr4_fixed1 = m->cr4_fixed1;
	/* Unrestricted guest exempts PE and PG from CR0_FIXED0. */
	c->cr0_host_owned = (c->cr0_fixed0 & ~(CR0_PE | CR0_PG)) | (~c->cr0_fixed1 & 0xffffffff);
	c->cr4_host_owned = c->cr4_fixed0 | (~c->cr4_fixed1 & 0xffffffff);
	c->ept_ad = ept & EPT_CAP_AD;
	return true;
}

void vmx_msr_bitmap_pass_through(uint8_t *bitmap, uint32_t msr)
{
	/* Read bitmaps for MSRs 0-0x1fff and 0xc0000000-0xc0001fff at 0 and
	 * 1024, the write bitmaps at 2048 and 3072. */
	unsigned half = msr >= 0xc0000000 ? 1024 : 0;
	unsigned bit = msr & 0x1fff;

	bitmap[half + bit / 8] &= (uint8_t)~(1u << (bit % 8));
	bitmap[2048 + half + bit / 8] &= (uint8_t)~(1u << (bit % 8));
}

void vmx_msr_bitmap_init(uint8_t *bitmap)
{
	/* The CPU checks writes of the segment bases by the MSR policy's rule
	 * itself (canonical at the width CPUID reports), so they need no exit. */
	memset(bitmap, 0xff, PAGE_SIZE);
	vmx_msr_bitmap_pass_through(bitmap, MSR_FS_BASE);
	vmx_msr_bitmap_pass_through(bitmap, MSR_GS_BASE);
	vmx_msr_bitmap_pass_through(bitmap, MSR_KERNEL_GS_BASE);
}

bool vmx_msr_bitmap_exits(const uint8_t *bitmap, uint32_t msr, bool write)
{
	unsigned half, bit = msr & 0x1fff;

	if (msr <= 0x1fff)
		half = 0;
	else if (msr >= 0xc0000000 && msr <= 0xc0001fff)
		half = 1024;
	else
		return true;
	return bitmap[(write ? 2048 : 0) + half + bit / 8] & (1u << (bit % 8));
}

uint64_t vmx_preemption_budget_tsc(uint64_t tsc_khz)
{
	return tsc_khz * VMX_PREEMPTION_BUDGET_US / 1000;
}

bool vmx_preemption_arm(uint64_t now, uint64_t *slice_end, bool timer_exit, bool saves_timer,
			uint64_t budget_tsc, uint64_t misc, uint32_t *ticks)
{
	uint64_t left;

	if (now >= *slice_end || timer_exit)
		*slice_end = now + budget_tsc;
	else if (saves_timer)
		return false;
	left = (*slice_end - now) >> (misc & VMX_MISC_TIMER_RATE_MASK);
	*ticks = left > UINT32_MAX ? UINT32_MAX : (uint32_t)left;
	return true;
}

int vmx_ept_max_leaf_level(uint64_t ept_vpid_cap)
{
	return (ept_vpid_cap & EPT_CAP_1G) ? 3 : (ept_vpid_cap & EPT_CAP_2M) ? 2 : 1;
}
