/* Decoding and emulation of the x86 instructions that touch MMIO.
 *
 * A guest access to a guest-physical address owned by an emulated device ends
 * in a nested page fault that says where, but not what (SVM under QEMU has no
 * decode assists); string I/O (INS, OUTS) ends in an I/O exit that does not
 * say where in memory. The caller fetches the instruction bytes at CS:RIP,
 * decodes them here, and emulates the instruction: every memory access goes
 * through the caller's callbacks with a linear address, which the caller
 * translates and sends to RAM or to the device. The code knows nothing of VMs
 * or backends.
 *
 * What is decoded (with a memory operand; register-only forms are left to the
 * CPU, which never exits on them):
 * - moves: MOV (88 89 8a 8b c6/0 c7/0 a0-a3), MOVZX/MOVSX (0f b6 b7 be bf),
 *   MOVSXD (63, 64-bit code), CMOVcc (0f 40-4f), MOV from and to a segment
 *   register (8c 8e), SMSW (0f 01 /4), LTR (0f 00 /3), far JMP (ff /5) to a
 *   code segment (insn_seg.c: the descriptor checks);
 * - arithmetic: ADD OR ADC SBB AND SUB XOR CMP either way round (00-3b, 80 81
 *   83), TEST (84 85 f6/0 f7/0), XCHG (86 87), XADD (0f c0 c1), NOT NEG (f6 f7
 *   /2 /3), INC DEC (fe ff /0 /1), MUL IMUL DIV IDIV (f6 f7 /4-/7), IMUL
 *   (0f af, 69, 6b), BT BTS BTR BTC (0f a3 ab b3 bb, 0f ba /4-/7), BSF BSR
 *   (0f bc bd), SHLD SHRD (0f a4 a5 ac ad);
 * - the stack, where the operand or the stack is MMIO: PUSH (50-57, 68, 6a,
 *   ff/6), POP (58-5f, 8f/0), CALL (e8, ff/2), JMP (ff/4), RET (c2 c3), LEAVE
 *   (c9), ENTER (c8, nesting level 0 or 1);
 * - strings: MOVS STOS LODS CMPS SCAS (a4-a7 aa-af) and INS OUTS (6c-6f),
 *   with REP, REPE, REPNE;
 * - SSE and MMX moves: MOVUPS MOVUPD MOVAPS MOVAPD MOVSS MOVSD (0f 10 11 28
 *   29), MOVDQA MOVDQU and MMX MOVQ (0f 6f 7f), MOVD/MOVQ (0f 6e 7e, 66 0f
 *   d6), MOVNTPS/PD MOVNTDQ MOVNTQ (0f 2b e7).
 * Prefixes 66 67, REX, segment overrides, LOCK on the read-modify-write forms,
 * F3/F2 on the string ops and as the SSE moves' mandatory prefixes. 16-, 32-
 * and 64-bit code; 16-bit ModRM, SIB, RIP-relative addressing. Everything
 * else (VEX, x87, far CALL, LGDT...) is INSN_UNSUPPORTED.
 *
 * Not modelled: segment limits and access rights (segments are flat apart from
 * their bases), alignment checks but those of the aligned SSE moves,
 * canonical-address checks of operands (the caller's translation sees the
 * linear address and can refuse it), atomicity of LOCKed read-modify-writes
 * (a device access is one read then one write). */
#pragma once
#include "virt/guest_mode.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vcpu_regs; /* virt/backend.h */

#define INSN_MAX_LEN 15

