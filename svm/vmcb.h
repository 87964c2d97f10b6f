/* The VMCB (AMD APM vol. 2, appendix B): the control area at offset 0 and the
 * state-save area at 0x400, in the layout that predates SEV-ES; and, at the
 * end, what svm/vmcb.c does with a vCPU's. */
#pragma once
#include "arch/x86/direct_map.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vcpu;
struct vcpu_regs;

struct vmcb_segment {
	uint16_t selector;
	uint16_t attrib; /* the packed 12-bit form: G D L AVL P DPL S TYPE */
	uint32_t limit;
	uint64_t base;
};

struct vmcb_control {
	uint32_t intercept_cr;        /* 0x000: bits 0-15 reads, 16-31 writes */
	uint32_t intercept_dr;        /* 0x004 */
	uint32_t intercept_exceptions;/* 0x008 */
	uint32_t intercept_misc1;     /* 0x00c */
	uint32_t intercept_misc2;     /* 0x010 */
	uint32_t intercept_misc3;     /* 0x014 */
	uint8_t reserved0[0x3c - 0x18];
	uint16_t pause_filter_threshold; /* 0x03c */
	uint16_t pause_filter_count;  /* 0x03e */
	uint64_t iopm_base_pa;        /* 0x040 */
	uint64_t msrpm_base_pa;       /* 0x048 */
	uint64_t tsc_offset;          /* 0x050 */
	uint32_t asid;                /* 0x058 */
	uint8_t tlb_control;          /* 0x05c */
	uint8_t reserved1[3];
	uint64_t int_ctl;             /* 0x060 */
	uint64_t int_state;           /* 0x068: bit 0 interrupt shadow */
	uint64_t exit_code;           /* 0x070 */
	uint64_t exit_info1;          /* 0x078 */
	uint64_t exit_info2;          /* 0x080 */
	uint64_t exit_int_info;       /* 0x088 */
	uint64_t nested_ctl;          /* 0x090: bit 0 nested paging */
	uint64_t avic_vapic_bar;      /* 0x098 */
	uint64_t ghcb_pa;             /* 0x0a0 */
	uint64_t event_inject;        /* 0x0a8 */
	uint64_t nested_cr3;          /* 0x0b0 */
	uint64_t virt_ext;            /* 0x0b8 */
	uint32_t clean;               /* 0x0c0 */
	uint32_t reserved2;
	uint64_t next_rip;            /* 0x0c8 */
	uint8_t insn_len;             /* 0x0d0 */
	uint8_t insn_bytes[15];
	uint8_t reserved3[0x400 - 0x0e0];
};

struct vmcb_save {
	struct vmcb_segment es, cs, ss, ds, fs, gs, gdtr, ldtr, idtr, tr; /* 0x400 */
	uint8_t reserved0[0xcb - 0xa0];
	uint8_t cpl;                  /* 0x4cb */
	uint32_t reserved1;
	uint64_t efer;                /* 0x4d0 */
	uint8_t reserved2[0x148 - 0xd8];
	uint64_t cr4;                 /* 0x548 */
	uint64_t cr3;
	uint64_t cr0;
	uint64_t dr7;
	uint64_t dr6;
	uint64_t rflags;
	uint64_t rip;                 /* 0x578 */
	uint8_t reserved3[0x1d8 - 0x180];
	uint64_t rsp;                 /* 0x5d8 */
	uint8_t reserved4[0x1f8 - 0x1e0];
	uint64_t rax;                 /* 0x5f8 */
	uint64_t star, lstar, cstar, sfmask, kernel_gs_base;
	uint64_t sysenter_cs, sysenter_esp, sysenter_eip;
	uint64_t cr2;                 /* 0x640 */
	uint8_t reserved5[0x268 - 0x248];
	uint64_t g_pat;               /* 0x668 */
	uint64_t dbgctl;
	uint64_t br_from, br_to, last_excp_from, last_excp_to;
};

struct vmcb {
	struct vmcb_control control;
	struct vmcb_save save;
};

_Static_assert(sizeof(struct vmcb_control) == 0x400, "VMCB layout");
_Static_assert(sizeof(struct vmcb_segment) == 16, "VMCB layout");
_Static_assert(__builtin_offsetof(struct vmcb, control.exit_code) == 0x070, "VMCB layout");
_Static_assert(__builtin_offsetof(struct vmcb, control.nested_cr3) == 0x0b0, "VMCB layout");
_Static_assert(__builtin_offsetof(struct vmcb, control.next_rip) == 0x0c8, "VMCB layout");
_Static_assert(__builtin_offsetof(struct vmcb, save.cpl) == 0x4cb, "VMCB layout");
_Static_assert(__builtin_offsetof(struct vmcb, save.efer) == 0x4d0, "VMCB layout");
_Static_assert(__builtin_offsetof(struct vmcb, save.cr4) == 0x548, "VMCB layout");
_Static_assert(__builtin_offsetof(struct vmcb, save.rip) == 0x578, "VMCB layout");
_Static_assert(__builtin_offsetof(struct vmcb, save.rsp) == 0x5d8, "VMCB layout");
_Static_assert(__builtin_offsetof(struct vmcb, save.rax) == 0x5f8, "VMCB layout");
_Static_assert(__builtin_offsetof(struct vmcb, save.cr2) == 0x640, "VMCB layout");
_Static_assert(__builtin_offsetof(struct vmcb, save.g_pat) == 0x668, "VMCB layout");

