/* Checks of a saved VMX guest state (saved_state.h), after the SDM's list:
 * control registers and MSRs, RIP and RFLAGS (virtual-8086 mode, whose
 * segment rules sprig never needs, is refused there), segments and
 * descriptor tables, then the non-register state. */
#include "vmx/saved_state.h"
#include "arch/x86/cpu.h"
#include "arch/x86/regs.h"
#include "lib/print.h"
#include "vmx/vmcs.h"

#define AR_TYPE(ar) ((ar) & 0xf)
#define AR_S (1u << 4)
#define AR_DPL(ar) (((ar) >> 5) & 3)
#define AR_P (1u << 7)
#define AR_L (1u << 13)
#define AR_D (1u << 14)
#define AR_G (1u << 15)
#define AR_UNUSABLE (1u << 16)
#define AR_RESERVED 0xfffe0f00u /* bits 31:17 and 11:8 */
#define TYPE_ACCESSED 1u
#define TYPE_READABLE 2u
#define TYPE_CODE 8u
#define SEL_TI (1u << 2)

#define DEBUGCTL_ALLOWED 0xffc3ull /* LBR, BTF, bits 15:6 */
#define PENDING_DBG_RESERVED (~0x1500full) /* B3-B0, enabled BP, BS, RTM */
#define DEBUGCTL_BTF (1ull << 1)
/* Interruptibility beside vmcs.h's BLOCKING_BY_STI, _MOV_SS and _NMI. */
#define BLOCKING_BY_SMI (1ull << 2)
#define BLOCKING_RESERVED (~0xfull) /* and bit 4, enclave interruption, unused */
#define ENTRY_INFO_RESERVED 0xffffffff7ffff000ull /* bits 63:32 and 30:12 */
#define ACTIVITY_ACTIVE 0
#define ACTIVITY_HLT 1
#define ACTIVITY_SHUTDOWN 2
#define ACTIVITY_WAIT_SIPI 3
#define MISC_ACTIVITY_SHIFT 6 /* bits 8:6: HLT, shutdown, wait-for-SIPI supported */
#define PDPTE_PRESENT 1ull
#define PDPTE_RESERVED 0x1e6ull /* bits 2:1 and 8:5 */

static const char *const seg_names[VMX_SEGS] = { "ES", "CS", "SS", "DS", "FS", "GS", "LDTR", "TR" };

struct check {
	char *err;
	size_t errlen;
};

static bool refuse(struct check *c, const char *what, uint64_t val)
{
	ksnprintf(c->err, c->errlen, "VMX state: %s (0x%llx)", what, (unsigned long long)val);
	return false;
}

static bool refuse_seg(struct check *c, unsigned seg, const char *what, uint64_t val)
{
	ksnprintf(c->err, c->errlen, "VMX state: %s %s (0x%llx)", seg_names[seg], what,
		  (unsigned long long)val);
	return false;
}

/* Limit and granularity agree: a limit with any of bits 11:0 clear needs G
 * clear, one with any of bits 31:20 set needs G set. */
static bool limit_fits(uint64_t limit, uint64_t ar)
{
	if ((limit & 0xfff) != 0xfff && (ar & AR_G))
		return false;
	if ((limit & 0xfff00000) && !(ar & AR_G))
		return false;
	return limit <= 0xffffffff;
}

