/* What the instruction decoder (insn.c) and the emulator's files share:
 * insn_emulate.c (dispatch, the ModRM ops, SSE and MMX moves), insn_stack.c
 * (the stack and near branches), insn_string.c (string ops, INS and OUTS),
 * insn_seg.c (segment loads), insn_arith.c (results and flags of the integer
 * ops). */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include "virt/insn.h"

struct vcpu_regs; /* virt/backend.h */

/* General registers, numbered as the encoding numbers them. */
enum { R_AX, R_CX, R_DX, R_BX, R_SP, R_BP, R_SI, R_DI };

#define FL_CF (1ull << 0)
#define FL_PF (1ull << 2)
#define FL_AF (1ull << 4)
#define FL_ZF (1ull << 6)
#define FL_SF (1ull << 7)
#define FL_DF (1ull << 10)
#define FL_OF (1ull << 11)
#define FL_ARITH (FL_CF | FL_PF | FL_AF | FL_ZF | FL_SF | FL_OF)

static inline uint64_t sext(uint64_t v, unsigned bytes)
{
	unsigned shift = 64 - 8 * bytes;
	return (uint64_t)((int64_t)(v << shift) >> shift);
}

static inline uint64_t width_mask(unsigned width)
{
	return width >= 8 ? ~0ull : (1ull << (8 * width)) - 1;
}

/* CMPS and SCAS: REPE and REPNE end on their ZF too. */
static inline bool compares(const struct insn *in)
{
	return in->op == INSN_OP_CMPS || in->op == INSN_OP_SCAS;
}

static inline bool insn_is_string(const struct insn *in)
{
	return in->op == INSN_OP_MOVS || in->op == INSN_OP_STOS || in->op == INSN_OP_LODS ||
	       in->op == INSN_OP_INS || in->op == INSN_OP_OUTS || compares(in);
}

/* One instruction being emulated: on a copy of the registers, committed by
 * insn_emulate only when the instruction completed. */
struct emu {
	const struct insn *in;
	const struct guest_mode *m;
	const struct insn_ops *ops;
	void *ctx;
	struct insn_fault *fault;
};

/* Registers (insn_emulate.c). 32-bit writes zero bits 63:32, 8- and 16-bit
 * ones keep the rest. */
uint64_t insn_reg_get(const struct vcpu_regs *r, int reg);
uint64_t insn_reg_read(const struct vcpu_regs *r, int reg, bool high8, unsigned width);
void insn_reg_write(struct vcpu_regs *r, int reg, bool high8, unsigned width, uint64_t val);
/* rSI, rDI, rCX or rSP set at an address size of size bytes: only the low
 * 16 bits at 2, zero-extended at 4. */
void insn_addr_reg_set(unsigned size, uint64_t *reg, uint64_t val);
/* seg:ea as a linear address, ea wrapped to addr_size bytes. */
uint64_t insn_linear(const struct guest_mode *m, enum guest_seg seg, uint64_t ea, unsigned addr_size);
/* The address of the ModRM or moffs operand (BT with a register offset: the
 * word it lands in). */
uint64_t insn_operand_linear(const struct insn *in, const struct guest_mode *m,
			     const struct vcpu_regs *r);
/* Memory through the caller, size at most 8; false when it failed. */
bool emu_read(const struct emu *e, uint64_t addr, unsigned size, uint64_t *val, bool rmw);
bool emu_write(const struct emu *e, uint64_t addr, unsigned size, uint64_t val);
/* Stop with an exception. */
enum insn_emu_status emu_raise(const struct emu *e, uint8_t vector, uint32_t error_code);
/* The address of the next instruction, wrapped to the code size. */
uint64_t insn_next_rip(const struct insn *in, const struct vcpu_regs *r);

/* insn_stack.c: PUSH POP CALL JMP RET LEAVE ENTER. */
enum insn_emu_status insn_emulate_stack(const struct emu *e, struct vcpu_regs *r);
unsigned insn_stack_accesses(const struct insn *in, const struct guest_mode *m,
			     const struct vcpu_regs *r, struct insn_access out[2]);
uint64_t insn_stack_first_linear(const struct insn *in, const struct guest_mode *m,
				 const struct vcpu_regs *r);
static inline bool insn_is_stack(const struct insn *in)
{
	return in->op >= INSN_OP_PUSH && in->op <= INSN_OP_ENTER;
}

/* insn_seg.c: MOV to a segment register, LTR, far JMP. */
enum insn_emu_status insn_emulate_seg(const struct emu *e, struct vcpu_regs *r);
static inline bool insn_is_seg_load(const struct insn *in)
{
	return in->op == INSN_OP_MOV_TO_SEG || in->op == INSN_OP_LTR || in->op == INSN_OP_JMP_FAR;
}

/* insn_string.c: one iteration of a string op, INS and OUTS included. */
enum insn_emu_status insn_emulate_string(const struct emu *e, struct vcpu_regs *r);
unsigned insn_string_accesses(const struct insn *in, const struct guest_mode *m,
			      const struct vcpu_regs *r, struct insn_access out[2]);
uint64_t insn_string_linear(const struct insn *in, const struct guest_mode *m,
			    const struct vcpu_regs *r);

/* insn_arith.c: width-byte operands; the new arithmetic flags go to *fl
 * (only those the op defines: the caller masks with the op's set). */
uint64_t arith_szp(uint64_t res, unsigned width);
uint64_t arith_add(uint64_t a, uint64_t b, unsigned cin, unsigned width, uint64_t *fl);
uint64_t arith_sub(uint64_t a, uint64_t b, unsigned cin, unsigned width, uint64_t *fl);
uint64_t arith_alu(enum insn_alu op, uint64_t a, uint64_t b, uint64_t rflags, unsigned width,
		   uint64_t *fl);
/* a * b: the low width bytes, *hi the high ones; CF and OF set when the
 * product does not fit width bytes (unsigned, or signed with sign). */
uint64_t arith_mul(uint64_t a, uint64_t b, unsigned width, bool sign, uint64_t *hi, uint64_t *fl);
/* hi:lo / d as DIV or IDIV: false where the CPU raises #DE (d 0, or the
 * quotient does not fit width bytes). */
bool arith_div(uint64_t hi, uint64_t lo, uint64_t d, unsigned width, bool sign, uint64_t *q,
	       uint64_t *rem);
/* SHLD (left) or SHRD of dst with bits from src by count (1..8*width-1 for
 * a defined result); *defined gets the flags set. */
uint64_t arith_shift_double(uint64_t dst, uint64_t src, unsigned count, unsigned width, bool left,
			    uint64_t *fl, uint64_t *defined);
/* Condition code cc (0-15, as Jcc and CMOVcc encode it) on RFLAGS. */
bool arith_cond(unsigned cc, uint64_t rflags);
