/* MMIO instruction emulation (virt/insn.h): on a copy of the registers,
 * committed only when the instruction completed. This file: the dispatch,
 * the ops on a ModRM operand, the SSE and MMX moves, and what each op
 * accesses; the stack ops are in insn_stack.c, the string ops in
 * insn_string.c, segment loads in insn_seg.c, the arithmetic in
 * insn_arith.c. */
#include "virt/insn.h"
#include "arch/x86/regs.h"
#include "lib/string.h"
#include "virt/backend.h"
#include "virt/insn_internal.h"

/* Where register number reg (encoding order, which is not struct vcpu_regs'
 * order) lives in struct vcpu_regs. */
static size_t reg_offset(int reg)
{
	static const uint8_t off[16] = {
		offsetof(struct vcpu_regs, rax), offsetof(struct vcpu_regs, rcx),
		offsetof(struct vcpu_regs, rdx), offsetof(struct vcpu_regs, rbx),
		offsetof(struct vcpu_regs, rsp), offsetof(struct vcpu_regs, rbp),
		offsetof(struct vcpu_regs, rsi), offsetof(struct vcpu_regs, rdi),
		offsetof(struct vcpu_regs, r8), offsetof(struct vcpu_regs, r9),
		offsetof(struct vcpu_regs, r10), offsetof(struct vcpu_regs, r11),
		offsetof(struct vcpu_regs, r12), offsetof(struct vcpu_regs, r13),
		offsetof(struct vcpu_regs, r14), offsetof(struct vcpu_regs, r15),
	};
	return off[reg & 15];
}

uint64_t insn_reg_get(const struct vcpu_regs *r, int reg)
{
	return *(const uint64_t *)((const char *)r + reg_offset(reg));
}

uint64_t insn_reg_read(const struct vcpu_regs *r, int reg, bool high8, unsigned width)
{
	uint64_t v = insn_reg_get(r, reg);
	return (high8 ? v >> 8 : v) & width_mask(width);
}

/* 32-bit writes zero bits 63:32 (the rule in 64-bit code; outside it the
 * upper half is invisible and the SDM leaves it undefined); 8- and 16-bit
 * writes keep the rest of the register. */
void insn_reg_write(struct vcpu_regs *r, int reg, bool high8, unsigned width, uint64_t val)
{
	uint64_t *p = (uint64_t *)((char *)r + reg_offset(reg));
	if (width == 1 && high8)
		*p = (*p & ~0xff00ull) | (val & 0xff) << 8;
	else if (width < 4)
		*p = (*p & ~width_mask(width)) | (val & width_mask(width));
	else
		*p = val & width_mask(width);
}

void insn_addr_reg_set(unsigned size, uint64_t *reg, uint64_t val)
{
	if (size == 2)
		*reg = (*reg & ~0xffffull) | (val & 0xffff);
	else
		*reg = val & width_mask(size);
}

/* In 64-bit code only FS and GS have a base; in other modes the sum wraps at
 * 4 GiB. */
uint64_t insn_linear(const struct guest_mode *m, enum guest_seg seg, uint64_t ea, unsigned addr_size)
{
	ea &= width_mask(addr_size);
	if (m->code_bits == 64)
		return seg == SEG_FS || seg == SEG_GS ? m->seg_base[seg] + ea : ea;
	return (m->seg_base[seg < SEG_COUNT ? seg : SEG_DS] + ea) & 0xffffffffull;
}

static uint64_t modrm_ea(const struct insn *in, const struct vcpu_regs *r)
{
	const struct insn_mem *mem = &in->mem;
	uint64_t ea = mem->disp;
	if (mem->rip_rel)
		ea += r->rip + in->len;
	if (mem->base != INSN_REG_NONE)
		ea += insn_reg_get(r, mem->base);
	if (mem->index != INSN_REG_NONE)
		ea += insn_reg_get(r, mem->index) * mem->scale;
	return ea;
}

/* BT, BTS, BTR, BTC with a register offset reach any bit: the offset, signed
 * at the operand size, moves the operand by whole operands (SDM vol. 2, BT). */