static bool check_control(const struct vmx_saved_state *s, const struct vmx_state_limits *lim,
			  bool ia32e, struct check *c)
{
	/* Unrestricted guest exempts PE and PG from CR0_FIXED0. */
	uint64_t cr0_must = lim->cr0_fixed0 & ~(CR0_PE | CR0_PG);

	if ((s->cr0 & cr0_must) != cr0_must || (s->cr0 & ~lim->cr0_fixed1))
		return refuse(c, "CR0 against the VMX fixed bits", s->cr0);
	if ((s->cr0 & CR0_PG) && !(s->cr0 & CR0_PE))
		return refuse(c, "CR0.PG set without CR0.PE", s->cr0);
	if ((s->cr4 & lim->cr4_fixed0) != lim->cr4_fixed0 || (s->cr4 & ~lim->cr4_fixed1) ||
	    (s->cr4 & ~(lim->cr4_allowed | lim->cr4_fixed0)))
		return refuse(c, "CR4 against the VMX fixed bits", s->cr4);
	if (ia32e && (!(s->cr0 & CR0_PG) || !(s->cr4 & CR4_PAE)))
		return refuse(c, "IA-32e mode without paging and CR4.PAE", s->cr4);
	if (!ia32e && (s->cr4 & CR4_PCIDE))
		return refuse(c, "CR4.PCIDE outside IA-32e mode", s->cr4);
	if (lim->phys_bits < 64 && s->cr3 >> lim->phys_bits)
		return refuse(c, "CR3 bits beyond the physical address width", s->cr3);
	if (s->debugctl & ~DEBUGCTL_ALLOWED)
		return refuse(c, "reserved IA32_DEBUGCTL bits", s->debugctl);
	if (s->dr7 >> 32)
		return refuse(c, "DR7 bits 63:32 set", s->dr7);
	if (!x86_canonical(s->sysenter_esp, lim->va_bits) || !x86_canonical(s->sysenter_eip, lim->va_bits))
		return refuse(c, "non-canonical SYSENTER_ESP or SYSENTER_EIP",
			      x86_canonical(s->sysenter_esp, lim->va_bits) ? s->sysenter_eip : s->sysenter_esp);
	if (s->sysenter_cs >> 32)
		return refuse(c, "SYSENTER_CS bits 63:32 set", s->sysenter_cs);
	if (!x86_pat_valid(s->pat))
		return refuse(c, "IA32_PAT holds a reserved memory type", s->pat);
	if (s->efer & ~lim->efer_allowed)
		return refuse(c, "EFER bits a guest may not set", s->efer);
	if ((s->cr0 & CR0_PG) && !!(s->efer & EFER_LME) != ia32e)
		return refuse(c, "EFER.LME differs from EFER.LMA with paging on", s->efer);
	for (unsigned i = 0; i < VMX_SWITCHED_MSRS; i++)
		if (i != VMX_STAR && i != VMX_SFMASK && !x86_canonical(s->switched_msr[i], lim->va_bits))
			return refuse(c, "a non-canonical KERNEL_GS_BASE, LSTAR or CSTAR",
				      s->switched_msr[i]);
	if (s->cr8 > 15)
		return refuse(c, "CR8 above 15", s->cr8);
	return true;
}

/* The data segments DS, ES, FS and GS, and SS, when usable. */
static bool check_data_segment(const struct vmx_saved_state *s, unsigned seg, struct check *c)
{
	uint64_t ar = s->access[seg];
	unsigned type = AR_TYPE(ar);

	if (ar & AR_UNUSABLE)
		return true;
	if (seg == VMX_SS) {
		if (type != 3 && type != 7)
			return refuse_seg(c, seg, "type is not read/write data", ar);
		if (!(s->cr0 & CR0_PE) && AR_DPL(ar) != 0)
			return refuse_seg(c, seg, "DPL is not 0 in real mode", ar);
	} else {
		if (!(type & TYPE_ACCESSED))
			return refuse_seg(c, seg, "type is not accessed", ar);
		if ((type & TYPE_CODE) && !(type & TYPE_READABLE))
			return refuse_seg(c, seg, "is an execute-only code segment", ar);
	}
	if (!(ar & AR_S) || !(ar & AR_P))
		return refuse_seg(c, seg, "is a system segment or not present", ar);
	return true;
}

