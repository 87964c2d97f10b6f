/* The CPUID a guest sees, computed from the host's: a pure function, also
 * built for the host (tests/unit/test_cpuid.c); virt/cpuid.c feeds it the
 * real CPU at each CPUID exit.
 *
 * Feature bits are WHITELISTED (cpuid_policy.c, one named bit at a time):
 * a host feature reaches the guest only if sprig virtualizes it, and no bit
 * promises an MSR that virt/msr_policy.h does not offer. So no MONITOR/MWAIT,
 * VMX, SVM, PMU (leaf 0xA, PERFCTR_*), PDCM, DS/DTES64, MCA, TSC_ADJUST,
 * ARCH_CAPABILITIES, speculation-control MSRs (IBRS/IBPB/STIBP/SSBD/L1D_FLUSH:
 * guests fall back to software mitigations), TSX_CTRL, XSAVES, CET, AMX.
 * PKU comes with XCR0 bit 9 (fpu.c switches PKRU), PKS where the backend
 * switches IA32_PKRS.
 * Forced on: the hypervisor bit, APIC, x2APIC, TSC-deadline (the virtual
 * local APIC), ARAT (its timer does not stop in C-states).
 * Leaves: 0 (max raised to 0x16 when the TSC rate is known; vendor as the
 * host's), 1, 2 and 4 (caches; topology fields rewritten), 6 (ARAT only), 7
 * (subleaves 0 and 1), 0xB/0x1F (each vCPU a core of one package), 0xD
 * (XSAVE: what fpu.c switches), 0x15/0x16 (TSC and APIC bus rates),
 * 0x40000000 (sprig's signature), 0x40000100-0x40000101 (KVM's signature
 * and its paravirtual clock and features, virt/pvclock.h and virt/kvm_pv.h,
 * when the TSC rate is known),
 * 0x80000000-0x80000008. Every other leaf in
 * range reads zero. A leaf above its range's maximum reads as Intel CPUs
 * answer it (the highest basic leaf; SDM vol. 2A CPUID) with an Intel vendor,
 * zero otherwise (AMD). */
#pragma once
#include <stdbool.h>
#include <stdint.h>

/* One leaf's registers. (arch/x86/cpu.h's struct cpuid_regs is the same,
 * but that header is kernel-only.) */
struct cpuid_leaf {
	uint32_t eax, ebx, ecx, edx;
};

/* What the policy needs of the host and of the vCPU. */
struct cpuid_host {
	/* The host CPU's raw CPUID(leaf, subleaf). Called for leaves within the
	 * host's ranges only (leaf 0 and 0x80000000 say how far they go). */
	void (*raw)(void *ctx, uint32_t leaf, uint32_t subleaf, struct cpuid_leaf *out);
	void *ctx;
	uint64_t tsc_khz;      /* the TSC rate sprig measured (tsc_khz()); 0: unknown */
	bool xsave;            /* fpu_has_xsave() */
	uint64_t xcr0_allowed; /* fpu_guest_xcr0_allowed(): the components guests get */
	uint64_t guest_xcr0;   /* the vCPU's XCR0, for leaf 0xD.0 EBX */
	uint64_t guest_cr4;    /* CR4 as the guest sees it: OSXSAVE, OSPKE */
	bool pks;              /* the backend switches IA32_PKRS (backend->pks_switched) */
	uint32_t apic_id;      /* the vCPU's (x2)APIC ID */
	/* IA32_APIC_BASE.EN clear: leaf 1 hides the APIC, as KVM's
	 * kvm_update_cpuid_runtime has it. */
	bool apic_disabled;
	unsigned vcpu_count;   /* vCPUs of the VM (0 counts as 1) */
	/* Leaf 0x40000000's EBX, ECX, EDX: 12 bytes (SPRIG_CPUID_SIGNATURE of
	 * virt/cpuid.h); NULL reads zeros. */
	const char *hv_signature;
	/* The VM was created with pv=off: KVM's leaf 0x40000101 offers the
	 * clock alone, none of virt/kvm_pv.h's features (`bench pv` compares). */
	bool no_kvm_pv;
};

/* The hypervisor leaf: its EAX says it is the highest one. Leaves
 * 0x40000001-0x4fffffff read zero but KVM's clock leaves (virt/pvclock.h). */
#define CPUID_LEAF_HYPERVISOR 0x40000000u

/* The rate of the virtual local APIC's timer input (dev/lapic), which leaf
 * 0x15 states as the core crystal clock and leaf 0x16 as the bus clock. */
