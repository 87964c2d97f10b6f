/* Flat starting states (flat_state.h). */
#include "flat_state.h"
#include "arch/x86/cpu.h"
#include "arch/x86/regs.h"
#include "virt/msr_policy.h"
#include <string.h>

void flat_svm_state(struct svm_saved_state *st)
{
	const struct vmcb_segment code = { 0x08, 0xc9b, 0xffffffff, 0 };
	const struct vmcb_segment data = { 0x10, 0xc93, 0xffffffff, 0 };
	struct vmcb_save *s = &st->save;

	memset(st, 0, sizeof(*st));
	s->cs = code;
	s->ds = s->es = s->fs = s->gs = s->ss = data;
	s->tr.attrib = 0x8b;
	s->tr.limit = 0xffff;
	s->gdtr.limit = s->idtr.limit = 0xffff;
	s->cr0 = CR0_PE | CR0_ET;
	s->efer = EFER_SVME;
	s->dr6 = 0xffff0ff0;
	s->dr7 = 0x400;
	s->g_pat = PAT_DEFAULT;
}

void flat_vmx_state(struct vmx_saved_state *s)
{
	memset(s, 0, sizeof(*s));
	for (int i = 0; i < VMX_SEGS; i++) {
		s->selector[i] = 0x10;
		s->limit[i] = 0xffffffff;
		s->access[i] = 0xc093;
	}
	s->selector[VMX_CS] = 0x08;
	s->access[VMX_CS] = 0xc09b;
	s->selector[VMX_LDTR] = s->limit[VMX_LDTR] = 0;
	s->access[VMX_LDTR] = 1u << 16; /* unusable */
	s->selector[VMX_TR] = 0;
	s->limit[VMX_TR] = 0xffff;
	s->access[VMX_TR] = 0x8b;
	s->gdtr_limit = s->idtr_limit = 0xffff;
	s->cr0 = CR0_PE | CR0_ET | CR0_NE;
	s->cr0_shadow = CR0_PE | CR0_ET;
	s->cr4 = CR4_VMXE;
	s->dr7 = 0x400;
	s->pat = PAT_DEFAULT;
}

void flat_vcpu_state(struct vcpu_state *st, const char *backend, uint32_t xsave_bytes,
		     uint64_t entry, unsigned index)
{
	memset(st, 0, sizeof(*st));
	strncpy(st->backend, backend, sizeof(st->backend) - 1);
	if (strcmp(backend, "svm") == 0) {
		flat_svm_state((struct svm_saved_state *)st->arch);
		st->arch_bytes = sizeof(struct svm_saved_state);
	} else {
		flat_vmx_state((struct vmx_saved_state *)st->arch);
		st->arch_bytes = sizeof(struct vmx_saved_state);
	}
	st->regs.rip = entry;
	st->regs.rflags = RFLAGS_FIXED;
	st->xcr0 = XCR0_X87;
	st->dr6 = 0xffff0ff0; /* DR6 at reset */
	st->xsave_bytes = xsave_bytes;
	memcpy(st->xsave + 0, &(uint16_t){ 0x37f }, 2);     /* FCW */
	memcpy(st->xsave + 24, &(uint32_t){ 0x1f80 }, 4);   /* MXCSR */
	st->wait_sipi = index != 0;
}

void flat_vm(struct flat_vm *f, unsigned n, const char *backend, uint32_t xsave_bytes,
	     uint64_t entry, uint64_t mem_bytes)
{
	memset(&f->vm, 0, sizeof(f->vm));
	f->vm.nr_vcpus = n;
	f->nr_vcpus = n;
	for (unsigned i = 0; i < n; i++) {
		flat_vcpu_state(&f->cpu[i], backend, xsave_bytes, entry, i);
		lapic_init(&f->apic[i], NULL, i, i == 0, FLAT_TSC_KHZ);
		memset(&f->msrs[i], 0, sizeof(f->msrs[i]));
		f->msrs[i].misc_enable = MISC_ENABLE_RESET;
	}
	ioapic_init(&f->ioapic, NULL);
	pic_init(&f->pic);
	pit_init(&f->pit, FLAT_TSC_KHZ);
	rtc_init(&f->rtc, FLAT_TSC_KHZ, 0, mem_bytes);
	acpi_pm_init(&f->acpi_pm);
	fwcfg_init_vm(&f->fwcfg, mem_bytes, n);
	pci_init(&f->pci);
	memset(&f->uart, 0, sizeof(f->uart)); /* power-on */
}

uint32_t flat_vm_records(struct flat_vm *f, void *buf, uint32_t cap)
{
	uint32_t pos = 0;
	bool ok = record_put(buf, cap, &pos, &vm_record, 0, &f->vm);

	for (unsigned i = 0; ok && i < f->nr_vcpus; i++)
		ok = record_put(buf, cap, &pos, &cpu_record, i, &f->cpu[i]) &&
		     record_put(buf, cap, &pos, &lapic_record, i, &f->apic[i]) &&
		     record_put(buf, cap, &pos, &msrs_record, i, &f->msrs[i]);
	ok = ok && record_put(buf, cap, &pos, &ioapic_record, 0, &f->ioapic) &&
	     record_put(buf, cap, &pos, &pic_record, 0, &f->pic) &&
	     record_put(buf, cap, &pos, &pit_record, 0, &f->pit) &&
	     record_put(buf, cap, &pos, &rtc_record, 0, &f->rtc) &&
	     record_put(buf, cap, &pos, &fwcfg_record, 0, &f->fwcfg) &&
	     record_put(buf, cap, &pos, &pci_record, 0, &f->pci) &&
	     record_put(buf, cap, &pos, &acpi_pm_record, 0, &f->acpi_pm) &&
	     record_put(buf, cap, &pos, &uart16550_record, 0, &f->uart);
	return ok ? pos : 0;
}
