/* Control-register emulation for VMX, the one part without an SVM mirror:
 * SVM keeps the guest's CR0/CR3/CR4 in the VMCB and lets it write them, while
 * VMX forces some CR0/CR4 bits (the fixed-bit MSRs), so sprig owns those
 * behind read shadows and emulates the MOV to CR that touches them, the
 * paging-mode switch it implies (EFER.LMA, the IA-32e-mode-guest control, the
 * PDPTEs of PAE paging) and CR8, the local APIC's TPR[7:4] (SDM 10.8.6.1). */
#include "vmx/cr.h"
#include "arch/x86/cpu.h"
#include "arch/x86/regs.h"
#include "lib/print.h"
#include "vmx/vmx.h"

#define CR3_PCID_NOFLUSH (1ull << 63)
#define PDPTE_PRESENT 1ull
#define PDPTE_RESERVED 0x1e6ull /* bits 2:1 and 8:5 */

void vmx_set_ia32e_mode(bool on)
{
	uint64_t ctl = vmcs_read(VMCS_ENTRY_CONTROLS);
	uint64_t want = on ? ctl | ENTRY_IA32E_MODE_GUEST : ctl & ~(uint64_t)ENTRY_IA32E_MODE_GUEST;

	if (want != ctl)
		vmcs_write(VMCS_ENTRY_CONTROLS, want);
}

/* The control registers as the guest sees them: its own bits, and the
 * host-owned ones from the read shadow. */
static uint64_t guest_cr0(void)
{
	return (vmcs_read(VMCS_GUEST_CR0) & ~vmx_caps.cr0_host_owned) |
	       (vmcs_read(VMCS_CR0_READ_SHADOW) & vmx_caps.cr0_host_owned);
}

/* CR4's host-owned bits are the vCPU's mask in the VMCS (vmcs.c): the
 * CPU's fixed bits and those the guest's CPUID does not offer. */
static uint64_t guest_cr4(void)
{
	uint64_t mask = vmcs_read(VMCS_CR4_GUEST_HOST_MASK);

	return (vmcs_read(VMCS_GUEST_CR4) & ~mask) | (vmcs_read(VMCS_CR4_READ_SHADOW) & mask);
}

uint64_t vmx_guest_cr0(struct vcpu *v)
{
	(void)v; /* the vCPU's VMCS is the current one */
	return guest_cr0();
}

uint64_t vmx_guest_cr4(struct vcpu *v)
{
	(void)v; /* the vCPU's VMCS is the current one */
	return guest_cr4();
}

/* Install paging state the guest asked for through an exiting MOV to CR or
 * WRMSR: CR0 and CR4 as the guest sees them (the forced bits are added here),
 * EFER with LMA already derived. PAE paging outside long mode takes its
 * PDPTEs from the VMCS at entry, so they are read here as a MOV to CR would.
 * False, with nothing changed, when the hardware would raise #GP. */
static bool set_paging_state(struct vcpu *v, struct vmx_vcpu *a, uint64_t cr0, uint64_t cr3,
			     uint64_t cr4, uint64_t efer)
{
	uint64_t pdpte[4];

	if ((cr0 & CR0_PG) && (cr4 & CR4_PAE) && !(efer & EFER_LMA)) {
		if (vcpu_read_guest(v, cr3 & 0xffffffe0, pdpte, sizeof(pdpte)))
			return false;
		for (int i = 0; i < 4; i++)
			if ((pdpte[i] & PDPTE_PRESENT) && (pdpte[i] & PDPTE_RESERVED))
				return false;
		for (int i = 0; i < 4; i++)
			vmcs_write(VMCS_GUEST_PDPTE0 + 2 * i, pdpte[i]);
	}
	vmcs_write(VMCS_GUEST_CR0, cr0 | (vmx_caps.cr0_fixed0 & vmx_caps.cr0_host_owned));
	vmcs_write(VMCS_CR0_READ_SHADOW, cr0);
	vmcs_write(VMCS_GUEST_CR3, cr3);
	vmcs_write(VMCS_GUEST_CR4, cr4 | vmx_caps.cr4_fixed0);
	vmcs_write(VMCS_CR4_READ_SHADOW, cr4);
	vmcs_write(VMCS_GUEST_EFER, efer);
	vmx_set_ia32e_mode(efer & EFER_LMA);
	/* The guest's own MOV to CR would have flushed its TLB. */
	vmx_tlb_guest_flush(&a->tlb);
	return true;
}

