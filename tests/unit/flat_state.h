/* A vCPU state as multiboot starts a guest (32-bit protected mode, paging
 * off, flat 4 GiB segments, RIP at entry, the APIC at power-on), in each
 * backend's saved form: the valid starting point that the state-check tests,
 * the fuzz target and mksnap (tests/e2e) break one field of. */
#pragma once
#include "arch/x86/msr.h"
#include "svm/saved_state.h"
#include "virt/vcpu_state.h"
#include "vmx/saved_state.h"
#include "virt/state_check.h"
#include "dev/acpi_pm.h"
#include "dev/fwcfg.h"
#include "dev/ioapic.h"
#include "dev/pci.h"
#include "dev/pic.h"
#include "dev/pit.h"
#include "dev/rtc.h"
#include "dev/uart16550.h"

void flat_svm_state(struct svm_saved_state *st);
/* With CR0.NE and CR4.VMXE, which VMX fixes to one. */
void flat_vmx_state(struct vmx_saved_state *s);
/* backend "svm" or "vmx"; xsave_bytes the FPU area's size, initial state.
 * vCPU index 0 runs at entry; the others are APs waiting for a start-up IPI
 * (the same flat registers, which their SIPI would replace). */
void flat_vcpu_state(struct vcpu_state *st, const char *backend, uint32_t xsave_bytes,
		     uint64_t entry, unsigned index);

/* A VM of up to FLAT_VCPUS_MAX such vCPUs and its chipset at power-on
 * (without pc-testdev), each record's model. */
#define FLAT_VCPUS_MAX 8
#define FLAT_TSC_KHZ 2000000
struct flat_vm {
	unsigned nr_vcpus;
	struct vm_saved vm;
	struct vcpu_state cpu[FLAT_VCPUS_MAX];
	struct lapic apic[FLAT_VCPUS_MAX];
	struct vcpu_msrs msrs[FLAT_VCPUS_MAX];
	struct ioapic ioapic;
	struct pic pic;
	struct pit pit;
	struct rtc rtc;
	struct acpi_pm acpi_pm;
	struct fwcfg fwcfg;
	struct pci pci;
	struct uart16550 uart;
};
/* mem_bytes: the VM's memory (fw_cfg's and the CMOS's sizes). */
void flat_vm(struct flat_vm *f, unsigned n, const char *backend, uint32_t xsave_bytes,
	     uint64_t entry, uint64_t mem_bytes);
/* Its records into buf (cap bytes): the bytes written, 0 when they do not fit. */
uint32_t flat_vm_records(struct flat_vm *f, void *buf, uint32_t cap);
