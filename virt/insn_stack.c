/* The stack ops and near branches of the MMIO emulator (virt/insn.h): PUSH,
 * POP, CALL, JMP, RET, LEAVE, ENTER, where the operand or the stack is a
 * device's. The stack is SS:rSP at the stack's width (m->stack_bits); each
 * slot is the operand size (in->width). These ops set RIP themselves. */
#include "virt/insn.h"
#include "arch/x86/regs.h"
#include "virt/backend.h"
#include "virt/insn_internal.h"

static unsigned stack_bytes(const struct guest_mode *m)
{
	return m->stack_bits / 8;
}

/* rSP moved by delta bytes, wrapped to the stack's width. */
static uint64_t sp_at(const struct guest_mode *m, const struct vcpu_regs *r, int64_t delta)
{
	return (r->rsp + (uint64_t)delta) & width_mask(stack_bytes(m));
}

static uint64_t slot_linear(const struct guest_mode *m, uint64_t sp)
{
	return insn_linear(m, SEG_SS, sp, stack_bytes(m));
}

static void sp_set(const struct guest_mode *m, struct vcpu_regs *r, uint64_t sp)
{
	insn_addr_reg_set(stack_bytes(m), &r->rsp, sp);
}

static bool push(const struct emu *e, struct vcpu_regs *r, uint64_t val)
{
	uint64_t sp = sp_at(e->m, r, -(int64_t)e->in->width);

	if (!emu_write(e, slot_linear(e->m, sp), e->in->width, val))
		return false;
	sp_set(e->m, r, sp);
	return true;
}

static bool pop(const struct emu *e, struct vcpu_regs *r, uint64_t *val)
{
	if (!emu_read(e, slot_linear(e->m, sp_at(e->m, r, 0)), e->in->width, val, false))
		return false;
	sp_set(e->m, r, sp_at(e->m, r, e->in->width));
	return true;
}

/* RIP <- target, which must be canonical in 64-bit code (SDM vol. 2: JMP,
 * CALL and RET raise #GP(0), RIP still at the branch). */
static enum insn_emu_status branch(const struct emu *e, struct vcpu_regs *r, uint64_t target)
{
	if (e->m->code_bits == 64 && !x86_canonical(target, x86_va_bits(e->m->cr4)))
		return emu_raise(e, X86_VEC_GP, 0);
	r->rip = target & width_mask(e->in->width);
	return INSN_EMU_DONE;
}

enum insn_emu_status insn_emulate_stack(const struct emu *e, struct vcpu_regs *r)
{
	const struct insn *in = e->in;
	uint64_t v = 0, next = insn_next_rip(in, r), frame;
	enum insn_emu_status st;

	if (in->has_mem && in->op != INSN_OP_POP &&
	    !emu_read(e, insn_operand_linear(in, e->m, r), in->width, &v, false))
		return INSN_EMU_MEM_FAULT;
	switch (in->op) {
	case INSN_OP_PUSH:
		if (!in->has_mem)
			v = in->has_imm ? in->imm : insn_reg_get(r, in->reg); /* PUSH rSP: the old one */
		if (!push(e, r, v))
			return INSN_EMU_MEM_FAULT;
		r->rip = next;
		return INSN_EMU_DONE;
	case INSN_OP_POP:
		if (!pop(e, r, &v))
			return INSN_EMU_MEM_FAULT;
		/* POP to [rSP+...] addresses with rSP already moved (SDM vol. 2, POP). */
		if (in->has_mem && !emu_write(e, insn_operand_linear(in, e->m, r), in->width, v))
			return INSN_EMU_MEM_FAULT;
		if (!in->has_mem) /* after rSP moved: POP rSP keeps the value popped */
			insn_reg_write(r, in->reg, false, in->width, v);
		r->rip = next;
		return INSN_EMU_DONE;
	case INSN_OP_CALL:
		if (!in->has_mem)
			v = next + in->imm;
		if ((st = branch(e, r, v)) != INSN_EMU_DONE)
			return st;
		return push(e, r, next) ? INSN_EMU_DONE : INSN_EMU_MEM_FAULT;
	case INSN_OP_JMP:
		return branch(e, r, v);
	case INSN_OP_RET:
		if (!pop(e, r, &v))
			return INSN_EMU_MEM_FAULT;
		sp_set(e->m, r, sp_at(e->m, r, (int64_t)in->imm));
		return branch(e, r, v);
	case INSN_OP_LEAVE:
		sp_set(e->m, r, r->rbp);
		if (!pop(e, r, &v))
			return INSN_EMU_MEM_FAULT;
		insn_reg_write(r, R_BP, false, in->width, v);
		r->rip = next;
		return INSN_EMU_DONE;
	case INSN_OP_ENTER:
		/* Level 0 or 1 (the decoder refuses deeper nesting). */
		if (!push(e, r, r->rbp))
			return INSN_EMU_MEM_FAULT;
		frame = sp_at(e->m, r, 0);
		if (in->sub && !push(e, r, frame))
			return INSN_EMU_MEM_FAULT;
		insn_reg_write(r, R_BP, false, in->width, frame);
		sp_set(e->m, r, sp_at(e->m, r, -(int64_t)in->imm));
		r->rip = next;
		return INSN_EMU_DONE;
	default:
		return INSN_EMU_UNSUPPORTED;
	}
}

uint64_t insn_stack_first_linear(const struct insn *in, const struct guest_mode *m,
				 const struct vcpu_regs *r)
{
	struct insn_access acc[2];

	return insn_stack_accesses(in, m, r, acc) ? acc[0].linear : 0;
}

unsigned insn_stack_accesses(const struct insn *in, const struct guest_mode *m,
			     const struct vcpu_regs *r, struct insn_access out[2])
{
	uint8_t w = in->width;
	uint64_t below = slot_linear(m, sp_at(m, r, -(int64_t)w));
	unsigned n = 0;

	if (in->has_mem && in->op != INSN_OP_POP)
		out[n++] = (struct insn_access){ insn_operand_linear(in, m, r), w, false };
	switch (in->op) {
	case INSN_OP_PUSH:
	case INSN_OP_CALL:
		out[n++] = (struct insn_access){ below, w, true };
		break;
	case INSN_OP_POP:
		out[n++] = (struct insn_access){ slot_linear(m, sp_at(m, r, 0)), w, false };
		if (in->has_mem) {
			struct vcpu_regs moved = *r;
			insn_addr_reg_set(stack_bytes(m), &moved.rsp, sp_at(m, r, w));
			out[n++] = (struct insn_access){ insn_operand_linear(in, m, &moved), w, true };
		}
		break;
	case INSN_OP_RET:
		out[n++] = (struct insn_access){ slot_linear(m, sp_at(m, r, 0)), w, false };
		break;
	case INSN_OP_LEAVE:
		out[n++] = (struct insn_access){ slot_linear(m, r->rbp & width_mask(stack_bytes(m))),
						 w, false };
		break;
	case INSN_OP_ENTER:
		out[n++] = (struct insn_access){ below, w, true };
		if (in->sub)
			out[n++] = (struct insn_access){ slot_linear(m, sp_at(m, r, -2 * (int64_t)w)),
							 w, true };
		break;
	default:
		break;
	}
	return n;
}
