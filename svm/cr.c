/* MOV to CR4 on SVM. The VMCB would take any CR4 the CPU implements, also
 * bits for features the guest's CPUID does not offer (PKE, LA57, LAM...):
 * the write is intercepted and checked against the guest's CPUID as KVM does
 * (kvm_set_cr4), #GP for what the CPU would refuse of a CPU with that CPUID.
 * Done after the entry window (svm_finish_exit): without decode assists the
 * instruction is fetched through the guest's page tables, under the MMU
 * lock. vmx/cr.c is the VMX counterpart. */
#include "svm/cr.h"
#include "arch/x86/cpuinfo.h"
#include "arch/x86/regs.h"
#include "lib/print.h"
#include "svm/svm_vcpu.h"

#define CR_INFO_MOV (1ull << 63) /* EXITINFO1 with decode assists: MOV CRx, GPR in 3:0 */
#define CR4_PGE (1ull << 7)
/* CR4 bits whose change flushes the guest's TLB (SDM vol. 3A 4.10.4.1). */
#define CR4_FLUSH_BITS (CR4_PGE | CR4_PAE | CR4_PCIDE | CR4_SMEP | CR4_SMAP | CR4_PKE | CR4_LA57)

/* The GPR of a MOV to CR4 (0f 22 /r, legacy prefixes and a REX before it)
 * at the guest's RIP, and its length; -1 if it is something else. */
static int mov_to_cr4_gpr(struct vcpu *v, unsigned *len)
{
	uint8_t b[VCPU_INSN_MAX_LEN];
	unsigned i = 0, rex = 0, code_bits;
	size_t n = vcpu_fetch_at_rip(v, b, sizeof(b), &code_bits);

	while (i < n && (b[i] == 0x66 || b[i] == 0x67 || b[i] == 0xf2 || b[i] == 0xf3 ||
			 b[i] == 0x2e || b[i] == 0x36 || b[i] == 0x3e || b[i] == 0x26 ||
			 b[i] == 0x64 || b[i] == 0x65))
		i++;
	if (code_bits == 64 && i < n && (b[i] & 0xf0) == 0x40)
		rex = b[i++];
	if (i + 3 > n || b[i] != 0x0f || b[i + 1] != 0x22 ||
	    (((b[i + 2] >> 3) & 7) | (rex & 4 ? 8 : 0)) != 4)
		return -1;
	*len = i + 3;
	return (b[i + 2] & 7) | (rex & 1 ? 8 : 0);
}

bool svm_write_cr4_exit(struct vcpu *v, struct vexit *e)
{
	struct vmcb_save *s = &((struct svm_vcpu *)v->arch)->vmcb->save;
	unsigned len = e->insn_len;
	int n;
	uint64_t cr4;

	if ((cpuinfo.svm.features & SVM_FEAT_DECODE_ASSISTS) && (e->info1 & CR_INFO_MOV)) {
		n = (int)(e->info1 & 15);
		if (!len)
			len = 3;
	} else if ((n = mov_to_cr4_gpr(v, &len)) < 0) {
		e->kind = VEXIT_FAILED;
		ksnprintf(e->text, sizeof(e->text), "CR4 write exit at rip 0x%llx, which holds no "
			  "MOV to CR4", (unsigned long long)v->regs.rip);
		return true;
	}
	e->kind = VEXIT_HANDLED;
	cr4 = *vcpu_gpr(&v->regs, (unsigned)n);
	if (!(s->efer & EFER_LMA))
		cr4 = (uint32_t)cr4;
	if (!vcpu_cr4_write_ok(v, s->cr4, cr4, s->efer, s->cr3))
		return false;
	/* The guest's own MOV to CR4 would have flushed its TLB. */
	if ((cr4 ^ s->cr4) & CR4_FLUSH_BITS)
		v->flush_pending = true;
	s->cr4 = cr4;
	v->regs.rip += len;
	return true;
}
