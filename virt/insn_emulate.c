/* MMIO instruction emulation (virt/insn.h): on a copy of the registers,
 * committed only when every memory access succeeded. */
#include "virt/insn.h"
#include "lib/string.h"
#include "virt/backend.h"
#include "virt/insn_internal.h"

#define FL_CF (1ull << 0)
#define FL_PF (1ull << 2)
#define FL_AF (1ull << 4)
#define FL_ZF (1ull << 6)
#define FL_SF (1ull << 7)
#define FL_DF (1ull << 10)
#define FL_OF (1ull << 11)
#define FL_ARITH (FL_CF | FL_PF | FL_AF | FL_ZF | FL_SF | FL_OF)

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

static uint64_t *reg_slot(struct vcpu_regs *r, int reg)
{
	return (uint64_t *)((char *)r + reg_offset(reg));
}

static uint64_t reg_get(const struct vcpu_regs *r, int reg)
{
	return *(const uint64_t *)((const char *)r + reg_offset(reg));
}

static uint64_t reg_read(const struct vcpu_regs *r, int reg, bool high8, unsigned width)
{
	uint64_t v = reg_get(r, reg);
	return (high8 ? v >> 8 : v) & width_mask(width);
}

/* 32-bit writes zero bits 63:32 (the rule in 64-bit code; outside it the
 * upper half is invisible and the SDM leaves it undefined); 8- and 16-bit
 * writes keep the rest of the register. */
static void reg_write(struct vcpu_regs *r, int reg, bool high8, unsigned width, uint64_t val)
{
	uint64_t *p = reg_slot(r, reg);
	if (width == 1 && high8)
		*p = (*p & ~0xff00ull) | (val & 0xff) << 8;
	else if (width < 4)
		*p = (*p & ~width_mask(width)) | (val & width_mask(width));
	else
		*p = val & width_mask(width);
}

static uint64_t szp_flags(uint64_t res, unsigned width)
{
	uint64_t f = 0;
	if (!(res & width_mask(width)))
		f |= FL_ZF;
	if (res & (1ull << (8 * width - 1)))
		f |= FL_SF;
	if (!__builtin_parity((unsigned)(res & 0xff))) /* PF: even count in the low byte */
		f |= FL_PF;
	return f;
}

/* a + b + cin and its flags: CF is the carry out, OF a signed overflow (both
 * inputs of one sign, the result of the other), AF the carry out of bit 3. */
static uint64_t add_op(uint64_t a, uint64_t b, unsigned cin, unsigned width, uint64_t *fl)
{
	uint64_t mask = width_mask(width), sign = 1ull << (8 * width - 1);
	a &= mask;
	b &= mask;
	uint64_t res = (a + b + cin) & mask;
	*fl = szp_flags(res, width);
	if (res < a || (cin && res == a))
		*fl |= FL_CF;
	if ((a ^ res) & (b ^ res) & sign)
		*fl |= FL_OF;
	if ((a ^ b ^ res) & 0x10)
		*fl |= FL_AF;
	return res;
}

/* a - b - cin: CF is the borrow (a < b + cin), OF a signed overflow (inputs
 * of different signs, the result's sign not a's), AF the borrow into bit 4. */
static uint64_t sub_op(uint64_t a, uint64_t b, unsigned cin, unsigned width, uint64_t *fl)
{
	uint64_t mask = width_mask(width), sign = 1ull << (8 * width - 1);
	a &= mask;
	b &= mask;
	uint64_t res = (a - b - cin) & mask;
	*fl = szp_flags(res, width);
	if (a < b || (cin && a == b))
		*fl |= FL_CF;
	if ((a ^ b) & (a ^ res) & sign)
		*fl |= FL_OF;
	if ((a ^ b ^ res) & 0x10)
		*fl |= FL_AF;
	return res;
}

/* One ALU op on width-byte operands; new arithmetic flags go to *fl. AND, OR
 * and XOR clear CF and OF (and AF, which the SDM leaves undefined). */