static bool check_segments(const struct vmx_saved_state *s, const struct vmx_state_limits *lim,
			   bool ia32e, struct check *c)
{
	uint64_t cs = s->access[VMX_CS], tr = s->access[VMX_TR], ldtr = s->access[VMX_LDTR];

	for (unsigned seg = 0; seg < VMX_SEGS; seg++) {
		uint64_t ar = s->access[seg];

		if (s->selector[seg] >> 16)
			return refuse_seg(c, seg, "selector above 0xffff", s->selector[seg]);
		if (ar & AR_UNUSABLE && seg != VMX_CS && seg != VMX_TR)
			continue;
		if (ar & AR_RESERVED)
			return refuse_seg(c, seg, "reserved access-rights bits", ar);
		if (!limit_fits(s->limit[seg], ar))
			return refuse_seg(c, seg, "limit and granularity disagree", s->limit[seg]);
	}
	/* Bases: FS, GS, LDTR and TR canonical; the others 32 bits. */
	for (unsigned seg = 0; seg < VMX_SEGS; seg++) {
		bool wide = seg == VMX_FS || seg == VMX_GS || seg == VMX_LDTR || seg == VMX_TR;
		if (wide ? !x86_canonical(s->base[seg], lim->va_bits) : s->base[seg] >> 32)
			return refuse_seg(c, seg, "base out of range", s->base[seg]);
	}
	if (s->selector[VMX_TR] & SEL_TI)
		return refuse_seg(c, VMX_TR, "selector points into the LDT", s->selector[VMX_TR]);
	if (!(ldtr & AR_UNUSABLE) && (s->selector[VMX_LDTR] & SEL_TI))
		return refuse_seg(c, VMX_LDTR, "selector points into the LDT", s->selector[VMX_LDTR]);

	switch (AR_TYPE(cs)) {
	case 3:
		if (AR_DPL(cs) != 0)
			return refuse_seg(c, VMX_CS, "read/write data type with DPL not 0", cs);
		break;
	case 9: case 11:
		if (AR_DPL(cs) != AR_DPL(s->access[VMX_SS]))
			return refuse_seg(c, VMX_CS, "DPL differs from SS.DPL", cs);
		break;
	case 13: case 15:
		if (AR_DPL(cs) > AR_DPL(s->access[VMX_SS]))
			return refuse_seg(c, VMX_CS, "conforming with DPL above SS.DPL", cs);
		break;
	default:
		return refuse_seg(c, VMX_CS, "type is not an accessed code segment", cs);
	}
	if (!(cs & AR_S) || !(cs & AR_P) || (cs & AR_UNUSABLE))
		return refuse_seg(c, VMX_CS, "is a system segment, absent or unusable", cs);
	if (ia32e && (cs & AR_L) && (cs & AR_D))
		return refuse_seg(c, VMX_CS, "L and D both set in IA-32e mode", cs);
	for (unsigned seg = VMX_ES; seg <= VMX_GS; seg++)
		if (seg != VMX_CS && !check_data_segment(s, seg, c))
			return false;

	if ((tr & AR_UNUSABLE) || !(tr & AR_P) || (tr & AR_S) ||
	    !(AR_TYPE(tr) == 11 || (!ia32e && AR_TYPE(tr) == 3)))
		return refuse_seg(c, VMX_TR, "is not a present busy TSS", tr);
	if (!(ldtr & AR_UNUSABLE) && (AR_TYPE(ldtr) != 2 || (ldtr & AR_S) || !(ldtr & AR_P)))
		return refuse_seg(c, VMX_LDTR, "is not a present LDT", ldtr);
	if (!x86_canonical(s->gdtr_base, lim->va_bits) || !x86_canonical(s->idtr_base, lim->va_bits))
		return refuse(c, "non-canonical GDTR or IDTR base",
			      x86_canonical(s->gdtr_base, lim->va_bits) ? s->idtr_base : s->gdtr_base);
	if (s->gdtr_limit > 0xffff || s->idtr_limit > 0xffff)
		return refuse(c, "GDTR or IDTR limit above 0xffff",
			      s->gdtr_limit > 0xffff ? s->gdtr_limit : s->idtr_limit);
	return true;
}

