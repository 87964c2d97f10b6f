/* What the CPU's VMX allows and the controls sprig runs guests with (SDM vol.
 * 3C appendix A). Pure code, also built for the host: the capability MSRs come
 * in as numbers (vmx.c reads them), so the unit tests feed it recorded CPUs.
 * svm/caps.h is its mirror. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A guest that never exits gives the CPU back at least this often, should no
 * host interrupt arrive first. */
#define VMX_PREEMPTION_BUDGET_US 10000

/* The capability MSRs as read. pin, proc, exit and entry are the TRUE_ MSRs
 * when BASIC bit 55 says they exist; proc2 is 0 without secondary controls,
 * ept_vpid_cap 0 without EPT and VPID (those MSRs then do not exist). */
struct vmx_cap_msrs {
	uint64_t basic;
	uint64_t pin, proc, proc2, exit, entry;
	uint64_t misc;
	uint64_t cr0_fixed0, cr0_fixed1, cr4_fixed0, cr4_fixed1;
	uint64_t ept_vpid_cap;
};

/* What sprig runs guests with on this CPU model. */
struct vmx_caps {
	bool regions_below_4g; /* IA32_VMX_BASIC bit 48 */
	bool ept_ad;           /* EPT accessed and dirty flags */
	uint32_t pin, proc, proc2, exit, entry;
	uint64_t cr0_fixed0, cr0_fixed1, cr4_fixed0, cr4_fixed1;
	uint64_t cr0_host_owned, cr4_host_owned; /* guest/host masks */
	uint64_t misc;
	unsigned invept_type, invvpid_type; /* invvpid_type 0: no VPIDs */
	/* Window controls the backend may set while a guest runs. */
	bool irq_window, nmi_window;
	/* Exits on PAUSE the backend may set while a guest runs (struct vcpu's
	 * spin_exits): after a loop of them (PAUSE-loop exiting), else at each. */
	bool pause_loop_exit, pause_exit;
};

/* The allowed-0/allowed-1 rule of capability MSR msr (value cap): *out gets
 * the bits that must be 1, every bit of need and the bits of want that may
 * be 1. False, with the reason in err, when a bit of need may not be 1. */
bool vmx_adjust_controls(uint32_t msr, uint64_t cap, uint32_t need, uint32_t want, uint32_t *out,
			 const char *what, char *err, size_t len);

/* Every control sprig needs and wants, adjusted to the MSRs; false, with the
 * reason, when the CPU lacks something sprig cannot do without (EPT with
 * 4-level write-back tables, INVEPT, unrestricted guest, the EFER load/save
 * controls). The entry controls come without IA-32e mode guest: guests start
 * outside long mode. */
bool vmx_caps_init(struct vmx_caps *c, const struct vmx_cap_msrs *m, char *err, size_t len);

/* The MSR bitmap (4 KiB): every RDMSR and WRMSR exits except those of msr. */
void vmx_msr_bitmap_pass_through(uint8_t *bitmap, uint32_t msr);
/* sprig's bitmap: everything exits but the segment bases, which live in the
 * VMCS (FS, GS) or in the switched MSR list (KERNEL_GS_BASE). */
void vmx_msr_bitmap_init(uint8_t *bitmap);
/* Whether an access to msr exits under bitmap (MSRs outside the two ranges
 * the bitmap covers always do). */
bool vmx_msr_bitmap_exits(const uint8_t *bitmap, uint32_t msr, bool write);

/* The preemption timer's budget in TSC cycles, at tsc_khz. */
uint64_t vmx_preemption_budget_tsc(uint64_t tsc_khz);
/* Arm the preemption timer for an entry at TSC now. The budget spans
 * entries: *slice_end (TSC) is renewed only when it has passed or the exit
 * was the timer's own; otherwise, where the CPU saves the timer at exits
 * (saves_timer), the VMCS already holds what is left. True, with the value
 * to write in *ticks (the TSC shifted right by misc's rate, at most 2^32-1),
 * when the VMCS field must be written. */
bool vmx_preemption_arm(uint64_t now, uint64_t *slice_end, bool timer_exit, bool saves_timer,
			uint64_t budget_tsc, uint64_t misc, uint32_t *ticks);

/* The largest EPT leaf IA32_VMX_EPT_VPID_CAP allows (SDM A.10: bit 16 for
 * 2 MiB, bit 17 for 1 GiB): 1, 2 or 3. */
int vmx_ept_max_leaf_level(uint64_t ept_vpid_cap);
