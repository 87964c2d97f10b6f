/* MMIO instruction decoding (virt/insn.h): a prefix loop, an opcode table
 * (plus ModRM /n groups), the ModRM/SIB memory operand and an immediate; and
 * the text of a decoded instruction. The emulator is insn_emulate.c. */
#include "virt/insn.h"
#include "virt/insn_internal.h"
#include "lib/print.h"
#include "lib/string.h"
#include "virt/backend.h"
#include <stdarg.h>

/* ---------------------------------------------------------------- decoding */

/* What an opcode table entry says about the instruction. */
enum {
	F_MODRM = 1 << 0,    /* a ModRM memory operand follows the opcode */
	F_REG = 1 << 1,      /* ModRM.reg is a register operand */
	F_GROUP = 1 << 2,    /* ModRM.reg picks the op from groups[group] */
	F_BYTE = 1 << 3,     /* byte operands */
	F_MEM_DST = 1 << 4,  /* memory is the first operand */
	F_LOCK = 1 << 5,     /* LOCK allowed (the CPU raises #UD on any other) */
	F_IMM8 = 1 << 6,     /* an imm8, sign-extended */
	F_IMMZ = 1 << 7,     /* an immediate of the operand size, at most 4 bytes */
	F_MOFFS = 1 << 8,    /* a0-a3: an offset of the address size, no ModRM */
	F_STRING = 1 << 9,   /* string op: F3/F2 allowed, operands at rSI/rDI */
	F_SRC8 = 1 << 10,    /* MOVZX/MOVSX: the memory operand is a byte */
	F_SRC16 = 1 << 11,   /* ... a word */
	F_SRC32 = 1 << 12,   /* ... a dword (MOVSXD), a word with 66 */
	F_64ONLY = 1 << 13,  /* 63 is ARPL outside 64-bit code */
	F_OPREG = 1 << 14,   /* the register is opcode bits 2:0 (and REX.B) */
	F_STACK = 1 << 15,   /* a stack op: 64-bit operands in 64-bit code, 16 with 66 */
	F_BRANCH = 1 << 16,  /* a near branch: 64-bit operands in 64-bit code, always */
	F_IMM16 = 1 << 17,   /* an imm16, zero-extended (RET, ENTER) */
	F_WORD = 1 << 18,    /* a 16-bit memory operand whatever the operand size */
	F_SEGREG = 1 << 19,  /* ModRM.reg names a segment register */
	F_32MAX = 1 << 20,   /* INS, OUTS: at most 32-bit operands */
};

struct opdesc {
	uint8_t op;     /* enum insn_op; INSN_OP_NONE: not supported */
	uint8_t sub;    /* enum insn_alu for ALU; struct insn's sub for the rest */
	uint32_t flags; /* F_* */
	uint8_t group;  /* with F_GROUP */
};

enum { G_ALU = 1 /* 80 81 83 */, G_MOVI /* c6 c7 */, G_UNARY /* f6 f7 */, G_INCDEC /* fe */,
       G_FF, G_POP /* 8f */, G_0F00, G_0F01, G_BT /* 0f ba */, G_COUNT };

/* The r/m,reg and reg,r/m forms of one ALU op: o+0 and o+1 write memory. */
#define ALU4(o, a, lock)                                                                   \
	[(o) + 0] = { INSN_OP_ALU, a, F_MODRM | F_REG | F_BYTE | F_MEM_DST | (lock), 0 }, \
	[(o) + 1] = { INSN_OP_ALU, a, F_MODRM | F_REG | F_MEM_DST | (lock), 0 },          \
	[(o) + 2] = { INSN_OP_ALU, a, F_MODRM | F_REG | F_BYTE, 0 },                      \
	[(o) + 3] = { INSN_OP_ALU, a, F_MODRM | F_REG, 0 }
#define PUSH_POP_REG(r)                                               \
	[0x50 + (r)] = { INSN_OP_PUSH, 0, F_OPREG | F_STACK, 0 }, \
	[0x58 + (r)] = { INSN_OP_POP, 0, F_OPREG | F_STACK, 0 }
#define CMOV(cc) [0x40 + (cc)] = { INSN_OP_CMOV, cc, F_MODRM | F_REG, 0 }

