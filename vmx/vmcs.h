/* Intel VMX: capability MSRs, VMCS field encodings, control bits, exit reasons
 * and the VMX instructions as inline helpers (SDM vol. 3C, chapters 24-28 and
 * appendices A and B); and, at the end, what vmx/vmcs.c does with a vCPU's. The offsets of struct vcpu_regs and the host-RSP field
 * are shared with vmx/vmx_entry.S, so that part is assembler-safe. */
#pragma once

/* struct vcpu_regs, as vmx_entry.S addresses it (checked in run.c). */
#define VCPU_REGS_RAX 0
#define VCPU_REGS_RBX 8
#define VCPU_REGS_RCX 16
#define VCPU_REGS_RDX 24
#define VCPU_REGS_RSI 32
#define VCPU_REGS_RDI 40
#define VCPU_REGS_RBP 48
#define VCPU_REGS_R8 56
#define VCPU_REGS_R9 64
#define VCPU_REGS_R10 72
#define VCPU_REGS_R11 80
#define VCPU_REGS_R12 88
#define VCPU_REGS_R13 96
#define VCPU_REGS_R14 104
#define VCPU_REGS_R15 112

#define VMCS_HOST_RSP 0x6c14

/* vmx_enter's result. */
#define VMX_ENTER_EXITED 0       /* the guest ran and exited (or entry failed late) */
#define VMX_ENTER_FAIL_INVALID 1 /* VMfailInvalid: no current VMCS */
#define VMX_ENTER_FAIL_VALID 2   /* VMfailValid: see VM_INSTRUCTION_ERROR */

#ifndef __ASSEMBLY__
#include "mm/frame.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/msr.h"

/* Capability MSRs (the others are in arch/x86/msr.h). */
#define MSR_VMX_PINBASED_CTLS 0x481
#define MSR_VMX_EXIT_CTLS 0x483
#define MSR_VMX_ENTRY_CTLS 0x484
#define MSR_VMX_MISC 0x485
#define MSR_VMX_CR0_FIXED0 0x486
#define MSR_VMX_CR0_FIXED1 0x487
#define MSR_VMX_CR4_FIXED0 0x488
#define MSR_VMX_CR4_FIXED1 0x489
#define MSR_VMX_TRUE_PINBASED_CTLS 0x48d
#define MSR_VMX_TRUE_PROCBASED_CTLS 0x48e
#define MSR_VMX_TRUE_EXIT_CTLS 0x48f
#define MSR_VMX_TRUE_ENTRY_CTLS 0x490

/* IA32_VMX_BASIC. */
#define VMX_BASIC_PA_32BIT (1ull << 48)      /* VMX regions must lie below 4 GiB */
#define VMX_BASIC_MEMTYPE_SHIFT 50            /* bits 53:50, 6 = write-back */
#define VMX_BASIC_MEMTYPE_WB 6

/* IA32_VMX_MISC. */
#define VMX_MISC_TIMER_RATE_MASK 0x1f         /* timer ticks every 2^n TSC cycles */
#define VMX_MISC_STORES_LMA (1ull << 5)       /* exits store EFER.LMA in the entry control */

/* IA32_VMX_EPT_VPID_CAP beyond arch/x86/cpuinfo.h. */
#define VPID_CAP_INVVPID_SINGLE (1ull << 41)
#define VPID_CAP_INVVPID_ALL (1ull << 42)

/* Pin-based VM-execution controls. */
#define PIN_EXT_INTR_EXITING (1u << 0)
#define PIN_NMI_EXITING (1u << 3)
#define PIN_VIRTUAL_NMIS (1u << 5)
#define PIN_PREEMPTION_TIMER (1u << 6)

