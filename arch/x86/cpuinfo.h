/* What this CPU can do: identification, and the virtualization features the
 * SVM and VMX backends and the MMU choose from. Filled once on the BSP. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

/* CPUID 0x8000000A EDX: SVM features. */
#define SVM_FEAT_NP (1u << 0)
#define SVM_FEAT_LBRV (1u << 1)
#define SVM_FEAT_SVML (1u << 2)
#define SVM_FEAT_NRIPS (1u << 3)
#define SVM_FEAT_TSC_RATE_MSR (1u << 4)
#define SVM_FEAT_VMCB_CLEAN (1u << 5)
#define SVM_FEAT_FLUSH_BY_ASID (1u << 6)
#define SVM_FEAT_DECODE_ASSISTS (1u << 7)
#define SVM_FEAT_PAUSE_FILTER (1u << 10)
#define SVM_FEAT_PAUSE_FILTER_THRESHOLD (1u << 12)
#define SVM_FEAT_AVIC (1u << 13)
#define SVM_FEAT_VMSAVE_VIRT (1u << 15)
#define SVM_FEAT_VGIF (1u << 16)

/* IA32_FEATURE_CONTROL (0x3A). */
#define FEATURE_CONTROL_LOCK (1ull << 0)
#define FEATURE_CONTROL_VMX_OUTSIDE_SMX (1ull << 2)

/* IA32_VMX_BASIC (0x480). */
#define VMX_BASIC_TRUE_CTLS (1ull << 55)

/* IA32_VMX_PROCBASED_CTLS2 (0x48B) controls, as bit numbers within the
 * allowed-1 half (bits 63:32). */
#define VMX_CTLS2_EPT (1u << 1)
#define VMX_CTLS2_VPID (1u << 5)
#define VMX_CTLS2_UNRESTRICTED (1u << 7)

/* IA32_VMX_EPT_VPID_CAP (0x48C). */
#define EPT_CAP_WALK_4 (1ull << 6)
#define EPT_CAP_WB (1ull << 14)
#define EPT_CAP_2M (1ull << 16)
#define EPT_CAP_1G (1ull << 17)
#define EPT_CAP_INVEPT (1ull << 20)
#define EPT_CAP_AD (1ull << 21)
#define EPT_CAP_INVEPT_SINGLE (1ull << 25)
#define EPT_CAP_INVEPT_ALL (1ull << 26)
#define EPT_CAP_INVVPID (1ull << 32)

/* IA32_ARCH_CAPABILITIES (0x10A). */
#define ARCH_CAP_PSCHANGE_MC_NO (1ull << 6)

struct cpuinfo {
	char vendor[13];
	char brand[49];
	uint32_t family, model, stepping;
	uint32_t max_leaf, max_ext_leaf;
	bool is_amd, is_intel;

	bool nx, pages_1g, x2apic, hypervisor;
	char hypervisor_id[13];        /* CPUID 0x40000000's signature under a hypervisor */
	unsigned phys_bits;           /* MAXPHYADDR: CPUID 0x80000008 EAX[7:0], else 36 */
	uint64_t cr4_allowed;         /* the CR4 bits CPUID says this CPU implements */
	unsigned va_bits;             /* linear-address width: 57 with LA57, else 48 */
	bool xsave;
	uint64_t xcr0_supported;      /* CPUID 0xD.0 EDX:EAX */
	uint32_t xsave_size_enabled;  /* CPUID 0xD.0 EBX: for the features in XCR0 now */
	uint32_t xsave_size_max;      /* CPUID 0xD.0 ECX: for every supported feature */

	bool pks;                     /* CPUID.7.0:ECX bit 31: CR4.PKS and IA32_PKRS */
	bool has_arch_caps;           /* CPUID.7.0:EDX bit 29 */
	uint64_t arch_caps;           /* IA32_ARCH_CAPABILITIES when present */

	struct {
		bool supported;       /* CPUID 0x80000001 ECX bit 2 */
		bool disabled_by_bios; /* VM_CR.SVMDIS */
		uint32_t revision;
		uint32_t asids;
		uint32_t features;    /* SVM_FEAT_* */
	} svm;

	struct {
		bool supported;       /* CPUID.1:ECX bit 5 */
		/* IA32_FEATURE_CONTROL locked with VMXON outside SMX off: unusable
		 * until the next reset. Unlocked, sprig sets and locks it itself. */
		bool disabled_by_bios;
		uint64_t feature_control;
		uint32_t revision_id;
		uint32_t vmcs_size;
		bool true_ctls;
		bool secondary_ctls;   /* activate-secondary-controls may be 1 */
		uint32_t ctls2_allowed1; /* VMX_CTLS2_* allowed to be 1 */
		uint64_t ept_vpid_cap; /* EPT_CAP_*; 0 without EPT and VPID */
	} vmx;
};

extern struct cpuinfo cpuinfo;

/* Fill cpuinfo from CPUID and, where CPUID says they exist, the capability MSRs. */
void cpuinfo_init(void);
/* The console's `cpus` report; cpu_count comes from ACPI (or 1). */
void cpuinfo_print(unsigned cpu_count);

static inline bool cpuinfo_has_npt(void)
{
	return cpuinfo.svm.supported && !cpuinfo.svm.disabled_by_bios &&
	       (cpuinfo.svm.features & SVM_FEAT_NP);
}

static inline bool cpuinfo_has_ept(void)
{
	/* The EPT backend builds 4-level tables of write-back memory. */
	return cpuinfo.vmx.supported && !cpuinfo.vmx.disabled_by_bios &&
	       (cpuinfo.vmx.ctls2_allowed1 & VMX_CTLS2_EPT) &&
	       (cpuinfo.vmx.ept_vpid_cap & EPT_CAP_WALK_4) &&
	       (cpuinfo.vmx.ept_vpid_cap & EPT_CAP_WB);
}