static const struct opdesc one_byte[256] = {
	ALU4(0x00, INSN_ALU_ADD, F_LOCK),
	ALU4(0x08, INSN_ALU_OR, F_LOCK),
	ALU4(0x10, INSN_ALU_ADC, F_LOCK),
	ALU4(0x18, INSN_ALU_SBB, F_LOCK),
	ALU4(0x20, INSN_ALU_AND, F_LOCK),
	ALU4(0x28, INSN_ALU_SUB, F_LOCK),
	ALU4(0x30, INSN_ALU_XOR, F_LOCK),
	ALU4(0x38, INSN_ALU_CMP, 0),
	PUSH_POP_REG(0), PUSH_POP_REG(1), PUSH_POP_REG(2), PUSH_POP_REG(3),
	PUSH_POP_REG(4), PUSH_POP_REG(5), PUSH_POP_REG(6), PUSH_POP_REG(7),
	[0x63] = { INSN_OP_MOVSX, 0, F_MODRM | F_REG | F_SRC32 | F_64ONLY, 0 },
	[0x68] = { INSN_OP_PUSH, 0, F_STACK | F_IMMZ, 0 },
	[0x69] = { INSN_OP_IMUL_REG, 0, F_MODRM | F_REG | F_IMMZ, 0 },
	[0x6a] = { INSN_OP_PUSH, 0, F_STACK | F_IMM8, 0 },
	[0x6b] = { INSN_OP_IMUL_REG, 0, F_MODRM | F_REG | F_IMM8, 0 },
	[0x6c] = { INSN_OP_INS, 0, F_STRING | F_BYTE | F_MEM_DST, 0 },
	[0x6d] = { INSN_OP_INS, 0, F_STRING | F_MEM_DST | F_32MAX, 0 },
	[0x6e] = { INSN_OP_OUTS, 0, F_STRING | F_BYTE, 0 },
	[0x6f] = { INSN_OP_OUTS, 0, F_STRING | F_32MAX, 0 },
	[0x80] = { 0, 0, F_MODRM | F_GROUP | F_BYTE | F_IMMZ, G_ALU },
	[0x81] = { 0, 0, F_MODRM | F_GROUP | F_IMMZ, G_ALU },
	[0x83] = { 0, 0, F_MODRM | F_GROUP | F_IMM8, G_ALU },
	[0x84] = { INSN_OP_TEST, 0, F_MODRM | F_REG | F_BYTE | F_MEM_DST, 0 },
	[0x85] = { INSN_OP_TEST, 0, F_MODRM | F_REG | F_MEM_DST, 0 },
	[0x86] = { INSN_OP_XCHG, 0, F_MODRM | F_REG | F_BYTE | F_MEM_DST | F_LOCK, 0 },
	[0x87] = { INSN_OP_XCHG, 0, F_MODRM | F_REG | F_MEM_DST | F_LOCK, 0 },
	[0x88] = { INSN_OP_MOV_STORE, 0, F_MODRM | F_REG | F_BYTE | F_MEM_DST, 0 },
	[0x89] = { INSN_OP_MOV_STORE, 0, F_MODRM | F_REG | F_MEM_DST, 0 },
	[0x8a] = { INSN_OP_MOV_LOAD, 0, F_MODRM | F_REG | F_BYTE, 0 },
	[0x8b] = { INSN_OP_MOV_LOAD, 0, F_MODRM | F_REG, 0 },
	[0x8c] = { INSN_OP_MOV_FROM_SEG, 0, F_MODRM | F_SEGREG | F_WORD | F_MEM_DST, 0 },
	[0x8e] = { INSN_OP_MOV_TO_SEG, 0, F_MODRM | F_SEGREG | F_WORD, 0 },
	[0x8f] = { 0, 0, F_MODRM | F_GROUP | F_STACK | F_MEM_DST, G_POP },
	[0xa0] = { INSN_OP_MOV_LOAD, 0, F_MOFFS | F_BYTE, 0 },
	[0xa1] = { INSN_OP_MOV_LOAD, 0, F_MOFFS, 0 },
	[0xa2] = { INSN_OP_MOV_STORE, 0, F_MOFFS | F_BYTE | F_MEM_DST, 0 },
	[0xa3] = { INSN_OP_MOV_STORE, 0, F_MOFFS | F_MEM_DST, 0 },
	[0xa4] = { INSN_OP_MOVS, 0, F_STRING | F_BYTE | F_MEM_DST, 0 },
	[0xa5] = { INSN_OP_MOVS, 0, F_STRING | F_MEM_DST, 0 },
	[0xaa] = { INSN_OP_STOS, 0, F_STRING | F_BYTE | F_MEM_DST, 0 },
	[0xab] = { INSN_OP_STOS, 0, F_STRING | F_MEM_DST, 0 },
	[0xa6] = { INSN_OP_CMPS, 0, F_STRING | F_BYTE, 0 },
	[0xa7] = { INSN_OP_CMPS, 0, F_STRING, 0 },
	[0xac] = { INSN_OP_LODS, 0, F_STRING | F_BYTE, 0 },
	[0xad] = { INSN_OP_LODS, 0, F_STRING, 0 },
	[0xae] = { INSN_OP_SCAS, 0, F_STRING | F_BYTE, 0 },
	[0xaf] = { INSN_OP_SCAS, 0, F_STRING, 0 },
	[0xc2] = { INSN_OP_RET, 0, F_BRANCH | F_IMM16, 0 },
	[0xc3] = { INSN_OP_RET, 0, F_BRANCH, 0 },
	[0xc6] = { 0, 0, F_MODRM | F_GROUP | F_BYTE | F_IMMZ, G_MOVI },
	[0xc7] = { 0, 0, F_MODRM | F_GROUP | F_IMMZ, G_MOVI },
	[0xc8] = { INSN_OP_ENTER, 0, F_STACK | F_IMM16, 0 },
	[0xc9] = { INSN_OP_LEAVE, 0, F_STACK, 0 },
	[0xe8] = { INSN_OP_CALL, 0, F_BRANCH | F_IMMZ, 0 },
	[0xf6] = { 0, 0, F_MODRM | F_GROUP | F_BYTE, G_UNARY },
	[0xf7] = { 0, 0, F_MODRM | F_GROUP, G_UNARY },
	[0xfe] = { 0, 0, F_MODRM | F_GROUP | F_BYTE, G_INCDEC },
	[0xff] = { 0, 0, F_MODRM | F_GROUP, G_FF },
};

