/* The string ops of the MMIO emulator (virt/insn.h), one iteration each:
 * MOVS STOS LODS CMPS SCAS, and INS and OUTS between a port and memory.
 * rSI (through seg, DS unless overridden) and rDI (through ES) step by the
 * operand width, down with RFLAGS.DF; insn_emulate.c runs the REP loop. */
#include "virt/insn.h"
#include "virt/backend.h"
#include "virt/insn_internal.h"

static uint64_t src_linear(const struct insn *in, const struct guest_mode *m,
			   const struct vcpu_regs *r)
{
	return insn_linear(m, in->seg, r->rsi, in->addr_size);
}

static uint64_t dst_linear(const struct insn *in, const struct guest_mode *m,
			   const struct vcpu_regs *r)
{
	return insn_linear(m, SEG_ES, r->rdi, in->addr_size);
}

uint64_t insn_string_linear(const struct insn *in, const struct guest_mode *m,
			    const struct vcpu_regs *r)
{
	if (in->op == INSN_OP_STOS || in->op == INSN_OP_SCAS || in->op == INSN_OP_INS)
		return dst_linear(in, m, r);
	return src_linear(in, m, r);
}

static void step(const struct insn *in, uint64_t *reg, uint64_t rflags)
{
	uint64_t by = rflags & FL_DF ? -(uint64_t)in->width : in->width;

	insn_addr_reg_set(in->addr_size, reg, *reg + by);
}

enum insn_emu_status insn_emulate_string(const struct emu *e, struct vcpu_regs *r)
{
	const struct insn *in = e->in;
	const struct guest_mode *m = e->m;
	unsigned w = in->width;
	uint16_t port = (uint16_t)r->rdx;
	uint64_t v, v2, fl;

	switch (in->op) {
	case INSN_OP_MOVS:
		if (!emu_read(e, src_linear(in, m, r), w, &v, false) ||
		    !emu_write(e, dst_linear(in, m, r), w, v))
			return INSN_EMU_MEM_FAULT;
		step(in, &r->rsi, r->rflags);
		step(in, &r->rdi, r->rflags);
		return INSN_EMU_DONE;
	case INSN_OP_STOS:
		if (!emu_write(e, dst_linear(in, m, r), w, r->rax))
			return INSN_EMU_MEM_FAULT;
		step(in, &r->rdi, r->rflags);
		return INSN_EMU_DONE;
	case INSN_OP_LODS:
		if (!emu_read(e, src_linear(in, m, r), w, &v, false))
			return INSN_EMU_MEM_FAULT;
		insn_reg_write(r, R_AX, false, w, v);
		step(in, &r->rsi, r->rflags);
		return INSN_EMU_DONE;
	case INSN_OP_CMPS:
		if (!emu_read(e, src_linear(in, m, r), w, &v, false) ||
		    !emu_read(e, dst_linear(in, m, r), w, &v2, false))
			return INSN_EMU_MEM_FAULT;
		arith_alu(INSN_ALU_CMP, v, v2, r->rflags, w, &fl);
		r->rflags = (r->rflags & ~FL_ARITH) | fl;
		step(in, &r->rsi, r->rflags);
		step(in, &r->rdi, r->rflags);
		return INSN_EMU_DONE;
	case INSN_OP_SCAS:
		if (!emu_read(e, dst_linear(in, m, r), w, &v, false))
			return INSN_EMU_MEM_FAULT;
		arith_alu(INSN_ALU_CMP, r->rax & width_mask(w), v, r->rflags, w, &fl);
		r->rflags = (r->rflags & ~FL_ARITH) | fl;
		step(in, &r->rdi, r->rflags);
		return INSN_EMU_DONE;
	case INSN_OP_INS:
		if (!e->ops->port(e->ctx, port, w, &v, true) ||
		    !emu_write(e, dst_linear(in, m, r), w, v))
			return INSN_EMU_MEM_FAULT;
		step(in, &r->rdi, r->rflags);
		return INSN_EMU_DONE;
	case INSN_OP_OUTS:
		if (!emu_read(e, src_linear(in, m, r), w, &v, false) ||
		    !e->ops->port(e->ctx, port, w, &v, false))
			return INSN_EMU_MEM_FAULT;
		step(in, &r->rsi, r->rflags);
		return INSN_EMU_DONE;
	default:
		return INSN_EMU_UNSUPPORTED;
	}
}

unsigned insn_string_accesses(const struct insn *in, const struct guest_mode *m,
			      const struct vcpu_regs *r, struct insn_access out[2])
{
	unsigned n = 0;

	if (in->rep && !(r->rcx & width_mask(in->addr_size)))
		return 0;
	switch (in->op) {
	case INSN_OP_MOVS:
	case INSN_OP_CMPS:
		out[n++] = (struct insn_access){ src_linear(in, m, r), in->width, false };
		out[n++] = (struct insn_access){ dst_linear(in, m, r), in->width,
						 in->op == INSN_OP_MOVS };
		break;
	case INSN_OP_STOS:
	case INSN_OP_INS:
		out[n++] = (struct insn_access){ dst_linear(in, m, r), in->width, true };
		break;
	case INSN_OP_SCAS:
		out[n++] = (struct insn_access){ dst_linear(in, m, r), in->width, false };
		break;
	default: /* LODS, OUTS */
		out[n++] = (struct insn_access){ src_linear(in, m, r), in->width, false };
		break;
	}
	return n;
}
