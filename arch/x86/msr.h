/* Model-specific registers: their numbers and the bits sprig names, in one
 * place (SDM vol. 4, APM vol. 2 appendix A). Pure definitions, for the kernel,
 * the host tests, the test guests and assembly alike; the capability MSRs of
 * VMX that only vmx/ reads stay in vmx/vmcs.h. */
#pragma once

/* Architectural MSRs. */
#define MSR_P5_MC_ADDR 0x0
#define MSR_P5_MC_TYPE 0x1
#define MSR_TSC 0x10
#define MSR_APIC_BASE 0x1b
#define MSR_FEATURE_CONTROL 0x3a
#define MSR_MTRRCAP 0xfe
#define MSR_ARCH_CAPABILITIES 0x10a
#define MSR_SYSENTER_CS 0x174
#define MSR_SYSENTER_ESP 0x175
#define MSR_SYSENTER_EIP 0x176
#define MSR_MCG_CAP 0x179
#define MSR_MCG_STATUS 0x17a
#define MSR_MCG_CTL 0x17b
#define MCG_CTL_P (1ull << 8) /* MCG_CAP: MCG_CTL exists */
#define MSR_MC0_CTL 0x400     /* bank i: CTL, STATUS, ADDR, MISC at 0x400 + 4i */
#define MSR_MISC_ENABLE 0x1a0
#define MSR_PAT 0x277
#define MSR_MTRR_DEF_TYPE 0x2ff
#define MSR_VMX_BASIC 0x480
#define MSR_VMX_PROCBASED_CTLS 0x482
#define MSR_VMX_PROCBASED_CTLS2 0x48b
#define MSR_VMX_EPT_VPID_CAP 0x48c
#define MSR_X2APIC_BASE 0x800 /* x2APIC register at MMIO offset off: MSR 0x800 + off / 16 */
#define MSR_X2APIC_LAST 0x8ff
#define MSR_TSC_DEADLINE 0x6e0
#define MSR_PKRS 0x6e1

/* The long-mode and AMD MSRs. */
#define MSR_EFER 0xc0000080
#define MSR_STAR 0xc0000081
#define MSR_LSTAR 0xc0000082
#define MSR_CSTAR 0xc0000083
#define MSR_SFMASK 0xc0000084
#define MSR_FS_BASE 0xc0000100
#define MSR_GS_BASE 0xc0000101
#define MSR_KERNEL_GS_BASE 0xc0000102
#define MSR_TSC_AUX 0xc0000103
#define MSR_UCODE_REV 0x8b /* Intel IA32_BIOS_SIGN_ID; AMD PATCH_LEVEL */
/* The legacy performance counters: Intel's first two (P6) and AMD's four (K7). */
#define MSR_P6_PERFCTR0 0xc1
#define MSR_P6_PERFCTR1 0xc2
#define MSR_P6_EVNTSEL0 0x186
#define MSR_P6_EVNTSEL1 0x187
#define MSR_K7_EVNTSEL0 0xc0010000 /* EVNTSEL0-3, then PERFCTR0-3 */
#define MSR_K7_PERFCTR3 0xc0010007
#define MSR_F15H_PERF_CTL0 0xc0010200 /* with PERFCTR_CORE: CTL0, CTR0, ... CTR5 */
#define MSR_F15H_PERF_CTR5 0xc001020b
#define MSR_K8_INT_PENDING_MSG 0xc0010055 /* AMD K8/family 10h: C1E and SMI on CMP halt */
#define MSR_VM_CR 0xc0010114
#define MSR_VM_HSAVE_PA 0xc0010117

/* EFER bits (plain ints, so that assembly can use them too). */
#define EFER_SCE (1 << 0)
#define EFER_LME (1 << 8)
#define EFER_LMA (1 << 10)
#define EFER_NXE (1 << 11)
#define EFER_SVME (1 << 12)

#define MISC_ENABLE_FAST_STRINGS (1ull << 0)
#define MISC_ENABLE_EMON (1ull << 7)          /* performance monitoring available */
#define MISC_ENABLE_BTS_UNAVAIL (1ull << 11)
#define MISC_ENABLE_PEBS_UNAVAIL (1ull << 12)

/* PAT memory types; 2, 3 and 8 and up are reserved. */
#define PAT_UC 0
#define PAT_WC 1
#define PAT_WT 4
#define PAT_WP 5
#define PAT_WB 6
#define PAT_UC_MINUS 7

#ifndef __ASSEMBLY__
#define APIC_BASE_BSP (1ull << 8)
#define APIC_BASE_EXTD (1ull << 10) /* x2APIC mode */
#define APIC_BASE_EN (1ull << 11)
/* The EFER bits a guest may hold (SVME is never the guest's; NXE only on a
 * CPU with NX): the MSR policy and the snapshot checks use the same set. */
static inline unsigned long long efer_guest_bits(int nx)
{
	return EFER_SCE | EFER_LME | EFER_LMA | (nx ? EFER_NXE : 0);
}
/* IA32_PAT at reset: WB, WT, UC-, UC, and the same again. */
#define PAT_DEFAULT 0x0007040600070406ull
/* MTRR_DEF_TYPE: the default memory type (7:0), fixed-range enable (10) and
 * MTRR enable (11); the other bits are reserved. */
#define MTRR_DEF_TYPE_VALID_BITS 0xcffull
#endif