#define CPUID_APIC_BUS_HZ 1000000000u

/* Leaf 0x15: at most this numerator, so that crystal_kHz * EBX fits in 32
 * bits (Linux's native_calibrate_tsc() multiplies them in unsigned int). */
#define CPUID_TSC_RATIO_MAX_NUM (0xffffffffu / (CPUID_APIC_BUS_HZ / 1000u))

void cpuid_guest(const struct cpuid_host *h, uint32_t leaf, uint32_t subleaf,
		 struct cpuid_leaf *out);

/* The CR4 bits the guest's CPUID allows (KVM's __cr4_reserved_bits): the
 * base bits of every x86-64 CPU and each feature's bit where its CPUID bit
 * is offered; any other bit set by a MOV to CR4 raises #GP. */
uint64_t cpuid_guest_cr4_allowed(const struct cpuid_host *h);

/* A guest's MOV to CR4 of cr4 over old, with its EFER and CR3: true if the
 * CPU takes it (SDM vol. 3A 2.5 and 4.10.1, KVM's kvm_set_cr4): only allowed
 * bits, PAE kept and LA57 unchanged in long mode, PCIDE set only in long
 * mode with CR3[11:0] = 0. */
bool cpuid_cr4_write_ok(uint64_t allowed, uint64_t old, uint64_t cr4, uint64_t efer,
			uint64_t cr3);

/* Feature bits the policy and its tests name (SDM vol. 2A table 3-8 ff.,
 * APM vol. 3 appendix E). */