static bool check_rip_rflags(const struct vmx_saved_state *s, const struct vcpu_regs *r,
			     bool ia32e, struct check *c)
{
	bool wide = ia32e && (s->access[VMX_CS] & AR_L);

	if (wide ? !x86_canonical(r->rip, x86_va_bits(s->cr4)) : r->rip >> 32)
		return refuse(c, "RIP outside the code segment's mode", r->rip);
	if ((r->rflags & RFLAGS_RESERVED) || !(r->rflags & RFLAGS_FIXED))
		return refuse(c, "reserved RFLAGS bits", r->rflags);
	if (r->rflags & RFLAGS_VM)
		return refuse(c, "virtual-8086 mode", r->rflags);
	return true;
}

static bool check_non_register(const struct vmx_saved_state *s, const struct vcpu_regs *r,
			       const struct vmx_state_limits *lim, bool ia32e, struct check *c)
{
	uint64_t block = s->interruptibility;

	switch (s->activity) {
	case ACTIVITY_ACTIVE:
		break;
	case ACTIVITY_HLT:
	case ACTIVITY_SHUTDOWN:
	case ACTIVITY_WAIT_SIPI:
		if (!(lim->misc & (1ull << (MISC_ACTIVITY_SHIFT + s->activity - 1))))
			return refuse(c, "an activity state this CPU lacks", s->activity);
		if (s->activity == ACTIVITY_HLT && AR_DPL(s->access[VMX_SS]) != 0)
			return refuse(c, "HLT activity with SS.DPL not 0", s->access[VMX_SS]);
		break;
	default:
		return refuse(c, "unknown activity state", s->activity);
	}
	if (block & BLOCKING_RESERVED)
		return refuse(c, "reserved interruptibility bits", block);
	if ((block & BLOCKING_BY_STI) && (block & BLOCKING_BY_MOV_SS))
		return refuse(c, "blocking by STI and by MOV SS at once", block);
	if ((block & BLOCKING_BY_STI) && !(r->rflags & RFLAGS_IF))
		return refuse(c, "blocking by STI with RFLAGS.IF clear", block);
	if (block & BLOCKING_BY_SMI)
		return refuse(c, "blocking by SMI outside SMM", block);
	if ((block & (BLOCKING_BY_STI | BLOCKING_BY_MOV_SS)) && s->activity != ACTIVITY_ACTIVE)
		return refuse(c, "interrupt blocking in a non-active state", block);
	if (s->pending_dbg & PENDING_DBG_RESERVED)
		return refuse(c, "reserved pending-debug-exception bits", s->pending_dbg);
	if ((block & (BLOCKING_BY_STI | BLOCKING_BY_MOV_SS)) || s->activity == ACTIVITY_HLT) {
		bool single_step = (r->rflags & RFLAGS_TF) && !(s->debugctl & DEBUGCTL_BTF);
		if (!!(s->pending_dbg & PENDING_DBG_BS) != single_step)
			return refuse(c, "pending single step disagrees with RFLAGS.TF",
				      s->pending_dbg);
	}
	/* PAE paging outside IA-32e mode loads the PDPTEs from the VMCS. */
	if ((s->cr0 & CR0_PG) && (s->cr4 & CR4_PAE) && !ia32e)
		for (unsigned i = 0; i < 4; i++)
			if ((s->pdpte[i] & PDPTE_PRESENT) &&
			    ((s->pdpte[i] & PDPTE_RESERVED) ||
			     (lim->phys_bits < 64 && s->pdpte[i] >> lim->phys_bits)))
				return refuse(c, "a present PDPTE with reserved bits", s->pdpte[i]);
	return true;
}

/* The event an entry injects (SDM vol. 3C 27.2.1.3, and 27.3.1.5 for the
 * guest's blocking and activity): what sprig injects or requeues. A VM exit
 * clears only the valid bit, so without it the rest is ignored. */