/* intercept_misc1 */
#define INTERCEPT_CR4_WRITE (1u << 20) /* intercept_cr: writes from bit 16 */
#define INTERCEPT_INTR (1u << 0)
#define INTERCEPT_NMI (1u << 1)
#define INTERCEPT_SMI (1u << 2)
#define INTERCEPT_INIT (1u << 3)
#define INTERCEPT_VINTR (1u << 4)
#define INTERCEPT_RDPMC (1u << 15)
#define INTERCEPT_CPUID (1u << 18)
#define INTERCEPT_INVD (1u << 22)
#define INTERCEPT_PAUSE (1u << 23)
#define INTERCEPT_IRET (1u << 20)
#define INTERCEPT_HLT (1u << 24)
#define INTERCEPT_INVLPGA (1u << 26)
#define INTERCEPT_IOIO (1u << 27)
#define INTERCEPT_MSR (1u << 28)
#define INTERCEPT_SHUTDOWN (1u << 31)
/* intercept_misc2 */
#define INTERCEPT_VMRUN (1u << 0)
#define INTERCEPT_VMMCALL (1u << 1)
#define INTERCEPT_VMLOAD (1u << 2)
#define INTERCEPT_VMSAVE (1u << 3)
#define INTERCEPT_STGI (1u << 4)
#define INTERCEPT_CLGI (1u << 5)
#define INTERCEPT_SKINIT (1u << 6)
#define INTERCEPT_MONITOR (1u << 10)
#define INTERCEPT_MWAIT (1u << 11)
#define INTERCEPT_MWAIT_CONDITIONAL (1u << 12)
#define INTERCEPT_XSETBV (1u << 13)

#define INT_CTL_V_IRQ (1ull << 8)
#define INT_CTL_V_INTR_PRIO_SHIFT 16
#define INT_CTL_V_IGN_TPR (1ull << 20)
#define INT_CTL_V_INTR_MASKING (1ull << 24)
#define INT_STATE_SHADOW (1ull << 0)

#define TLB_CONTROL_NONE 0
#define TLB_CONTROL_FLUSH_ALL 1
#define TLB_CONTROL_FLUSH_ASID 3

/* Exit codes. */
#define SVM_EXIT_WRITE_CR4 0x014
#define SVM_EXIT_EXCP_BASE 0x040
#define SVM_EXIT_INTR 0x060
#define SVM_EXIT_NMI 0x061
#define SVM_EXIT_SMI 0x062
#define SVM_EXIT_INIT 0x063
#define SVM_EXIT_VINTR 0x064
#define SVM_EXIT_RDPMC 0x06f
#define SVM_EXIT_CPUID 0x072
#define SVM_EXIT_IRET 0x074
#define SVM_EXIT_INVD 0x076
#define SVM_EXIT_PAUSE 0x077
#define SVM_EXIT_HLT 0x078
#define SVM_EXIT_INVLPGA 0x07a
#define SVM_EXIT_IOIO 0x07b
#define SVM_EXIT_MSR 0x07c
#define SVM_EXIT_SHUTDOWN 0x07f
#define SVM_EXIT_VMRUN 0x080
#define SVM_EXIT_VMMCALL 0x081
#define SVM_EXIT_VMLOAD 0x082
#define SVM_EXIT_VMSAVE 0x083
#define SVM_EXIT_STGI 0x084
#define SVM_EXIT_CLGI 0x085
#define SVM_EXIT_SKINIT 0x086
#define SVM_EXIT_MONITOR 0x08a
#define SVM_EXIT_MWAIT 0x08b
#define SVM_EXIT_MWAIT_CONDITIONAL 0x08c
#define SVM_EXIT_XSETBV 0x08d
#define SVM_EXIT_NPF 0x400
/* QEMU reports VMEXIT_INVALID as 0x00000000ffffffff, hardware as all ones. */
#define SVM_EXIT_INVALID 0xffffffffu

/* IOIO exit information 1. */
#define IOIO_IN (1u << 0)
#define IOIO_STRING (1u << 2)
#define IOIO_SIZE_SHIFT 4 /* bits 4-6: 8, 16, 32-bit operand */
#define IOIO_PORT_SHIFT 16

/* NPF exit information 1. */
#define NPF_PRESENT (1ull << 0)
#define NPF_WRITE (1ull << 1)
#define NPF_RSV (1ull << 3)   /* a reserved bit set in a nested table entry */
#define NPF_FETCH (1ull << 4)

/* Event injection (EVENTINJ), and EXITINTINFO in the same format. */
#define EVENT_INJECT_VALID (1ull << 31)
#define EVENT_INJECT_TYPE_MASK (7ull << 8)
#define EVENT_INJECT_INTR (0ull << 8)
#define EVENT_INJECT_NMI (2ull << 8)
#define EVENT_INJECT_EXCEPTION (3ull << 8)
#define EVENT_INJECT_SOFT_INT (4ull << 8)
#define EVENT_INJECT_ERROR_VALID (1ull << 11)
#define EVENT_INJECT_VECTOR_MASK 0xffull

/* vmcb.c: the VMCB of a new vCPU, INIT, SIPI and boot selectors, the dump,
 * and the save area in snapshots (the backend's ops of those names). */
void svm_vmcb_setup(struct vcpu *v, struct vmcb *vmcb, paddr_t iopm_pa, paddr_t msrpm_pa);
void svm_init_state(struct vcpu *v);
void svm_sipi(struct vcpu *v, uint8_t vector);
void svm_boot_selectors(struct vcpu *v, uint32_t gdt_base, uint16_t gdt_limit, uint16_t cs,
			uint16_t ds);
void svm_dump(struct vcpu *v);
size_t svm_state_save(struct vcpu *v, void *buf);
bool svm_state_check(const void *buf, size_t len, const struct vcpu_regs *regs, char *err,
		     size_t errlen);
bool svm_state_load(struct vcpu *v, const void *buf, size_t len);