enum insn_op {
	INSN_OP_NONE,          /* nothing decoded */
	INSN_OP_MOV_LOAD,      /* reg <- mem: 8a 8b, a0 a1 */
	INSN_OP_MOV_STORE,     /* mem <- reg: 88 89, a2 a3 */
	INSN_OP_MOV_STORE_IMM, /* mem <- imm: c6 /0, c7 /0 */
	INSN_OP_MOVZX,         /* reg <- zero-extended mem: 0f b6, 0f b7 */
	INSN_OP_MOVSX,         /* reg <- sign-extended mem: 0f be, 0f bf, 63 */
	INSN_OP_ALU,           /* alu (below): mem op= reg/imm, or reg op= mem */
	INSN_OP_TEST,          /* flags of mem AND reg/imm: 84 85, f6 /0, f7 /0 */
	INSN_OP_XCHG,          /* mem <-> reg: 86 87 */
	INSN_OP_NOT,           /* f6 /2, f7 /2 */
	INSN_OP_NEG,           /* f6 /3, f7 /3 */
	INSN_OP_INC,           /* fe /0, ff /0 */
	INSN_OP_DEC,           /* fe /1, ff /1 */
	INSN_OP_MOVS,          /* ES:[rDI] <- seg:[rSI]: a4 a5 */
	INSN_OP_STOS,          /* ES:[rDI] <- rAX: aa ab */
	INSN_OP_LODS,          /* rAX <- seg:[rSI]: ac ad */
	INSN_OP_CMPS,          /* flags of seg:[rSI] - ES:[rDI]: a6 a7 */
	INSN_OP_SCAS,          /* flags of rAX - ES:[rDI]: ae af */
	INSN_OP_INS,           /* ES:[rDI] <- port DX: 6c 6d */
	INSN_OP_OUTS,          /* port DX <- seg:[rSI]: 6e 6f */
	INSN_OP_XADD,          /* mem += reg, reg <- old mem: 0f c0 c1 */
	INSN_OP_CMOV,          /* reg <- mem if cond (sub): 0f 40-4f */
	INSN_OP_BT,            /* bit test, sub = enum insn_bt: 0f a3 ab b3 bb, 0f ba */
	INSN_OP_BSF,           /* 0f bc */
	INSN_OP_BSR,           /* 0f bd */
	INSN_OP_SHLD,          /* mem <- mem:reg << count: 0f a4 a5 */
	INSN_OP_SHRD,          /* mem <- reg:mem >> count: 0f ac ad */
	INSN_OP_IMUL_REG,      /* reg <- reg * mem (0f af) or mem * imm (69 6b) */
	INSN_OP_MULDIV,        /* rDX:rAX and mem, sub = enum insn_muldiv: f6 f7 /4-/7 */
	INSN_OP_SMSW,          /* mem16 <- CR0[15:0]: 0f 01 /4 */
	INSN_OP_MOV_FROM_SEG,  /* mem16 <- selector of segment reg: 8c */
	INSN_OP_PUSH,          /* stack <- mem, reg or imm: ff /6, 50-57, 68 6a */
	INSN_OP_POP,           /* mem or reg <- stack: 8f /0, 58-5f */
	INSN_OP_CALL,          /* push next RIP; RIP <- mem (ff /2) or RIP + imm (e8) */
	INSN_OP_JMP,           /* RIP <- mem: ff /4 */
	INSN_OP_RET,           /* RIP <- stack, rSP += imm: c2 c3 */
	INSN_OP_LEAVE,         /* rSP <- rBP, rBP <- stack: c9 */
	INSN_OP_ENTER,         /* push rBP, rBP <- rSP, rSP -= imm: c8 */
	INSN_OP_VMOV,          /* XMM or MMX register <-> mem: the SSE and MMX moves */
	INSN_OP_MOV_TO_SEG,    /* segment reg <- mem16: 8e */
	INSN_OP_LTR,           /* TR <- mem16: 0f 00 /3 */
	INSN_OP_JMP_FAR,       /* CS:RIP <- mem (offset, then selector): ff /5 */
	INSN_OP_COUNT
};

/* In the order of the ModRM /n extension of 80/81/83 (and of opcode bits 5:3). */
enum insn_alu {
	INSN_ALU_ADD, INSN_ALU_OR, INSN_ALU_ADC, INSN_ALU_SBB,
	INSN_ALU_AND, INSN_ALU_SUB, INSN_ALU_XOR, INSN_ALU_CMP
};

enum insn_bt { INSN_BT, INSN_BTS, INSN_BTR, INSN_BTC };
/* In the order of the ModRM /n extension of f6/f7, less 4. */
enum insn_muldiv { INSN_MUL, INSN_IMUL, INSN_DIV, INSN_IDIV };