static const struct opdesc two_byte[256] = {
	[0x00] = { 0, 0, F_MODRM | F_GROUP, G_0F00 },
	[0x01] = { 0, 0, F_MODRM | F_GROUP, G_0F01 },
	CMOV(0x0), CMOV(0x1), CMOV(0x2), CMOV(0x3), CMOV(0x4), CMOV(0x5), CMOV(0x6), CMOV(0x7),
	CMOV(0x8), CMOV(0x9), CMOV(0xa), CMOV(0xb), CMOV(0xc), CMOV(0xd), CMOV(0xe), CMOV(0xf),
	[0xa3] = { INSN_OP_BT, INSN_BT, F_MODRM | F_REG | F_MEM_DST, 0 },
	[0xa4] = { INSN_OP_SHLD, 0, F_MODRM | F_REG | F_MEM_DST | F_IMM8, 0 },
	[0xa5] = { INSN_OP_SHLD, 1, F_MODRM | F_REG | F_MEM_DST, 0 },
	[0xab] = { INSN_OP_BT, INSN_BTS, F_MODRM | F_REG | F_MEM_DST | F_LOCK, 0 },
	[0xac] = { INSN_OP_SHRD, 0, F_MODRM | F_REG | F_MEM_DST | F_IMM8, 0 },
	[0xad] = { INSN_OP_SHRD, 1, F_MODRM | F_REG | F_MEM_DST, 0 },
	[0xaf] = { INSN_OP_IMUL_REG, 0, F_MODRM | F_REG, 0 },
	[0xb3] = { INSN_OP_BT, INSN_BTR, F_MODRM | F_REG | F_MEM_DST | F_LOCK, 0 },
	[0xb6] = { INSN_OP_MOVZX, 0, F_MODRM | F_REG | F_SRC8, 0 },
	[0xb7] = { INSN_OP_MOVZX, 0, F_MODRM | F_REG | F_SRC16, 0 },
	[0xba] = { 0, 0, F_MODRM | F_GROUP | F_IMM8 | F_MEM_DST, G_BT },
	[0xbb] = { INSN_OP_BT, INSN_BTC, F_MODRM | F_REG | F_MEM_DST | F_LOCK, 0 },
	[0xbc] = { INSN_OP_BSF, 0, F_MODRM | F_REG, 0 },
	[0xbd] = { INSN_OP_BSR, 0, F_MODRM | F_REG, 0 },
	[0xbe] = { INSN_OP_MOVSX, 0, F_MODRM | F_REG | F_SRC8, 0 },
	[0xbf] = { INSN_OP_MOVSX, 0, F_MODRM | F_REG | F_SRC16, 0 },
	[0xc0] = { INSN_OP_XADD, 0, F_MODRM | F_REG | F_BYTE | F_MEM_DST | F_LOCK, 0 },
	[0xc1] = { INSN_OP_XADD, 0, F_MODRM | F_REG | F_MEM_DST | F_LOCK, 0 },
};

/* Indexed by ModRM.reg; the flags add to the opcode's. */
static const struct opdesc groups[G_COUNT][8] = {
	[G_ALU] = {
		{ INSN_OP_ALU, INSN_ALU_ADD, F_MEM_DST | F_LOCK, 0 },
		{ INSN_OP_ALU, INSN_ALU_OR, F_MEM_DST | F_LOCK, 0 },
		{ INSN_OP_ALU, INSN_ALU_ADC, F_MEM_DST | F_LOCK, 0 },
		{ INSN_OP_ALU, INSN_ALU_SBB, F_MEM_DST | F_LOCK, 0 },
		{ INSN_OP_ALU, INSN_ALU_AND, F_MEM_DST | F_LOCK, 0 },
		{ INSN_OP_ALU, INSN_ALU_SUB, F_MEM_DST | F_LOCK, 0 },
		{ INSN_OP_ALU, INSN_ALU_XOR, F_MEM_DST | F_LOCK, 0 },
		{ INSN_OP_ALU, INSN_ALU_CMP, F_MEM_DST, 0 },
	},
	[G_MOVI] = { [0] = { INSN_OP_MOV_STORE_IMM, 0, F_MEM_DST, 0 } },
	/* /1 is an undocumented alias of TEST: left unsupported. */
	[G_UNARY] = {
		[0] = { INSN_OP_TEST, 0, F_MEM_DST | F_IMMZ, 0 },
		[2] = { INSN_OP_NOT, 0, F_MEM_DST | F_LOCK, 0 },
		[3] = { INSN_OP_NEG, 0, F_MEM_DST | F_LOCK, 0 },
		[4] = { INSN_OP_MULDIV, INSN_MUL, 0, 0 },
		[5] = { INSN_OP_MULDIV, INSN_IMUL, 0, 0 },
		[6] = { INSN_OP_MULDIV, INSN_DIV, 0, 0 },
		[7] = { INSN_OP_MULDIV, INSN_IDIV, 0, 0 },
	},
	[G_INCDEC] = {
		[0] = { INSN_OP_INC, 0, F_MEM_DST | F_LOCK, 0 },
		[1] = { INSN_OP_DEC, 0, F_MEM_DST | F_LOCK, 0 },
	},
	/* /3 is far CALL. */
	[G_FF] = {
		[0] = { INSN_OP_INC, 0, F_MEM_DST | F_LOCK, 0 },
		[1] = { INSN_OP_DEC, 0, F_MEM_DST | F_LOCK, 0 },
		[2] = { INSN_OP_CALL, 0, F_BRANCH, 0 },
		[4] = { INSN_OP_JMP, 0, F_BRANCH, 0 },
		[5] = { INSN_OP_JMP_FAR, 0, 0, 0 },
		[6] = { INSN_OP_PUSH, 0, F_STACK, 0 },
	},
	[G_POP] = { [0] = { INSN_OP_POP, 0, 0, 0 } },
	/* SLDT STR LLDT (LDT loads: not emulated) LTR VERR VERW */
	[G_0F00] = { [3] = { INSN_OP_LTR, 0, F_WORD, 0 } },
	/* The memory forms of 0f 01 are descriptor-table loads and stores but
	 * for SMSW (and LMSW, INVLPG: not emulated). */
	[G_0F01] = { [4] = { INSN_OP_SMSW, 0, F_WORD | F_MEM_DST, 0 } },
	[G_BT] = {
		[4] = { INSN_OP_BT, INSN_BT, 0, 0 },
		[5] = { INSN_OP_BT, INSN_BTS, F_LOCK, 0 },
		[6] = { INSN_OP_BT, INSN_BTR, F_LOCK, 0 },
		[7] = { INSN_OP_BT, INSN_BTC, F_LOCK, 0 },
	},
};

