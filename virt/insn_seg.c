/* Segment loads of the MMIO emulator (virt/insn.h): MOV to a segment
 * register, LTR and far JMP whose selector (and offset) are in memory. The
 * descriptor is read from the GDT or LDT through the caller, checked as the
 * SDM's pseudo-code of each instruction checks it (vol. 2: MOV, LTR, JMP),
 * its accessed bit (a TSS's busy bit) set in memory, and the register loaded
 * through ops->load_seg. Far jumps through gates or to a TSS (task
 * switches) are not emulated. The table accesses are supervisor ones, but
 * the caller's translation sees them at the guest's CPL. */
#include "virt/insn.h"
#include "arch/x86/msr.h"
#include "arch/x86/regs.h"
#include "virt/backend.h"
#include "virt/insn_internal.h"

/* A descriptor's access byte (bits 47:40). */
#define ACC_TYPE 0x0fu
#define ACC_S 0x10u    /* code or data, not a system descriptor */
#define ACC_P 0x80u
#define TYPE_ACCESSED 0x1u
#define TYPE_WRITABLE 0x2u /* data; for code: readable */
#define TYPE_CONFORMING 0x4u
#define TYPE_CODE 0x8u
#define TYPE_TSS_AVAIL 0x9u /* a 32-bit (or 64-bit) TSS; 0x1 is a 16-bit one */
#define TYPE_TSS_BUSY 0x2u
#define DESC_L (1ull << 53)
#define DESC_DB (1ull << 54)
#define DESC_G (1ull << 55)

struct desc {
	uint64_t lo, hi; /* hi: the upper half of a 16-byte system descriptor */
	uint64_t addr;   /* its linear address */
	uint8_t access;
};

static bool long_mode(const struct guest_mode *m)
{
	return m->efer & EFER_LMA;
}

static unsigned dpl_of(uint8_t access)
{
	return (access >> 5) & 3;
}

/* The descriptor sel names, 16 bytes for a system one in long mode: #GP(sel)
 * past the table's limit or in an unusable LDT. */
static enum insn_emu_status read_desc(const struct emu *e, uint16_t sel, bool wide, struct desc *d)
{
	const struct guest_mode *m = e->m;
	bool ldt = sel & 4;
	uint64_t base = ldt ? m->ldt_base : m->gdt_base;
	uint32_t limit = ldt ? m->ldt_limit : m->gdt_limit;
	uint32_t last = (sel & ~7u) + (wide ? 15u : 7u);

	if ((ldt && !m->ldt_usable) || last > limit)
		return emu_raise(e, X86_VEC_GP, sel & 0xfffcu);
	d->addr = base + (sel & ~7u);
	if (!long_mode(m))
		d->addr &= 0xffffffffull;
	d->hi = 0;
	if (!emu_read(e, d->addr, 8, &d->lo, false) ||
	    (wide && !emu_read(e, d->addr + 8, 8, &d->hi, false)))
		return INSN_EMU_MEM_FAULT;
	d->access = (uint8_t)(d->lo >> 40);
	return INSN_EMU_DONE;
}

static struct guest_segment segment_of(uint16_t sel, const struct desc *d)
{
	uint32_t limit = (uint32_t)(d->lo & 0xffff) | (uint32_t)((d->lo >> 32) & 0xf0000);

	return (struct guest_segment){
		.sel = sel,
		.attrib = (uint16_t)(d->access | ((d->lo >> 52) & 0xf) << 8),
		.limit = d->lo & DESC_G ? limit << 12 | 0xfff : limit,
		.base = ((d->lo >> 16) & 0xffffff) | ((d->lo >> 56) & 0xff) << 24 | (d->hi & 0xffffffff) << 32,
	};
}

/* Load seg from d, marked accessed (a TSS busy) in memory first, as the CPU
 * marks a segment it loads. */
static enum insn_emu_status load(const struct emu *e, enum guest_seg seg, uint16_t sel,
				 struct desc *d, uint8_t bit)
{
	if ((d->access & bit) != bit && !emu_write(e, d->addr + 5, 1, d->access | bit))
		return INSN_EMU_MEM_FAULT;
	d->access |= bit;
	struct guest_segment g = segment_of(sel, d);
	e->ops->load_seg(e->ctx, seg, &g);
	return INSN_EMU_DONE;
}

static enum insn_emu_status mov_to_seg(const struct emu *e, enum guest_seg seg, uint16_t sel)
{
	const struct guest_mode *m = e->m;
	unsigned cpl = m->cpl, rpl = sel & 3;
	uint16_t err = sel & 0xfffc;
	struct desc d;
	enum insn_emu_status st;

