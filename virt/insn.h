/* Decoding and emulation of the x86 instructions that touch MMIO.
 *
 * A guest access to a guest-physical address owned by an emulated device ends
 * in a nested page fault that says where, but not what (SVM under QEMU has no
 * decode assists). The caller fetches the instruction bytes at CS:RIP, decodes
 * them here, and emulates the instruction: every memory access goes through
 * the caller's callbacks with a linear address, which the caller translates and
 * sends to RAM or to the device. The code knows nothing of VMs or backends.
 *
 * What is decoded: the forms compilers and kernels use on device registers --
 * MOV (88 89 8a 8b c6/0 c7/0 a0-a3), MOVZX/MOVSX (0f b6 b7 be bf), MOVSXD (63,
 * 64-bit code), the ALU ops ADD OR ADC SBB AND SUB XOR CMP with memory as
 * either operand (00-3b's r/m forms, 80 81 83), TEST (84 85 f6/0 f7/0), XCHG
 * (86 87), NOT NEG (f6 f7 /2 /3), INC DEC (fe ff /0 /1), and the string ops
 * MOVS STOS LODS (a4 a5 aa ab ac ad) with REP. Prefixes 66 67, REX, segment
 * overrides, LOCK on the read-modify-write forms, F3/F2 on the string ops only.
 * 16-, 32- and 64-bit code; 16-bit ModRM, SIB, RIP-relative addressing.
 * Everything else (register-only forms, x87/SSE/VEX, branches...) is
 * INSN_UNSUPPORTED.
 *
 * Not modelled: segment limits and access rights (segments are flat apart from
 * their bases), alignment checks, canonical-address checks (the caller's
 * translation sees the linear address and can raise #GP), atomicity of LOCKed
 * read-modify-writes (a device access is one read then one write). */
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
	INSN_OP_COUNT
};

/* In the order of the ModRM /n extension of 80/81/83 (and of opcode bits 5:3). */
enum insn_alu {
	INSN_ALU_ADD, INSN_ALU_OR, INSN_ALU_ADC, INSN_ALU_SBB,
	INSN_ALU_AND, INSN_ALU_SUB, INSN_ALU_XOR, INSN_ALU_CMP
};

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
	uint8_t width;         /* bytes of each memory access: 1, 2, 4 or 8 */
	uint8_t reg_width;     /* bytes of the register operand: width, except the
	                        * destination of MOVZX/MOVSX */
	int8_t reg;            /* the register operand, or INSN_REG_NONE (imm and unary
	                        * forms, MOVS); 0 (rAX) for a0-a3, STOS, LODS */
	bool reg_high8;        /* reg (0-3) names AH CH DH BH: byte regs 4-7 without REX */
	bool has_imm;
	uint64_t imm;          /* sign-extended to 64 bits */
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

/* Memory access callbacks. Addresses are LINEAR: segment base added, wrapped to
 * the address size and to 32 bits outside 64-bit code. rmw: the value read will
 * be written back by the same instruction (a caller may check write permission
 * before a read with side effects). Return false when the access faulted or
 * could not be done: emulation stops and the registers are left unchanged. */
struct insn_mem_ops {
	bool (*read)(void *ctx, uint64_t linear, unsigned size, uint64_t *val, bool rmw);
	bool (*write)(void *ctx, uint64_t linear, unsigned size, uint64_t val);
};

enum insn_emu_status {
	INSN_EMU_DONE,        /* completed; RIP advanced by len */
	INSN_EMU_AGAIN,       /* one REP iteration done, count not yet 0: RIP unchanged,
	                       * the instruction runs again (the caller may take
	                       * interrupts in between, as the CPU does) */
	INSN_EMU_MEM_FAULT,   /* a callback failed: registers unchanged. Every write
	                       * comes last, so nothing was written either */
	INSN_EMU_UNSUPPORTED, /* not a decoded instruction, or m's mode is not the
	                       * one it was decoded for */
};

/* Run one instruction (one iteration of a REP string op) on regs. Only the
 * arithmetic flags (CF PF AF ZF SF OF) of RFLAGS change; AF after AND/OR/XOR/
 * TEST, undefined in the SDM, is cleared. 32-bit register writes zero bits
 * 63:32 (in every mode), 8- and 16-bit writes keep the rest. RIP wraps at the
 * code size (IP at 64 KiB in 16-bit code). */
enum insn_emu_status insn_emulate(const struct insn *in, const struct guest_mode *m,
				  struct vcpu_regs *regs, const struct insn_mem_ops *ops,
				  void *ctx);

/* The linear address of the memory operand: the ModRM or moffs operand; for
 * MOVS and LODS the source, for STOS the destination. */
uint64_t insn_mem_linear(const struct insn *in, const struct guest_mode *m,
			 const struct vcpu_regs *regs);

/* Every memory access the instruction (one iteration) makes, in order: at most
 * two (MOVS: read, then write; a read-modify-write op: read, then write of the
 * same address). Returns the count; a REP op whose count is 0 makes none. */
struct insn_access {
	uint64_t linear;
	uint8_t size;
	bool write;
};
unsigned insn_accesses(const struct insn *in, const struct guest_mode *m,
		       const struct vcpu_regs *regs, struct insn_access out[2]);