/* The SSE and MMX moves, selected by opcode and mandatory prefix. */
enum { V_STORE = 1, V_ALIGNED = 2, V_ZERO_UPPER = 4, V_MMX = 8, V_REXW8 = 16 /* 4 bytes, 8 with REX.W */ };
enum { PFX_NONE, PFX_66, PFX_F3, PFX_F2 };

static bool vec_form(uint8_t opcode, int pfx, uint8_t *width, unsigned *vf)
{
	static const struct { uint8_t opcode, pfx, width, flags; } forms[] = {
		{ 0x10, PFX_NONE, 16, 0 },                         /* movups xmm, m */
		{ 0x10, PFX_66, 16, 0 },                           /* movupd */
		{ 0x10, PFX_F3, 4, V_ZERO_UPPER },                 /* movss */
		{ 0x10, PFX_F2, 8, V_ZERO_UPPER },                 /* movsd */
		{ 0x11, PFX_NONE, 16, V_STORE },
		{ 0x11, PFX_66, 16, V_STORE },
		{ 0x11, PFX_F3, 4, V_STORE },
		{ 0x11, PFX_F2, 8, V_STORE },
		{ 0x28, PFX_NONE, 16, V_ALIGNED },                 /* movaps */
		{ 0x28, PFX_66, 16, V_ALIGNED },                   /* movapd */
		{ 0x29, PFX_NONE, 16, V_ALIGNED | V_STORE },
		{ 0x29, PFX_66, 16, V_ALIGNED | V_STORE },
		{ 0x2b, PFX_NONE, 16, V_ALIGNED | V_STORE },       /* movntps */
		{ 0x2b, PFX_66, 16, V_ALIGNED | V_STORE },         /* movntpd */
		{ 0x6e, PFX_NONE, 4, V_MMX | V_ZERO_UPPER | V_REXW8 }, /* movd/movq mm, r/m */
		{ 0x6e, PFX_66, 4, V_ZERO_UPPER | V_REXW8 },       /* movd/movq xmm, r/m */
		{ 0x6f, PFX_NONE, 8, V_MMX },                      /* movq mm, m64 */
		{ 0x6f, PFX_66, 16, V_ALIGNED },                   /* movdqa */
		{ 0x6f, PFX_F3, 16, 0 },                           /* movdqu */
		{ 0x7e, PFX_NONE, 4, V_MMX | V_STORE | V_REXW8 },  /* movd/movq r/m, mm */
		{ 0x7e, PFX_66, 4, V_STORE | V_REXW8 },            /* movd/movq r/m, xmm */
		{ 0x7e, PFX_F3, 8, V_ZERO_UPPER },                 /* movq xmm, m64 */
		{ 0x7f, PFX_NONE, 8, V_MMX | V_STORE },            /* movq m64, mm */
		{ 0x7f, PFX_66, 16, V_ALIGNED | V_STORE },         /* movdqa */
		{ 0x7f, PFX_F3, 16, V_STORE },                     /* movdqu */
		{ 0xd6, PFX_66, 8, V_STORE },                      /* movq m64, xmm */
		{ 0xe7, PFX_NONE, 8, V_MMX | V_STORE },            /* movntq */
		{ 0xe7, PFX_66, 16, V_ALIGNED | V_STORE },         /* movntdq */
	};
	for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
		if (forms[i].opcode == opcode && forms[i].pfx == pfx) {
			*width = forms[i].width;
			*vf = forms[i].flags;
			return true;
		}
	}
	return false;
}

/* The bytes being decoded; err says why the last next() failed. */
struct dec {
	const uint8_t *bytes;
	size_t n, pos;
	enum insn_status err;
};

static bool next(struct dec *d, uint8_t *v)
{
	if (d->pos >= INSN_MAX_LEN) {
		d->err = INSN_INVALID; /* the CPU raises #GP past 15 bytes */
		return false;
	}
	if (d->pos >= d->n) {
		d->err = INSN_TRUNCATED;
		return false;
	}
	*v = d->bytes[d->pos++];
	return true;
}

/* A little-endian field of size bytes, sign-extended or not. */
static bool next_field(struct dec *d, unsigned size, bool sign, uint64_t *v)
{
	uint64_t x = 0;
	for (unsigned i = 0; i < size; i++) {
		uint8_t b;
		if (!next(d, &b))
			return false;
		x |= (uint64_t)b << (8 * i);
	}
	*v = sign ? sext(x, size) : x;
	return true;
}

