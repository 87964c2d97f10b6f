/* The VMCS of a new vCPU (its controls, sprig's own state for the exits,
 * multiboot's machine state for the guest) and the VMCS side of snapshots:
 * which guest-state field holds which member of struct vmx_saved_state; and
 * the dump of a stopped guest. */
#include "vmx/vmcs.h"
#include "arch/x86/cpu.h"
#include "arch/x86/cpuinfo.h"
#include "arch/x86/mce.h"
#include "arch/x86/regs.h"
#include "lib/print.h"
#include "lib/string.h"
#include "vmx/cr.h"
#include "vmx/vmx.h"
#include "vmx/vmx_errors.h"

void vmx_exit_point(void);

/* VMWRITEs of the set-up, with the first failure kept for the report. */
struct vmcs_writer {
	bool failed;
	uint32_t field;
	uint32_t error;
};

static void vmw(struct vmcs_writer *w, enum vmcs_field field, uint64_t value)
{
	if (!vmcs_write(field, value) && !w->failed) {
		w->failed = true;
		w->field = field;
		w->error = (uint32_t)vmcs_read(VMCS_INSTRUCTION_ERROR);
	}
}

struct descriptor_table_register {
	uint16_t limit;
	uint64_t base;
} __attribute__((packed));

#define READ_SELECTOR(reg)                                                \
	({                                                                \
		uint16_t sel_;                                            \
		__asm__ volatile("mov %%" #reg ", %0" : "=r"(sel_));      \
		sel_;                                                     \
	})

/* The base of the TSS whose selector is tr, from its 16-byte descriptor. */
static uint64_t tss_base(uint64_t gdt, uint16_t tr)
{
	const uint64_t *d = (const uint64_t *)(uintptr_t)(gdt + (tr & ~7u));

	return ((d[0] >> 16) & 0xffffff) | (((d[0] >> 56) & 0xff) << 24) | (d[1] << 32);
}

/* What the CPU loads on every VM exit: sprig's own state as it is now. */
static void setup_host_state(struct vmcs_writer *w, struct vmx_vcpu *a)
{
	struct descriptor_table_register gdtr, idtr;
	uint16_t tr;

	__asm__ volatile("sgdt %0" : "=m"(gdtr));
	__asm__ volatile("sidt %0" : "=m"(idtr));
	__asm__ volatile("str %0" : "=r"(tr));

	a->host_cr0 = read_cr0();
	a->host_cr3 = read_cr3();
	a->host_cr4 = read_cr4();
	vmw(w, VMCS_HOST_CR0, a->host_cr0);
	vmw(w, VMCS_HOST_CR3, a->host_cr3);
	vmw(w, VMCS_HOST_CR4, a->host_cr4);
	vmw(w, VMCS_HOST_CS_SEL, READ_SELECTOR(cs));
	vmw(w, VMCS_HOST_SS_SEL, READ_SELECTOR(ss));
	vmw(w, VMCS_HOST_DS_SEL, READ_SELECTOR(ds));
	vmw(w, VMCS_HOST_ES_SEL, READ_SELECTOR(es));
	vmw(w, VMCS_HOST_FS_SEL, READ_SELECTOR(fs));
	vmw(w, VMCS_HOST_GS_SEL, READ_SELECTOR(gs));
	vmw(w, VMCS_HOST_TR_SEL, tr);
	vmw(w, VMCS_HOST_FS_BASE, rdmsr(MSR_FS_BASE));
	vmw(w, VMCS_HOST_GS_BASE, rdmsr(MSR_GS_BASE));
	vmw(w, VMCS_HOST_TR_BASE, tss_base(gdtr.base, tr));
	vmw(w, VMCS_HOST_GDTR_BASE, gdtr.base);
	vmw(w, VMCS_HOST_IDTR_BASE, idtr.base);
	vmw(w, VMCS_HOST_SYSENTER_CS, rdmsr(MSR_SYSENTER_CS));
	vmw(w, VMCS_HOST_SYSENTER_ESP, rdmsr(MSR_SYSENTER_ESP));
	vmw(w, VMCS_HOST_SYSENTER_EIP, rdmsr(MSR_SYSENTER_EIP));
	vmw(w, VMCS_HOST_EFER, rdmsr(MSR_EFER));
	vmw(w, VMCS_HOST_RIP, (uint64_t)vmx_exit_point); /* HOST_RSP: vmx_enter */
}

static void guest_segment(struct vmcs_writer *w, enum vmcs_seg seg, uint16_t sel, uint32_t limit,
			  uint32_t access_rights)
{
	vmw(w, VMCS_GUEST_ES_SEL + 2 * seg, sel);
	vmw(w, VMCS_GUEST_ES_BASE + 2 * seg, 0);
	vmw(w, VMCS_GUEST_ES_LIMIT + 2 * seg, limit);
	vmw(w, VMCS_GUEST_ES_AR + 2 * seg, access_rights);
}

/* Multiboot's machine state: 32-bit protected mode, paging off, flat 4 GiB
 * segments. RSP, RIP and RFLAGS come from struct vcpu_regs at each entry. */
static void setup_guest_state(struct vmcs_writer *w)
{
	uint64_t cr0 = CR0_PE | CR0_ET, cr4 = 0;

	vmw(w, VMCS_GUEST_CR0, cr0 | (vmx_caps.cr0_fixed0 & vmx_caps.cr0_host_owned));
	vmw(w, VMCS_CR0_READ_SHADOW, cr0);
	vmw(w, VMCS_GUEST_CR3, 0);
	vmw(w, VMCS_GUEST_CR4, cr4 | vmx_caps.cr4_fixed0);
	vmw(w, VMCS_CR4_READ_SHADOW, cr4);
	guest_segment(w, VMCS_SEG_CS, 0x08, 0xffffffff, 0xc09b);
	guest_segment(w, VMCS_SEG_SS, 0x10, 0xffffffff, 0xc093);
	guest_segment(w, VMCS_SEG_DS, 0x10, 0xffffffff, 0xc093);
	guest_segment(w, VMCS_SEG_ES, 0x10, 0xffffffff, 0xc093);
	guest_segment(w, VMCS_SEG_FS, 0x10, 0xffffffff, 0xc093);
	guest_segment(w, VMCS_SEG_GS, 0x10, 0xffffffff, 0xc093);
	guest_segment(w, VMCS_SEG_LDTR, 0, 0, VMX_AR_UNUSABLE);
	/* VM entry wants a busy TSS in TR even if the guest never uses one. */
	guest_segment(w, VMCS_SEG_TR, 0, 0xffff, 0x8b);
	vmw(w, VMCS_GUEST_GDTR_BASE, 0);
	vmw(w, VMCS_GUEST_GDTR_LIMIT, 0xffff);
	vmw(w, VMCS_GUEST_IDTR_BASE, 0);
	vmw(w, VMCS_GUEST_IDTR_LIMIT, 0xffff);
	vmw(w, VMCS_GUEST_DR7, 0x400);
	vmw(w, VMCS_GUEST_DEBUGCTL, 0);
	vmw(w, VMCS_GUEST_EFER, 0);
	vmw(w, VMCS_GUEST_SYSENTER_CS, 0);
	vmw(w, VMCS_GUEST_SYSENTER_ESP, 0);
	vmw(w, VMCS_GUEST_SYSENTER_EIP, 0);
	vmw(w, VMCS_GUEST_INTERRUPTIBILITY, 0);
	vmw(w, VMCS_GUEST_ACTIVITY_STATE, 0);
	vmw(w, VMCS_GUEST_PENDING_DBG, 0);
	vmw(w, VMCS_LINK_POINTER, ~0ull);
}

static void setup_controls(struct vmcs_writer *w, struct vcpu *v, struct vmx_vcpu *a,
			   paddr_t msr_bitmap)
{
	vmw(w, VMCS_PIN_CONTROLS, vmx_caps.pin);
	vmw(w, VMCS_PROC_CONTROLS, vmx_caps.proc);
	vmw(w, VMCS_PROC2_CONTROLS,
	    a->tlb.vpid ? vmx_caps.proc2 : vmx_caps.proc2 & ~PROC2_ENABLE_VPID);
	vmw(w, VMCS_EXIT_CONTROLS, vmx_caps.exit);
	vmw(w, VMCS_ENTRY_CONTROLS, vmx_caps.entry);
	/* A machine check in the guest exits, for the host to report; a #UD
	 * for VMMCALL, a hypercall as KVM emulates it on Intel (run.c). */
	vmw(w, VMCS_EXCEPTION_BITMAP, 1u << VEC_MACHINE_CHECK | 1u << X86_VEC_UD);
	vmw(w, VMCS_CR3_TARGET_COUNT, 0);
	vmw(w, VMCS_CR0_GUEST_HOST_MASK, vmx_caps.cr0_host_owned);
	/* CR4 bits the guest's CPUID does not offer are host-owned too, so that
	 * setting one exits and raises #GP (KVM's kvm_is_valid_cr4): the CPU
	 * would take any bit it implements. */
	vmw(w, VMCS_CR4_GUEST_HOST_MASK, vmx_caps.cr4_host_owned | ~vcpu_cr4_allowed(v));
	vmw(w, VMCS_MSR_BITMAP, msr_bitmap);
	vmw(w, VMCS_ENTRY_MSR_LOAD_ADDR, va_to_pa(a->msrs));
	vmw(w, VMCS_ENTRY_MSR_LOAD_COUNT, VMX_SWITCHED_MSRS);
	vmw(w, VMCS_EXIT_MSR_STORE_ADDR, va_to_pa(a->msrs));
	vmw(w, VMCS_EXIT_MSR_STORE_COUNT, VMX_SWITCHED_MSRS);
	vmw(w, VMCS_EXIT_MSR_LOAD_COUNT, 0);
	vmw(w, VMCS_ENTRY_INTR_INFO, 0);
	vmw(w, VMCS_TSC_OFFSET, (uint64_t)v->tsc_offset);
	a->eptp = vcpu_tdp_root(v);
	vmw(w, VMCS_EPT_POINTER, a->eptp);
	if (a->tlb.vpid)
		vmw(w, VMCS_VPID, a->tlb.vpid);
}

bool vmx_vmcs_host_state(struct vmx_vcpu *a)
{
	struct vmcs_writer w = { 0 };

	setup_host_state(&w, a);
	return !w.failed;
}

/* INIT (SDM vol. 3A, table 9-1) with unrestricted guest: real mode at
 * F000:FFF0, CS base FFFF0000, 64 KiB segments with the access rights VM
 * entry takes for them (SDM vol. 3C, 27.3.1.2: CS accessed code 0x9B with
 * DPL 0 as SS's, SS and the data segments accessed read/write data 0x93, an
 * LDT 0x82, a busy TSS 0x8B in TR), CR0 CD NW ET behind the fixed bits,
 * EFER 0 and no IA-32e mode; nothing pending, nothing blocking. */
void vmx_vmcs_init_state(void)
{
	struct vmcs_writer w = { 0 };
	uint64_t cr0 = CR0_CD | CR0_NW | CR0_ET;

	vmw(&w, VMCS_GUEST_CR0, cr0 | (vmx_caps.cr0_fixed0 & vmx_caps.cr0_host_owned));
	vmw(&w, VMCS_CR0_READ_SHADOW, cr0);
	vmw(&w, VMCS_GUEST_CR3, 0);
	vmw(&w, VMCS_GUEST_CR4, vmx_caps.cr4_fixed0);
	vmw(&w, VMCS_CR4_READ_SHADOW, 0);
	guest_segment(&w, VMCS_SEG_CS, 0xf000, 0xffff, 0x9b);
	vmw(&w, VMCS_GUEST_ES_BASE + 2 * VMCS_SEG_CS, 0xffff0000);
	guest_segment(&w, VMCS_SEG_SS, 0, 0xffff, 0x93);
	guest_segment(&w, VMCS_SEG_DS, 0, 0xffff, 0x93);
	guest_segment(&w, VMCS_SEG_ES, 0, 0xffff, 0x93);
	guest_segment(&w, VMCS_SEG_FS, 0, 0xffff, 0x93);
	guest_segment(&w, VMCS_SEG_GS, 0, 0xffff, 0x93);
	guest_segment(&w, VMCS_SEG_LDTR, 0, 0xffff, 0x82);
	guest_segment(&w, VMCS_SEG_TR, 0, 0xffff, 0x8b);
	vmw(&w, VMCS_GUEST_GDTR_BASE, 0);
	vmw(&w, VMCS_GUEST_GDTR_LIMIT, 0xffff);
	vmw(&w, VMCS_GUEST_IDTR_BASE, 0);
	vmw(&w, VMCS_GUEST_IDTR_LIMIT, 0xffff);
	vmw(&w, VMCS_GUEST_DR7, 0x400);
	vmw(&w, VMCS_GUEST_DEBUGCTL, 0);
	vmw(&w, VMCS_GUEST_EFER, 0);
	vmw(&w, VMCS_GUEST_INTERRUPTIBILITY, 0);
	vmw(&w, VMCS_GUEST_ACTIVITY_STATE, 0);
	vmw(&w, VMCS_GUEST_PENDING_DBG, 0);
	vmw(&w, VMCS_ENTRY_INTR_INFO, 0);
	vmx_set_ia32e_mode(false);
	if (w.failed)
		kprintf("vmx: VMWRITE to field 0x%x failed at INIT: %s\n", w.field,
			vmx_instruction_error_name(w.error));
}

void vmx_vmcs_boot_selectors(uint32_t gdt_base, uint16_t gdt_limit, uint16_t cs, uint16_t ds)
{
	vmcs_write(VMCS_GUEST_GDTR_BASE, gdt_base);
	vmcs_write(VMCS_GUEST_GDTR_LIMIT, gdt_limit);
	vmcs_write(VMCS_GUEST_ES_SEL + 2 * VMCS_SEG_CS, cs);
	vmcs_write(VMCS_GUEST_ES_SEL + 2 * VMCS_SEG_SS, ds);
	vmcs_write(VMCS_GUEST_ES_SEL + 2 * VMCS_SEG_DS, ds);
	vmcs_write(VMCS_GUEST_ES_SEL + 2 * VMCS_SEG_ES, ds);
	vmcs_write(VMCS_GUEST_ES_SEL + 2 * VMCS_SEG_FS, ds);
	vmcs_write(VMCS_GUEST_ES_SEL + 2 * VMCS_SEG_GS, ds);
}

void vmx_vmcs_sipi(uint8_t vector)
{
	vmcs_write(VMCS_GUEST_ES_SEL + 2 * VMCS_SEG_CS, (uint64_t)vector << 8);
	vmcs_write(VMCS_GUEST_ES_BASE + 2 * VMCS_SEG_CS, (uint64_t)vector << 12);
}

bool vmx_vmcs_setup(struct vcpu *v, struct vmx_vcpu *a, paddr_t msr_bitmap)
{
	struct vmcs_writer w = { 0 };

	setup_controls(&w, v, a, msr_bitmap);
	setup_host_state(&w, a);
	setup_guest_state(&w);
	if (w.failed) {
		kprintf("vmx: VMWRITE to field 0x%x failed: %s\n", w.field,
			vmx_instruction_error_name(w.error));
		return false;
	}
	return true;
}

/* The guest state that `vm run` prints when it stops a guest. */
void vmx_dump(struct vcpu *v)
{
	struct vmx_vcpu *a = v->arch;
	uint32_t basic = a->exit_reason & EXIT_REASON_BASIC_MASK;

	if (!vmcs_make_current(a)) {
		kprintf("  (the VMCS cannot be loaded on this CPU)\n");
		return;
	}
	kprintf("  CR0=%llx (reads %llx) CR3=%llx CR4=%llx (reads %llx) EFER=%llx\n",
		(unsigned long long)vmcs_read(VMCS_GUEST_CR0), (unsigned long long)vmx_guest_cr0(v),
		(unsigned long long)vmcs_read(VMCS_GUEST_CR3),
		(unsigned long long)vmcs_read(VMCS_GUEST_CR4), (unsigned long long)vmx_guest_cr4(v),
		(unsigned long long)vmcs_read(VMCS_GUEST_EFER));
	kprintf("  CS=%04llx/%llx base %llx SS=%04llx base %llx DS=%04llx base %llx\n",
		(unsigned long long)vmcs_read(VMCS_GUEST_ES_SEL + 2 * VMCS_SEG_CS),
		(unsigned long long)vmcs_read(VMCS_GUEST_ES_AR + 2 * VMCS_SEG_CS),
		(unsigned long long)vmcs_read(VMCS_GUEST_ES_BASE + 2 * VMCS_SEG_CS),
		(unsigned long long)vmcs_read(VMCS_GUEST_ES_SEL + 2 * VMCS_SEG_SS),
		(unsigned long long)vmcs_read(VMCS_GUEST_ES_BASE + 2 * VMCS_SEG_SS),
		(unsigned long long)vmcs_read(VMCS_GUEST_ES_SEL + 2 * VMCS_SEG_DS),
		(unsigned long long)vmcs_read(VMCS_GUEST_ES_BASE + 2 * VMCS_SEG_DS));
	kprintf("  RIP=%llx RSP=%llx RFLAGS=%llx interruptibility %llx\n",
		(unsigned long long)vmcs_read(VMCS_GUEST_RIP),
		(unsigned long long)vmcs_read(VMCS_GUEST_RSP),
		(unsigned long long)vmcs_read(VMCS_GUEST_RFLAGS),
		(unsigned long long)vmcs_read(VMCS_GUEST_INTERRUPTIBILITY));
	if (a->entry_error)
		kprintf("  %s refused: VM-instruction error %u (%s)\n",
			a->launched ? "VMRESUME" : "VMLAUNCH", a->entry_error,
			vmx_instruction_error_name(a->entry_error));
	else
		kprintf("  exit reason %u (%s) qualification 0x%llx\n", basic,
			vmx_exit_reason_name(basic), (unsigned long long)a->exit_qualification);
	kprintf("  VPID %u EPTP %llx\n", a->tlb.vpid, (unsigned long long)a->eptp);
}

/* Where each VMCS guest-state field of the saved state lives. The read
 * shadows are what the guest sees of the host-owned CR0/CR4 bits; the PDPTEs
 * matter for PAE paging outside long mode; interruptibility and activity
 * state say whether an STI shadow or a halt was pending at the exit. */
#define SAVED(field, member) { field, offsetof(struct vmx_saved_state, member) }
#define SAVED_SEG(seg) SAVED(VMCS_GUEST_ES_SEL + 2 * seg, selector[seg]), \
	SAVED(VMCS_GUEST_ES_LIMIT + 2 * seg, limit[seg]), \
	SAVED(VMCS_GUEST_ES_AR + 2 * seg, access[seg]), \
	SAVED(VMCS_GUEST_ES_BASE + 2 * seg, base[seg])
static const struct {
	uint16_t field;
	uint16_t offset;
} saved_fields[] = {
	SAVED_SEG(VMX_ES), SAVED_SEG(VMX_CS), SAVED_SEG(VMX_SS), SAVED_SEG(VMX_DS),
	SAVED_SEG(VMX_FS), SAVED_SEG(VMX_GS), SAVED_SEG(VMX_LDTR), SAVED_SEG(VMX_TR),
	SAVED(VMCS_GUEST_GDTR_LIMIT, gdtr_limit), SAVED(VMCS_GUEST_GDTR_BASE, gdtr_base),
	SAVED(VMCS_GUEST_IDTR_LIMIT, idtr_limit), SAVED(VMCS_GUEST_IDTR_BASE, idtr_base),
	SAVED(VMCS_GUEST_CR0, cr0), SAVED(VMCS_GUEST_CR3, cr3), SAVED(VMCS_GUEST_CR4, cr4),
	SAVED(VMCS_CR0_READ_SHADOW, cr0_shadow), SAVED(VMCS_CR4_READ_SHADOW, cr4_shadow),
	SAVED(VMCS_GUEST_DR7, dr7), SAVED(VMCS_GUEST_RSP, rsp), SAVED(VMCS_GUEST_RIP, rip),
	SAVED(VMCS_GUEST_RFLAGS, rflags), SAVED(VMCS_GUEST_PENDING_DBG, pending_dbg),
	SAVED(VMCS_GUEST_SYSENTER_CS, sysenter_cs), SAVED(VMCS_GUEST_SYSENTER_ESP, sysenter_esp),
	SAVED(VMCS_GUEST_SYSENTER_EIP, sysenter_eip), SAVED(VMCS_GUEST_DEBUGCTL, debugctl),
	SAVED(VMCS_GUEST_EFER, efer), SAVED(VMCS_GUEST_PDPTE0, pdpte[0]),
	SAVED(VMCS_GUEST_PDPTE0 + 2, pdpte[1]), SAVED(VMCS_GUEST_PDPTE0 + 4, pdpte[2]),
	SAVED(VMCS_GUEST_PDPTE0 + 6, pdpte[3]),
	SAVED(VMCS_GUEST_INTERRUPTIBILITY, interruptibility),
	SAVED(VMCS_GUEST_ACTIVITY_STATE, activity),
	SAVED(VMCS_ENTRY_INTR_INFO, entry_intr_info),
	SAVED(VMCS_ENTRY_EXCEPTION_ERROR_CODE, entry_error_code),
	SAVED(VMCS_ENTRY_INSTRUCTION_LEN, entry_insn_len),
};
#define SAVED_FIELDS (sizeof(saved_fields) / sizeof(saved_fields[0]))
_Static_assert(sizeof(struct vmx_saved_state) <= VCPU_ARCH_STATE_MAX, "VMX saved state");

static uint64_t *saved_field(struct vmx_saved_state *st, unsigned i)
{
	return (uint64_t *)((char *)st + saved_fields[i].offset);
}

size_t vmx_state_save(struct vcpu *v, void *buf)
{
	struct vmx_vcpu *a = v->arch;
	struct vmx_saved_state st;

	if (!vmcs_make_current(a))
		return 0;
	for (unsigned i = 0; i < SAVED_FIELDS; i++)
		*saved_field(&st, i) = vmcs_read(saved_fields[i].field);
	for (unsigned i = 0; i < VMX_SWITCHED_MSRS; i++)
		st.switched_msr[i] = a->msrs[i].value;
	st.cr8 = vcpu_cr8(v);
	st.pat = a->pat;
	memcpy(buf, &st, sizeof(st));
	return sizeof(st);
}

bool vmx_state_check(const void *buf, size_t len, const struct vcpu_regs *regs, char *err,
			    size_t errlen)
{
	const struct vmx_state_limits lim = {
		.phys_bits = cpuinfo.phys_bits,
		.cr0_fixed0 = vmx_caps.cr0_fixed0,
		.cr0_fixed1 = vmx_caps.cr0_fixed1,
		.cr4_fixed0 = vmx_caps.cr4_fixed0,
		.cr4_fixed1 = vmx_caps.cr4_fixed1,
		.cr4_allowed = cpuinfo.cr4_allowed,
		.efer_allowed = efer_guest_bits(cpuinfo.nx),
		.misc = vmx_caps.misc,
		.va_bits = cpuinfo.va_bits,
	};
	struct vmx_saved_state st;

	if (len != sizeof(st)) {
		ksnprintf(err, errlen, "VMX state of %zu bytes, not %zu", len, sizeof(st));
		return false;
	}
	memcpy(&st, buf, sizeof(st));
	return vmx_saved_state_check(&st, regs, &lim, err, errlen);
}

bool vmx_state_load(struct vcpu *v, const void *buf, size_t len)
{
	struct vmx_vcpu *a = v->arch;
	struct vmcs_writer w = { 0 };
	struct vmx_saved_state st;

	if (len != sizeof(st) || !vmcs_make_current(a))
		return false;
	memcpy(&st, buf, sizeof(st));
	for (unsigned i = 0; i < SAVED_FIELDS; i++)
		vmw(&w, saved_fields[i].field, *saved_field(&st, i));
	if (w.failed) {
		kprintf("vmx: VMWRITE to field 0x%x failed: %s\n", w.field,
			vmx_instruction_error_name(w.error));
		return false;
	}
	for (unsigned i = 0; i < VMX_SWITCHED_MSRS; i++)
		a->msrs[i].value = st.switched_msr[i];
	vcpu_set_cr8(v, st.cr8);
	a->pat = st.pat;
	vmx_set_ia32e_mode(vmcs_read(VMCS_GUEST_EFER) & EFER_LMA);
	/* The saved RIP is where the guest stopped: its interruptibility holds. */
	a->exit_rip = vmcs_read(VMCS_GUEST_RIP);
	return true;
}