#define CPUID_BIT(n) (1u << (n))
/* Leaf 1 ECX */
#define CPUID_1_ECX_SSE3 CPUID_BIT(0)
#define CPUID_1_ECX_PCLMULQDQ CPUID_BIT(1)
#define CPUID_1_ECX_DTES64 CPUID_BIT(2)
#define CPUID_1_ECX_MONITOR CPUID_BIT(3)
#define CPUID_1_ECX_DS_CPL CPUID_BIT(4)
#define CPUID_1_ECX_VMX CPUID_BIT(5)
#define CPUID_1_ECX_SMX CPUID_BIT(6)
#define CPUID_1_ECX_EIST CPUID_BIT(7)
#define CPUID_1_ECX_TM2 CPUID_BIT(8)
#define CPUID_1_ECX_SSSE3 CPUID_BIT(9)
#define CPUID_1_ECX_CNXT_ID CPUID_BIT(10)
#define CPUID_1_ECX_SDBG CPUID_BIT(11)
#define CPUID_1_ECX_FMA CPUID_BIT(12)
#define CPUID_1_ECX_CMPXCHG16B CPUID_BIT(13)
#define CPUID_1_ECX_XTPR CPUID_BIT(14)
#define CPUID_1_ECX_PDCM CPUID_BIT(15)
#define CPUID_1_ECX_PCID CPUID_BIT(17)
#define CPUID_1_ECX_DCA CPUID_BIT(18)
#define CPUID_1_ECX_SSE4_1 CPUID_BIT(19)
#define CPUID_1_ECX_SSE4_2 CPUID_BIT(20)
#define CPUID_1_ECX_X2APIC CPUID_BIT(21)
#define CPUID_1_ECX_MOVBE CPUID_BIT(22)
#define CPUID_1_ECX_POPCNT CPUID_BIT(23)
#define CPUID_1_ECX_TSC_DEADLINE CPUID_BIT(24)
#define CPUID_1_ECX_AES CPUID_BIT(25)
#define CPUID_1_ECX_XSAVE CPUID_BIT(26)
#define CPUID_1_ECX_OSXSAVE CPUID_BIT(27)
#define CPUID_1_ECX_AVX CPUID_BIT(28)
#define CPUID_1_ECX_F16C CPUID_BIT(29)
#define CPUID_1_ECX_RDRAND CPUID_BIT(30)
#define CPUID_1_ECX_HYPERVISOR CPUID_BIT(31)
/* Leaf 1 EDX */
#define CPUID_1_EDX_FPU CPUID_BIT(0)
#define CPUID_1_EDX_VME CPUID_BIT(1)
#define CPUID_1_EDX_DE CPUID_BIT(2)
#define CPUID_1_EDX_PSE CPUID_BIT(3)
#define CPUID_1_EDX_TSC CPUID_BIT(4)
#define CPUID_1_EDX_MSR CPUID_BIT(5)
#define CPUID_1_EDX_PAE CPUID_BIT(6)
#define CPUID_1_EDX_MCE CPUID_BIT(7)
#define CPUID_1_EDX_CX8 CPUID_BIT(8)
#define CPUID_1_EDX_APIC CPUID_BIT(9)
#define CPUID_1_EDX_SEP CPUID_BIT(11)
#define CPUID_1_EDX_MTRR CPUID_BIT(12)
#define CPUID_1_EDX_PGE CPUID_BIT(13)
#define CPUID_1_EDX_MCA CPUID_BIT(14)
#define CPUID_1_EDX_CMOV CPUID_BIT(15)
#define CPUID_1_EDX_PAT CPUID_BIT(16)
#define CPUID_1_EDX_PSE36 CPUID_BIT(17)
#define CPUID_1_EDX_PSN CPUID_BIT(18)
#define CPUID_1_EDX_CLFSH CPUID_BIT(19)
#define CPUID_1_EDX_DS CPUID_BIT(21)
#define CPUID_1_EDX_ACPI CPUID_BIT(22)
#define CPUID_1_EDX_MMX CPUID_BIT(23)
#define CPUID_1_EDX_FXSR CPUID_BIT(24)
#define CPUID_1_EDX_SSE CPUID_BIT(25)
#define CPUID_1_EDX_SSE2 CPUID_BIT(26)
#define CPUID_1_EDX_SS CPUID_BIT(27)
#define CPUID_1_EDX_HTT CPUID_BIT(28)
#define CPUID_1_EDX_TM CPUID_BIT(29)
#define CPUID_1_EDX_PBE CPUID_BIT(31)
/* Leaf 6 EAX */
#define CPUID_6_EAX_ARAT CPUID_BIT(2)
/* Leaf 7 subleaf 0 EBX */
#define CPUID_7_EBX_FSGSBASE CPUID_BIT(0)
#define CPUID_7_EBX_TSC_ADJUST CPUID_BIT(1)
#define CPUID_7_EBX_SGX CPUID_BIT(2)
#define CPUID_7_EBX_BMI1 CPUID_BIT(3)
#define CPUID_7_EBX_HLE CPUID_BIT(4)
#define CPUID_7_EBX_AVX2 CPUID_BIT(5)
#define CPUID_7_EBX_FDP_EXCPTN_ONLY CPUID_BIT(6)
#define CPUID_7_EBX_SMEP CPUID_BIT(7)
#define CPUID_7_EBX_BMI2 CPUID_BIT(8)
#define CPUID_7_EBX_ERMS CPUID_BIT(9)
#define CPUID_7_EBX_INVPCID CPUID_BIT(10)
#define CPUID_7_EBX_RTM CPUID_BIT(11)
#define CPUID_7_EBX_RDT_M CPUID_BIT(12)
#define CPUID_7_EBX_FPU_CSDS_DEPRECATED CPUID_BIT(13)
#define CPUID_7_EBX_MPX CPUID_BIT(14)
#define CPUID_7_EBX_RDT_A CPUID_BIT(15)
#define CPUID_7_EBX_AVX512F CPUID_BIT(16)
#define CPUID_7_EBX_AVX512DQ CPUID_BIT(17)
#define CPUID_7_EBX_RDSEED CPUID_BIT(18)
#define CPUID_7_EBX_ADX CPUID_BIT(19)
#define CPUID_7_EBX_SMAP CPUID_BIT(20)
#define CPUID_7_EBX_AVX512_IFMA CPUID_BIT(21)
#define CPUID_7_EBX_CLFLUSHOPT CPUID_BIT(23)
#define CPUID_7_EBX_CLWB CPUID_BIT(24)
#define CPUID_7_EBX_PT CPUID_BIT(25)
#define CPUID_7_EBX_AVX512PF CPUID_BIT(26)
#define CPUID_7_EBX_AVX512ER CPUID_BIT(27)
#define CPUID_7_EBX_AVX512CD CPUID_BIT(28)
#define CPUID_7_EBX_SHA CPUID_BIT(29)
#define CPUID_7_EBX_AVX512BW CPUID_BIT(30)
#define CPUID_7_EBX_AVX512VL CPUID_BIT(31)
/* Leaf 7 subleaf 0 ECX */
#define CPUID_7_ECX_PREFETCHWT1 CPUID_BIT(0)
#define CPUID_7_ECX_AVX512_VBMI CPUID_BIT(1)
#define CPUID_7_ECX_UMIP CPUID_BIT(2)
#define CPUID_7_ECX_PKU CPUID_BIT(3)
#define CPUID_7_ECX_OSPKE CPUID_BIT(4)
#define CPUID_7_ECX_WAITPKG CPUID_BIT(5)
#define CPUID_7_ECX_AVX512_VBMI2 CPUID_BIT(6)
#define CPUID_7_ECX_CET_SS CPUID_BIT(7)
#define CPUID_7_ECX_GFNI CPUID_BIT(8)
#define CPUID_7_ECX_VAES CPUID_BIT(9)
#define CPUID_7_ECX_VPCLMULQDQ CPUID_BIT(10)
#define CPUID_7_ECX_AVX512_VNNI CPUID_BIT(11)
#define CPUID_7_ECX_AVX512_BITALG CPUID_BIT(12)
#define CPUID_7_ECX_TME_EN CPUID_BIT(13)
#define CPUID_7_ECX_AVX512_VPOPCNTDQ CPUID_BIT(14)
#define CPUID_7_ECX_LA57 CPUID_BIT(16)
#define CPUID_7_ECX_MAWAU (0x1fu << 17)
#define CPUID_7_ECX_RDPID CPUID_BIT(22)
#define CPUID_7_ECX_KL CPUID_BIT(23)
#define CPUID_7_ECX_CLDEMOTE CPUID_BIT(25)
#define CPUID_7_ECX_MOVDIRI CPUID_BIT(27)
#define CPUID_7_ECX_MOVDIR64B CPUID_BIT(28)
#define CPUID_7_ECX_ENQCMD CPUID_BIT(29)
#define CPUID_7_ECX_SGX_LC CPUID_BIT(30)
#define CPUID_7_ECX_PKS CPUID_BIT(31)
/* Leaf 7 subleaf 0 EDX */
#define CPUID_7_EDX_AVX512_4VNNIW CPUID_BIT(2)
#define CPUID_7_EDX_AVX512_4FMAPS CPUID_BIT(3)
#define CPUID_7_EDX_FSRM CPUID_BIT(4)
#define CPUID_7_EDX_UINTR CPUID_BIT(5)
#define CPUID_7_EDX_AVX512_VP2INTERSECT CPUID_BIT(8)
#define CPUID_7_EDX_SRBDS_CTRL CPUID_BIT(9)
#define CPUID_7_EDX_MD_CLEAR CPUID_BIT(10)
#define CPUID_7_EDX_RTM_ALWAYS_ABORT CPUID_BIT(11)
#define CPUID_7_EDX_TSX_FORCE_ABORT CPUID_BIT(13)
#define CPUID_7_EDX_SERIALIZE CPUID_BIT(14)
#define CPUID_7_EDX_HYBRID CPUID_BIT(15)
#define CPUID_7_EDX_TSXLDTRK CPUID_BIT(16)
#define CPUID_7_EDX_PCONFIG CPUID_BIT(18)
#define CPUID_7_EDX_ARCH_LBR CPUID_BIT(19)
#define CPUID_7_EDX_CET_IBT CPUID_BIT(20)
#define CPUID_7_EDX_AMX_BF16 CPUID_BIT(22)
#define CPUID_7_EDX_AVX512_FP16 CPUID_BIT(23)
#define CPUID_7_EDX_AMX_TILE CPUID_BIT(24)
#define CPUID_7_EDX_AMX_INT8 CPUID_BIT(25)
#define CPUID_7_EDX_IBRS_IBPB CPUID_BIT(26)
#define CPUID_7_EDX_STIBP CPUID_BIT(27)
#define CPUID_7_EDX_L1D_FLUSH CPUID_BIT(28)
#define CPUID_7_EDX_ARCH_CAPABILITIES CPUID_BIT(29)
#define CPUID_7_EDX_CORE_CAPABILITIES CPUID_BIT(30)
#define CPUID_7_EDX_SSBD CPUID_BIT(31)
/* Leaf 7 subleaf 1 EAX */
#define CPUID_7_1_EAX_AVX_VNNI CPUID_BIT(4)
#define CPUID_7_1_EAX_AVX512_BF16 CPUID_BIT(5)
#define CPUID_7_1_EAX_FZLRM CPUID_BIT(10)
#define CPUID_7_1_EAX_FSRS CPUID_BIT(11)
#define CPUID_7_1_EAX_FSRCS CPUID_BIT(12)
#define CPUID_7_1_EAX_HRESET CPUID_BIT(22)
#define CPUID_7_1_EAX_LAM CPUID_BIT(26)
/* Leaf 0xD subleaf 1 EAX */
#define CPUID_D_1_EAX_XSAVEOPT CPUID_BIT(0)
#define CPUID_D_1_EAX_XSAVEC CPUID_BIT(1)
#define CPUID_D_1_EAX_XGETBV_ECX1 CPUID_BIT(2)
#define CPUID_D_1_EAX_XSAVES CPUID_BIT(3)
#define CPUID_D_1_EAX_XFD CPUID_BIT(4)
/* Leaf 0x80000001 ECX */
#define CPUID_81_ECX_LAHF_LM CPUID_BIT(0)
#define CPUID_81_ECX_CMP_LEGACY CPUID_BIT(1)
#define CPUID_81_ECX_SVM CPUID_BIT(2)
#define CPUID_81_ECX_EXTAPIC CPUID_BIT(3)
#define CPUID_81_ECX_CR8_LEGACY CPUID_BIT(4)
#define CPUID_81_ECX_ABM CPUID_BIT(5) /* LZCNT */
#define CPUID_81_ECX_SSE4A CPUID_BIT(6)
#define CPUID_81_ECX_MISALIGNSSE CPUID_BIT(7)
#define CPUID_81_ECX_3DNOWPREFETCH CPUID_BIT(8) /* PREFETCHW */
#define CPUID_81_ECX_OSVW CPUID_BIT(9)
#define CPUID_81_ECX_IBS CPUID_BIT(10)
#define CPUID_81_ECX_XOP CPUID_BIT(11)
#define CPUID_81_ECX_SKINIT CPUID_BIT(12)
#define CPUID_81_ECX_WDT CPUID_BIT(13)
#define CPUID_81_ECX_LWP CPUID_BIT(15)
#define CPUID_81_ECX_FMA4 CPUID_BIT(16)
#define CPUID_81_ECX_TCE CPUID_BIT(17)
#define CPUID_81_ECX_NODEID_MSR CPUID_BIT(19)
#define CPUID_81_ECX_TBM CPUID_BIT(21)
#define CPUID_81_ECX_TOPOEXT CPUID_BIT(22)
#define CPUID_81_ECX_PERFCTR_CORE CPUID_BIT(23)
#define CPUID_81_ECX_PERFCTR_NB CPUID_BIT(24)
#define CPUID_81_ECX_BPEXT CPUID_BIT(26)
#define CPUID_81_ECX_PTSC CPUID_BIT(27)
#define CPUID_81_ECX_PERFCTR_LLC CPUID_BIT(28)
#define CPUID_81_ECX_MWAITX CPUID_BIT(29)
/* Leaf 0x80000001 EDX (bits 0-17, 23, 24 copy leaf 1 EDX on AMD) */
#define CPUID_81_EDX_SYSCALL CPUID_BIT(11)
#define CPUID_81_EDX_NX CPUID_BIT(20)
#define CPUID_81_EDX_MMXEXT CPUID_BIT(22)
#define CPUID_81_EDX_FFXSR CPUID_BIT(25)
#define CPUID_81_EDX_PAGE1GB CPUID_BIT(26)
#define CPUID_81_EDX_RDTSCP CPUID_BIT(27)
#define CPUID_81_EDX_LM CPUID_BIT(29)
#define CPUID_81_EDX_3DNOWEXT CPUID_BIT(30)
#define CPUID_81_EDX_3DNOW CPUID_BIT(31)
/* Leaf 0x80000007 EDX */
#define CPUID_87_EDX_INVARIANT_TSC CPUID_BIT(8)
/* Leaf 0x80000008 EBX */
#define CPUID_88_EBX_CLZERO CPUID_BIT(0)
#define CPUID_88_EBX_INSTRETCNT_MSR CPUID_BIT(1)
#define CPUID_88_EBX_RSTR_FP_ERR_PTRS CPUID_BIT(2)
#define CPUID_88_EBX_WBNOINVD CPUID_BIT(9)
#define CPUID_88_EBX_IBPB CPUID_BIT(12)
#define CPUID_88_EBX_IBRS CPUID_BIT(14)
#define CPUID_88_EBX_STIBP CPUID_BIT(15)
#define CPUID_88_EBX_SSBD CPUID_BIT(24)
#define CPUID_88_EBX_VIRT_SSBD CPUID_BIT(25)