/* Primary processor-based VM-execution controls. */
#define PROC_INTR_WINDOW_EXITING (1u << 2)
#define PROC_USE_TSC_OFFSETTING (1u << 3)
#define PROC_HLT_EXITING (1u << 7)
#define PROC_MWAIT_EXITING (1u << 10)
#define PROC_RDPMC_EXITING (1u << 11)
#define PROC_CR3_LOAD_EXITING (1u << 15)
#define PROC_CR3_STORE_EXITING (1u << 16)
#define PROC_CR8_LOAD_EXITING (1u << 19)
#define PROC_CR8_STORE_EXITING (1u << 20)
#define PROC_NMI_WINDOW_EXITING (1u << 22)
#define PROC_UNCOND_IO_EXITING (1u << 24)
#define PROC_USE_MSR_BITMAPS (1u << 28)
#define PROC_MONITOR_EXITING (1u << 29)
#define PROC_PAUSE_EXITING (1u << 30)
#define PROC_SECONDARY_CONTROLS (1u << 31)

/* Secondary processor-based VM-execution controls. */
#define PROC2_ENABLE_EPT (1u << 1)
#define PROC2_ENABLE_RDTSCP (1u << 3)
#define PROC2_ENABLE_VPID (1u << 5)
#define PROC2_UNRESTRICTED_GUEST (1u << 7)
#define PROC2_PAUSE_LOOP_EXITING (1u << 10)
#define PROC2_ENABLE_INVPCID (1u << 12)

/* VM-exit controls. */
#define EXIT_SAVE_DEBUG_CONTROLS (1u << 2)
#define EXIT_HOST_ADDR_SPACE_SIZE (1u << 9)
#define EXIT_SAVE_EFER (1u << 20)
#define EXIT_LOAD_EFER (1u << 21)
#define EXIT_SAVE_PREEMPTION_TIMER (1u << 22)

/* VM-entry controls. */
#define ENTRY_LOAD_DEBUG_CONTROLS (1u << 2)
#define ENTRY_IA32E_MODE_GUEST (1u << 9)
#define ENTRY_LOAD_EFER (1u << 15)
#define ENTRY_LOAD_PKRS (1u << 22)

/* VM-entry interruption information / IDT-vectoring information. */
#define INTR_INFO_VECTOR_MASK 0xffu
#define INTR_INFO_TYPE_SHIFT 8
#define INTR_INFO_TYPE_MASK (7u << 8)
/* Guest interruptibility state. */
#define BLOCKING_BY_STI (1u << 0)
#define BLOCKING_BY_MOV_SS (1u << 1)
#define BLOCKING_BY_NMI (1u << 3)

#define INTR_TYPE_EXT_INTR 0u
#define INTR_TYPE_NMI 2u
#define INTR_TYPE_HW_EXCEPTION 3u
#define INTR_TYPE_SW_INTERRUPT 4u
#define INTR_TYPE_PRIV_SW_EXCEPTION 5u
#define INTR_TYPE_SW_EXCEPTION 6u
#define INTR_INFO_DELIVER_CODE (1u << 11)
#define INTR_INFO_VALID (1u << 31)
/* Guest pending debug exceptions: BS, a single-step trap. */
#define PENDING_DBG_BS (1ull << 14)

/* Exit reason: bits 15:0 the basic reason, bit 31 a VM-entry failure. */
#define EXIT_REASON_BASIC_MASK 0xffffu
#define EXIT_REASON_ENTRY_FAILURE (1u << 31)
#define EXIT_EXCEPTION_NMI 0
#define EXIT_EXTERNAL_INTERRUPT 1
#define EXIT_TRIPLE_FAULT 2
#define EXIT_INTERRUPT_WINDOW 7
#define EXIT_NMI_WINDOW 8
#define EXIT_CPUID 10
#define EXIT_GETSEC 11
#define EXIT_HLT 12
#define EXIT_INVD 13
#define EXIT_RDPMC 15
#define EXIT_VMCALL 18
#define EXIT_VMCLEAR 19
#define EXIT_VMXON 27
#define EXIT_CR_ACCESS 28
#define EXIT_IO 30
#define EXIT_RDMSR 31
#define EXIT_WRMSR 32
#define EXIT_INVALID_GUEST_STATE 33
#define EXIT_MSR_LOADING 34
#define EXIT_MWAIT 36
#define EXIT_MONITOR 39
#define EXIT_PAUSE 40
#define EXIT_MACHINE_CHECK 41
#define EXIT_EPT_VIOLATION 48
#define EXIT_EPT_MISCONFIG 49
#define EXIT_INVEPT 50
#define EXIT_PREEMPTION_TIMER 52
#define EXIT_INVVPID 53
#define EXIT_XSETBV 55
#define EXIT_VMFUNC 59

