/* The MSRs a guest sees, as one policy for both backends: which MSRs exist,
 * where each one's value lives, and which writes are valid. virt/msr.c applies
 * it at every RDMSR/WRMSR exit; the backends only store and load the values it
 * let through. Pure code, also built for the host (tests/unit/test_msr.c).
 *
 * What the guest sees, per MSR (anything else raises #GP, read or write):
 *   EFER               SCE, LME, NXE (NXE only when CPUID reports NX); LMA
 *                      reads as the CPU sets it and may only be written with
 *                      its current value; LME may not change while CR0.PG=1
 *                      (SDM vol. 3A 2.2.1 / 9.8.5, APM vol. 2 3.1.7: #GP)
 *   FS_BASE GS_BASE KERNEL_GS_BASE LSTAR CSTAR SYSENTER_ESP SYSENTER_EIP
 *                      canonical addresses (at the linear-address width the
 *                      guest's CPUID reports: 57 bits with LA57, else 48)
 *   PAT                memory types 0, 1, 4, 5, 6, 7 in every byte; resets to
 *                      PAT_DEFAULT
 *   STAR               any value
 *   SFMASK SYSENTER_CS any value; bits 63:32 read as zero (writes ignored)
 *   TSC                any value: moves this guest's TSC only
 *   MISC_ENABLE        the vCPU's own value, as KVM keeps it without a vPMU:
 *                      starts as MISC_ENABLE_RESET; BTS_UNAVAIL and
 *                      PEBS_UNAVAIL may not change (#GP), EMON stays as it
 *                      is (writes ignored), every other bit is kept as
 *                      written
 *   MTRRCAP            reads 0 (no fixed or variable MTRRs); read-only
 *   MTRR_DEF_TYPE      reads 0; writes with valid types and no reserved bits
 *                      are accepted and dropped (guest memory is write-back)
 *   TSC_AUX            with RDTSCP or RDPID in CPUID: bits 31:0 as written, which
 *                      RDTSCP and RDPID return; bits 63:32 set raise #GP on
 *                      Intel and are dropped on AMD, as KVM has it
 *   PKRS               with PKS in CPUID: bits 31:0 as written, the supervisor
 *                      protection keys' rights; bits 63:32 set raise #GP
 *                      (SDM vol. 3A 4.6.2)
 *   MCG_CAP            reads MCG_CAP_VALUE (MCE_BANKS banks, MCG_CTL); read-only
 *   MCG_STATUS         any value, kept (kvm_set_msr_common's set_msr_mce)
 *   MCG_CTL            0 or all ones, kept; resets to all ones
 *   MC0_CTL-MC9_MISC   each bank's CTL (0 or all ones, bits 10 and 0 may
 *                      be clear; resets to all ones), STATUS (only 0: no
 *                      HWCR.McStatusWrEn), ADDR and MISC (any value), kept;
 *                      the banks after MCE_BANKS raise #GP, as in KVM
 *   P5_MC_ADDR P5_MC_TYPE reads 0; read-only
 *   UCODE_REV          reads revision 1 (bits 63:32), as KVM answers; writes
 *                      accepted and dropped (Linux's Intel code writes 0 and
 *                      reads it back without a fault handler)
 *   K8_INT_PENDING_MSG reads 0 (no C1E, no SMI on halt: Linux reads it without
 *                      a fault handler on CPUs with AMD erratum 400, family
 *                      0xf as QEMU's TCG CPU is); read-only, as KVM has it
 *   KVM_SYSTEM_TIME_NEW, KVM_WALL_CLOCK_NEW
 *                      KVM's paravirtual clock (virt/pvclock.h): a 4-byte
 *                      aligned gpa (SYSTEM_TIME: bit 0 enables it), read back
 *                      as written; sprig then writes the structure there
 *   KVM_STEAL_TIME     KVM's steal time (virt/kvm_pv.h): a 64-byte aligned
 *                      gpa, bit 0 enables it, read back as written
 *   KVM_PV_EOI_EN      KVM's PV EOI (virt/kvm_pv.h): a 4-byte aligned gpa,
 *                      bit 0 enables it, read back as written
 *   P6_PERFCTR0-1 P6_EVNTSEL0-1 K7_EVNTSEL0-3 K7_PERFCTR0-3
 *                      the legacy performance counters, as KVM answers them
 *                      without a vPMU: read 0, writes of any value dropped
 *   APIC_BASE, TSC_DEADLINE, x2APIC 0x800-0x8ff
 *                      the vCPU's local APIC (dev/lapic.c), which checks
 *                      them by the SDM's rules */