static bool guest_write_cr0(struct vcpu *v, struct vmx_vcpu *a, uint64_t cr0)
{
	uint64_t old = guest_cr0(), cr4 = guest_cr4(), efer = vmcs_read(VMCS_GUEST_EFER);

	if ((cr0 >> 32) || (cr0 & ~vmx_caps.cr0_fixed1) || ((cr0 & CR0_PG) && !(cr0 & CR0_PE)))
		return false;
	if ((cr0 & CR0_PG) && !(old & CR0_PG) && (efer & EFER_LME)) {
		if (!(cr4 & CR4_PAE))
			return false;
		efer |= EFER_LMA;
	} else if (!(cr0 & CR0_PG)) {
		efer &= ~(uint64_t)EFER_LMA;
	}
	return set_paging_state(v, a, cr0, vmcs_read(VMCS_GUEST_CR3), cr4, efer);
}

static bool guest_write_cr3(struct vcpu *v, struct vmx_vcpu *a, uint64_t cr3)
{
	uint64_t cr4 = guest_cr4();

	if (cr4 & CR4_PCIDE)
		cr3 &= ~CR3_PCID_NOFLUSH;
	return set_paging_state(v, a, guest_cr0(), cr3, cr4, vmcs_read(VMCS_GUEST_EFER));
}

static bool guest_write_cr4(struct vcpu *v, struct vmx_vcpu *a, uint64_t cr4)
{
	uint64_t efer = vmcs_read(VMCS_GUEST_EFER), cr3 = vmcs_read(VMCS_GUEST_CR3);

	/* Only what the guest's CPUID offers (no VMX of its own), as on SVM
	 * (svm/cr.c), and what VMX operation lets the CPU hold. */
	if ((cr4 & ~vmx_caps.cr4_fixed1) ||
	    !vcpu_cr4_write_ok(v, guest_cr4(), cr4, efer, cr3))
		return false;
	return set_paging_state(v, a, guest_cr0(), cr3, cr4, efer);
}

/* MOV to or from a control register that exited: a host-owned CR0/CR4 bit
 * changed, CR8 (the APIC's TPR), or CR3 where the CPU cannot stop it exiting.
 * After the entry window (vmx_finish_exit): PAE paging's PDPTEs are read
 * from guest memory under the MMU lock. */
void vmx_handle_cr_access(struct vcpu *v, struct vmx_vcpu *a, uint64_t qual, struct vexit *e)
{
	unsigned cr = CR_QUAL_CR(qual), type = CR_QUAL_TYPE(qual);
	uint64_t *gpr = vcpu_gpr(&v->regs, CR_QUAL_GPR(qual));
	bool ok;

	e->kind = VEXIT_HANDLED;
	e->insn_len = (unsigned)vmcs_read(VMCS_EXIT_INSTRUCTION_LEN);
	if (type == CR_TYPE_MOV_TO && (cr == 0 || cr == 3 || cr == 4 || cr == 8)) {
		uint64_t val = *gpr;
		if (!(vmcs_read(VMCS_GUEST_EFER) & EFER_LMA))
			val = (uint32_t)val;
		ok = cr == 0 ? guest_write_cr0(v, a, val)
		     : cr == 3 ? guest_write_cr3(v, a, val)
		     : cr == 4 ? guest_write_cr4(v, a, val)
		     : !(val & ~0xfull);
		if (ok && cr == 8)
			vcpu_set_cr8(v, val);
	} else if (type == CR_TYPE_MOV_FROM && (cr == 3 || cr == 8)) {
		*gpr = cr == 3 ? vmcs_read(VMCS_GUEST_CR3) : vcpu_cr8(v);
		ok = true;
	} else {
		e->kind = VEXIT_FAILED;
		ksnprintf(e->text, sizeof(e->text),
			  "unexpected control-register access (qualification 0x%llx)",
			  (unsigned long long)qual);
		return;
	}
	if (ok)
		v->regs.rip += e->insn_len;
	else
		vmx_inject_exception(v, X86_VEC_GP, 0);
}

/* EFER as the MSR policy let it through: LMA as it was, LME unchanged while
 * paging, so the IA-32e-mode-guest control and the PDPTEs still hold. */
void vmx_write_efer(struct vmx_vcpu *a, uint64_t val)
{
	/* Translations cached under the old NXE go. */
	if ((val ^ vmcs_read(VMCS_GUEST_EFER)) & EFER_NXE)
		vmx_tlb_guest_flush(&a->tlb);
	vmcs_write(VMCS_GUEST_EFER, val);
	vmx_set_ia32e_mode(val & EFER_LMA);
}