static uint64_t alu_op(enum insn_alu op, uint64_t a, uint64_t b, uint64_t rflags, unsigned width,
		       uint64_t *fl)
{
	unsigned cf = rflags & FL_CF ? 1 : 0;
	uint64_t res;
	switch (op) {
	case INSN_ALU_ADD: return add_op(a, b, 0, width, fl);
	case INSN_ALU_ADC: return add_op(a, b, cf, width, fl);
	case INSN_ALU_SUB:
	case INSN_ALU_CMP: return sub_op(a, b, 0, width, fl);
	case INSN_ALU_SBB: return sub_op(a, b, cf, width, fl);
	case INSN_ALU_OR: res = a | b; break;
	case INSN_ALU_XOR: res = a ^ b; break;
	case INSN_ALU_AND:
	default: res = a & b; break;
	}
	res &= width_mask(width);
	*fl = szp_flags(res, width);
	return res;
}

static uint64_t addr_mask(unsigned addr_size)
{
	return width_mask(addr_size);
}

/* seg:ea as a linear address. In 64-bit code only FS and GS have a base; in
 * other modes the sum wraps at 4 GiB. */
static uint64_t linear(const struct insn *in, const struct guest_mode *m, enum guest_seg seg,
		       uint64_t ea)
{
	ea &= addr_mask(in->addr_size);
	if (in->code_bits == 64)
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
		ea += reg_get(r, mem->base);
	if (mem->index != INSN_REG_NONE)
		ea += reg_get(r, mem->index) * mem->scale;
	return ea;
}

static bool is_string(const struct insn *in)
{
	return in->op == INSN_OP_MOVS || in->op == INSN_OP_STOS || in->op == INSN_OP_LODS ||
	       compares(in);
}

uint64_t insn_mem_linear(const struct insn *in, const struct guest_mode *m,
			 const struct vcpu_regs *regs)
{
	if (in->op == INSN_OP_STOS || in->op == INSN_OP_SCAS)
		return linear(in, m, SEG_ES, regs->rdi);
	if (is_string(in))
		return linear(in, m, in->seg, regs->rsi);
	return linear(in, m, in->seg, modrm_ea(in, regs));
}

/* Does the op write its memory operand (ModRM forms)? */
static bool writes_mem(const struct insn *in)
{
	if (!in->mem_is_dst || in->op == INSN_OP_TEST)
		return false;
	return !(in->op == INSN_OP_ALU && in->alu == INSN_ALU_CMP);
}

static bool reads_mem(const struct insn *in)
{
	return in->op != INSN_OP_MOV_STORE && in->op != INSN_OP_MOV_STORE_IMM &&
	       in->op != INSN_OP_STOS;
}

unsigned insn_accesses(const struct insn *in, const struct guest_mode *m,
		       const struct vcpu_regs *regs, struct insn_access out[2])
{
	unsigned n = 0;
	if (in->op == INSN_OP_NONE || in->op >= INSN_OP_COUNT)
		return 0;
	if (in->rep && !(regs->rcx & addr_mask(in->addr_size)))
		return 0;
	uint64_t addr = insn_mem_linear(in, m, regs);
	if (reads_mem(in))
		out[n++] = (struct insn_access){ addr, in->width, false };
	if (in->op == INSN_OP_MOVS || in->op == INSN_OP_CMPS)
		out[n++] = (struct insn_access){ linear(in, m, SEG_ES, regs->rdi), in->width,
						 in->op == INSN_OP_MOVS };
	else if (is_string(in) ? in->op == INSN_OP_STOS : writes_mem(in))
		out[n++] = (struct insn_access){ addr, in->width, true };
	return n;
}

struct emu {
	const struct insn *in;
	const struct insn_mem_ops *ops;
	void *ctx;
};