	if (!(sel & 0xfffc)) {
		/* A null SS only in 64-bit code below CPL 3, at RPL = CPL. */
		if (seg == SEG_SS && (m->code_bits != 64 || cpl == 3 || rpl != cpl))
			return emu_raise(e, X86_VEC_GP, 0);
		struct guest_segment null = { .sel = sel, .unusable = true,
					      .attrib = (uint16_t)(seg == SEG_SS ? cpl << 5 : 0) };
		e->ops->load_seg(e->ctx, seg, &null);
		return INSN_EMU_DONE;
	}
	if ((st = read_desc(e, sel, false, &d)) != INSN_EMU_DONE)
		return st;
	unsigned type = d.access & ACC_TYPE, dpl = dpl_of(d.access);
	if (seg == SEG_SS) {
		if (rpl != cpl || !(d.access & ACC_S) || (type & (TYPE_CODE | TYPE_WRITABLE)) != TYPE_WRITABLE ||
		    dpl != cpl)
			return emu_raise(e, X86_VEC_GP, err);
		if (!(d.access & ACC_P))
			return emu_raise(e, X86_VEC_SS, err);
	} else {
		if (!(d.access & ACC_S) || (type & (TYPE_CODE | TYPE_WRITABLE)) == TYPE_CODE)
			return emu_raise(e, X86_VEC_GP, err); /* system, or execute-only code */
		if ((!(type & TYPE_CODE) || !(type & TYPE_CONFORMING)) && (rpl > dpl || cpl > dpl))
			return emu_raise(e, X86_VEC_GP, err);
		if (!(d.access & ACC_P))
			return emu_raise(e, X86_VEC_NP, err);
	}
	return load(e, seg, sel, &d, TYPE_ACCESSED);
}

static enum insn_emu_status ltr(const struct emu *e, uint16_t sel)
{
	const struct guest_mode *m = e->m;
	uint16_t err = sel & 0xfffc;
	struct desc d;
	enum insn_emu_status st;

	if (m->cpl)
		return emu_raise(e, X86_VEC_GP, 0);
	if (!(sel & 0xfffc))
		return emu_raise(e, X86_VEC_GP, 0);
	if (sel & 4)
		return emu_raise(e, X86_VEC_GP, err); /* the TSS is in the GDT */
	if ((st = read_desc(e, sel, long_mode(m), &d)) != INSN_EMU_DONE)
		return st;
	unsigned type = d.access & ACC_TYPE;
	/* An available TSS: 16-bit ones only outside long mode, whose 16-byte
	 * descriptors have type 0 in their upper half. */
	if ((d.access & ACC_S) || (type != TYPE_TSS_AVAIL && (long_mode(m) || type != 0x1)) ||
	    ((d.hi >> 40) & 0x1f))
		return emu_raise(e, X86_VEC_GP, err);
	if (!(d.access & ACC_P))
		return emu_raise(e, X86_VEC_NP, err);
	return load(e, SEG_TR, sel, &d, TYPE_TSS_BUSY);
}

/* To a code segment at the same privilege: conforming with DPL <= CPL, or
 * non-conforming with DPL = CPL and RPL <= CPL; CS gets RPL = CPL. */
static enum insn_emu_status jmp_far(const struct emu *e, struct vcpu_regs *r, uint64_t offset,
				    uint16_t sel)
{
	const struct guest_mode *m = e->m;
	unsigned cpl = m->cpl;
	uint16_t err = sel & 0xfffc;
	struct desc d;
	enum insn_emu_status st;

	if (!(sel & 0xfffc))
		return emu_raise(e, X86_VEC_GP, 0);
	if ((st = read_desc(e, sel, false, &d)) != INSN_EMU_DONE)
		return st;
	unsigned type = d.access & ACC_TYPE, dpl = dpl_of(d.access);
	if (!(d.access & ACC_S))
		return INSN_EMU_UNSUPPORTED; /* a call gate, task gate or TSS */
	if (!(type & TYPE_CODE) || (type & TYPE_CONFORMING ? dpl > cpl : (sel & 3) > cpl || dpl != cpl))
		return emu_raise(e, X86_VEC_GP, err);
	if (long_mode(m) && (d.lo & DESC_L) && (d.lo & DESC_DB))
		return emu_raise(e, X86_VEC_GP, err);
	if (!(d.access & ACC_P))
		return emu_raise(e, X86_VEC_NP, err);
	if (long_mode(m) && (d.lo & DESC_L) ? !x86_canonical(offset, x86_va_bits(m->cr4))
					    : offset > segment_of(sel, &d).limit)
		return emu_raise(e, X86_VEC_GP, 0);
	if ((st = load(e, SEG_CS, (uint16_t)((sel & ~3u) | cpl), &d, TYPE_ACCESSED)) != INSN_EMU_DONE)
		return st;
	r->rip = offset;
	return INSN_EMU_DONE;
}

enum insn_emu_status insn_emulate_seg(const struct emu *e, struct vcpu_regs *r)
{
	const struct insn *in = e->in;
	uint64_t addr = insn_operand_linear(in, e->m, r), offset = 0, sel;

	if (!(e->m->cr0 & CR0_PE))
		return INSN_EMU_UNSUPPORTED; /* real mode: no descriptors to check */
	if (in->op == INSN_OP_JMP_FAR && !emu_read(e, addr, in->width, &offset, false))
		return INSN_EMU_MEM_FAULT;
	if (!emu_read(e, in->op == INSN_OP_JMP_FAR ? addr + in->width : addr, 2, &sel, false))
		return INSN_EMU_MEM_FAULT;
	switch (in->op) {
	case INSN_OP_MOV_TO_SEG:
		return mov_to_seg(e, (enum guest_seg)in->reg, (uint16_t)sel);
	case INSN_OP_LTR:
		return ltr(e, (uint16_t)sel);
	case INSN_OP_JMP_FAR:
		return jmp_far(e, r, offset, (uint16_t)sel);
	default:
		return INSN_EMU_UNSUPPORTED;
	}
}