static int64_t bt_displacement(const struct insn *in, const struct vcpu_regs *r)
{
	if (in->op != INSN_OP_BT || in->has_imm)
		return 0;
	int64_t off = (int64_t)sext(insn_reg_get(r, in->reg), in->width);
	return (off >> (in->width == 2 ? 4 : in->width == 4 ? 5 : 6)) * in->width;
}

uint64_t insn_operand_linear(const struct insn *in, const struct guest_mode *m,
			     const struct vcpu_regs *r)
{
	return insn_linear(m, in->seg, modrm_ea(in, r) + (uint64_t)bt_displacement(in, r),
			   in->addr_size);
}

uint64_t insn_mem_linear(const struct insn *in, const struct guest_mode *m,
			 const struct vcpu_regs *regs)
{
	if (insn_is_string(in))
		return insn_string_linear(in, m, regs);
	if (insn_is_stack(in) && !in->has_mem)
		return insn_stack_first_linear(in, m, regs);
	return insn_operand_linear(in, m, regs);
}

bool emu_read(const struct emu *e, uint64_t addr, unsigned size, uint64_t *val, bool rmw)
{
	if (!e->ops->read(e->ctx, addr, size, val, rmw))
		return false;
	*val &= width_mask(size);
	return true;
}

bool emu_write(const struct emu *e, uint64_t addr, unsigned size, uint64_t val)
{
	return e->ops->write(e->ctx, addr, size, val & width_mask(size));
}

enum insn_emu_status emu_raise(const struct emu *e, uint8_t vector, uint32_t error_code)
{
	e->fault->vector = vector;
	e->fault->error_code = error_code;
	return INSN_EMU_FAULT;
}

uint64_t insn_next_rip(const struct insn *in, const struct vcpu_regs *r)
{
	return (r->rip + in->len) & (in->code_bits == 64 ? ~0ull
				     : in->code_bits == 32 ? 0xffffffffull : 0xffffull);
}

/* Does the op read or write its ModRM operand? */
static bool reads_operand(const struct insn *in)
{
	switch (in->op) {
	case INSN_OP_MOV_STORE:
	case INSN_OP_MOV_STORE_IMM:
	case INSN_OP_SMSW:
	case INSN_OP_MOV_FROM_SEG:
		return false;
	case INSN_OP_VMOV:
		return !in->mem_is_dst;
	default:
		return true;
	}
}

static bool writes_operand(const struct insn *in)
{
	switch (in->op) {
	case INSN_OP_TEST:
		return false;
	case INSN_OP_ALU:
		return in->mem_is_dst && in->alu != INSN_ALU_CMP;
	case INSN_OP_BT:
		return in->sub != INSN_BT;
	default:
		return in->mem_is_dst;
	}
}

/* SHLD/SHRD's count: CL or the imm8, masked as the CPU masks it. */
static unsigned shift_count(const struct insn *in, const struct vcpu_regs *r)
{
	return (unsigned)(in->sub ? r->rcx : in->imm) & (in->width == 8 ? 63 : 31);
}

static void set_arith_flags(struct vcpu_regs *r, uint64_t fl, uint64_t which)
{
	r->rflags = (r->rflags & ~which) | (fl & which);
}

/* The SSE and MMX moves: the register through the caller, memory 8 bytes at
 * a time. */
static enum insn_emu_status emulate_vmov(const struct emu *e, struct vcpu_regs *r)
{
	const struct insn *in = e->in;
	uint64_t addr = insn_operand_linear(in, e->m, r), lo, hi = 0;
	uint8_t v[16];

	if (in->vec_aligned && (addr & 15))
		return emu_raise(e, X86_VEC_GP, 0);
	e->ops->vec_read(e->ctx, in->vec_mmx, (unsigned)in->reg, v);
	if (in->mem_is_dst) {
		memcpy(&lo, v, 8);
		memcpy(&hi, v + 8, 8);
		if (!emu_write(e, addr, in->width < 8 ? in->width : 8, lo) ||
		    (in->width == 16 && !emu_write(e, addr + 8, 8, hi)))
			return INSN_EMU_MEM_FAULT;
		return INSN_EMU_DONE;
	}
	if (!emu_read(e, addr, in->width < 8 ? in->width : 8, &lo, false) ||
	    (in->width == 16 && !emu_read(e, addr + 8, 8, &hi, false)))
		return INSN_EMU_MEM_FAULT;
	if (in->vec_zero_upper)
		memset(v, 0, sizeof v);
	memcpy(v, &lo, in->width < 8 ? in->width : 8);
	if (in->width == 16)
		memcpy(v + 8, &hi, 8);
	e->ops->vec_write(e->ctx, in->vec_mmx, (unsigned)in->reg, v);
	return INSN_EMU_DONE;
}

