/* Checks of a saved VMCB state-save area (saved_state.h). */
#include "svm/saved_state.h"
#include "arch/x86/cpu.h"
#include "arch/x86/regs.h"
#include "lib/print.h"

#define ATTR_L (1u << 9)
#define ATTR_D (1u << 10)

static bool refuse(char *err, size_t errlen, const char *what, uint64_t val)
{
	ksnprintf(err, errlen, "SVM state: %s (0x%llx)", what, (unsigned long long)val);
	return false;
}

#define EVENT_INJECT_RESERVED 0x7ffff000ull /* bits 30:12 */

/* What VMRUN takes in EVENTINJ (APM 15.20): a known type, NMI on vector 2,
 * an exception on one of the 32 but 2, an error code only with an exception.
 * sprig clears EVENTINJ at every exit, so an empty one is all zero. */
static bool events_check(const struct svm_saved_state *st, char *err, size_t errlen)
{
	uint64_t ev = st->event_inject, type = ev & EVENT_INJECT_TYPE_MASK;
	uint64_t vector = ev & EVENT_INJECT_VECTOR_MASK;

	if (st->int_state & ~INT_STATE_SHADOW)
		return refuse(err, errlen, "interrupt state bits beside the shadow", st->int_state);
	if (st->nmi_masked > 1)
		return refuse(err, errlen, "NMI mask neither 0 nor 1", st->nmi_masked);
	if (!(ev & EVENT_INJECT_VALID))
		return !ev || refuse(err, errlen, "EVENTINJ bits without its valid bit", ev);
	if (ev & EVENT_INJECT_RESERVED)
		return refuse(err, errlen, "reserved EVENTINJ bits", ev);
	if (type != EVENT_INJECT_INTR && type != EVENT_INJECT_NMI &&
	    type != EVENT_INJECT_EXCEPTION && type != EVENT_INJECT_SOFT_INT)
		return refuse(err, errlen, "a reserved EVENTINJ type", ev);
	if (type == EVENT_INJECT_NMI && vector != X86_VEC_NMI)
		return refuse(err, errlen, "an NMI not on vector 2", ev);
	if (type == EVENT_INJECT_EXCEPTION && (vector == X86_VEC_NMI || vector > 31))
		return refuse(err, errlen, "an exception on vector 2 or above 31", ev);
	if ((ev & EVENT_INJECT_ERROR_VALID) ? type != EVENT_INJECT_EXCEPTION : ev >> 32)
		return refuse(err, errlen, "an error code on an event that has none", ev);
	return true;
}

bool svm_saved_state_check(const struct svm_saved_state *st, const struct vcpu_regs *regs,
			   const struct svm_state_limits *lim, char *err, size_t errlen)
{
	const struct vmcb_save *s = &st->save;
	uint64_t efer = s->efer & ~(uint64_t)EFER_SVME;
	bool paging = (s->cr0 & CR0_PG) && (s->cr0 & CR0_PE);
	bool long_mode = (efer & EFER_LME) && paging;
	unsigned va_bits = x86_va_bits(s->cr4);

	/* VMRUN's consistency checks. */
	if ((s->cr0 & CR0_NW) && !(s->cr0 & CR0_CD))
		return refuse(err, errlen, "CR0.NW set without CR0.CD", s->cr0);
	if (s->cr0 >> 32)
		return refuse(err, errlen, "CR0 bits 63:32 set", s->cr0);
	if ((s->cr0 & CR0_PG) && !(s->cr0 & CR0_PE))
		return refuse(err, errlen, "CR0.PG set without CR0.PE", s->cr0);
	if (s->cr4 & ~lim->cr4_allowed)
		return refuse(err, errlen, "CR4 bits this CPU lacks", s->cr4);
	if (s->cr3 >> (long_mode ? 52 : 32) || (lim->phys_bits < 64 && s->cr3 >> lim->phys_bits))
		return refuse(err, errlen, "CR3 bits beyond the physical address width", s->cr3);
	if (s->dr6 >> 32)
		return refuse(err, errlen, "DR6 bits 63:32 set", s->dr6);
	if (s->dr7 >> 32)
		return refuse(err, errlen, "DR7 bits 63:32 set", s->dr7);
	if (efer & ~lim->efer_allowed)
		return refuse(err, errlen, "EFER bits a guest may not set", efer);
	if (!!(efer & EFER_LMA) != long_mode)
		return refuse(err, errlen, "EFER.LMA differs from EFER.LME and CR0.PG", efer);
	if (long_mode && !(s->cr4 & CR4_PAE))
		return refuse(err, errlen, "long mode without CR4.PAE", s->cr4);
	if (long_mode && (s->cs.attrib & ATTR_L) && (s->cs.attrib & ATTR_D))
		return refuse(err, errlen, "CS.L and CS.D both set in long mode", s->cs.attrib);
	if (!x86_pat_valid(s->g_pat))
		return refuse(err, errlen, "G_PAT holds a reserved memory type", s->g_pat);
	/* What sprig itself later copies in, and what a guest could never have
	 * written through its MSR policy. */
	if (regs->rflags & RFLAGS_RESERVED || !(regs->rflags & RFLAGS_FIXED))
		return refuse(err, errlen, "reserved RFLAGS bits", regs->rflags);
	if (long_mode && (s->cs.attrib & ATTR_L) ? !x86_canonical(regs->rip, va_bits)
						  : regs->rip >> 32)
		return refuse(err, errlen, "RIP outside the code segment's mode", regs->rip);
	const uint64_t *canon[] = { &s->fs.base, &s->gs.base, &s->tr.base, &s->ldtr.base,
				    &s->gdtr.base, &s->idtr.base, &s->kernel_gs_base, &s->lstar,
				    &s->cstar, &s->sysenter_esp, &s->sysenter_eip };
	for (unsigned i = 0; i < sizeof(canon) / sizeof(canon[0]); i++)
		if (!x86_canonical(*canon[i], lim->va_bits))
			return refuse(err, errlen, "a non-canonical base or MSR address", *canon[i]);
	if (s->gdtr.limit > 0xffff || s->idtr.limit > 0xffff)
		return refuse(err, errlen, "GDTR or IDTR limit above 0xffff",
			      s->gdtr.limit > 0xffff ? s->gdtr.limit : s->idtr.limit);
	if (s->cpl > 3)
		return refuse(err, errlen, "CPL above 3", s->cpl);
	return events_check(st, err, errlen);
}
