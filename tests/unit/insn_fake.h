/* The fake machine virt/insn.c's tests emulate on (test_insn.c,
 * test_insn_ops.c, test_insn_host.c): guest memory at MEM_BASE with every
 * access logged, XMM and MMX registers, a port log, the segment loads made,
 * and the registers and mode of one instruction. */
#pragma once
#include "tests/unit/check.h"
#include "virt/insn.h"
#include "virt/backend.h"
#include <stdint.h>
#include <string.h>

#define B(s) s, sizeof(s) - 1 /* a byte string and its length */

enum { RAX, RCX, RDX, RBX, RSP, RBP, RSI, RDI, R8, R9, R10, R11, R12, R13, R14, R15 };

#define MEM_BASE 0x1000u
#define MEM_SIZE 0x2000u

/* Guest memory at MEM_BASE, every access logged; access number fail_at
 * (1-based) fails, as do accesses outside. */
struct fake {
	uint8_t mem[MEM_SIZE];
	uint8_t xmm[16][16], mm[8][8];
	uint64_t port_val;  /* what an IN reads */
	unsigned nport;
	struct {
		uint16_t port;
		unsigned size;
		uint64_t val;
		bool in;
	} ports[4];
	struct guest_segment segs[SEG_TR + 1]; /* the last load of each */
	unsigned seg_loads;
	unsigned nacc, fail_at;
	struct {
		uint64_t addr, val;
		unsigned size;
		bool write, rmw;
	} acc[8];
};

extern const struct insn_ops fake_ops;
extern struct insn_fault fault; /* the last exception an emulation raised */

struct env {
	struct guest_mode m;
	struct vcpu_regs r;
	struct fake f;
	struct insn in;
};

#define MEM_VAL 0xf0e0d0c0b0a09080ull /* at 0x1100, where rbx points */

/* rax 0x1122334455667788, rbx 0x1100 (MEM_VAL there), rcx
 * 0x8899aabbccddeeff, rdx 0x0123456789abcdef, rsi 0x1200, rdi 0x1300, rbp
 * 0x1400, rsp 0x1500, r12 0x1600, rip 0x100, RFLAGS 2; memory a pattern. */
void env_init(struct env *e, unsigned bits);
uint64_t mem64(const struct env *e, uint64_t addr);
uint64_t mem_get(const struct env *e, uint64_t addr, unsigned size);
void mem_put(struct env *e, uint64_t addr, unsigned size, uint64_t v);
uint64_t get_reg(const struct vcpu_regs *r, int reg);
/* Decode (for e->m's code width) and emulate; -1 if it does not decode. */
enum insn_emu_status emulate(struct env *e, const char *bytes, size_t n);
/* The same, checking that the accesses made are those insn_accesses
 * announced (all of them when the instruction completed; a prefix, and no
 * write, when it raised a fault). */
enum insn_emu_status emulate_checked(struct env *e, const char *bytes, size_t n);

#define FL_CF 0x1ull
#define FL_PF 0x4ull
#define FL_AF 0x10ull
#define FL_ZF 0x40ull
#define FL_SF 0x80ull
#define FL_DF 0x400ull
#define FL_OF 0x800ull
#define FL_ARITH (FL_CF | FL_PF | FL_AF | FL_ZF | FL_SF | FL_OF)
#define NOFLAGS 0x2ull /* RFLAGS unchanged from env_init */