/* MUL IMUL DIV IDIV of rAX (rDX:rAX, AX for bytes) by the operand. */
static enum insn_emu_status emulate_muldiv(const struct emu *e, struct vcpu_regs *r, uint64_t v)
{
	unsigned w = e->in->width;
	bool sign = e->in->sub == INSN_IMUL || e->in->sub == INSN_IDIV;
	uint64_t a = insn_reg_read(r, R_AX, false, w), d, lo, hi, fl;

	if (e->in->sub == INSN_MUL || e->in->sub == INSN_IMUL) {
		lo = arith_mul(a, v, w, sign, &hi, &fl);
		set_arith_flags(r, fl, FL_CF | FL_OF);
	} else {
		d = w == 1 ? insn_reg_read(r, R_AX, true, 1) : insn_reg_read(r, R_DX, false, w);
		if (!arith_div(d, a, v, w, sign, &lo, &hi))
			return emu_raise(e, X86_VEC_DE, 0);
	}
	if (w == 1) { /* AL and AH */
		insn_reg_write(r, R_AX, false, 1, lo);
		insn_reg_write(r, R_AX, true, 1, hi);
	} else {
		insn_reg_write(r, R_AX, false, w, lo);
		insn_reg_write(r, R_DX, false, w, hi);
	}
	return INSN_EMU_DONE;
}

/* The instructions with a ModRM or moffs operand, but the stack ops. */
static enum insn_emu_status emulate_modrm(const struct emu *e, struct vcpu_regs *r)
{
	const struct insn *in = e->in;
	uint64_t addr = insn_operand_linear(in, e->m, r), v = 0, src, res, fl, def;
	unsigned w = in->width;

	switch (in->op) {
	case INSN_OP_MOV_STORE:
		return emu_write(e, addr, w, insn_reg_read(r, in->reg, in->reg_high8, w))
			       ? INSN_EMU_DONE : INSN_EMU_MEM_FAULT;
	case INSN_OP_MOV_STORE_IMM:
		return emu_write(e, addr, w, in->imm) ? INSN_EMU_DONE : INSN_EMU_MEM_FAULT;
	case INSN_OP_SMSW:
		return emu_write(e, addr, 2, e->m->cr0) ? INSN_EMU_DONE : INSN_EMU_MEM_FAULT;
	case INSN_OP_MOV_FROM_SEG:
		return emu_write(e, addr, 2, e->m->seg_sel[in->reg]) ? INSN_EMU_DONE
								     : INSN_EMU_MEM_FAULT;
	case INSN_OP_VMOV:
		return emulate_vmov(e, r);
	default:
		break;
	}
	if (!emu_read(e, addr, w, &v, writes_operand(in)))
		return INSN_EMU_MEM_FAULT;
	src = in->has_imm ? in->imm & width_mask(w)
	      : in->reg != INSN_REG_NONE ? insn_reg_read(r, in->reg, in->reg_high8, in->reg_width) : 0;