enum insn_rep { INSN_REP_NONE, INSN_REP_REP /* f3 (REP/REPE) */, INSN_REP_REPNE /* f2 */ };

/* Register numbers, as encoded: rax rcx rdx rbx rsp rbp rsi rdi r8 .. r15. */
#define INSN_REG_NONE (-1)

/* The memory operand: [base + index * scale + disp], wrapped to the address
 * size; rip_rel adds the address of the next instruction instead of a base.
 * moffs forms (a0-a3) have neither base nor index: disp is the offset. */
struct insn_mem {
	int8_t base;   /* 0-15 or INSN_REG_NONE */
	int8_t index;  /* 0-15 or INSN_REG_NONE */
	uint8_t scale; /* 1, 2, 4 or 8 */
	bool rip_rel;
	uint64_t disp; /* sign-extended (moffs: zero-extended), two's complement */
};

struct insn {
	uint8_t len;           /* bytes, prefixes included: 1..INSN_MAX_LEN */
	uint8_t code_bits;     /* 16, 32 or 64: the mode it was decoded for */
	enum insn_op op;
	enum insn_alu alu;     /* INSN_OP_ALU */
	uint8_t sub;           /* CMOV: the condition (opcode bits 3:0); BT: enum
	                        * insn_bt; MULDIV: enum insn_muldiv; ENTER: the
	                        * nesting level; SHLD/SHRD: 1 when the count is CL */
	uint8_t width;         /* bytes of the memory operand: 1, 2, 4 or 8; 16 for
	                        * the 128-bit SSE moves; the stack slot of PUSH,
	                        * POP, CALL, RET, LEAVE, ENTER */
	bool vec_mmx;          /* VMOV: reg is an MMX register, not an XMM one */
	bool vec_aligned;      /* VMOV: #GP(0) unless the operand is 16-byte aligned */
	bool vec_zero_upper;   /* VMOV load: the XMM bytes past width become zero */
	uint8_t reg_width;     /* bytes of the register operand: width, except the
	                        * destination of MOVZX/MOVSX */
	int8_t reg;            /* the register operand, or INSN_REG_NONE (imm and unary
	                        * forms, MOVS); 0 (rAX) for a0-a3, STOS, LODS */
	bool reg_high8;        /* reg (0-3) names AH CH DH BH: byte regs 4-7 without REX */
	bool has_imm;
	uint64_t imm;          /* sign-extended to 64 bits (ENTER, RET: imm16) */
	bool has_mem;          /* a ModRM or moffs memory operand (the stack ops'
	                        * register and immediate forms have none) */
	bool mem_is_dst;       /* memory is the first (destination) operand; written
	                        * unless the op is CMP or TEST */
	enum insn_rep rep;     /* string ops only */
	bool lock;
	enum guest_seg seg;    /* of the memory operand (MOVS, LODS: of the source) */
	bool seg_override;     /* seg came from a prefix that counts in this mode */
	uint8_t addr_size;     /* 2, 4 or 8 */
	uint8_t rex;           /* the REX byte in effect, 0 if none */
	bool two_byte;         /* opcode is 0f xx */
	uint8_t opcode;        /* the (last) opcode byte */
	struct insn_mem mem;   /* unused by the string ops */
};

enum insn_status {
	INSN_OK,
	INSN_TRUNCATED,   /* needs more bytes than given */
	INSN_UNSUPPORTED, /* a valid instruction, or one we cannot tell, not emulated here */
	INSN_INVALID,     /* the CPU would fault: longer than 15 bytes, LOCK where
	                   * not allowed */
};

/* Decode bytes[0..n) for code of code_bits (16, 32, 64). On INSN_OK, *out
 * holds the instruction (len <= n); otherwise *out is zeroed but for len. */
enum insn_status insn_decode(const uint8_t *bytes, size_t n, unsigned code_bits, struct insn *out);

/* "mov dword [rax+0x20], ecx"-like text for reports (always NUL-terminated). */
void insn_describe(const struct insn *in, char *buf, size_t len);
const char *insn_status_name(enum insn_status s);

