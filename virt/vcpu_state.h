/* A VM's complete guest state, captured from a paused VM and loaded into a
 * new one: what snapshots store and what VM clones copy. It is a sequence of
 * state records (virt/state_record.h): the VM's own (REC_VM), then each
 * vCPU's (REC_CPU, REC_LAPIC, REC_MSRS), then one a device of its chipset. */
#pragma once
#include "virt/state_record.h"
#include "virt/vm.h"

#define VCPU_XSAVE_MAX 8192 /* fpu_vcpu_init's area is at most two pages */

/* REC_VM: what the vCPUs share. */
struct vm_saved {
	uint32_t nr_vcpus;     /* 1 to VM_VCPUS_MAX */
	uint32_t reserved;     /* zero */
	struct com1_out uart;  /* COM1's partial line, as sprig's console shows it */
	struct vm_lost lost;   /* discards the guest has not collected (HC_LOST_RANGES) */
	uint64_t pvclock_wall_msr; /* MSR_KVM_WALL_CLOCK_NEW as last written */
};

/* REC_CPU: one vCPU's registers, FPU and backend state, and run flags. */
struct vcpu_state {
	char backend[8];       /* "svm" or "vmx": the arch part is the backend's */
	struct vcpu_regs regs;
	uint64_t xcr0;
	uint64_t guest_tsc;    /* the vCPU's TSC when captured: it resumes there */
	uint64_t db[4], dr6, cr2; /* DR0-DR3, and (VMX) DR6 and CR2: virt/live_regs.h */
	/* The run loop's (struct vcpu): 0 or 1 each, the rest zero. */
	uint8_t halted;        /* after HLT, waiting for an interrupt */
	uint8_t wait_sipi;     /* an AP after INIT, waiting for a start-up IPI */
	uint8_t reserved[2];
	uint32_t xsave_bytes;
	uint32_t arch_bytes;
	uint8_t xsave[VCPU_XSAVE_MAX];
	uint8_t arch[VCPU_ARCH_STATE_MAX] __attribute__((aligned(8))); /* the backend's struct */
};

/* REC_MSRS: the MSRs virt/ keeps for a vCPU. */
struct vcpu_msrs {
	uint64_t pvclock_msr;     /* MSR_KVM_SYSTEM_TIME_NEW */
	uint32_t pvclock_version; /* of the structure it names */
	uint32_t tsc_aux;         /* TSC_AUX: RDTSCP and RDPID read it */
	uint64_t misc_enable;     /* IA32_MISC_ENABLE */
	uint32_t pkrs;            /* IA32_PKRS: supervisor protection keys */
	struct mce_msrs mce;      /* MCG_STATUS, MCG_CTL, the banks */
	uint64_t steal_time_msr;  /* MSR_KVM_STEAL_TIME (virt/kvm_pv.h) */
	uint64_t pv_eoi_msr;      /* MSR_KVM_PV_EOI_EN (virt/kvm_pv.h) */
};

/* The record types of the VM's and vCPUs' own state (virt/state_check.c). */
extern const struct record_type vm_record, cpu_record, msrs_record;

/* The bytes the state of vm takes. */
uint32_t vm_state_bytes(struct vm *vm);
/* Capture every vCPU and device of a VM that is not running (ready or
 * paused) into buf (cap bytes, vm_state_bytes(vm)); *len the bytes written.
 * False with a reason. */
bool vm_state_save(struct vm *vm, void *buf, uint32_t cap, uint32_t *len, char *err,
		   size_t errlen);
/* Everything in a state of len bytes that this machine would refuse or that
 * could reach beyond sprig's buffers (state_check.h, the backend's
 * state_check), every record checked, for a VM of mem_bytes; *nr_vcpus its
 * vCPU count. False with a
 * reason naming the record and the field. */
bool vm_state_check(const void *state, uint32_t len, uint64_t mem_bytes, unsigned *nr_vcpus,
		    char *err, size_t errlen);
/* Load a state into a VM created with as many vCPUs and never run: every
 * record checked first, one a device of the VM's chipset and no other;
 * false with a reason, nothing loaded. */
bool vm_state_load(struct vm *vm, const void *state, uint32_t len, char *err, size_t errlen);
/* Does a state hold a record of that id (instance 0)? (A state's own VM
 * gets pc-testdev when its state has one.) */
bool vm_state_has(const void *state, uint32_t len, uint32_t id);