/* Exit qualification of a control-register access (reason 28). */
#define CR_QUAL_CR(q) ((unsigned)(q) & 0xf)
#define CR_QUAL_TYPE(q) ((unsigned)((q) >> 4) & 3) /* 0 MOV to CR, 1 MOV from CR */
#define CR_QUAL_GPR(q) ((unsigned)((q) >> 8) & 0xf)
#define CR_TYPE_MOV_TO 0
#define CR_TYPE_MOV_FROM 1

/* Exit qualification of an I/O instruction (reason 30). */
#define IO_QUAL_SIZE(q) ((unsigned)((q) & 7) + 1)
#define IO_QUAL_IN (1u << 3)
#define IO_QUAL_STRING (1u << 4)
#define IO_QUAL_PORT(q) ((uint16_t)((q) >> 16))

/* Exit qualification of an EPT violation (reason 48). */
#define EPT_QUAL_READ (1u << 0)
#define EPT_QUAL_WRITE (1u << 1)
#define EPT_QUAL_FETCH (1u << 2)
#define EPT_QUAL_PRESENT (7u << 3) /* the entry allowed read, write or execute */
#define EPT_QUAL_NMI_UNBLOCKED (1u << 12) /* by an IRET the violation interrupted */

/* INVEPT and INVVPID types. */
#define INVEPT_SINGLE_CONTEXT 1
#define INVEPT_ALL_CONTEXT 2
#define INVVPID_SINGLE_CONTEXT 1
#define INVVPID_ALL_CONTEXT 2