struct prefixes {
	bool opsize, addrsize, lock;
	enum insn_rep rep;
	int seg; /* enum guest_seg of the last override, or -1 */
	uint8_t rex;
};

/* Legacy prefixes and REX, up to the opcode byte. A REX counts only right
 * before the opcode; of repeated or conflicting prefixes the last one wins. */
static bool read_prefixes(struct dec *d, unsigned code_bits, struct prefixes *p, uint8_t *opcode)
{
	p->seg = -1;
	for (;;) {
		uint8_t b;
		if (!next(d, &b))
			return false;
		switch (b) {
		case 0x66: p->opsize = true; break;
		case 0x67: p->addrsize = true; break;
		case 0xf0: p->lock = true; break;
		case 0xf2: p->rep = INSN_REP_REPNE; break;
		case 0xf3: p->rep = INSN_REP_REP; break;
		case 0x26: p->seg = SEG_ES; break;
		case 0x2e: p->seg = SEG_CS; break;
		case 0x36: p->seg = SEG_SS; break;
		case 0x3e: p->seg = SEG_DS; break;
		case 0x64: p->seg = SEG_FS; break;
		case 0x65: p->seg = SEG_GS; break;
		default:
			if (code_bits == 64 && (b & 0xf0) == 0x40) {
				p->rex = b;
				continue;
			}
			*opcode = b;
			return true;
		}
		p->rex = 0; /* a REX followed by a legacy prefix is ignored */
	}
}

#define REX_W 8
#define REX_R 4
#define REX_X 2
#define REX_B 1

/* The ModRM memory operand (mod != 3), with SIB and displacement. Sets
 * *ss_default when the base is rSP or rBP, whose default segment is SS. */
static bool decode_mem(struct dec *d, uint8_t modrm, unsigned addr_size, unsigned code_bits,
		       uint8_t rex, struct insn_mem *mem, bool *ss_default)
{
	unsigned mod = modrm >> 6, rm = modrm & 7;
	uint64_t disp = 0;

	mem->base = mem->index = INSN_REG_NONE;
	mem->scale = 1;
	if (addr_size == 2) {
		/* bx+si bx+di bp+si bp+di si di bp bx; mod=0 rm=6 is [disp16]. */
		static const int8_t base16[8] = { R_BX, R_BX, R_BP, R_BP, R_SI, R_DI, R_BP, R_BX };
		static const int8_t index16[8] = { R_SI, R_DI, R_SI, R_DI, -1, -1, -1, -1 };
		if (mod == 0 && rm == 6) {
			if (!next_field(d, 2, true, &disp))
				return false;
		} else {
			mem->base = base16[rm];
			mem->index = index16[rm];
			if (mod && !next_field(d, mod == 1 ? 1 : 2, true, &disp))
				return false;
		}
		mem->disp = disp;
		*ss_default = mem->base == R_BP;
		return true;
	}

	bool disp32 = mod == 2;
	if (rm == 4) {
		uint8_t sib;
		if (!next(d, &sib))
			return false;
		unsigned index = ((sib >> 3) & 7) | (rex & REX_X ? 8 : 0);
		mem->scale = (uint8_t)(1u << (sib >> 6));
		mem->index = index == R_SP ? INSN_REG_NONE : (int8_t)index; /* 4 = none; r12 is fine */
		if ((sib & 7) == R_BP && mod == 0)
			disp32 = true; /* no base */
		else
			mem->base = (int8_t)((sib & 7) | (rex & REX_B ? 8 : 0));
	} else if (rm == 5 && mod == 0) {
		mem->rip_rel = code_bits == 64; /* [disp32] outside 64-bit code */
		disp32 = true;
	} else {
		mem->base = (int8_t)(rm | (rex & REX_B ? 8 : 0));
	}
	if ((mod == 1 || disp32) && !next_field(d, mod == 1 ? 1 : 4, true, &disp))
		return false;
	mem->disp = disp;
	*ss_default = mem->base == R_SP || mem->base == R_BP;
	return true;
}

static unsigned operand_size(unsigned code_bits, const struct prefixes *p, uint32_t flags)
{
	if (code_bits == 64) {
		if (flags & F_BRANCH)
			return 8; /* as Intel CPUs: 66 is ignored */
		if (flags & F_STACK)
			return p->rex & REX_W ? 8 : p->opsize ? 2 : 8;
		return p->rex & REX_W ? 8 : p->opsize ? 2 : 4;
	}
	if (code_bits == 32)
		return p->opsize ? 2 : 4;
	return p->opsize ? 4 : 2;
}

static unsigned address_size(unsigned code_bits, const struct prefixes *p)
{
	if (code_bits == 64)
		return p->addrsize ? 4 : 8;
	if (code_bits == 32)
		return p->addrsize ? 2 : 4;
	return p->addrsize ? 4 : 2;
}

/* The op of an opcode, resolved through its group when it has one (which
 * needs ModRM.reg). */
static struct opdesc resolve(struct opdesc d, uint8_t modrm)
{
	if (d.flags & F_GROUP) {
		struct opdesc g = groups[d.group][(modrm >> 3) & 7];
		d.op = g.op;
		d.sub = g.sub;
		d.flags |= g.flags;
	}
	return d;
}