static bool check_event(const struct vmx_saved_state *s, const struct vcpu_regs *r,
			struct check *c)
{
	uint64_t info = s->entry_intr_info, block = s->interruptibility;
	unsigned type = (info & INTR_INFO_TYPE_MASK) >> INTR_INFO_TYPE_SHIFT;
	unsigned vector = info & INTR_INFO_VECTOR_MASK;
	bool software = type >= INTR_TYPE_SW_INTERRUPT && type <= INTR_TYPE_SW_EXCEPTION;
	bool code_due = type == INTR_TYPE_HW_EXCEPTION && (s->cr0 & CR0_PE) &&
			x86_vector_has_error_code(vector);

	if (!(info & INTR_INFO_VALID))
		return true;
	if (info & ENTRY_INFO_RESERVED)
		return refuse(c, "reserved event-injection bits", info);
	if (type != INTR_TYPE_EXT_INTR && type != INTR_TYPE_NMI && type != INTR_TYPE_HW_EXCEPTION &&
	    !software)
		return refuse(c, "an event type sprig never injects", info);
	if (type == INTR_TYPE_NMI && vector != X86_VEC_NMI)
		return refuse(c, "an NMI not on vector 2", info);
	if (type == INTR_TYPE_HW_EXCEPTION && vector > 31)
		return refuse(c, "a hardware exception above vector 31", info);
	if (!!(info & INTR_INFO_DELIVER_CODE) != code_due)
		return refuse(c, "an error code where the event has none, or none where it has one",
			      info);
	if ((info & INTR_INFO_DELIVER_CODE) && s->entry_error_code >> 16)
		return refuse(c, "error code bits 31:16 set", s->entry_error_code);
	if (software && (s->entry_insn_len < 1 || s->entry_insn_len > 15))
		return refuse(c, "a software event's instruction length outside 1-15",
			      s->entry_insn_len);
	if (type == INTR_TYPE_EXT_INTR &&
	    (!(r->rflags & RFLAGS_IF) || (block & (BLOCKING_BY_STI | BLOCKING_BY_MOV_SS))))
		return refuse(c, "an external interrupt the guest blocks", block);
	if (type == INTR_TYPE_NMI &&
	    (block & (BLOCKING_BY_STI | BLOCKING_BY_MOV_SS | BLOCKING_BY_NMI)))
		return refuse(c, "an NMI the guest blocks", block);
	if (s->activity == ACTIVITY_HLT &&
	    !(type == INTR_TYPE_EXT_INTR || type == INTR_TYPE_NMI ||
	      (type == INTR_TYPE_HW_EXCEPTION && (vector == X86_VEC_DB || vector == X86_VEC_MC))))
		return refuse(c, "an event HLT activity cannot take", info);
	if (s->activity == ACTIVITY_SHUTDOWN &&
	    !(type == INTR_TYPE_NMI || (type == INTR_TYPE_HW_EXCEPTION && vector == X86_VEC_MC)))
		return refuse(c, "an event shutdown activity cannot take", info);
	if (s->activity == ACTIVITY_WAIT_SIPI)
		return refuse(c, "an event in wait-for-SIPI activity", info);
	return true;
}

bool vmx_saved_state_check(const struct vmx_saved_state *s, const struct vcpu_regs *regs,
			   const struct vmx_state_limits *lim, char *err, size_t errlen)
{
	struct check c = { err, errlen };
	bool ia32e = s->efer & EFER_LMA;
	struct vmx_saved_state eff = *s;

	/* The run loop writes these from virt/'s registers. */
	eff.rip = regs->rip;
	eff.rsp = regs->rsp;
	eff.rflags = regs->rflags;
	return check_control(&eff, lim, ia32e, &c) && check_rip_rflags(&eff, regs, ia32e, &c) &&
	       check_segments(&eff, lim, ia32e, &c) &&
	       check_non_register(&eff, regs, lim, ia32e, &c) && check_event(&eff, regs, &c);
}