/* VMCS field encodings (SDM vol. 3C appendix B). */
enum vmcs_field {
	/* 16-bit */
	VMCS_VPID = 0x0000,
	VMCS_GUEST_ES_SEL = 0x0800,
	VMCS_GUEST_CS_SEL = 0x0802,
	VMCS_GUEST_SS_SEL = 0x0804,
	VMCS_GUEST_DS_SEL = 0x0806,
	VMCS_GUEST_FS_SEL = 0x0808,
	VMCS_GUEST_GS_SEL = 0x080a,
	VMCS_GUEST_LDTR_SEL = 0x080c,
	VMCS_GUEST_TR_SEL = 0x080e,
	VMCS_HOST_ES_SEL = 0x0c00,
	VMCS_HOST_CS_SEL = 0x0c02,
	VMCS_HOST_SS_SEL = 0x0c04,
	VMCS_HOST_DS_SEL = 0x0c06,
	VMCS_HOST_FS_SEL = 0x0c08,
	VMCS_HOST_GS_SEL = 0x0c0a,
	VMCS_HOST_TR_SEL = 0x0c0c,
	/* 64-bit */
	VMCS_MSR_BITMAP = 0x2004,
	VMCS_EXIT_MSR_STORE_ADDR = 0x2006,
	VMCS_ENTRY_MSR_LOAD_ADDR = 0x200a,
	VMCS_TSC_OFFSET = 0x2010,
	VMCS_EPT_POINTER = 0x201a,
	VMCS_GUEST_PHYSICAL_ADDRESS = 0x2400,
	VMCS_LINK_POINTER = 0x2800,
	VMCS_GUEST_DEBUGCTL = 0x2802,
	VMCS_GUEST_EFER = 0x2806,
	VMCS_GUEST_PDPTE0 = 0x280a, /* PDPTE n at 0x280a + 2n */
	VMCS_GUEST_PKRS = 0x2818,
	VMCS_HOST_EFER = 0x2c02,
	/* 32-bit */
	VMCS_PIN_CONTROLS = 0x4000,
	VMCS_PROC_CONTROLS = 0x4002,
	VMCS_EXCEPTION_BITMAP = 0x4004,
	VMCS_CR3_TARGET_COUNT = 0x400a,
	VMCS_EXIT_CONTROLS = 0x400c,
	VMCS_EXIT_MSR_STORE_COUNT = 0x400e,
	VMCS_EXIT_MSR_LOAD_COUNT = 0x4010,
	VMCS_ENTRY_CONTROLS = 0x4012,
	VMCS_ENTRY_MSR_LOAD_COUNT = 0x4014,
	VMCS_ENTRY_INTR_INFO = 0x4016,
	VMCS_ENTRY_EXCEPTION_ERROR_CODE = 0x4018,
	VMCS_ENTRY_INSTRUCTION_LEN = 0x401a,
	VMCS_PROC2_CONTROLS = 0x401e,
	VMCS_PLE_GAP = 0x4020,
	VMCS_PLE_WINDOW = 0x4022,
	VMCS_INSTRUCTION_ERROR = 0x4400,
	VMCS_EXIT_REASON = 0x4402,
	VMCS_EXIT_INTR_INFO = 0x4404,
	VMCS_IDT_VECTORING_INFO = 0x4408,
	VMCS_IDT_VECTORING_ERROR_CODE = 0x440a,
	VMCS_EXIT_INSTRUCTION_LEN = 0x440c,
	VMCS_GUEST_ES_LIMIT = 0x4800, /* ES, CS, SS, DS, FS, GS, LDTR, TR: + 2n */
	VMCS_GUEST_GDTR_LIMIT = 0x4810,
	VMCS_GUEST_IDTR_LIMIT = 0x4812,
	VMCS_GUEST_ES_AR = 0x4814,    /* + 2n, same order */
	VMCS_GUEST_INTERRUPTIBILITY = 0x4824,
	VMCS_GUEST_ACTIVITY_STATE = 0x4826,
	VMCS_GUEST_SYSENTER_CS = 0x482a,
	VMCS_PREEMPTION_TIMER = 0x482e,
	VMCS_HOST_SYSENTER_CS = 0x4c00,
	/* natural width */
	VMCS_CR0_GUEST_HOST_MASK = 0x6000,
	VMCS_CR4_GUEST_HOST_MASK = 0x6002,
	VMCS_CR0_READ_SHADOW = 0x6004,
	VMCS_CR4_READ_SHADOW = 0x6006,
	VMCS_EXIT_QUALIFICATION = 0x6400,
	VMCS_GUEST_CR0 = 0x6800,
	VMCS_GUEST_CR3 = 0x6802,
	VMCS_GUEST_CR4 = 0x6804,
	VMCS_GUEST_ES_BASE = 0x6806,  /* + 2n, same order */
	VMCS_GUEST_GDTR_BASE = 0x6816,
	VMCS_GUEST_IDTR_BASE = 0x6818,
	VMCS_GUEST_DR7 = 0x681a,
	VMCS_GUEST_RSP = 0x681c,
	VMCS_GUEST_RIP = 0x681e,
	VMCS_GUEST_RFLAGS = 0x6820,
	VMCS_GUEST_PENDING_DBG = 0x6822,
	VMCS_GUEST_SYSENTER_ESP = 0x6824,
	VMCS_GUEST_SYSENTER_EIP = 0x6826,
	VMCS_HOST_CR0 = 0x6c00,
	VMCS_HOST_CR3 = 0x6c02,
	VMCS_HOST_CR4 = 0x6c04,
	VMCS_HOST_FS_BASE = 0x6c06,
	VMCS_HOST_GS_BASE = 0x6c08,
	VMCS_HOST_TR_BASE = 0x6c0a,
	VMCS_HOST_GDTR_BASE = 0x6c0c,
	VMCS_HOST_IDTR_BASE = 0x6c0e,
	VMCS_HOST_SYSENTER_ESP = 0x6c10,
	VMCS_HOST_SYSENTER_EIP = 0x6c12,
	VMCS_HOST_RIP = 0x6c16,
};