/* An SSE or MMX move (0f xx): its mandatory prefix picks the form. */
static bool decode_vec(const struct prefixes *p, uint8_t opcode, struct insn *out)
{
	int pfx = p->rep == INSN_REP_REP ? PFX_F3 : p->rep == INSN_REP_REPNE ? PFX_F2
		  : p->opsize ? PFX_66 : PFX_NONE;
	unsigned vf;

	if (!vec_form(opcode, pfx, &out->width, &vf))
		return false;
	if ((vf & V_REXW8) && (p->rex & REX_W))
		out->width = 8;
	out->op = INSN_OP_VMOV;
	out->vec_mmx = vf & V_MMX;
	out->vec_aligned = vf & V_ALIGNED;
	out->vec_zero_upper = vf & V_ZERO_UPPER;
	out->mem_is_dst = vf & V_STORE;
	return true;
}

/* Everything after the prefixes. */
static enum insn_status decode_body(struct dec *d, unsigned code_bits, const struct prefixes *p,
				    uint8_t opcode, struct insn *out)
{
	struct opdesc desc = one_byte[opcode];
	uint8_t modrm = 0;
	bool vec = false;

	out->opcode = opcode;
	if (opcode == 0x0f) {
		if (!next(d, &out->opcode))
			return d->err;
		out->two_byte = true;
		desc = two_byte[out->opcode];
		vec = decode_vec(p, out->opcode, out);
		if (vec)
			desc.flags = F_MODRM | F_REG;
	}
	if (desc.flags & F_MODRM) {
		if (!next(d, &modrm))
			return d->err;
		if ((modrm >> 6) == 3)
			return INSN_UNSUPPORTED; /* a register operand: no memory to emulate */
		desc = resolve(desc, modrm);
	}
	if ((desc.op == INSN_OP_NONE && !vec) || ((desc.flags & F_64ONLY) && code_bits != 64))
		return INSN_UNSUPPORTED;
	/* F3/F2 elsewhere are mandatory prefixes (POPCNT, TZCNT...) or HLE hints. */
	if (p->rep && !(desc.flags & F_STRING) && !vec)
		return INSN_UNSUPPORTED;
	if (p->lock && !(desc.flags & F_LOCK))
		return INSN_INVALID;

	unsigned opsize = operand_size(code_bits, p, desc.flags);
	if (!vec) {
		out->op = desc.op;
		out->width = desc.flags & F_BYTE ? 1 : desc.flags & F_WORD ? 2 : (uint8_t)opsize;
		if ((desc.flags & F_32MAX) && out->width > 4)
			out->width = 4;
	}
	out->reg_width = out->width;
	if (desc.op == INSN_OP_ALU)
		out->alu = (enum insn_alu)desc.sub;
	else
		out->sub = desc.sub;
	out->code_bits = (uint8_t)code_bits;
	out->addr_size = (uint8_t)address_size(code_bits, p);
	if (desc.flags & (F_SRC8 | F_SRC16 | F_SRC32)) {
		unsigned src = desc.flags & F_SRC8 ? 1 : desc.flags & F_SRC16 ? 2 : 4;
		out->reg_width = (uint8_t)opsize;
		out->width = (uint8_t)(src < opsize ? src : opsize);
	}
	if (!vec)
		out->mem_is_dst = desc.flags & F_MEM_DST;
	out->lock = p->lock;
	out->rep = desc.flags & F_STRING ? p->rep : INSN_REP_NONE;
	out->rex = p->rex;

	/* Segment: SS for rSP/rBP bases, else DS; in 64-bit code only FS and GS
	 * overrides count (the others are null prefixes there). */
	bool ss_default = false;
	if (desc.flags & F_MOFFS) {
		if (!next_field(d, out->addr_size, false, &out->mem.disp))
			return d->err;
		out->mem.base = out->mem.index = INSN_REG_NONE;
		out->mem.scale = 1;
		out->has_mem = true;
	} else if (desc.flags & F_MODRM) {
		if (!decode_mem(d, modrm, out->addr_size, code_bits, p->rex, &out->mem, &ss_default))
			return d->err;
		out->has_mem = true;
	}
	out->seg = ss_default ? SEG_SS : SEG_DS;
	if (p->seg >= 0 && (code_bits != 64 || p->seg == SEG_FS || p->seg == SEG_GS)) {
		out->seg = (enum guest_seg)p->seg;
		out->seg_override = true;
	}
	if (out->op == INSN_OP_STOS || out->op == INSN_OP_INS) { /* ES:rDI cannot be overridden */
		out->seg = SEG_ES;
		out->seg_override = false;
	}

	if (desc.flags & (F_IMM8 | F_IMMZ | F_IMM16)) {
		unsigned size = desc.flags & (F_IMM8 | F_BYTE) ? 1 : desc.flags & F_IMM16 ? 2
				: opsize < 4 ? opsize : 4;
		out->has_imm = true;
		if (!next_field(d, size, !(desc.flags & F_IMM16), &out->imm))
			return d->err;
	}
	if (out->op == INSN_OP_ENTER) {
		uint8_t level;
		if (!next(d, &level))
			return d->err;
		if ((level & 31) > 1)
			return INSN_UNSUPPORTED; /* nested frames: not emulated */
		out->sub = level & 31;
	}

	/* The register operand. Byte registers 4-7 are AH CH DH BH unless there
	 * is a REX prefix (any, even 40), which makes them SPL BPL SIL DIL. */
	if (desc.flags & F_SEGREG) {
		int sreg = (modrm >> 3) & 7;
		if (sreg >= SEG_COUNT || (out->op == INSN_OP_MOV_TO_SEG && sreg == SEG_CS))
			return INSN_INVALID; /* #UD */
		out->reg = (int8_t)sreg;
	} else if (desc.flags & (F_REG | F_OPREG)) {
		int reg = desc.flags & F_REG ? ((modrm >> 3) & 7) | (p->rex & REX_R ? 8 : 0)
					     : (opcode & 7) | (p->rex & REX_B ? 8 : 0);
		if (vec && out->vec_mmx)
			reg &= 7; /* REX.R does not reach the MMX registers */
		else if (out->reg_width == 1 && !p->rex && reg >= 4) {
			reg -= 4;
			out->reg_high8 = true;
		}
		out->reg = (int8_t)reg;
	} else if (desc.flags & F_MOFFS || out->op == INSN_OP_STOS || out->op == INSN_OP_LODS ||
		   out->op == INSN_OP_SCAS) {
		out->reg = R_AX;
	}
	out->len = (uint8_t)d->pos;
	return INSN_OK;
}