#pragma once
#include "arch/x86/msr.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where a known MSR's value lives. */
enum msr_home {
	MSR_HOME_NONE,    /* not an MSR sprig offers: #GP on read and write */
	MSR_HOME_BACKEND, /* the VMCB or VMCS, or beside it: backend msr_read/msr_write */
	MSR_HOME_VIRT,    /* virt/msr.c: the TSC offset, or a fixed value */
	MSR_HOME_APIC,    /* the local APIC model (dev/lapic.c) */
};

/* What the checks of a write need to know of the vCPU. */
struct msr_guest {
	uint64_t cr0;     /* CR0 as the guest sees it */
	uint64_t efer;    /* EFER as the guest sees it (never SVME) */
	bool nx;          /* CPUID 0x80000001 EDX.NX */
	unsigned va_bits; /* linear-address width of the canonical checks: 48 or 57 */
	bool tsc_aux;     /* CPUID has RDTSCP or RDPID: TSC_AUX exists */
	bool intel;       /* an Intel CPU: TSC_AUX bits 63:32 are reserved */
	bool pks;         /* CPUID has PKS: IA32_PKRS exists */
	uint64_t misc_enable; /* MISC_ENABLE now */
};

/* MISC_ENABLE at power-on: KVM's without a vPMU (no branch trace store, no
 * PEBS), with fast strings on, as a BIOS leaves them (Linux on Intel turns
 * REP_GOOD and ERMS off without it). */
#define MISC_ENABLE_RESET \
	(MISC_ENABLE_FAST_STRINGS | MISC_ENABLE_BTS_UNAVAIL | MISC_ENABLE_PEBS_UNAVAIL)

/* The machine-check banks a vCPU has: QEMU's default for KVM guests. No
 * machine check is ever raised in them; guests read back what they wrote. */
#define MCE_BANKS 10
#define MCG_CAP_VALUE (MCG_CTL_P | MCE_BANKS)

/* A vCPU's machine-check MSRs (KVM's mcg_status, mcg_ctl, mce_banks). */
struct mce_msrs {
	uint64_t mcg_status, mcg_ctl;
	uint64_t bank[MCE_BANKS * 4]; /* CTL, STATUS, ADDR, MISC of each bank */
};

/* Power-on values: every bank and MCG_CTL enabled (all ones), as QEMU sets
 * them up for KVM. */
void mce_msrs_reset(struct mce_msrs *m);
/* Where a machine-check MSR's value lives in m; NULL for any other MSR (and
 * MCG_CAP, a fixed value). */
uint64_t *mce_msr_slot(struct mce_msrs *m, uint32_t msr);

enum msr_home msr_home(uint32_t msr);

/* A guest's WRMSR of val to msr (one with a home): NULL when it is valid, with
 * *store the value the MSR then holds; otherwise why the CPU raises #GP. */
const char *msr_check_write(uint32_t msr, uint64_t val, const struct msr_guest *g,
			    uint64_t *store);

/* What RDMSR returns for a MSR_HOME_VIRT MSR with a fixed value (all but the
 * TSC, TSC_AUX, PKRS, MISC_ENABLE and the pvclock MSRs); false for the others. */
bool msr_fixed_value(uint32_t msr, uint64_t *val);


