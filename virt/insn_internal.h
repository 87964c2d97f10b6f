/* What the instruction decoder (insn.c) and emulator (insn_emulate.c)
 * share. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include "virt/insn.h"

/* General registers, numbered as the encoding numbers them. */
enum { R_AX, R_CX, R_DX, R_BX, R_SP, R_BP, R_SI, R_DI };

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