enum insn_status insn_decode(const uint8_t *bytes, size_t n, unsigned code_bits, struct insn *out)
{
	struct dec d = { bytes, n, 0, INSN_OK };
	struct prefixes p = { 0 };
	uint8_t opcode;
	enum insn_status st;

	memset(out, 0, sizeof *out);
	out->reg = INSN_REG_NONE;
	out->mem.base = out->mem.index = INSN_REG_NONE;
	out->mem.scale = 1;
	if (code_bits != 16 && code_bits != 32 && code_bits != 64)
		return INSN_UNSUPPORTED;
	if (!read_prefixes(&d, code_bits, &p, &opcode))
		st = d.err;
	else
		st = decode_body(&d, code_bits, &p, opcode, out);
	if (st != INSN_OK) {
		uint8_t len = (uint8_t)d.pos;
		memset(out, 0, sizeof *out);
		out->reg = INSN_REG_NONE;
		out->mem.base = out->mem.index = INSN_REG_NONE;
		out->mem.scale = 1;
		out->len = len; /* how far decoding got, for reports */
	}
	return st;
}

const char *insn_status_name(enum insn_status s)
{
	switch (s) {
	case INSN_OK: return "ok";
	case INSN_TRUNCATED: return "truncated";
	case INSN_UNSUPPORTED: return "unsupported";
	case INSN_INVALID: return "invalid";
	}
	return "?";
}

/* -------------------------------------------------------------- describing */

struct sbuf {
	char *p;
	size_t size, pos;
};

__attribute__((format(printf, 2, 3))) static void put(struct sbuf *s, const char *fmt, ...)
{
	va_list ap;
	if (s->pos + 1 >= s->size)
		return;
	va_start(ap, fmt);
	int n = kvsnprintf(s->p + s->pos, s->size - s->pos, fmt, ap);
	va_end(ap);
	if (n > 0)
		s->pos += (size_t)n < s->size - s->pos ? (size_t)n : s->size - s->pos - 1;
}

static const char *reg_name(int reg, unsigned width, bool high8)
{
	static const char *const names[4][16] = {
		{ "al", "cl", "dl", "bl", "spl", "bpl", "sil", "dil",
		  "r8b", "r9b", "r10b", "r11b", "r12b", "r13b", "r14b", "r15b" },
		{ "ax", "cx", "dx", "bx", "sp", "bp", "si", "di",
		  "r8w", "r9w", "r10w", "r11w", "r12w", "r13w", "r14w", "r15w" },
		{ "eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi",
		  "r8d", "r9d", "r10d", "r11d", "r12d", "r13d", "r14d", "r15d" },
		{ "rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
		  "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15" },
	};
	static const char *const high[4] = { "ah", "ch", "dh", "bh" };
	if (reg < 0 || reg > 15)
		return "?";
	if (high8)
		return reg < 4 ? high[reg] : "?";
	return names[width == 1 ? 0 : width == 2 ? 1 : width == 4 ? 2 : 3][reg];
}

static const char *size_name(unsigned width)
{
	return width == 1 ? "byte" : width == 2 ? "word" : width == 4 ? "dword"
	       : width == 8 ? "qword" : "xmmword";
}

static const char *const seg_names[SEG_COUNT] = { "es", "cs", "ss", "ds", "fs", "gs" };

static void put_mem(struct sbuf *s, const struct insn *in)
{
	const struct insn_mem *m = &in->mem;
	bool any = false;

	put(s, "%s ", size_name(in->width));
	if (in->seg_override && in->seg < SEG_COUNT)
		put(s, "%s:", seg_names[in->seg]);
	put(s, "[");
	if (m->rip_rel) {
		put(s, in->addr_size == 8 ? "rip" : "eip");
		any = true;
	}
	if (m->base != INSN_REG_NONE) {
		put(s, "%s", reg_name(m->base, in->addr_size, false));
		any = true;
	}
	if (m->index != INSN_REG_NONE) {
		put(s, "%s%s", any ? "+" : "", reg_name(m->index, in->addr_size, false));
		if (m->scale > 1)
			put(s, "*%u", m->scale);
		any = true;
	}
	uint64_t disp = m->disp & width_mask(in->addr_size);
	if (!any)
		put(s, "0x%llx", (unsigned long long)disp);
	else if ((int64_t)m->disp < 0)
		put(s, "-0x%llx", (unsigned long long)-m->disp);
	else if (m->disp)
		put(s, "+0x%llx", (unsigned long long)m->disp);
	put(s, "]");
}