/* Segment registers in VMCS order: field = base field + 2 * seg. */
enum vmcs_seg { VMCS_SEG_ES, VMCS_SEG_CS, VMCS_SEG_SS, VMCS_SEG_DS, VMCS_SEG_FS, VMCS_SEG_GS, VMCS_SEG_LDTR, VMCS_SEG_TR, VMCS_SEG_COUNT };

/* Access rights of an unusable segment register. */
#define VMX_AR_UNUSABLE (1u << 16)

/* The VMX instructions. Each returns true on success; on failure, CF=1
 * (VMfailInvalid) or ZF=1 (VMfailValid) is folded into "not above". */
static inline bool vmxon(paddr_t region)
{
	bool ok;

	__asm__ volatile("vmxon %1; seta %0" : "=q"(ok) : "m"(region) : "cc", "memory");
	return ok;
}

static inline bool vmclear(paddr_t vmcs)
{
	bool ok;

	__asm__ volatile("vmclear %1; seta %0" : "=q"(ok) : "m"(vmcs) : "cc", "memory");
	return ok;
}

static inline bool vmptrld(paddr_t vmcs)
{
	bool ok;

	__asm__ volatile("vmptrld %1; seta %0" : "=q"(ok) : "m"(vmcs) : "cc", "memory");
	return ok;
}

static inline bool vmcs_write(enum vmcs_field field, uint64_t value)
{
	bool ok;

	__asm__ volatile("vmwrite %2, %1; seta %0"
			 : "=q"(ok)
			 : "r"((uint64_t)field), "rm"(value)
			 : "cc", "memory");
	return ok;
}

/* Reads of fields sprig knows to exist; a failed VMREAD reads as 0. */
static inline uint64_t vmcs_read(enum vmcs_field field)
{
	uint64_t value = 0;

	__asm__ volatile("vmread %1, %0" : "+rm"(value) : "r"((uint64_t)field) : "cc");
	return value;
}

static inline bool invept(unsigned type, uint64_t eptp)
{
	struct {
		uint64_t eptp, reserved;
	} desc = { eptp, 0 };
	bool ok;

	__asm__ volatile("invept %1, %2; seta %0"
			 : "=q"(ok)
			 : "m"(desc), "r"((uint64_t)type)
			 : "cc", "memory");
	return ok;
}

static inline bool invvpid(unsigned type, uint16_t vpid)
{
	struct {
		uint64_t vpid, linear;
	} desc = { vpid, 0 };
	bool ok;

	__asm__ volatile("invvpid %1, %2; seta %0"
			 : "=q"(ok)
			 : "m"(desc), "r"((uint64_t)type)
			 : "cc", "memory");
	return ok;
}

struct vcpu;
struct vcpu_regs;
struct vmx_vcpu;

/* vmcs.c: the VMCS of a new vCPU, current on this CPU; false, reported on
 * the console, if a VMWRITE failed. */
bool vmx_vmcs_setup(struct vcpu *v, struct vmx_vcpu *a, paddr_t msr_bitmap);
/* The host-state fields for this CPU (after a move to it); false if a
 * VMWRITE failed. */
bool vmx_vmcs_host_state(struct vmx_vcpu *a);
/* INIT's guest state and a SIPI's CS, in the current VMCS. */
void vmx_vmcs_init_state(void);
void vmx_vmcs_sipi(uint8_t vector);
void vmx_vmcs_boot_selectors(uint32_t gdt_base, uint16_t gdt_limit, uint16_t cs, uint16_t ds);
/* The backend's dump, state_save, state_check and state_load. */
void vmx_dump(struct vcpu *v);
size_t vmx_state_save(struct vcpu *v, void *buf);
bool vmx_state_check(const void *buf, size_t len, const struct vcpu_regs *regs, char *err,
		     size_t errlen);
bool vmx_state_load(struct vcpu *v, const void *buf, size_t len);
#endif