static bool mem_read(const struct emu *e, uint64_t addr, uint64_t *val, bool rmw)
{
	if (!e->ops->read(e->ctx, addr, e->in->width, val, rmw))
		return false;
	*val &= width_mask(e->in->width);
	return true;
}

static bool mem_write(const struct emu *e, uint64_t addr, uint64_t val)
{
	return e->ops->write(e->ctx, addr, e->in->width, val & width_mask(e->in->width));
}

static void set_arith_flags(struct vcpu_regs *r, uint64_t fl, uint64_t which)
{
	r->rflags = (r->rflags & ~which) | (fl & which);
}

/* The instructions with a ModRM or moffs operand. */
static bool emulate_modrm(const struct emu *e, const struct guest_mode *m, struct vcpu_regs *r)
{
	const struct insn *in = e->in;
	uint64_t addr = insn_mem_linear(in, m, r), v, src, res, fl;
	unsigned w = in->width;
	bool rmw = writes_mem(in);

	if (in->op == INSN_OP_MOV_STORE)
		return mem_write(e, addr, reg_read(r, in->reg, in->reg_high8, w));
	if (in->op == INSN_OP_MOV_STORE_IMM)
		return mem_write(e, addr, in->imm);
	if (!mem_read(e, addr, &v, rmw))
		return false;
	src = in->has_imm ? in->imm & width_mask(w)
	      : in->reg != INSN_REG_NONE ? reg_read(r, in->reg, in->reg_high8, in->reg_width) : 0;

	switch (in->op) {
	case INSN_OP_MOV_LOAD:
	case INSN_OP_MOVZX:
		reg_write(r, in->reg, in->reg_high8, in->reg_width, v);
		return true;
	case INSN_OP_MOVSX:
		reg_write(r, in->reg, false, in->reg_width, sext(v, w));
		return true;
	case INSN_OP_ALU:
		if (in->mem_is_dst) {
			res = alu_op(in->alu, v, src, r->rflags, w, &fl);
			if (rmw && !mem_write(e, addr, res))
				return false;
		} else {
			res = alu_op(in->alu, src, v, r->rflags, w, &fl);
			if (in->alu != INSN_ALU_CMP)
				reg_write(r, in->reg, in->reg_high8, w, res);
		}
		set_arith_flags(r, fl, FL_ARITH);
		return true;
	case INSN_OP_TEST:
		alu_op(INSN_ALU_AND, v, src, r->rflags, w, &fl);
		set_arith_flags(r, fl, FL_ARITH);
		return true;
	case INSN_OP_XCHG:
		if (!mem_write(e, addr, src))
			return false;
		reg_write(r, in->reg, in->reg_high8, w, v);
		return true;
	case INSN_OP_NOT:
		return mem_write(e, addr, ~v);
	case INSN_OP_NEG:
		res = sub_op(0, v, 0, w, &fl);
		set_arith_flags(r, fl, FL_ARITH);
		return mem_write(e, addr, res);
	case INSN_OP_INC:
	case INSN_OP_DEC: /* CF is kept */
		res = in->op == INSN_OP_INC ? add_op(v, 1, 0, w, &fl) : sub_op(v, 1, 0, w, &fl);
		set_arith_flags(r, fl, FL_ARITH & ~FL_CF);
		return mem_write(e, addr, res);
	default:
		return false;
	}
}

/* rSI, rDI or rCX updated at the address size: only SI with 16-bit
 * addresses, ESI (zero-extended, a 32-bit write) with 32-bit ones. */
static void addr_reg_set(const struct insn *in, uint64_t *reg, uint64_t val)
{
	if (in->addr_size == 2)
		*reg = (*reg & ~0xffffull) | (val & 0xffff);
	else
		*reg = val & addr_mask(in->addr_size);
}