static const char *mnemonic(const struct insn *in)
{
	static const char *const alu[8] = { "add", "or", "adc", "sbb", "and", "sub", "xor", "cmp" };
	static const char *const bt[4] = { "bt", "bts", "btr", "btc" };
	static const char *const muldiv[4] = { "mul", "imul", "div", "idiv" };
	static const char *const cmov[16] = { "cmovo", "cmovno", "cmovb", "cmovae", "cmove",
					      "cmovne", "cmovbe", "cmova", "cmovs", "cmovns",
					      "cmovp", "cmovnp", "cmovl", "cmovge", "cmovle", "cmovg" };
	switch (in->op) {
	case INSN_OP_MOV_LOAD:
	case INSN_OP_MOV_STORE:
	case INSN_OP_MOV_STORE_IMM:
	case INSN_OP_MOV_FROM_SEG: return "mov";
	case INSN_OP_MOVZX: return "movzx";
	case INSN_OP_MOVSX: return in->two_byte ? "movsx" : "movsxd";
	case INSN_OP_ALU: return in->alu < 8 ? alu[in->alu] : "?";
	case INSN_OP_TEST: return "test";
	case INSN_OP_XCHG: return "xchg";
	case INSN_OP_NOT: return "not";
	case INSN_OP_NEG: return "neg";
	case INSN_OP_INC: return "inc";
	case INSN_OP_DEC: return "dec";
	case INSN_OP_MOVS: return "movs";
	case INSN_OP_STOS: return "stos";
	case INSN_OP_LODS: return "lods";
	case INSN_OP_CMPS: return "cmps";
	case INSN_OP_SCAS: return "scas";
	case INSN_OP_INS: return "ins";
	case INSN_OP_OUTS: return "outs";
	case INSN_OP_XADD: return "xadd";
	case INSN_OP_CMOV: return cmov[in->sub & 15];
	case INSN_OP_BT: return bt[in->sub & 3];
	case INSN_OP_BSF: return "bsf";
	case INSN_OP_BSR: return "bsr";
	case INSN_OP_SHLD: return "shld";
	case INSN_OP_SHRD: return "shrd";
	case INSN_OP_IMUL_REG: return "imul";
	case INSN_OP_MULDIV: return muldiv[in->sub & 3];
	case INSN_OP_SMSW: return "smsw";
	case INSN_OP_PUSH: return "push";
	case INSN_OP_POP: return "pop";
	case INSN_OP_CALL: return "call";
	case INSN_OP_JMP: return "jmp";
	case INSN_OP_RET: return "ret";
	case INSN_OP_LEAVE: return "leave";
	case INSN_OP_ENTER: return "enter";
	case INSN_OP_VMOV: return "vmov"; /* the SSE or MMX move: see the bytes */
	case INSN_OP_MOV_TO_SEG: return "mov";
	case INSN_OP_LTR: return "ltr";
	case INSN_OP_JMP_FAR: return "jmp far";
	default: return "?";
	}
}

/* The register operand as text. */
static void put_reg(struct sbuf *s, const struct insn *in)
{
	if (in->op == INSN_OP_VMOV)
		put(s, "%s%d", in->vec_mmx ? "mm" : "xmm", in->reg);
	else if (in->op == INSN_OP_MOV_FROM_SEG || in->op == INSN_OP_MOV_TO_SEG)
		put(s, "%s", in->reg >= 0 && in->reg < SEG_COUNT ? seg_names[in->reg] : "?");
	else
		put(s, "%s", reg_name(in->reg, in->reg_width, in->reg_high8));
}

void insn_describe(const struct insn *in, char *buf, size_t len)
{
	struct sbuf s = { buf, len, 0 };
	if (!len)
		return;
	buf[0] = 0;
	if (in->op == INSN_OP_NONE || in->op >= INSN_OP_COUNT) {
		put(&s, "(none)");
		return;
	}
	if (in->lock)
		put(&s, "lock ");
	if (in->rep)
		put(&s, in->rep == INSN_REP_REPNE ? "repne " : compares(in) ? "repe " : "rep ");
	put(&s, "%s", mnemonic(in));

	if (insn_is_string(in)) {
		put(&s, "%c", "bwdq"[in->width == 1 ? 0 : in->width == 2 ? 1 : in->width == 4 ? 2 : 3]);
		if (in->seg_override && in->seg < SEG_COUNT)
			put(&s, " (%s:)", seg_names[in->seg]);
		return;
	}
	/* The operands in Intel order: destination first. */
	const char *sep = " ";
	if (!in->mem_is_dst && in->reg != INSN_REG_NONE) {
		put(&s, "%s", sep);
		put_reg(&s, in);
		sep = ", ";
	}
	if (in->has_mem) {
		put(&s, "%s", sep);
		put_mem(&s, in);
		sep = ", ";
	}
	if (in->mem_is_dst && in->reg != INSN_REG_NONE) {
		put(&s, "%s", sep);
		put_reg(&s, in);
		sep = ", ";
	}
	/* A bit offset or shift count is a byte; ENTER's level follows its size. */
	bool imm_byte = in->op == INSN_OP_BT || in->op == INSN_OP_SHLD || in->op == INSN_OP_SHRD;
	if (in->has_imm)
		put(&s, "%s0x%llx", sep,
		    (unsigned long long)(in->imm & width_mask(imm_byte ? 1 : in->width)));
	if ((in->op == INSN_OP_SHLD || in->op == INSN_OP_SHRD) && in->sub)
		put(&s, ", cl");
	if (in->op == INSN_OP_ENTER)
		put(&s, ", 0x%x", in->sub);
}