	switch (in->op) {
	case INSN_OP_MOV_LOAD:
	case INSN_OP_MOVZX:
		insn_reg_write(r, in->reg, in->reg_high8, in->reg_width, v);
		return INSN_EMU_DONE;
	case INSN_OP_MOVSX:
		insn_reg_write(r, in->reg, false, in->reg_width, sext(v, w));
		return INSN_EMU_DONE;
	case INSN_OP_CMOV: /* the operand is read either way; a 32-bit one zeroes 63:32 either way */
		insn_reg_write(r, in->reg, false, w,
			       arith_cond(in->sub, r->rflags) ? v : insn_reg_read(r, in->reg, false, w));
		return INSN_EMU_DONE;
	case INSN_OP_ALU:
		if (in->mem_is_dst) {
			res = arith_alu(in->alu, v, src, r->rflags, w, &fl);
			if (writes_operand(in) && !emu_write(e, addr, w, res))
				return INSN_EMU_MEM_FAULT;
		} else {
			res = arith_alu(in->alu, src, v, r->rflags, w, &fl);
			if (in->alu != INSN_ALU_CMP)
				insn_reg_write(r, in->reg, in->reg_high8, w, res);
		}
		set_arith_flags(r, fl, FL_ARITH);
		return INSN_EMU_DONE;
	case INSN_OP_TEST:
		arith_alu(INSN_ALU_AND, v, src, r->rflags, w, &fl);
		set_arith_flags(r, fl, FL_ARITH);
		return INSN_EMU_DONE;
	case INSN_OP_XCHG:
		if (!emu_write(e, addr, w, src))
			return INSN_EMU_MEM_FAULT;
		insn_reg_write(r, in->reg, in->reg_high8, w, v);
		return INSN_EMU_DONE;
	case INSN_OP_XADD:
		res = arith_add(v, src, 0, w, &fl);
		if (!emu_write(e, addr, w, res))
			return INSN_EMU_MEM_FAULT;
		insn_reg_write(r, in->reg, in->reg_high8, w, v);
		set_arith_flags(r, fl, FL_ARITH);
		return INSN_EMU_DONE;
	case INSN_OP_NOT:
		return emu_write(e, addr, w, ~v) ? INSN_EMU_DONE : INSN_EMU_MEM_FAULT;
	case INSN_OP_NEG:
		res = arith_sub(0, v, 0, w, &fl);
		if (!emu_write(e, addr, w, res))
			return INSN_EMU_MEM_FAULT;
		set_arith_flags(r, fl, FL_ARITH);
		return INSN_EMU_DONE;
	case INSN_OP_INC:
	case INSN_OP_DEC: /* CF is kept */
		res = in->op == INSN_OP_INC ? arith_add(v, 1, 0, w, &fl) : arith_sub(v, 1, 0, w, &fl);
		if (!emu_write(e, addr, w, res))
			return INSN_EMU_MEM_FAULT;
		set_arith_flags(r, fl, FL_ARITH & ~FL_CF);
		return INSN_EMU_DONE;
	case INSN_OP_BT: {
		uint64_t bit = 1ull << (src & (8 * w - 1));
		res = in->sub == INSN_BTS ? v | bit : in->sub == INSN_BTR ? v & ~bit
		      : in->sub == INSN_BTC ? v ^ bit : v;
		if (writes_operand(in) && !emu_write(e, addr, w, res))
			return INSN_EMU_MEM_FAULT;
		set_arith_flags(r, v & bit ? FL_CF : 0, FL_CF);
		return INSN_EMU_DONE;
	}
	case INSN_OP_BSF:
	case INSN_OP_BSR:
		/* A zero source sets ZF and leaves the destination as it was (as
		 * AMD documents and Intel CPUs do). */
		if (v)
			insn_reg_write(r, in->reg, false, w,
				       in->op == INSN_OP_BSF ? (uint64_t)__builtin_ctzll(v)
							     : 63 - (uint64_t)__builtin_clzll(v));
		set_arith_flags(r, v ? 0 : FL_ZF, FL_ZF);
		return INSN_EMU_DONE;
	case INSN_OP_IMUL_REG:
		res = arith_mul(in->has_imm ? in->imm : insn_reg_read(r, in->reg, false, w), v, w, true,
				&def, &fl);
		insn_reg_write(r, in->reg, false, w, res);
		set_arith_flags(r, fl, FL_CF | FL_OF);
		return INSN_EMU_DONE;
	case INSN_OP_MULDIV:
		return emulate_muldiv(e, r, v);
	case INSN_OP_SHLD:
	case INSN_OP_SHRD: {
		unsigned count = shift_count(in, r);
		if (!count)
			return INSN_EMU_DONE; /* no shift: memory and flags stay */
		src = insn_reg_read(r, in->reg, false, w);
		res = arith_shift_double(v, src, count, w, in->op == INSN_OP_SHLD, &fl, &def);
		if (!emu_write(e, addr, w, res))
			return INSN_EMU_MEM_FAULT;
		set_arith_flags(r, fl, def);
		return INSN_EMU_DONE;
	}
	default:
		return INSN_EMU_UNSUPPORTED;
	}
}