/* One iteration of a string instruction. */
static bool emulate_string(const struct emu *e, const struct guest_mode *m, struct vcpu_regs *r)
{
	const struct insn *in = e->in;
	uint64_t step = r->rflags & FL_DF ? -(uint64_t)in->width : in->width, v, v2, fl;

	switch (in->op) {
	case INSN_OP_MOVS:
		if (!mem_read(e, linear(in, m, in->seg, r->rsi), &v, false) ||
		    !mem_write(e, linear(in, m, SEG_ES, r->rdi), v))
			return false;
		addr_reg_set(in, &r->rsi, r->rsi + step);
		addr_reg_set(in, &r->rdi, r->rdi + step);
		return true;
	case INSN_OP_STOS:
		if (!mem_write(e, linear(in, m, SEG_ES, r->rdi), r->rax))
			return false;
		addr_reg_set(in, &r->rdi, r->rdi + step);
		return true;
	case INSN_OP_LODS:
		if (!mem_read(e, linear(in, m, in->seg, r->rsi), &v, false))
			return false;
		reg_write(r, R_AX, false, in->width, v);
		addr_reg_set(in, &r->rsi, r->rsi + step);
		return true;
	case INSN_OP_CMPS:
		if (!mem_read(e, linear(in, m, in->seg, r->rsi), &v, false) ||
		    !mem_read(e, linear(in, m, SEG_ES, r->rdi), &v2, false))
			return false;
		alu_op(INSN_ALU_CMP, v, v2, r->rflags, in->width, &fl);
		set_arith_flags(r, fl, FL_ARITH);
		addr_reg_set(in, &r->rsi, r->rsi + step);
		addr_reg_set(in, &r->rdi, r->rdi + step);
		return true;
	case INSN_OP_SCAS:
		if (!mem_read(e, linear(in, m, SEG_ES, r->rdi), &v, false))
			return false;
		alu_op(INSN_ALU_CMP, r->rax & width_mask(in->width), v, r->rflags, in->width, &fl);
		set_arith_flags(r, fl, FL_ARITH);
		addr_reg_set(in, &r->rdi, r->rdi + step);
		return true;
	default:
		return false;
	}
}

/* REPE CMPS/SCAS end where the operands differ (ZF clear), REPNE where
 * they match (ZF set), before the count runs out. */
static bool rep_ends(const struct insn *in, const struct vcpu_regs *r)
{
	bool zf = r->rflags & FL_ZF;

	return compares(in) && (in->rep == INSN_REP_REPNE ? zf : !zf);
}

static void advance_rip(const struct insn *in, struct vcpu_regs *r)
{
	r->rip = (r->rip + in->len) & (in->code_bits == 64 ? ~0ull
				       : in->code_bits == 32 ? 0xffffffffull : 0xffffull);
}

enum insn_emu_status insn_emulate(const struct insn *in, const struct guest_mode *m,
				  struct vcpu_regs *regs, const struct insn_mem_ops *ops,
				  void *ctx)
{
	struct emu e = { in, ops, ctx };
	struct vcpu_regs r = *regs; /* committed only when every access succeeded */

	if (in->op == INSN_OP_NONE || in->op >= INSN_OP_COUNT || !in->len ||
	    in->len > INSN_MAX_LEN || m->code_bits != in->code_bits)
		return INSN_EMU_UNSUPPORTED;

	if (!is_string(in)) {
		if (!emulate_modrm(&e, m, &r))
			return INSN_EMU_MEM_FAULT;
	} else if (in->rep) {
		/* One iteration per call, so that a long REP can be interrupted
		 * and each access sees the current device state. */
		uint64_t count = r.rcx & addr_mask(in->addr_size);
		if (count) {
			if (!emulate_string(&e, m, &r))
				return INSN_EMU_MEM_FAULT;
			addr_reg_set(in, &r.rcx, count - 1);
			if (count - 1 && !rep_ends(in, &r)) {
				*regs = r;
				return INSN_EMU_AGAIN;
			}
		}
	} else if (!emulate_string(&e, m, &r)) {
		return INSN_EMU_MEM_FAULT;
	}
	advance_rip(in, &r);
	*regs = r;
	return INSN_EMU_DONE;
}