/* What an instruction reaches beyond the general registers, through the
 * caller. Memory: addresses are LINEAR: segment base added, wrapped to the
 * address size and to 32 bits outside 64-bit code; at most 8 bytes an access
 * (16-byte operands are two). rmw: the value read will be written back by the
 * same instruction (a caller may check write permission before a read with
 * side effects). port: IN (in) or OUT of size bytes, for INS and OUTS. Each
 * returns false when the access faulted or could not be done: emulation stops
 * and the registers are left unchanged. vec_read, vec_write: XMM register reg
 * (16 bytes) or MMX register reg (8 bytes). load_seg: a segment register
 * (SEG_TR too) gets the hidden part read from its descriptor; the caller
 * sets MOV SS's interrupt shadow. */
struct insn_ops {
	bool (*read)(void *ctx, uint64_t linear, unsigned size, uint64_t *val, bool rmw);
	bool (*write)(void *ctx, uint64_t linear, unsigned size, uint64_t val);
	bool (*port)(void *ctx, uint16_t port, unsigned size, uint64_t *val, bool in);
	void (*vec_read)(void *ctx, bool mmx, unsigned reg, uint8_t val[16]);
	void (*vec_write)(void *ctx, bool mmx, unsigned reg, const uint8_t val[16]);
	void (*load_seg)(void *ctx, enum guest_seg seg, const struct guest_segment *s);
};

/* An exception the instruction raises (INSN_EMU_FAULT). */
struct insn_fault {
	uint8_t vector;      /* arch/x86/regs.h X86_VEC_* */
	uint32_t error_code; /* where the vector pushes one */
};

enum insn_emu_status {
	INSN_EMU_DONE,        /* completed; RIP advanced by len */
	INSN_EMU_AGAIN,       /* one REP iteration done, count not yet 0: RIP unchanged,
	                       * the instruction runs again (the caller may take
	                       * interrupts in between, as the CPU does) */
	INSN_EMU_MEM_FAULT,   /* a callback failed: registers unchanged. Writes come
	                       * last, so nothing was written either, but by
	                       * the first of two (ENTER's pushes) */
	INSN_EMU_FAULT,       /* the instruction raises *fault (#DE, #GP): registers
	                       * unchanged, nothing written, RIP at the instruction */
	INSN_EMU_UNSUPPORTED, /* not a decoded instruction, or m's mode is not the
	                       * one it was decoded for */
};

/* Run one instruction (one iteration of a REP string op) on regs. Only the
 * arithmetic flags (CF PF AF ZF SF OF) of RFLAGS change; those the SDM leaves
 * undefined keep their values, but AF after AND/OR/XOR/TEST, which is
 * cleared. 32-bit register writes zero bits 63:32 (in every mode), 8- and
 * 16-bit writes keep the rest. RIP wraps at the code size (IP at 64 KiB in
 * 16-bit code); a branch target that is not canonical in 64-bit code raises
 * #GP(0). */
enum insn_emu_status insn_emulate(const struct insn *in, const struct guest_mode *m,
				  struct vcpu_regs *regs, const struct insn_ops *ops, void *ctx,
				  struct insn_fault *fault);

/* The linear address of the memory operand: the ModRM or moffs operand; for
 * MOVS, LODS and OUTS the source, for STOS, SCAS and INS the destination; for
 * the stack ops without one, the stack slot they access first. */
uint64_t insn_mem_linear(const struct insn *in, const struct guest_mode *m,
			 const struct vcpu_regs *regs);

/* Every memory access the instruction (one iteration) makes, in order, if it
 * raises no exception: at most two (MOVS: read, then write; a read-modify-
 * write op: read, then write of the same address; PUSH mem: the operand, then
 * the stack). A 16-byte operand is two accesses of 8, the low half first.
 * Segment loads list their operand only: the descriptor reads and the write
 * of its accessed bit that follow depend on the selector read. Returns the
 * count; a REP op whose count is 0 makes none. */
struct insn_access {
	uint64_t linear;
	uint8_t size;
	bool write;
};
unsigned insn_accesses(const struct insn *in, const struct guest_mode *m,
		       const struct vcpu_regs *regs, struct insn_access out[2]);