/* REPE CMPS/SCAS end where the operands differ (ZF clear), REPNE where
 * they match (ZF set), before the count runs out. */
static bool rep_ends(const struct insn *in, const struct vcpu_regs *r)
{
	bool zf = r->rflags & FL_ZF;

	return compares(in) && (in->rep == INSN_REP_REPNE ? zf : !zf);
}

/* A string op, or one iteration of a REP one. */
static enum insn_emu_status emulate_string_op(const struct emu *e, struct vcpu_regs *r)
{
	const struct insn *in = e->in;
	enum insn_emu_status st;

	if (!in->rep)
		return insn_emulate_string(e, r);
	/* One iteration per call, so that a long REP can be interrupted and
	 * each access sees the current device state. */
	uint64_t count = r->rcx & width_mask(in->addr_size);
	if (!count)
		return INSN_EMU_DONE;
	if ((st = insn_emulate_string(e, r)) != INSN_EMU_DONE)
		return st;
	insn_addr_reg_set(in->addr_size, &r->rcx, count - 1);
	return count - 1 && !rep_ends(in, r) ? INSN_EMU_AGAIN : INSN_EMU_DONE;
}

enum insn_emu_status insn_emulate(const struct insn *in, const struct guest_mode *m,
				  struct vcpu_regs *regs, const struct insn_ops *ops, void *ctx,
				  struct insn_fault *fault)
{
	struct emu e = { in, m, ops, ctx, fault };
	struct vcpu_regs r = *regs;
	enum insn_emu_status st;

	if (in->op == INSN_OP_NONE || in->op >= INSN_OP_COUNT || !in->len ||
	    in->len > INSN_MAX_LEN || m->code_bits != in->code_bits)
		return INSN_EMU_UNSUPPORTED;

	bool sets_rip = insn_is_stack(in) || in->op == INSN_OP_JMP_FAR;
	if (insn_is_string(in))
		st = emulate_string_op(&e, &r);
	else if (insn_is_stack(in))
		st = insn_emulate_stack(&e, &r);
	else if (insn_is_seg_load(in))
		st = insn_emulate_seg(&e, &r);
	else
		st = emulate_modrm(&e, &r);
	if (st != INSN_EMU_DONE && st != INSN_EMU_AGAIN)
		return st;
	if (st == INSN_EMU_DONE && !sets_rip)
		r.rip = insn_next_rip(in, &r);
	*regs = r;
	return st;
}

unsigned insn_accesses(const struct insn *in, const struct guest_mode *m,
		       const struct vcpu_regs *regs, struct insn_access out[2])
{
	unsigned n = 0;

	if (in->op == INSN_OP_NONE || in->op >= INSN_OP_COUNT)
		return 0;
	if (insn_is_string(in))
		return insn_string_accesses(in, m, regs, out);
	if (insn_is_stack(in))
		return insn_stack_accesses(in, m, regs, out);
	uint64_t addr = insn_operand_linear(in, m, regs);
	if (insn_is_seg_load(in)) { /* the selector, after a far jump's offset */
		uint64_t sel = in->op == INSN_OP_JMP_FAR ? addr + in->width : addr;
		if (in->op == INSN_OP_JMP_FAR)
			out[n++] = (struct insn_access){ addr, in->width, false };
		out[n++] = (struct insn_access){ sel, 2, false };
		return n;
	}
	bool no_shift = (in->op == INSN_OP_SHLD || in->op == INSN_OP_SHRD) && !shift_count(in, regs);
	if (in->op == INSN_OP_VMOV && in->width == 16) {
		out[0] = (struct insn_access){ addr, 8, in->mem_is_dst };
		out[1] = (struct insn_access){ addr + 8, 8, in->mem_is_dst };
		return 2;
	}
	if (reads_operand(in))
		out[n++] = (struct insn_access){ addr, in->width, false };
	if (writes_operand(in) && !no_shift) /* a shift by 0 writes nothing */
		out[n++] = (struct insn_access){ addr, in->width, true };
	return n;
}
