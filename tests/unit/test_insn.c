/* virt/insn.c: decoding (every supported form in 16-, 32- and 64-bit code,
 * against a table whose lengths and operands were checked with objdump),
 * emulation against a fake memory, REP iterations, segments and wrapping,
 * faults, and the arithmetic flags compared with the host CPU's own for
 * random operands. */
#include "tests/rng.h"
#include "tests/unit/check.h"
#include "virt/insn.h"
#include "virt/backend.h"
#include <stdint.h>
#include <string.h>

#define B(s) s, sizeof(s) - 1 /* a byte string and its length */

enum { RAX, RCX, RDX, RBX, RSP, RBP, RSI, RDI, R8, R9, R10, R11, R12, R13, R14, R15 };

/* ------------------------------------------------------------- decoding */

struct dcase {
	unsigned bits;
	const char *bytes;
	size_t n;
	uint8_t len;
	enum insn_op op;
	const char *text; /* insn_describe */
};

static const struct dcase decode_cases[] = {
	/* 64-bit: MOV and its operands */
	{ 64, B("\x89\x48\x20"), 3, INSN_OP_MOV_STORE, "mov dword [rax+0x20], ecx" },
	{ 64, B("\x48\x89\x48\x20"), 4, INSN_OP_MOV_STORE, "mov qword [rax+0x20], rcx" },
	{ 64, B("\x66\x89\x48\x20"), 4, INSN_OP_MOV_STORE, "mov word [rax+0x20], cx" },
	{ 64, B("\x66\x48\x89\x03"), 4, INSN_OP_MOV_STORE, "mov qword [rbx], rax" },
	{ 64, B("\x48\x66\x89\x03"), 4, INSN_OP_MOV_STORE, "mov word [rbx], ax" }, /* REX not last: ignored */
	{ 64, B("\x88\x48\x20"), 3, INSN_OP_MOV_STORE, "mov byte [rax+0x20], cl" },
	{ 64, B("\x88\x60\x20"), 3, INSN_OP_MOV_STORE, "mov byte [rax+0x20], ah" },
	{ 64, B("\x40\x88\x60\x20"), 4, INSN_OP_MOV_STORE, "mov byte [rax+0x20], spl" },
	{ 64, B("\x40\x88\x78\x20"), 4, INSN_OP_MOV_STORE, "mov byte [rax+0x20], dil" },
	{ 64, B("\x44\x88\x60\x20"), 4, INSN_OP_MOV_STORE, "mov byte [rax+0x20], r12b" },
	{ 64, B("\x45\x89\x7d\x00"), 4, INSN_OP_MOV_STORE, "mov dword [r13], r15d" },
	{ 64, B("\x41\x89\x04\x24"), 4, INSN_OP_MOV_STORE, "mov dword [r12], eax" },
	{ 64, B("\x42\x89\x04\x20"), 4, INSN_OP_MOV_STORE, "mov dword [rax+r12], eax" },
	{ 64, B("\x4a\x89\x0c\xe0"), 4, INSN_OP_MOV_STORE, "mov qword [rax+r12*8], rcx" },
	{ 64, B("\x89\x04\x24"), 3, INSN_OP_MOV_STORE, "mov dword [rsp], eax" },
	{ 64, B("\x89\x44\x24\x08"), 4, INSN_OP_MOV_STORE, "mov dword [rsp+0x8], eax" },
	{ 64, B("\x89\x45\x00"), 3, INSN_OP_MOV_STORE, "mov dword [rbp], eax" },
	{ 64, B("\x41\x89\x45\xf8"), 4, INSN_OP_MOV_STORE, "mov dword [r13-0x8], eax" },
	{ 64, B("\x89\x04\x8d\x00\x10\x00\x00"), 7, INSN_OP_MOV_STORE, "mov dword [rcx*4+0x1000], eax" },
	{ 64, B("\x89\x54\x8b\x10"), 4, INSN_OP_MOV_STORE, "mov dword [rbx+rcx*4+0x10], edx" },
	{ 64, B("\x89\x05\x10\x00\x00\x00"), 6, INSN_OP_MOV_STORE, "mov dword [rip+0x10], eax" },
	{ 64, B("\x89\x05\xf0\xff\xff\xff"), 6, INSN_OP_MOV_STORE, "mov dword [rip-0x10], eax" },
	{ 64, B("\x67\x89\x05\x10\x00\x00\x00"), 7, INSN_OP_MOV_STORE, "mov dword [eip+0x10], eax" },
	{ 64, B("\x67\x89\x03"), 3, INSN_OP_MOV_STORE, "mov dword [ebx], eax" },
	{ 64, B("\x8b\x80\x00\x03\x00\x00"), 6, INSN_OP_MOV_LOAD, "mov eax, dword [rax+0x300]" },
	{ 64, B("\x8b\x04\x25\x00\x00\xe0\xfe"), 7, INSN_OP_MOV_LOAD, "mov eax, dword [0xfffffffffee00000]" },
	{ 64, B("\x64\x8b\x04\x25\x10\x00\x00\x00"), 8, INSN_OP_MOV_LOAD, "mov eax, dword fs:[0x10]" },
	{ 64, B("\x65\x48\x8b\x03"), 4, INSN_OP_MOV_LOAD, "mov rax, qword gs:[rbx]" },
	{ 64, B("\x26\x89\x03"), 3, INSN_OP_MOV_STORE, "mov dword [rbx], eax" }, /* ES: a null prefix */
	{ 64, B("\x8a\x23"), 2, INSN_OP_MOV_LOAD, "mov ah, byte [rbx]" },
	{ 64, B("\x4c\x8b\x03"), 3, INSN_OP_MOV_LOAD, "mov r8, qword [rbx]" },
	{ 64, B("\xc7\x80\xb0\x00\x00\x00\x00\x00\x00\x00"), 10, INSN_OP_MOV_STORE_IMM, "mov dword [rax+0xb0], 0x0" },
	{ 64, B("\x48\xc7\x03\xff\xff\xff\xff"), 7, INSN_OP_MOV_STORE_IMM, "mov qword [rbx], 0xffffffffffffffff" },
	{ 64, B("\x66\xc7\x03\x34\x12"), 5, INSN_OP_MOV_STORE_IMM, "mov word [rbx], 0x1234" },
	{ 64, B("\xc6\x03\x5a"), 3, INSN_OP_MOV_STORE_IMM, "mov byte [rbx], 0x5a" },
	{ 64, B("\xc6\x05\x01\x00\x00\x00\x02"), 7, INSN_OP_MOV_STORE_IMM, "mov byte [rip+0x1], 0x2" },
	{ 64, B("\xa1\x20\x00\xe0\xfe\x00\x00\x00\x00"), 9, INSN_OP_MOV_LOAD, "mov eax, dword [0xfee00020]" },
	{ 64, B("\x67\xa1\x20\x00\xe0\xfe"), 6, INSN_OP_MOV_LOAD, "mov eax, dword [0xfee00020]" },
	{ 64, B("\x48\xa3\x08\x07\x06\x05\x04\x03\x02\x01"), 10, INSN_OP_MOV_STORE, "mov qword [0x102030405060708], rax" },
	{ 64, B("\xa2\x00\x10\x00\x00\x00\x00\x00\x00"), 9, INSN_OP_MOV_STORE, "mov byte [0x1000], al" },
	{ 64, B("\x66\xa1\x00\x10\x00\x00\x00\x00\x00\x00"), 10, INSN_OP_MOV_LOAD, "mov ax, word [0x1000]" },
	/* MOVZX, MOVSX, MOVSXD */
	{ 64, B("\x0f\xb6\x03"), 3, INSN_OP_MOVZX, "movzx eax, byte [rbx]" },
	{ 64, B("\x48\x0f\xb7\x03"), 4, INSN_OP_MOVZX, "movzx rax, word [rbx]" },
	{ 64, B("\x66\x0f\xb6\x03"), 4, INSN_OP_MOVZX, "movzx ax, byte [rbx]" },
	{ 64, B("\x0f\xbe\x03"), 3, INSN_OP_MOVSX, "movsx eax, byte [rbx]" },
	{ 64, B("\x66\x0f\xbe\x03"), 4, INSN_OP_MOVSX, "movsx ax, byte [rbx]" },
	{ 64, B("\x44\x0f\xbf\x03"), 4, INSN_OP_MOVSX, "movsx r8d, word [rbx]" },
	{ 64, B("\x48\x63\x03"), 3, INSN_OP_MOVSX, "movsxd rax, dword [rbx]" },
	{ 64, B("\x63\x03"), 2, INSN_OP_MOVSX, "movsxd eax, dword [rbx]" },
	/* ALU */
	{ 64, B("\x01\x03"), 2, INSN_OP_ALU, "add dword [rbx], eax" },
	{ 64, B("\x03\x03"), 2, INSN_OP_ALU, "add eax, dword [rbx]" },
	{ 64, B("\x08\x23"), 2, INSN_OP_ALU, "or byte [rbx], ah" },
	{ 64, B("\x11\x03"), 2, INSN_OP_ALU, "adc dword [rbx], eax" },
	{ 64, B("\x1a\x03"), 2, INSN_OP_ALU, "sbb al, byte [rbx]" },
	{ 64, B("\x20\x23"), 2, INSN_OP_ALU, "and byte [rbx], ah" },
	{ 64, B("\x48\x29\x03"), 3, INSN_OP_ALU, "sub qword [rbx], rax" },
	{ 64, B("\x33\x0b"), 2, INSN_OP_ALU, "xor ecx, dword [rbx]" },
	{ 64, B("\x3b\x03"), 2, INSN_OP_ALU, "cmp eax, dword [rbx]" },
	{ 64, B("\x39\x03"), 2, INSN_OP_ALU, "cmp dword [rbx], eax" },
	{ 64, B("\x83\x0b\xff"), 3, INSN_OP_ALU, "or dword [rbx], 0xffffffff" },
	{ 64, B("\x48\x83\x0b\xff"), 4, INSN_OP_ALU, "or qword [rbx], 0xffffffffffffffff" },
	{ 64, B("\x81\x23\x00\xff\xff\xff"), 6, INSN_OP_ALU, "and dword [rbx], 0xffffff00" },
	{ 64, B("\x48\x81\x23\x00\xff\xff\x7f"), 7, INSN_OP_ALU, "and qword [rbx], 0x7fffff00" },
	{ 64, B("\x80\x33\x01"), 3, INSN_OP_ALU, "xor byte [rbx], 0x1" },
	{ 64, B("\x66\x81\x3b\x34\x12"), 5, INSN_OP_ALU, "cmp word [rbx], 0x1234" },
	{ 64, B("\x66\x83\x2b\x80"), 4, INSN_OP_ALU, "sub word [rbx], 0xff80" },
	{ 64, B("\xf0\x01\x03"), 3, INSN_OP_ALU, "lock add dword [rbx], eax" },
	{ 64, B("\xf0\x48\x83\x03\x01"), 5, INSN_OP_ALU, "lock add qword [rbx], 0x1" },
	{ 64, B("\xf0\x80\x53\x10\x01"), 5, INSN_OP_ALU, "lock adc byte [rbx+0x10], 0x1" },
	{ 64, B("\x80\x5b\x10\x01"), 4, INSN_OP_ALU, "sbb byte [rbx+0x10], 0x1" },
	/* TEST, XCHG, unary */
	{ 64, B("\x85\x03"), 2, INSN_OP_TEST, "test dword [rbx], eax" },
	{ 64, B("\x84\x3b"), 2, INSN_OP_TEST, "test byte [rbx], bh" },
	{ 64, B("\xf6\x03\x80"), 3, INSN_OP_TEST, "test byte [rbx], 0x80" },
	{ 64, B("\xf7\x03\x00\x00\x01\x00"), 6, INSN_OP_TEST, "test dword [rbx], 0x10000" },
	{ 64, B("\x48\xf7\x03\x00\x00\x00\x80"), 7, INSN_OP_TEST, "test qword [rbx], 0xffffffff80000000" },
	{ 64, B("\x87\x03"), 2, INSN_OP_XCHG, "xchg dword [rbx], eax" },
	{ 64, B("\x86\x23"), 2, INSN_OP_XCHG, "xchg byte [rbx], ah" },
	{ 64, B("\xf0\x48\x87\x0b"), 4, INSN_OP_XCHG, "lock xchg qword [rbx], rcx" },
	{ 64, B("\xf7\x13"), 2, INSN_OP_NOT, "not dword [rbx]" },
	{ 64, B("\xf6\x1b"), 2, INSN_OP_NEG, "neg byte [rbx]" },
	{ 64, B("\xff\x03"), 2, INSN_OP_INC, "inc dword [rbx]" },
	{ 64, B("\xfe\x0b"), 2, INSN_OP_DEC, "dec byte [rbx]" },
	{ 64, B("\xf0\x48\xff\x03"), 4, INSN_OP_INC, "lock inc qword [rbx]" },
	/* string */
	{ 64, B("\xa4"), 1, INSN_OP_MOVS, "movsb" },
	{ 64, B("\xf3\xa5"), 2, INSN_OP_MOVS, "rep movsd" },
	{ 64, B("\xf3\x48\xa5"), 3, INSN_OP_MOVS, "rep movsq" },
	{ 64, B("\x66\xab"), 2, INSN_OP_STOS, "stosw" },
	{ 64, B("\xf3\xaa"), 2, INSN_OP_STOS, "rep stosb" },
	{ 64, B("\x64\xaa"), 2, INSN_OP_STOS, "stosb" }, /* ES:rDI: no override */
	{ 64, B("\xac"), 1, INSN_OP_LODS, "lodsb" },
	{ 64, B("\x48\xad"), 2, INSN_OP_LODS, "lodsq" },
	{ 64, B("\x64\xa4"), 2, INSN_OP_MOVS, "movsb (fs:)" },
	{ 64, B("\xf2\xa4"), 2, INSN_OP_MOVS, "repne movsb" },
	{ 64, B("\x67\xf3\xa4"), 3, INSN_OP_MOVS, "rep movsb" },
	{ 64, B("\xf2\xf3\xa4"), 3, INSN_OP_MOVS, "rep movsb" }, /* the last of F2/F3 wins */
	{ 64, B("\xf3\xa6"), 2, INSN_OP_CMPS, "repe cmpsb" },
	{ 64, B("\xf2\x48\xa7"), 3, INSN_OP_CMPS, "repne cmpsq" },
	{ 64, B("\x64\xa7"), 2, INSN_OP_CMPS, "cmpsd (fs:)" },
	{ 64, B("\xae"), 1, INSN_OP_SCAS, "scasb" },
	{ 64, B("\xf2\x66\xaf"), 3, INSN_OP_SCAS, "repne scasw" },

	/* 32-bit code */
	{ 32, B("\x89\x48\x20"), 3, INSN_OP_MOV_STORE, "mov dword [eax+0x20], ecx" },
	{ 32, B("\x89\x05\x00\x00\xe0\xfe"), 6, INSN_OP_MOV_STORE, "mov dword [0xfee00000], eax" },
	{ 32, B("\x66\x89\x03"), 3, INSN_OP_MOV_STORE, "mov word [ebx], ax" },
	{ 32, B("\x88\x60\x20"), 3, INSN_OP_MOV_STORE, "mov byte [eax+0x20], ah" },
	{ 32, B("\x67\x89\x07"), 3, INSN_OP_MOV_STORE, "mov dword [bx], eax" },
	{ 32, B("\xa3\x20\x00\xe0\xfe"), 5, INSN_OP_MOV_STORE, "mov dword [0xfee00020], eax" },
	{ 32, B("\x67\xa3\x20\x00"), 4, INSN_OP_MOV_STORE, "mov dword [0x20], eax" },
	{ 32, B("\x36\x89\x03"), 3, INSN_OP_MOV_STORE, "mov dword ss:[ebx], eax" },
	{ 32, B("\x26\x89\x03"), 3, INSN_OP_MOV_STORE, "mov dword es:[ebx], eax" },
	{ 32, B("\x8b\x44\x24\x04"), 4, INSN_OP_MOV_LOAD, "mov eax, dword [esp+0x4]" },
	{ 32, B("\x8b\x84\x8b\x00\x01\x00\x00"), 7, INSN_OP_MOV_LOAD, "mov eax, dword [ebx+ecx*4+0x100]" },
	{ 32, B("\xc7\x05\xb0\x00\xe0\xfe\x00\x00\x00\x00"), 10, INSN_OP_MOV_STORE_IMM, "mov dword [0xfee000b0], 0x0" },
	{ 32, B("\x0f\xb7\x03"), 3, INSN_OP_MOVZX, "movzx eax, word [ebx]" },
	{ 32, B("\x83\x23\xfe"), 3, INSN_OP_ALU, "and dword [ebx], 0xfffffffe" },
	{ 32, B("\xf3\xa5"), 2, INSN_OP_MOVS, "rep movsd" },
	{ 32, B("\x67\xf3\xa5"), 3, INSN_OP_MOVS, "rep movsd" },

	/* 16-bit code */
	{ 16, B("\x89\x07"), 2, INSN_OP_MOV_STORE, "mov word [bx], ax" },
	{ 16, B("\x89\x00"), 2, INSN_OP_MOV_STORE, "mov word [bx+si], ax" },
	{ 16, B("\x89\x03"), 2, INSN_OP_MOV_STORE, "mov word [bp+di], ax" },
	{ 16, B("\x89\x46\x02"), 3, INSN_OP_MOV_STORE, "mov word [bp+0x2], ax" },
	{ 16, B("\x89\x06\x34\x12"), 4, INSN_OP_MOV_STORE, "mov word [0x1234], ax" },
	{ 16, B("\x66\x89\x07"), 3, INSN_OP_MOV_STORE, "mov dword [bx], eax" },
	{ 16, B("\x67\x89\x03"), 3, INSN_OP_MOV_STORE, "mov word [ebx], ax" },
	{ 16, B("\x67\x66\x89\x44\x8b\x10"), 6, INSN_OP_MOV_STORE, "mov dword [ebx+ecx*4+0x10], eax" },
	{ 16, B("\xa1\x34\x12"), 3, INSN_OP_MOV_LOAD, "mov ax, word [0x1234]" },
	{ 16, B("\x8b\x81\x00\x80"), 4, INSN_OP_MOV_LOAD, "mov ax, word [bx+di-0x8000]" },
	{ 16, B("\x8a\x64\xff"), 3, INSN_OP_MOV_LOAD, "mov ah, byte [si-0x1]" },
	{ 16, B("\xc7\x07\x34\x12"), 4, INSN_OP_MOV_STORE_IMM, "mov word [bx], 0x1234" },
	{ 16, B("\x66\xc7\x07\x78\x56\x34\x12"), 7, INSN_OP_MOV_STORE_IMM, "mov dword [bx], 0x12345678" },
	{ 16, B("\x26\x80\x0f\x01"), 4, INSN_OP_ALU, "or byte es:[bx], 0x1" },
	{ 16, B("\xf3\xa5"), 2, INSN_OP_MOVS, "rep movsw" },
	{ 16, B("\xf3\x66\xab"), 3, INSN_OP_STOS, "rep stosd" },
};

TEST(insn_decode_table)
{
	for (size_t i = 0; i < sizeof decode_cases / sizeof decode_cases[0]; i++) {
		const struct dcase *c = &decode_cases[i];
		struct insn in;
		char text[96];
		enum insn_status st = insn_decode((const uint8_t *)c->bytes, c->n, c->bits, &in);
		if (st != INSN_OK) {
			char m[160];
			snprintf(m, sizeof m, "case %zu (%s): status %s", i, c->text, insn_status_name(st));
			unit_fail(__FILE__, __LINE__, m);
			continue;
		}
		insn_describe(&in, text, sizeof text);
		if (in.len != c->len || in.op != c->op || strcmp(text, c->text) != 0 ||
		    in.code_bits != c->bits) {
			char m[256];
			snprintf(m, sizeof m, "case %zu: len %u op %d \"%s\", want len %u op %d \"%s\"", i,
				 in.len, in.op, text, c->len, c->op, c->text);
			unit_fail(__FILE__, __LINE__, m);
		}
		/* Every prefix of it is truncated; more bytes change nothing. */
		for (size_t k = 0; k < c->n; k++) {
			struct insn t;
			CHECK(insn_decode((const uint8_t *)c->bytes, k, c->bits, &t) == INSN_TRUNCATED);
		}
		uint8_t longer[32];
		struct insn l;
		memset(longer, 0x90, sizeof longer);
		memcpy(longer, c->bytes, c->n);
		CHECK(insn_decode(longer, sizeof longer, c->bits, &l) == INSN_OK && l.len == in.len);
	}
}

/* The fields behind the text, for a few forms. */
TEST(insn_decode_fields)
{
	struct insn in;

	REQUIRE(insn_decode((const uint8_t *)"\x42\x89\x4c\xa3\xf0", 5, 64, &in) == INSN_OK);
	CHECK(in.op == INSN_OP_MOV_STORE && in.width == 4 && in.reg == RCX && !in.reg_high8);
	CHECK(in.mem.base == RBX && in.mem.index == R12 && in.mem.scale == 4 && !in.mem.rip_rel);
	CHECK_EQ_U64(in.mem.disp, (uint64_t)-0x10);
	CHECK(in.mem_is_dst && in.addr_size == 8 && in.seg == SEG_DS && !in.seg_override);
	CHECK(in.rex == 0x42 && !in.two_byte && in.opcode == 0x89);

	REQUIRE(insn_decode((const uint8_t *)"\x8a\x23", 2, 64, &in) == INSN_OK); /* mov ah, [rbx] */
	CHECK(in.reg == RAX && in.reg_high8 && in.width == 1 && !in.mem_is_dst);
	REQUIRE(insn_decode((const uint8_t *)"\x40\x8a\x23", 3, 64, &in) == INSN_OK); /* mov spl, [rbx] */
	CHECK(in.reg == RSP && !in.reg_high8);
	REQUIRE(insn_decode((const uint8_t *)"\x8b\x23", 2, 64, &in) == INSN_OK); /* mov esp, [rbx] */
	CHECK(in.reg == RSP && !in.reg_high8);

	REQUIRE(insn_decode((const uint8_t *)"\x48\x83\x03\x80", 4, 64, &in) == INSN_OK);
	CHECK(in.has_imm && in.imm == 0xffffffffffffff80ull && in.alu == INSN_ALU_ADD && in.width == 8);
	REQUIRE(insn_decode((const uint8_t *)"\x89\x05\x10\x00\x00\x00", 6, 64, &in) == INSN_OK);
	CHECK(in.mem.rip_rel && in.mem.base == INSN_REG_NONE && in.mem.index == INSN_REG_NONE);
	CHECK_EQ_U64(in.mem.disp, 0x10);

	REQUIRE(insn_decode((const uint8_t *)"\x0f\xbf\x03", 3, 64, &in) == INSN_OK);
	CHECK(in.op == INSN_OP_MOVSX && in.width == 2 && in.reg_width == 4 && in.two_byte && in.opcode == 0xbf);
	REQUIRE(insn_decode((const uint8_t *)"\x66\x63\x03", 3, 64, &in) == INSN_OK);
	CHECK(in.width == 2 && in.reg_width == 2);

	/* Default segments: SS for rBP/rSP bases (and [bp] in 16-bit code). */
	REQUIRE(insn_decode((const uint8_t *)"\x89\x45\x08", 3, 32, &in) == INSN_OK);
	CHECK(in.seg == SEG_SS && !in.seg_override);
	REQUIRE(insn_decode((const uint8_t *)"\x89\x04\x24", 3, 32, &in) == INSN_OK);
	CHECK(in.seg == SEG_SS);
	REQUIRE(insn_decode((const uint8_t *)"\x89\x04\x25\x00\x10\x00\x00", 7, 32, &in) == INSN_OK);
	CHECK(in.seg == SEG_DS && in.mem.base == INSN_REG_NONE); /* SIB base 5, mod 0: none */
	REQUIRE(insn_decode((const uint8_t *)"\x89\x46\x02", 3, 16, &in) == INSN_OK);
	CHECK(in.seg == SEG_SS && in.addr_size == 2 && in.width == 2);
	REQUIRE(insn_decode((const uint8_t *)"\x3e\x89\x46\x02", 4, 16, &in) == INSN_OK);
	CHECK(in.seg == SEG_DS && in.seg_override);
	REQUIRE(insn_decode((const uint8_t *)"\x64\xa4", 2, 64, &in) == INSN_OK);
	CHECK(in.seg == SEG_FS && in.seg_override && in.reg == INSN_REG_NONE);
	REQUIRE(insn_decode((const uint8_t *)"\x64\xaa", 2, 64, &in) == INSN_OK);
	CHECK(in.seg == SEG_ES && !in.seg_override && in.reg == RAX);

	REQUIRE(insn_decode((const uint8_t *)"\x67\xf3\xa4", 3, 64, &in) == INSN_OK);
	CHECK(in.rep == INSN_REP_REP && in.addr_size == 4 && in.width == 1);
	REQUIRE(insn_decode((const uint8_t *)"\xa5", 1, 16, &in) == INSN_OK);
	CHECK(in.rep == INSN_REP_NONE && in.addr_size == 2 && in.width == 2);
	REQUIRE(insn_decode((const uint8_t *)"\x67\xa5", 2, 16, &in) == INSN_OK);
	CHECK(in.addr_size == 4);
}

struct bad_case {
	unsigned bits;
	const char *bytes;
	size_t n;
	enum insn_status want;
};

static const struct bad_case bad_cases[] = {
	{ 64, B(""), INSN_TRUNCATED },
	{ 64, B("\x89"), INSN_TRUNCATED },
	{ 64, B("\x89\x80\x00"), INSN_TRUNCATED },
	{ 64, B("\x66"), INSN_TRUNCATED },
	{ 64, B("\x48"), INSN_TRUNCATED },
	{ 64, B("\x0f"), INSN_TRUNCATED },
	{ 64, B("\xc7\x03\x00\x00\x00"), INSN_TRUNCATED },
	{ 64, B("\xa1\x00\x00\x00\x00"), INSN_TRUNCATED },
	{ 32, B("\x89\x04"), INSN_TRUNCATED },
	{ 16, B("\x89\x06\x34"), INSN_TRUNCATED },
	{ 64, B("\x89\xc0"), INSN_UNSUPPORTED },         /* mov eax, eax: no memory */
	{ 64, B("\x01\xd8"), INSN_UNSUPPORTED },
	{ 64, B("\xc7\xc0\x00\x00\x00\x00"), INSN_UNSUPPORTED },
	{ 64, B("\x90"), INSN_UNSUPPORTED },
	{ 64, B("\x05\x01\x00\x00\x00"), INSN_UNSUPPORTED }, /* add eax, imm */
	{ 64, B("\xc5\xf8\x77"), INSN_UNSUPPORTED },     /* VEX vzeroupper */
	{ 64, B("\xc4\xe1\x7a\x6f\x03"), INSN_UNSUPPORTED },
	{ 64, B("\x62\xf1\x7c\x48\x10\x03"), INSN_UNSUPPORTED }, /* EVEX */
	{ 64, B("\x0f\x10\x03"), INSN_UNSUPPORTED },     /* movups */
	{ 64, B("\x66\x0f\x6f\x03"), INSN_UNSUPPORTED }, /* movdqa */
	{ 64, B("\xd9\x03"), INSN_UNSUPPORTED },         /* fld */
	{ 64, B("\xf3\x89\x03"), INSN_UNSUPPORTED },     /* rep on a non-string op */
	{ 64, B("\xf3\x0f\xb8\x03"), INSN_UNSUPPORTED }, /* popcnt */
	{ 64, B("\xf7\x23"), INSN_UNSUPPORTED },         /* mul */
	{ 64, B("\xf7\x0b\x00\x00\x00\x00"), INSN_UNSUPPORTED }, /* test /1 alias */
	{ 64, B("\xff\x13"), INSN_UNSUPPORTED },         /* call [rbx] */
	{ 64, B("\xff\x33"), INSN_UNSUPPORTED },         /* push [rbx] */
	{ 64, B("\xc6\x0b\x00"), INSN_UNSUPPORTED },     /* c6 /1 */
	{ 64, B("\x82\x03\x01"), INSN_UNSUPPORTED },
	{ 64, B("\x6c"), INSN_UNSUPPORTED },             /* insb */
	{ 64, B("\x0f\xa3\x03"), INSN_UNSUPPORTED },     /* bt */
	{ 32, B("\x63\x03"), INSN_UNSUPPORTED },         /* arpl */
	{ 32, B("\x40"), INSN_UNSUPPORTED },             /* inc eax, not REX */
	{ 32, B("\x48\x89\x03"), INSN_UNSUPPORTED },
	{ 64, B("\xf0\x89\x03"), INSN_INVALID },         /* LOCK on a plain store */
	{ 64, B("\xf0\x8b\x03"), INSN_INVALID },
	{ 64, B("\xf0\x39\x03"), INSN_INVALID },         /* LOCK CMP */
	{ 64, B("\xf0\x85\x03"), INSN_INVALID },
	{ 64, B("\xf0\xa4"), INSN_INVALID },
	{ 64, B("\x66\x66\x66\x66\x66\x66\x66\x66\x66\x66\x66\x66\x66\x66\x89\x03"), INSN_INVALID },
	{ 64, B("\x66\x66\x66\x66\x66\x66\x66\x66\x66\x66\x66\x66\x66\x66\x66\x66\x66\x66"), INSN_INVALID },
	{ 64, B("\x67\x67\x67\x67\x67\x67\x67\x67\x67\x67\xc7\x03\x00\x00\x00\x00"), INSN_INVALID },
};

TEST(insn_decode_bad)
{
	for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
		const struct bad_case *c = &bad_cases[i];
		struct insn in;
		enum insn_status st = insn_decode((const uint8_t *)c->bytes, c->n, c->bits, &in);
		if (st != c->want) {
			char m[128];
			snprintf(m, sizeof m, "bad case %zu: %s, want %s", i, insn_status_name(st),
				 insn_status_name(c->want));
			unit_fail(__FILE__, __LINE__, m);
		}
		CHECK(in.op == INSN_OP_NONE && in.len <= c->n);
	}
	/* 15 bytes exactly is fine. */
	struct insn in;
	REQUIRE(insn_decode((const uint8_t *)"\x66\x66\x66\x66\x66\x66\x66\x66\x66\x66\x66\x66\x66\x89\x03",
			    15, 64, &in) == INSN_OK);
	CHECK(in.len == 15 && in.width == 2);
	CHECK(insn_decode((const uint8_t *)"\x89\x03", 2, 48, &in) == INSN_UNSUPPORTED);
}

TEST(insn_describe_small_buffers)
{
	struct insn in;
	char buf[64];
	REQUIRE(insn_decode((const uint8_t *)"\xf0\x48\x81\x44\x8b\x10\x00\x01\x00\x00", 10, 64, &in) ==
		INSN_OK);
	insn_describe(&in, buf, sizeof buf);
	CHECK(strcmp(buf, "lock add qword [rbx+rcx*4+0x10], 0x100") == 0);
	for (size_t size = 1; size < 40; size++) {
		char small[40];
		memset(small, 'x', sizeof small);
		insn_describe(&in, small, size);
		CHECK(strlen(small) == size - 1 && strncmp(small, buf, size - 1) == 0);
		CHECK(small[size] == 'x' || size == sizeof small);
	}
	insn_describe(&in, NULL, 0); /* nothing written */
	struct insn none = { 0 };
	insn_describe(&none, buf, sizeof buf);
	CHECK(strcmp(buf, "(none)") == 0);
}

/* ------------------------------------------------------------ emulation */

#define MEM_BASE 0x1000u
#define MEM_SIZE 0x2000u

/* Guest memory at MEM_BASE, every access logged; access number fail_at
 * (1-based) fails, as do accesses outside. */
struct fake {
	uint8_t mem[MEM_SIZE];
	unsigned nacc, fail_at;
	struct {
		uint64_t addr, val;
		unsigned size;
		bool write, rmw;
	} acc[8];
};

static bool fake_access(struct fake *f, uint64_t addr, unsigned size, uint64_t *val, bool write,
			bool rmw)
{
	unsigned i = f->nacc++;
	if (i < 8) {
		f->acc[i].addr = addr;
		f->acc[i].size = size;
		f->acc[i].write = write;
		f->acc[i].rmw = rmw;
		f->acc[i].val = write ? *val : 0;
	}
	if (f->nacc == f->fail_at || addr < MEM_BASE || addr + size > MEM_BASE + MEM_SIZE)
		return false;
	if (write) {
		memcpy(&f->mem[addr - MEM_BASE], val, size);
	} else {
		*val = 0;
		memcpy(val, &f->mem[addr - MEM_BASE], size);
		if (i < 8)
			f->acc[i].val = *val;
	}
	return true;
}

static bool fake_read(void *ctx, uint64_t linear, unsigned size, uint64_t *val, bool rmw)
{
	return fake_access(ctx, linear, size, val, false, rmw);
}

static bool fake_write(void *ctx, uint64_t linear, unsigned size, uint64_t val)
{
	return fake_access(ctx, linear, size, &val, true, false);
}

static const struct insn_mem_ops fake_ops = { fake_read, fake_write };

struct env {
	struct guest_mode m;
	struct vcpu_regs r;
	struct fake f;
	struct insn in;
};

#define MEM_VAL 0xf0e0d0c0b0a09080ull /* at 0x1100, where rbx points */

static void env_init(struct env *e, unsigned bits)
{
	memset(e, 0, sizeof *e);
	e->m.code_bits = bits;
	e->r.rax = 0x1122334455667788ull;
	e->r.rbx = 0x1100;
	e->r.rcx = 0x8899aabbccddeeffull;
	e->r.rdx = 0x0123456789abcdefull;
	e->r.rsi = 0x1200;
	e->r.rdi = 0x1300;
	e->r.rbp = 0x1400;
	e->r.rsp = 0x1500;
	e->r.r12 = 0x1600;
	e->r.rip = 0x100;
	e->r.rflags = 0x2;
	for (unsigned i = 0; i < MEM_SIZE; i++)
		e->f.mem[i] = (uint8_t)(i * 13 + 1);
	uint64_t v = MEM_VAL;
	memcpy(&e->f.mem[0x100], &v, 8);
}

static uint64_t mem64(const struct env *e, uint64_t addr)
{
	uint64_t v;
	memcpy(&v, &e->f.mem[addr - MEM_BASE], 8);
	return v;
}

static enum insn_emu_status emulate(struct env *e, const char *bytes, size_t n)
{
	if (insn_decode((const uint8_t *)bytes, n, e->m.code_bits, &e->in) != INSN_OK)
		return (enum insn_emu_status)-1;
	return insn_emulate(&e->in, &e->m, &e->r, &fake_ops, &e->f);
}

static uint64_t get_reg(const struct vcpu_regs *r, int reg)
{
	const uint64_t *order[16] = { &r->rax, &r->rcx, &r->rdx, &r->rbx, &r->rsp, &r->rbp,
				      &r->rsi, &r->rdi, &r->r8,  &r->r9,  &r->r10, &r->r11,
				      &r->r12, &r->r13, &r->r14, &r->r15 };
	return *order[reg];
}

#define FL_CF 0x1ull
#define FL_PF 0x4ull
#define FL_AF 0x10ull
#define FL_ZF 0x40ull
#define FL_SF 0x80ull
#define FL_DF 0x400ull
#define FL_OF 0x800ull
#define FL_ARITH (FL_CF | FL_PF | FL_AF | FL_ZF | FL_SF | FL_OF)
#define NOFLAGS 0x2ull /* RFLAGS unchanged from env_init */

struct ecase {
	unsigned bits;
	const char *bytes;
	size_t n;
	uint64_t mem;    /* the 8 bytes at 0x1100 after */
	int reg;         /* a register to check, or -1 */
	uint64_t reg_val;
	uint64_t rflags;
};

/* Each row starts from env_init: rax 0x1122334455667788, rbx 0x1100 (the
 * operand), rcx 0x8899aabbccddeeff, rdx 0x0123456789abcdef, rsp 0x1500,
 * [0x1100] = 0xf0e0d0c0b0a09080, RFLAGS 2. Values computed by hand and with
 * the host CPU. */
static const struct ecase emu_cases[] = {
	/* stores */
	{ 64, B("\x89\x03"), 0xf0e0d0c055667788ull, -1, 0, NOFLAGS },
	{ 64, B("\x48\x89\x03"), 0x1122334455667788ull, -1, 0, NOFLAGS },
	{ 64, B("\x66\x89\x03"), 0xf0e0d0c0b0a07788ull, -1, 0, NOFLAGS },
	{ 64, B("\x88\x03"), 0xf0e0d0c0b0a09088ull, -1, 0, NOFLAGS },
	{ 64, B("\x88\x23"), 0xf0e0d0c0b0a09077ull, -1, 0, NOFLAGS },  /* ah */
	{ 64, B("\x40\x88\x23"), 0xf0e0d0c0b0a09000ull, -1, 0, NOFLAGS }, /* spl */
	{ 64, B("\x44\x88\x23"), 0xf0e0d0c0b0a09000ull, -1, 0, NOFLAGS }, /* r12b */
	{ 64, B("\xc7\x03\x78\x56\x34\x12"), 0xf0e0d0c012345678ull, -1, 0, NOFLAGS },
	{ 64, B("\x48\xc7\x03\xfe\xff\xff\xff"), 0xfffffffffffffffeull, -1, 0, NOFLAGS },
	{ 64, B("\x48\xc7\x03\x01\x00\x00\x00"), 1, -1, 0, NOFLAGS },
	{ 64, B("\xc6\x03\x5a"), 0xf0e0d0c0b0a0905aull, -1, 0, NOFLAGS },
	{ 64, B("\x66\xc7\x03\x34\x12"), 0xf0e0d0c0b0a01234ull, -1, 0, NOFLAGS },
	{ 64, B("\xc7\x43\x04\x01\x00\x00\x00"), 0x00000001b0a09080ull, -1, 0, NOFLAGS },
	/* loads */
	{ 64, B("\x8b\x03"), MEM_VAL, RAX, 0xb0a09080ull, NOFLAGS },
	{ 64, B("\x66\x8b\x03"), MEM_VAL, RAX, 0x1122334455669080ull, NOFLAGS },
	{ 64, B("\x8a\x03"), MEM_VAL, RAX, 0x1122334455667780ull, NOFLAGS },
	{ 64, B("\x8a\x23"), MEM_VAL, RAX, 0x1122334455668088ull, NOFLAGS },
	{ 64, B("\x40\x8a\x23"), MEM_VAL, RSP, 0x1580, NOFLAGS },
	{ 64, B("\x48\x8b\x03"), MEM_VAL, RAX, MEM_VAL, NOFLAGS },
	{ 64, B("\x4c\x8b\x3b"), MEM_VAL, R15, MEM_VAL, NOFLAGS },
	{ 64, B("\x8b\x4b\x04"), MEM_VAL, RCX, 0xf0e0d0c0ull, NOFLAGS },
	{ 64, B("\x0f\xb6\x03"), MEM_VAL, RAX, 0x80, NOFLAGS },
	{ 64, B("\x66\x0f\xb6\x03"), MEM_VAL, RAX, 0x1122334455660080ull, NOFLAGS },
	{ 64, B("\x0f\xbe\x03"), MEM_VAL, RAX, 0xffffff80ull, NOFLAGS },
	{ 64, B("\x48\x0f\xbe\x03"), MEM_VAL, RAX, 0xffffffffffffff80ull, NOFLAGS },
	{ 64, B("\x0f\xb7\x03"), MEM_VAL, RAX, 0x9080, NOFLAGS },
	{ 64, B("\x0f\xbf\x03"), MEM_VAL, RAX, 0xffff9080ull, NOFLAGS },
	{ 64, B("\x48\x0f\xbf\x03"), MEM_VAL, RAX, 0xffffffffffff9080ull, NOFLAGS },
	{ 64, B("\x66\x0f\xbe\x03"), MEM_VAL, RAX, 0x112233445566ff80ull, NOFLAGS },
	{ 64, B("\x48\x63\x03"), MEM_VAL, RAX, 0xffffffffb0a09080ull, NOFLAGS },
	{ 64, B("\x63\x03"), MEM_VAL, RAX, 0xb0a09080ull, NOFLAGS },
	{ 64, B("\x0f\xb6\x43\x07"), MEM_VAL, RAX, 0xf0, NOFLAGS },
	/* ALU, memory destination */
	{ 64, B("\x01\x03"), 0xf0e0d0c006070808ull, -1, 0, 0x2 | FL_CF },
	{ 64, B("\x48\x01\x03"), 0x0203040506070808ull, -1, 0, 0x2 | FL_CF },
	{ 64, B("\x00\x23"), 0xf0e0d0c0b0a090f7ull, -1, 0, 0x2 | FL_SF },
	{ 64, B("\x29\x03"), 0xf0e0d0c05b3a18f8ull, -1, 0, 0x2 | FL_OF | FL_AF },
	{ 64, B("\x39\x03"), MEM_VAL, -1, 0, 0x2 | FL_OF | FL_AF },
	{ 64, B("\x21\x03"), 0xf0e0d0c010201080ull, -1, 0, 0x2 },
	{ 64, B("\x09\x03"), 0xf0e0d0c0f5e6f788ull, -1, 0, 0x2 | FL_SF | FL_PF },
	{ 64, B("\x31\x03"), 0xf0e0d0c0e5c6e708ull, -1, 0, 0x2 | FL_SF },
	{ 64, B("\x83\x03\xff"), 0xf0e0d0c0b0a0907full, -1, 0, 0x2 | FL_CF | FL_SF },
	{ 64, B("\x48\x83\x03\x80"), 0xf0e0d0c0b0a09000ull, -1, 0, 0x2 | FL_CF | FL_SF | FL_PF },
	{ 64, B("\x81\x23\x00\xff\xff\xff"), 0xf0e0d0c0b0a09000ull, -1, 0, 0x2 | FL_SF | FL_PF },
	{ 64, B("\x80\x33\x80"), 0xf0e0d0c0b0a09000ull, -1, 0, 0x2 | FL_ZF | FL_PF },
	{ 64, B("\x80\x3b\x80"), MEM_VAL, -1, 0, 0x2 | FL_ZF | FL_PF },
	{ 64, B("\x66\x81\x2b\x80\x90"), 0xf0e0d0c0b0a00000ull, -1, 0, 0x2 | FL_ZF | FL_PF },
	{ 64, B("\xf0\x83\x0b\x01"), 0xf0e0d0c0b0a09081ull, -1, 0, 0x2 | FL_SF | FL_PF },
	/* ALU, register destination */
	{ 64, B("\x03\x03"), MEM_VAL, RAX, 0x06070808ull, 0x2 | FL_CF },
	{ 64, B("\x2b\x03"), MEM_VAL, RAX, 0xa4c5e708ull, 0x2 | FL_CF | FL_SF | FL_OF },
	{ 64, B("\x3b\x03"), MEM_VAL, RAX, 0x1122334455667788ull, 0x2 | FL_CF | FL_SF | FL_OF },
	{ 64, B("\x22\x23"), MEM_VAL, RAX, 0x1122334455660088ull, 0x2 | FL_ZF | FL_PF },
	{ 64, B("\x66\x0b\x0b"), MEM_VAL, RCX, 0x8899aabbccddfeffull, 0x2 | FL_SF | FL_PF },
	{ 64, B("\x48\x33\x13"), MEM_VAL, RDX, 0xf1c395a7390b5d6full, 0x2 | FL_SF | FL_PF },
	/* TEST, XCHG, unary */
	{ 64, B("\x85\x03"), MEM_VAL, RAX, 0x1122334455667788ull, 0x2 },
	{ 64, B("\xf6\x03\x80"), MEM_VAL, -1, 0, 0x2 | FL_SF },
	{ 64, B("\xf6\x03\x01"), MEM_VAL, -1, 0, 0x2 | FL_ZF | FL_PF },
	{ 64, B("\x87\x03"), 0xf0e0d0c055667788ull, RAX, 0xb0a09080ull, NOFLAGS },
	{ 64, B("\x48\x87\x03"), 0x1122334455667788ull, RAX, MEM_VAL, NOFLAGS },
	{ 64, B("\x86\x23"), 0xf0e0d0c0b0a09077ull, RAX, 0x1122334455668088ull, NOFLAGS },
	{ 64, B("\xf7\x13"), 0xf0e0d0c04f5f6f7full, -1, 0, NOFLAGS },
	{ 64, B("\xf6\x1b"), 0xf0e0d0c0b0a09080ull, -1, 0, 0x2 | FL_CF | FL_SF | FL_OF },
	{ 64, B("\x48\xf7\x1b"), 0x0f1f2f3f4f5f6f80ull, -1, 0, 0x2 | FL_CF },
	{ 64, B("\xff\x03"), 0xf0e0d0c0b0a09081ull, -1, 0, 0x2 | FL_SF | FL_PF },
	{ 64, B("\xfe\x0b"), 0xf0e0d0c0b0a0907full, -1, 0, 0x2 | FL_OF | FL_AF },
	{ 64, B("\x66\xff\x0b"), 0xf0e0d0c0b0a0907full, -1, 0, 0x2 | FL_SF | FL_AF },
	/* moffs */
	{ 64, B("\xa1\x04\x11\x00\x00\x00\x00\x00\x00"), MEM_VAL, RAX, 0xf0e0d0c0ull, NOFLAGS },
	{ 64, B("\x48\xa3\x00\x11\x00\x00\x00\x00\x00\x00"), 0x1122334455667788ull, -1, 0, NOFLAGS },
	{ 64, B("\xa2\x01\x11\x00\x00\x00\x00\x00\x00"), 0xf0e0d0c0b0a08880ull, -1, 0, NOFLAGS },
	{ 32, B("\xa1\x00\x11\x00\x00"), MEM_VAL, RAX, 0xb0a09080ull, NOFLAGS },
	{ 16, B("\xa1\x00\x11"), MEM_VAL, RAX, 0x1122334455669080ull, NOFLAGS },
	/* 32- and 16-bit code */
	{ 32, B("\x89\x03"), 0xf0e0d0c055667788ull, -1, 0, NOFLAGS },
	{ 32, B("\x8b\x03"), MEM_VAL, RAX, 0xb0a09080ull, NOFLAGS },
	{ 32, B("\x66\x8b\x03"), MEM_VAL, RAX, 0x1122334455669080ull, NOFLAGS },
	{ 32, B("\x8a\x63\x01"), MEM_VAL, RAX, 0x1122334455669088ull, NOFLAGS },
	{ 32, B("\x83\x23\xf0"), 0xf0e0d0c0b0a09080ull, -1, 0, 0x2 | FL_SF },
	{ 16, B("\x89\x07"), 0xf0e0d0c0b0a07788ull, -1, 0, NOFLAGS },
	{ 16, B("\x66\x89\x07"), 0xf0e0d0c055667788ull, -1, 0, NOFLAGS },
	{ 16, B("\x8b\x07"), MEM_VAL, RAX, 0x1122334455669080ull, NOFLAGS },
	{ 16, B("\x66\x8b\x47\x04"), MEM_VAL, RAX, 0xf0e0d0c0ull, NOFLAGS },
	{ 16, B("\x67\x8b\x03"), MEM_VAL, RAX, 0x1122334455669080ull, NOFLAGS },
	{ 16, B("\x81\x07\x80\x6f"), 0xf0e0d0c0b0a00000ull, -1, 0, 0x2 | FL_ZF | FL_PF | FL_CF },
};

TEST(insn_emulate_table)
{
	for (size_t i = 0; i < sizeof emu_cases / sizeof emu_cases[0]; i++) {
		const struct ecase *c = &emu_cases[i];
		struct env e;
		env_init(&e, c->bits);
		enum insn_emu_status st = emulate(&e, c->bytes, c->n);
		uint64_t mem = mem64(&e, 0x1100);
		uint64_t reg = c->reg >= 0 ? get_reg(&e.r, c->reg) : 0;
		if (st != INSN_EMU_DONE || mem != c->mem || (c->reg >= 0 && reg != c->reg_val) ||
		    e.r.rflags != c->rflags || e.r.rip != 0x100 + c->n) {
			char m[256];
			snprintf(m, sizeof m,
				 "emu case %zu: status %d mem %llx reg %llx rflags %llx rip %llx", i, st,
				 (unsigned long long)mem, (unsigned long long)reg,
				 (unsigned long long)e.r.rflags, (unsigned long long)e.r.rip);
			unit_fail(__FILE__, __LINE__, m);
		}
		/* What insn_accesses promised is what happened. */
		struct env e2;
		struct insn_access acc[2];
		env_init(&e2, c->bits);
		REQUIRE(insn_decode((const uint8_t *)c->bytes, c->n, c->bits, &e2.in) == INSN_OK);
		unsigned n = insn_accesses(&e2.in, &e2.m, &e2.r, acc);
		CHECK(n == e.f.nacc);
		for (unsigned k = 0; k < n && k < e.f.nacc; k++)
			CHECK(acc[k].linear == e.f.acc[k].addr && acc[k].size == e.f.acc[k].size &&
			      acc[k].write == e.f.acc[k].write);
		CHECK(n && acc[0].linear == insn_mem_linear(&e2.in, &e2.m, &e2.r));
	}
}

/* A read-modify-write reads with rmw set; a plain load does not. */
TEST(insn_emulate_rmw_flag)
{
	struct env e;
	env_init(&e, 64);
	REQUIRE(emulate(&e, B("\x01\x03")) == INSN_EMU_DONE);
	CHECK(e.f.nacc == 2 && e.f.acc[0].rmw && !e.f.acc[0].write && e.f.acc[1].write);
	env_init(&e, 64);
	REQUIRE(emulate(&e, B("\x39\x03")) == INSN_EMU_DONE); /* cmp: no write */
	CHECK(e.f.nacc == 1 && !e.f.acc[0].rmw);
	env_init(&e, 64);
	REQUIRE(emulate(&e, B("\x8b\x03")) == INSN_EMU_DONE);
	CHECK(e.f.nacc == 1 && !e.f.acc[0].rmw && e.f.acc[0].size == 4);
	env_init(&e, 64);
	REQUIRE(emulate(&e, B("\x87\x03")) == INSN_EMU_DONE);
	CHECK(e.f.nacc == 2 && e.f.acc[0].rmw);
	env_init(&e, 64);
	REQUIRE(emulate(&e, B("\x89\x03")) == INSN_EMU_DONE); /* store: no read */
	CHECK(e.f.nacc == 1 && e.f.acc[0].write && e.f.acc[0].val == 0x55667788);
}

/* ADC and SBB take CF in; INC and DEC keep it. */
TEST(insn_emulate_carry_in)
{
	struct env e;
	env_init(&e, 64);
	e.r.rflags = 0x2 | FL_CF;
	REQUIRE(emulate(&e, B("\x80\x13\x7f")) == INSN_EMU_DONE); /* adc byte [rbx], 0x7f */
	CHECK_EQ_U64(mem64(&e, 0x1100), 0xf0e0d0c0b0a09000ull);
	CHECK_EQ_U64(e.r.rflags, 0x2 | FL_CF | FL_ZF | FL_PF | FL_AF);
	env_init(&e, 64);
	e.r.rflags = 0x2 | FL_CF;
	REQUIRE(emulate(&e, B("\x80\x1b\x80")) == INSN_EMU_DONE); /* sbb byte [rbx], 0x80 */
	CHECK_EQ_U64(mem64(&e, 0x1100), 0xf0e0d0c0b0a090ffull);
	CHECK_EQ_U64(e.r.rflags, 0x2 | FL_CF | FL_SF | FL_PF | FL_AF);
	env_init(&e, 64);
	e.r.rflags = 0x2 | FL_CF | FL_ZF;
	REQUIRE(emulate(&e, B("\xff\x03")) == INSN_EMU_DONE); /* inc: CF stays */
	CHECK_EQ_U64(e.r.rflags, 0x2 | FL_CF | FL_SF | FL_PF);
	env_init(&e, 64);
	e.r.rflags = 0x2 | FL_DF | (1ull << 9);  /* other flags untouched */
	REQUIRE(emulate(&e, B("\x39\x03")) == INSN_EMU_DONE);
	CHECK_EQ_U64(e.r.rflags, 0x2 | FL_DF | (1ull << 9) | FL_OF | FL_AF);
}

/* ------------------------------------------------ segments and addresses */

TEST(insn_emulate_segments)
{
	struct env e;
	struct insn in;

	/* 64-bit: FS and GS bases count, the others are zero. */
	env_init(&e, 64);
	e.m.seg_base[SEG_FS] = 0x1000;
	e.m.seg_base[SEG_GS] = 0xffff880000000000ull;
	e.m.seg_base[SEG_DS] = e.m.seg_base[SEG_ES] = e.m.seg_base[SEG_SS] = 0x5000;
	REQUIRE(emulate(&e, B("\x64\x8b\x04\x25\x00\x01\x00\x00")) == INSN_EMU_DONE); /* fs:[0x100] */
	CHECK_EQ_U64(e.r.rax, 0xb0a09080ull);
	REQUIRE(insn_decode((const uint8_t *)"\x65\x8b\x03", 3, 64, &in) == INSN_OK);
	CHECK_EQ_U64(insn_mem_linear(&in, &e.m, &e.r), 0xffff880000001100ull);
	REQUIRE(insn_decode((const uint8_t *)"\x36\x8b\x03", 3, 64, &in) == INSN_OK);
	CHECK_EQ_U64(insn_mem_linear(&in, &e.m, &e.r), 0x1100);
	REQUIRE(insn_decode((const uint8_t *)"\x8b\x45\x00", 3, 64, &in) == INSN_OK); /* [rbp]: SS, base 0 */
	CHECK_EQ_U64(insn_mem_linear(&in, &e.m, &e.r), 0x1400);

	/* 32-bit: every base counts and the sum wraps at 4 GiB. */
	env_init(&e, 32);
	e.m.seg_base[SEG_DS] = 0xfffff000;
	e.m.seg_base[SEG_SS] = 0x100;
	e.m.seg_base[SEG_ES] = 0x200;
	e.r.rbx = 0x2100;
	REQUIRE(emulate(&e, B("\x8b\x03")) == INSN_EMU_DONE);
	CHECK(e.f.acc[0].addr == 0x1100);
	CHECK_EQ_U64(e.r.rax, 0xb0a09080ull);
	REQUIRE(insn_decode((const uint8_t *)"\x8b\x45\x00", 3, 32, &in) == INSN_OK);
	CHECK_EQ_U64(insn_mem_linear(&in, &e.m, &e.r), 0x1500);
	REQUIRE(insn_decode((const uint8_t *)"\x26\x8b\x45\x00", 4, 32, &in) == INSN_OK);
	CHECK_EQ_U64(insn_mem_linear(&in, &e.m, &e.r), 0x1600);
	e.r.rbx = 0xffffff00; /* ebx + 0x200 wraps at the address size */
	REQUIRE(insn_decode((const uint8_t *)"\x8b\x83\x00\x02\x00\x00", 6, 32, &in) == INSN_OK);
	CHECK_EQ_U64(insn_mem_linear(&in, &e.m, &e.r), (0x100 + 0xfffff000ull) & 0xffffffff);
	e.r.rbx = 0x1234567800001100ull; /* bits 63:32 never count outside 64-bit code */
	REQUIRE(insn_decode((const uint8_t *)"\x8b\x03", 2, 32, &in) == INSN_OK);
	CHECK_EQ_U64(insn_mem_linear(&in, &e.m, &e.r), 0x100);

	/* 16-bit: real-mode style bases, offsets wrap at 64 KiB. */
	env_init(&e, 16);
	e.m.seg_base[SEG_DS] = 0x1000;
	e.m.seg_base[SEG_SS] = 0x2000;
	e.r.rbx = 0xffff;
	e.r.rsi = 0x0101;
	e.r.rbp = 0x0080;
	e.r.rdi = 0x0010;
	REQUIRE(insn_decode((const uint8_t *)"\x8b\x00", 2, 16, &in) == INSN_OK); /* [bx+si] */
	CHECK_EQ_U64(insn_mem_linear(&in, &e.m, &e.r), 0x1100);
	REQUIRE(insn_decode((const uint8_t *)"\x8b\x43\x04", 3, 16, &in) == INSN_OK); /* [bp+di+4] */
	CHECK_EQ_U64(insn_mem_linear(&in, &e.m, &e.r), 0x2094);
	REQUIRE(emulate(&e, B("\x8b\x00")) == INSN_EMU_DONE);
	CHECK_EQ_U64(e.r.rax, 0x1122334455669080ull);
	REQUIRE(insn_decode((const uint8_t *)"\x67\x8b\x03", 3, 16, &in) == INSN_OK); /* [ebx] */
	CHECK_EQ_U64(insn_mem_linear(&in, &e.m, &e.r), 0x1000 + 0xffff);
	e.m.seg_base[SEG_DS] = 0xffff0;
	REQUIRE(insn_decode((const uint8_t *)"\x8b\x07", 2, 16, &in) == INSN_OK);
	CHECK_EQ_U64(insn_mem_linear(&in, &e.m, &e.r), 0xffff0 + 0xffff); /* no A20 wrap */
}

TEST(insn_emulate_rip_relative)
{
	struct env e;
	struct insn in;
	env_init(&e, 64);
	e.r.rip = 0x10f0;
	/* mov eax, [rip+0xa]: next instruction at 0x10f6, + 0xa = 0x1100 */
	REQUIRE(emulate(&e, B("\x8b\x05\x0a\x00\x00\x00")) == INSN_EMU_DONE);
	CHECK_EQ_U64(e.r.rax, 0xb0a09080ull);
	CHECK_EQ_U64(e.r.rip, 0x10f6);
	/* c6 05 disp32 imm8: the immediate counts in the length */
	e.r.rip = 0x10f0;
	REQUIRE(emulate(&e, B("\xc6\x05\x09\x00\x00\x00\x42")) == INSN_EMU_DONE);
	CHECK(e.f.acc[1].addr == 0x1100 && e.f.acc[1].val == 0x42);
	/* 67: EIP-relative, wrapped to 32 bits */
	e.r.rip = 0xfffffff0ull;
	REQUIRE(insn_decode((const uint8_t *)"\x67\x8b\x05\x09\x11\x00\x00", 7, 64, &in) == INSN_OK);
	CHECK_EQ_U64(insn_mem_linear(&in, &e.m, &e.r), 0x1100);
	e.r.rip = 0x7ffffffff000ull;
	REQUIRE(insn_decode((const uint8_t *)"\x8b\x05\xfa\xff\xff\xff", 6, 64, &in) == INSN_OK);
	CHECK_EQ_U64(insn_mem_linear(&in, &e.m, &e.r), 0x7ffffffff000ull);
}

TEST(insn_emulate_rip_wrap)
{
	struct env e;
	env_init(&e, 16);
	e.r.rip = 0xfffe;
	REQUIRE(emulate(&e, B("\x8b\x47\x00")) == INSN_EMU_DONE);
	CHECK_EQ_U64(e.r.rip, 0x1);
	env_init(&e, 32);
	e.r.rip = 0xffffffff;
	REQUIRE(emulate(&e, B("\x8b\x03")) == INSN_EMU_DONE);
	CHECK_EQ_U64(e.r.rip, 0x1);
}

/* ----------------------------------------------------------------- string */

TEST(insn_emulate_rep_movs)
{
	struct env e;
	env_init(&e, 64);
	e.r.rcx = 3;
	e.r.rsi = 0x1100;
	e.r.rdi = 0x1800;
	REQUIRE(insn_decode((const uint8_t *)"\xf3\xa5", 2, 64, &e.in) == INSN_OK);
	CHECK(insn_emulate(&e.in, &e.m, &e.r, &fake_ops, &e.f) == INSN_EMU_AGAIN);
	CHECK(e.r.rcx == 2 && e.r.rsi == 0x1104 && e.r.rdi == 0x1804 && e.r.rip == 0x100);
	CHECK(e.f.nacc == 2 && e.f.acc[0].addr == 0x1100 && !e.f.acc[0].write &&
	      e.f.acc[1].addr == 0x1800 && e.f.acc[1].write && e.f.acc[1].val == 0xb0a09080);
	CHECK(insn_emulate(&e.in, &e.m, &e.r, &fake_ops, &e.f) == INSN_EMU_AGAIN);
	CHECK(insn_emulate(&e.in, &e.m, &e.r, &fake_ops, &e.f) == INSN_EMU_DONE);
	CHECK(e.r.rcx == 0 && e.r.rsi == 0x110c && e.r.rdi == 0x180c && e.r.rip == 0x102);
	CHECK(memcmp(&e.f.mem[0x800], &e.f.mem[0x100], 12) == 0);
	CHECK(e.r.rflags == 0x2);

	/* Count 0 at entry: done, no access. */
	e.f.nacc = 0;
	e.r.rip = 0x100;
	CHECK(insn_emulate(&e.in, &e.m, &e.r, &fake_ops, &e.f) == INSN_EMU_DONE);
	CHECK(e.f.nacc == 0 && e.r.rip == 0x102 && e.r.rsi == 0x110c);
	struct insn_access acc[2];
	CHECK(insn_accesses(&e.in, &e.m, &e.r, acc) == 0);

	/* Without REP: one move, whatever RCX says. */
	env_init(&e, 64);
	e.r.rsi = 0x1100;
	e.r.rdi = 0x1800;
	REQUIRE(emulate(&e, B("\x48\xa5")) == INSN_EMU_DONE);
	CHECK(e.r.rcx == 0x8899aabbccddeeffull && e.r.rsi == 0x1108 && e.r.rdi == 0x1808);
	CHECK_EQ_U64(mem64(&e, 0x1800), MEM_VAL);
}

TEST(insn_emulate_string_df)
{
	struct env e;
	env_init(&e, 64);
	e.r.rflags = 0x2 | FL_DF;
	e.r.rcx = 2;
	e.r.rsi = 0x1107;
	e.r.rdi = 0x1807;
	REQUIRE(insn_decode((const uint8_t *)"\xf3\xa4", 2, 64, &e.in) == INSN_OK);
	CHECK(insn_emulate(&e.in, &e.m, &e.r, &fake_ops, &e.f) == INSN_EMU_AGAIN);
	CHECK(e.r.rsi == 0x1106 && e.r.rdi == 0x1806 && e.r.rcx == 1);
	CHECK(insn_emulate(&e.in, &e.m, &e.r, &fake_ops, &e.f) == INSN_EMU_DONE);
	CHECK(e.r.rsi == 0x1105 && e.r.rdi == 0x1805 && e.r.rcx == 0);
	CHECK(e.f.mem[0x807] == 0xf0 && e.f.mem[0x806] == 0xe0);

	/* STOS and LODS, backwards, 8 bytes. */
	env_init(&e, 64);
	e.r.rflags = 0x2 | FL_DF;
	e.r.rdi = 0x1800;
	REQUIRE(emulate(&e, B("\x48\xab")) == INSN_EMU_DONE);
	CHECK_EQ_U64(mem64(&e, 0x1800), 0x1122334455667788ull);
	CHECK_EQ_U64(e.r.rdi, 0x17f8);
	e.r.rsi = 0x1100;
	REQUIRE(emulate(&e, B("\xad")) == INSN_EMU_DONE);
	CHECK_EQ_U64(e.r.rax, 0xb0a09080ull);
	CHECK_EQ_U64(e.r.rsi, 0x10fc);
	REQUIRE(emulate(&e, B("\xac")) == INSN_EMU_DONE);
	CHECK_EQ_U64(e.r.rax, 0xb0a09000ull | e.f.mem[0xfc]);
	CHECK_EQ_U64(e.r.rsi, 0x10fb);
}

TEST(insn_emulate_rep_stos_lods)
{
	struct env e;
	env_init(&e, 64);
	e.r.rcx = 4;
	e.r.rdi = 0x1800;
	REQUIRE(insn_decode((const uint8_t *)"\xf3\x66\xab", 3, 64, &e.in) == INSN_OK);
	enum insn_emu_status st;
	int iters = 0;
	while ((st = insn_emulate(&e.in, &e.m, &e.r, &fake_ops, &e.f)) == INSN_EMU_AGAIN)
		iters++;
	CHECK(st == INSN_EMU_DONE && iters == 3 && e.r.rcx == 0 && e.r.rdi == 0x1808);
	CHECK_EQ_U64(mem64(&e, 0x1800), 0x7788778877887788ull);
	CHECK(e.r.rip == 0x103);

	env_init(&e, 64);
	e.r.rcx = 2;
	e.r.rsi = 0x1100;
	REQUIRE(insn_decode((const uint8_t *)"\xf3\x48\xad", 3, 64, &e.in) == INSN_OK);
	CHECK(insn_emulate(&e.in, &e.m, &e.r, &fake_ops, &e.f) == INSN_EMU_AGAIN);
	CHECK_EQ_U64(e.r.rax, MEM_VAL);
	CHECK(insn_emulate(&e.in, &e.m, &e.r, &fake_ops, &e.f) == INSN_EMU_DONE);
	CHECK_EQ_U64(e.r.rax, mem64(&e, 0x1108));

	/* STOS ignores a segment override; MOVS's source takes one. */
	env_init(&e, 64);
	e.m.seg_base[SEG_FS] = 0x700;
	e.r.rdi = 0x1800;
	e.r.rsi = 0xa00;
	REQUIRE(emulate(&e, B("\x64\xa4")) == INSN_EMU_DONE);
	CHECK(e.f.acc[0].addr == 0x1100 && e.f.acc[1].addr == 0x1800);
	REQUIRE(emulate(&e, B("\x64\xaa")) == INSN_EMU_DONE);
	CHECK(e.f.acc[2].addr == 0x1801);
}

/* CMPS and SCAS (kvm-unit-tests emulator: repe cmps against MMIO, scas):
 * flags as CMP of the first operand with the second; REPE ends where they
 * differ, REPNE where they match, else when the count runs out. */
TEST(insn_emulate_cmps_scas)
{
	struct env e;
	enum insn_emu_status st;
	int iters = 0;

	/* repe cmpsb over 8 equal bytes, the 9th differs: 9 iterations. */
	env_init(&e, 64);
	memcpy(&e.f.mem[0x800], &e.f.mem[0x100], 8);
	e.f.mem[0x808] = (uint8_t)(e.f.mem[0x108] + 1);
	e.r.rcx = 20;
	e.r.rsi = 0x1100;
	e.r.rdi = 0x1800;
	REQUIRE(insn_decode((const uint8_t *)"\xf3\xa6", 2, 64, &e.in) == INSN_OK);
	struct insn_access acc[2];
	CHECK(insn_accesses(&e.in, &e.m, &e.r, acc) == 2);
	CHECK(acc[0].linear == 0x1100 && !acc[0].write && acc[1].linear == 0x1800 && !acc[1].write);
	while ((st = insn_emulate(&e.in, &e.m, &e.r, &fake_ops, &e.f)) == INSN_EMU_AGAIN)
		iters++;
	CHECK(st == INSN_EMU_DONE && iters == 8 && e.r.rip == 0x102);
	CHECK(e.r.rcx == 11 && e.r.rsi == 0x1109 && e.r.rdi == 0x1809);
	CHECK((e.r.rflags & FL_ARITH) == (FL_CF | FL_PF | FL_AF | FL_SF)); /* x - (x+1) = -1 */
	CHECK(e.f.nacc == 18); /* two reads each */
	for (unsigned i = 0; i < 8; i++)
		CHECK(!e.f.acc[i].write);

	/* All equal: the count runs out with ZF set. */
	env_init(&e, 64);
	memcpy(&e.f.mem[0x800], &e.f.mem[0x100], 16);
	e.r.rcx = 2;
	e.r.rsi = 0x1100;
	e.r.rdi = 0x1800;
	REQUIRE(insn_decode((const uint8_t *)"\xf3\x48\xa7", 3, 64, &e.in) == INSN_OK);
	CHECK(insn_emulate(&e.in, &e.m, &e.r, &fake_ops, &e.f) == INSN_EMU_AGAIN);
	CHECK(insn_emulate(&e.in, &e.m, &e.r, &fake_ops, &e.f) == INSN_EMU_DONE);
	CHECK(e.r.rcx == 0 && e.r.rsi == 0x1110 && e.r.rdi == 0x1810 && (e.r.rflags & FL_ZF));

	/* repne scasw finds AX at the third word, backwards from DI. */
	env_init(&e, 64);
	e.r.rflags = 0x2 | FL_DF;
	e.r.rax = 0xffff0000u | e.f.mem[0x7fc] | e.f.mem[0x7fd] << 8;
	e.r.rcx = 10;
	e.r.rdi = 0x1800;
	REQUIRE(insn_decode((const uint8_t *)"\xf2\x66\xaf", 3, 64, &e.in) == INSN_OK);
	iters = 0;
	while ((st = insn_emulate(&e.in, &e.m, &e.r, &fake_ops, &e.f)) == INSN_EMU_AGAIN)
		iters++;
	CHECK(st == INSN_EMU_DONE && iters == 2 && e.r.rcx == 7 && e.r.rdi == 0x17fa);
	CHECK((e.r.rflags & FL_ARITH) == (FL_ZF | FL_PF));
	CHECK(e.f.acc[0].addr == 0x1800 && e.f.acc[2].addr == 0x17fc);

	/* scasb without REP: one compare of AL, RCX untouched. */
	env_init(&e, 64);
	e.r.rdi = 0x1100;
	REQUIRE(emulate(&e, B("\xae")) == INSN_EMU_DONE);
	CHECK(e.r.rdi == 0x1101 && e.r.rcx == 0x8899aabbccddeeffull);
	CHECK(!(e.r.rflags & FL_ZF)); /* 0x88 - 0x80 */
}

/* The count and pointers move at the address size. */
TEST(insn_emulate_string_addr_size)
{
	struct env e;
	/* 16-bit: CX, SI, DI; the upper bits stay, the offsets wrap. */
	env_init(&e, 16);
	e.m.seg_base[SEG_DS] = (0x1100 - 0xffffu) & 0xffffffffu; /* base + SI wraps at 4 GiB */
	e.m.seg_base[SEG_ES] = (0x1800 - 0xfffeu) & 0xffffffffu;
	e.r.rcx = 0xabcd0000ull | 2;
	e.r.rsi = 0x5555ffffull;
	e.r.rdi = 0x6666fffeull;
	REQUIRE(insn_decode((const uint8_t *)"\xf3\xa4", 2, 16, &e.in) == INSN_OK);
	CHECK(insn_emulate(&e.in, &e.m, &e.r, &fake_ops, &e.f) == INSN_EMU_AGAIN);
	CHECK(e.f.acc[0].addr == 0x1100 && e.f.acc[1].addr == 0x1800);
	CHECK_EQ_U64(e.r.rsi, 0x55550000ull);
	CHECK_EQ_U64(e.r.rdi, 0x6666ffffull);
	CHECK_EQ_U64(e.r.rcx, 0xabcd0001ull);

	env_init(&e, 16);
	e.m.seg_base[SEG_DS] = 0x1000;
	e.m.seg_base[SEG_ES] = 0x1000;
	e.r.rcx = 0x10000; /* CX = 0: nothing to do */
	e.r.rsi = 0x100;
	e.r.rdi = 0x800;
	REQUIRE(insn_decode((const uint8_t *)"\xf3\xa4", 2, 16, &e.in) == INSN_OK);
	CHECK(insn_emulate(&e.in, &e.m, &e.r, &fake_ops, &e.f) == INSN_EMU_DONE);
	CHECK(e.f.nacc == 0 && e.r.rcx == 0x10000);

	/* 64-bit code with 67: ECX, ESI, EDI, written as 32-bit registers. */
	env_init(&e, 64);
	e.r.rcx = 0xffffffff00000002ull;
	e.r.rsi = 0xffffffff00001100ull;
	e.r.rdi = 0xffffffff00001800ull;
	REQUIRE(insn_decode((const uint8_t *)"\x67\xf3\xa4", 3, 64, &e.in) == INSN_OK);
	CHECK(insn_emulate(&e.in, &e.m, &e.r, &fake_ops, &e.f) == INSN_EMU_AGAIN);
	CHECK(e.f.acc[0].addr == 0x1100 && e.f.acc[1].addr == 0x1800);
	CHECK(e.r.rcx == 1 && e.r.rsi == 0x1101 && e.r.rdi == 0x1801);

	/* 64-bit REP: all of RCX counts. */
	env_init(&e, 64);
	e.r.rcx = 0x100000000ull;
	e.r.rsi = 0x1100;
	e.r.rdi = 0x1800;
	REQUIRE(insn_decode((const uint8_t *)"\xf3\xa4", 2, 64, &e.in) == INSN_OK);
	CHECK(insn_emulate(&e.in, &e.m, &e.r, &fake_ops, &e.f) == INSN_EMU_AGAIN);
	CHECK_EQ_U64(e.r.rcx, 0xffffffffull);
}

/* ------------------------------------------------------------------ faults */

TEST(insn_emulate_faults)
{
	static const struct {
		const char *bytes;
		size_t n;
		unsigned fail_at;
	} cases[] = {
		{ B("\x8b\x03"), 1 },         { B("\x89\x03"), 1 },     { B("\x01\x03"), 1 },
		{ B("\x01\x03"), 2 },         { B("\x87\x03"), 2 },     { B("\xf7\x1b"), 2 },
		{ B("\xff\x03"), 2 },         { B("\xf7\x13"), 2 },     { B("\xf3\xa5"), 1 },
		{ B("\xf3\xa5"), 2 },         { B("\xab"), 1 },         { B("\xad"), 1 },
		{ B("\x03\x03"), 1 },         { B("\x0f\xb6\x03"), 1 }, { B("\x39\x03"), 1 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct env e;
		env_init(&e, 64);
		e.r.rcx = 5;
		e.r.rsi = 0x1100;
		e.r.rdi = 0x1800;
		e.r.rflags = 0x2 | FL_CF | FL_ZF;
		e.f.fail_at = cases[i].fail_at;
		struct vcpu_regs before = e.r;
		uint8_t mem_before[MEM_SIZE];
		memcpy(mem_before, e.f.mem, MEM_SIZE);
		CHECK(emulate(&e, cases[i].bytes, cases[i].n) == INSN_EMU_MEM_FAULT);
		CHECK(memcmp(&before, &e.r, sizeof before) == 0);
		CHECK(memcmp(mem_before, e.f.mem, MEM_SIZE) == 0);
		CHECK(e.f.nacc == cases[i].fail_at);
	}
	/* Outside the fake's memory. */
	struct env e;
	env_init(&e, 64);
	e.r.rbx = 0xfee00000;
	CHECK(emulate(&e, B("\x8b\x03")) == INSN_EMU_MEM_FAULT);
	CHECK(e.r.rip == 0x100 && e.r.rax == 0x1122334455667788ull);
}

TEST(insn_emulate_refuses)
{
	struct env e;
	struct insn none = { 0 };
	env_init(&e, 64);
	CHECK(insn_emulate(&none, &e.m, &e.r, &fake_ops, &e.f) == INSN_EMU_UNSUPPORTED);
	REQUIRE(insn_decode((const uint8_t *)"\x8b\x03", 2, 32, &e.in) == INSN_OK);
	CHECK(insn_emulate(&e.in, &e.m, &e.r, &fake_ops, &e.f) == INSN_EMU_UNSUPPORTED); /* mode */
	CHECK(e.f.nacc == 0 && e.r.rip == 0x100);
}

/* ------------------------------------------ flags against the host CPU */

#if defined(__x86_64__)
/* Run one instruction on the host between POPF and PUSHF. The 128 bytes
 * skipped keep the pushes out of the red zone, where the compiler may keep
 * locals. */
#define HOST_BIN(name, mn, T)                                                                   \
	static T name(T a, T b, uint64_t *fl)                                                   \
	{                                                                                       \
		uint64_t f = *fl;                                                               \
		__asm__ volatile("lea -128(%%rsp), %%rsp\n\tpushq %[f]\n\tpopfq\n\t" mn          \
				 " %[b], %[a]\n\tpushfq\n\tpopq %[f]\n\tlea 128(%%rsp), %%rsp"   \
				 : [a] "+q"(a), [f] "+r"(f)                                     \
				 : [b] "q"(b)                                                   \
				 : "cc", "memory");                                             \
		*fl = f;                                                                        \
		return a;                                                                       \
	}
#define HOST_UN(name, mn, T)                                                                    \
	static T name(T a, uint64_t *fl)                                                        \
	{                                                                                       \
		uint64_t f = *fl;                                                               \
		__asm__ volatile("lea -128(%%rsp), %%rsp\n\tpushq %[f]\n\tpopfq\n\t" mn          \
				 " %[a]\n\tpushfq\n\tpopq %[f]\n\tlea 128(%%rsp), %%rsp"         \
				 : [a] "+q"(a), [f] "+r"(f)                                     \
				 :                                                              \
				 : "cc", "memory");                                             \
		*fl = f;                                                                        \
		return a;                                                                       \
	}
#define HOST_BIN4(op)                                                                           \
	HOST_BIN(host_##op##1, #op "b", uint8_t)                                                \
	HOST_BIN(host_##op##2, #op "w", uint16_t)                                               \
	HOST_BIN(host_##op##4, #op "l", uint32_t)                                               \
	HOST_BIN(host_##op##8, #op "q", uint64_t)
#define HOST_UN4(op)                                                                            \
	HOST_UN(host_##op##1, #op "b", uint8_t)                                                 \
	HOST_UN(host_##op##2, #op "w", uint16_t)                                                \
	HOST_UN(host_##op##4, #op "l", uint32_t)                                                \
	HOST_UN(host_##op##8, #op "q", uint64_t)

HOST_BIN4(add)
HOST_BIN4(or)
HOST_BIN4(adc)
HOST_BIN4(sbb)
HOST_BIN4(and)
HOST_BIN4(sub)
HOST_BIN4(xor)
HOST_BIN4(cmp)
HOST_BIN4(test)
HOST_UN4(inc)
HOST_UN4(dec)
HOST_UN4(neg)
HOST_UN4(not)

#define HOST_FN4(op) { host_##op##1, host_##op##2, host_##op##4, host_##op##8 }

struct host_bin {
	uint8_t (*f1)(uint8_t, uint8_t, uint64_t *);
	uint16_t (*f2)(uint16_t, uint16_t, uint64_t *);
	uint32_t (*f4)(uint32_t, uint32_t, uint64_t *);
	uint64_t (*f8)(uint64_t, uint64_t, uint64_t *);
};
struct host_un {
	uint8_t (*f1)(uint8_t, uint64_t *);
	uint16_t (*f2)(uint16_t, uint64_t *);
	uint32_t (*f4)(uint32_t, uint64_t *);
	uint64_t (*f8)(uint64_t, uint64_t *);
};

/* In enum insn_alu order, then TEST. */
static const struct host_bin host_alu[9] = {
	HOST_FN4(add), HOST_FN4(or),  HOST_FN4(adc), HOST_FN4(sbb), HOST_FN4(and),
	HOST_FN4(sub), HOST_FN4(xor), HOST_FN4(cmp), HOST_FN4(test),
};
/* NOT NEG INC DEC, as f7 /2 /3 and ff /0 /1 */
static const struct host_un host_unary[4] = { HOST_FN4(not), HOST_FN4(neg), HOST_FN4(inc),
					      HOST_FN4(dec) };

static uint64_t host_bin_run(const struct host_bin *h, unsigned w, uint64_t a, uint64_t b,
			     uint64_t *fl)
{
	switch (w) {
	case 1: return h->f1((uint8_t)a, (uint8_t)b, fl);
	case 2: return h->f2((uint16_t)a, (uint16_t)b, fl);
	case 4: return h->f4((uint32_t)a, (uint32_t)b, fl);
	default: return h->f8(a, b, fl);
	}
}

static uint64_t host_un_run(const struct host_un *h, unsigned w, uint64_t a, uint64_t *fl)
{
	switch (w) {
	case 1: return h->f1((uint8_t)a, fl);
	case 2: return h->f2((uint16_t)a, fl);
	case 4: return h->f4((uint32_t)a, fl);
	default: return h->f8(a, fl);
	}
}

/* Operands near the interesting edges (0, 1, the sign boundary, all ones,
 * nibble carries) half of the time. */
static uint64_t operand(struct rng *rng, unsigned w)
{
	static const uint64_t edges[] = { 0, 1, 2, 0x7f, 0x80, 0xff, 0x0f, 0x10, 0x7fff, 0x8000,
					  0xffff, 0x7fffffff, 0x80000000, 0xffffffff,
					  0x7fffffffffffffffull, 0x8000000000000000ull, ~0ull };
	uint64_t mask = w == 8 ? ~0ull : (1ull << (8 * w)) - 1;
	uint64_t r = rng_next(rng);
	if (r & 1)
		return edges[(r >> 1) % (sizeof edges / sizeof edges[0])] & mask;
	if ((r & 6) == 2)
		return (rng_next(rng) & 0x1f) - 0x10; /* small, either sign */
	return rng_next(rng) & mask;
}

static unsigned put_prefixes(uint8_t *p, unsigned w)
{
	unsigned n = 0;
	if (w == 2)
		p[n++] = 0x66;
	if (w == 8)
		p[n++] = 0x48;
	return n;
}

/* Emulate bytes on [rbx] = a, rcx = b, RFLAGS = fin; returns the memory
 * value after, *reg the value of rcx, *fout RFLAGS. */
static uint64_t run_emulated(const uint8_t *bytes, size_t n, unsigned w, uint64_t a, uint64_t b,
			     uint64_t fin, uint64_t *reg, uint64_t *fout)
{
	struct env e;
	env_init(&e, 64);
	memcpy(&e.f.mem[0x100], &a, 8); /* only w bytes matter */
	e.r.rcx = b;
	e.r.rflags = fin;
	enum insn_emu_status st = insn_decode(bytes, n, 64, &e.in) == INSN_OK
				  ? insn_emulate(&e.in, &e.m, &e.r, &fake_ops, &e.f)
				  : INSN_EMU_UNSUPPORTED;
	CHECK(st == INSN_EMU_DONE);
	uint64_t mask = w == 8 ? ~0ull : (1ull << (8 * w)) - 1;
	*reg = e.r.rcx;
	*fout = e.r.rflags;
	/* bytes of memory and rcx above the width never change */
	CHECK((mem64(&e, 0x1100) & ~mask) == (a & ~mask));
	return mem64(&e, 0x1100) & mask;
}

static void report(const char *what, unsigned w, uint64_t a, uint64_t b, uint64_t fin,
		   uint64_t got, uint64_t want, uint64_t gotf, uint64_t wantf)
{
	char m[256];
	snprintf(m, sizeof m, "%s/%u a=%llx b=%llx fin=%llx: result %llx want %llx, flags %llx want %llx",
		 what, w, (unsigned long long)a, (unsigned long long)b, (unsigned long long)fin,
		 (unsigned long long)got, (unsigned long long)want, (unsigned long long)gotf,
		 (unsigned long long)wantf);
	unit_fail(__FILE__, __LINE__, m);
}

TEST(insn_flags_vs_host_cpu)
{
	static const unsigned widths[4] = { 1, 2, 4, 8 };
	static const char *const names[9] = { "add", "or", "adc", "sbb", "and", "sub", "xor", "cmp", "test" };
	unsigned failures = 0;

	struct rng rng = rng_seeded(0x9e3779b97f4a7c15ull); /* fixed, so a failure replays */
	for (unsigned op = 0; op < 9; op++) {
		/* AND OR XOR TEST leave AF undefined */
		bool logic = op == INSN_ALU_AND || op == INSN_ALU_OR || op == INSN_ALU_XOR || op == 8;
		uint64_t cmpmask = FL_ARITH & ~(logic ? FL_AF : 0);
		for (unsigned wi = 0; wi < 4; wi++) {
			unsigned w = widths[wi];
			uint64_t mask = w == 8 ? ~0ull : (1ull << (8 * w)) - 1;
			for (int i = 0; i < 3000 && failures < 10; i++) {
				uint64_t a = operand(&rng, w), b = operand(&rng, w);
				uint64_t fin = 0x2 | (rng_next(&rng) & FL_ARITH);
				uint8_t bytes[16];
				unsigned n = put_prefixes(bytes, w);
				unsigned form = (unsigned)rng_below(&rng, 3);
				bool mem_dst = true;
				if (op == 8) { /* test [rbx], ecx or test [rbx], imm */
					if (form == 2) {
						bytes[n++] = w == 1 ? 0xf6 : 0xf7;
						bytes[n++] = 0x03;
						b = w == 1 ? (b & 0xff) : (uint64_t)(int64_t)(int32_t)b & mask;
						for (unsigned k = 0; k < (w == 1 ? 1u : w == 2 ? 2u : 4u); k++)
							bytes[n++] = (uint8_t)(b >> (8 * k));
					} else {
						bytes[n++] = w == 1 ? 0x84 : 0x85;
						bytes[n++] = 0x0b;
					}
				} else if (form == 0) { /* op [rbx], rcx */
					bytes[n++] = (uint8_t)(op * 8 + (w == 1 ? 0 : 1));
					bytes[n++] = 0x0b;
				} else if (form == 1) { /* op rcx, [rbx]: a is rcx now */
					bytes[n++] = (uint8_t)(op * 8 + (w == 1 ? 2 : 3));
					bytes[n++] = 0x0b;
					mem_dst = false;
				} else if (w > 1 && (rng_next(&rng) & 1)) { /* 83 /op ib */
					bytes[n++] = 0x83;
					bytes[n++] = (uint8_t)(0x03 | op << 3);
					bytes[n++] = (uint8_t)b;
					b = (uint64_t)(int64_t)(int8_t)b & mask;
				} else { /* 80 / 81 */
					bytes[n++] = w == 1 ? 0x80 : 0x81;
					bytes[n++] = (uint8_t)(0x03 | op << 3);
					unsigned isz = w == 1 ? 1 : w == 2 ? 2 : 4;
					for (unsigned k = 0; k < isz; k++)
						bytes[n++] = (uint8_t)(b >> (8 * k));
					b = isz == 4 ? (uint64_t)(int64_t)(int32_t)b & mask : b & mask;
				}
				uint64_t reg, fout, hf = fin, got;
				uint64_t want;
				if (mem_dst) {
					got = run_emulated(bytes, n, w, a, b, fin, &reg, &fout);
					want = host_bin_run(&host_alu[op], w, a, b, &hf) & mask;
					if (op == INSN_ALU_CMP || op == 8)
						want = a & mask; /* not written */
				} else {
					uint64_t m2 = run_emulated(bytes, n, w, b, a, fin, &reg, &fout);
					CHECK(m2 == (b & mask));
					got = reg & mask;
					want = host_bin_run(&host_alu[op], w, a, b, &hf) & mask;
					if (op == INSN_ALU_CMP)
						want = a & mask;
				}
				if (got != want || (fout & cmpmask) != (hf & cmpmask) ||
				    (fout & ~FL_ARITH) != (fin & ~FL_ARITH)) {
					report(names[op], w, a, b, fin, got, want, fout, hf);
					failures++;
				}
			}
		}
	}

	static const char *const unames[4] = { "not", "neg", "inc", "dec" };
	for (unsigned op = 0; op < 4; op++) {
		for (unsigned wi = 0; wi < 4; wi++) {
			unsigned w = widths[wi];
			uint64_t mask = w == 8 ? ~0ull : (1ull << (8 * w)) - 1;
			for (int i = 0; i < 3000 && failures < 10; i++) {
				uint64_t a = operand(&rng, w), fin = 0x2 | (rng_next(&rng) & FL_ARITH);
				uint64_t hf = fin, reg, fout;
				uint8_t bytes[4];
				unsigned n = put_prefixes(bytes, w);
				if (op < 2) {
					bytes[n++] = w == 1 ? 0xf6 : 0xf7;
					bytes[n++] = (uint8_t)(0x13 + 8 * op); /* /2 /3 [rbx] */
				} else {
					bytes[n++] = w == 1 ? 0xfe : 0xff;
					bytes[n++] = (uint8_t)(0x03 + 8 * (op - 2)); /* /0 /1 [rbx] */
				}
				uint64_t got = run_emulated(bytes, n, w, a, 0, fin, &reg, &fout);
				uint64_t want = host_un_run(&host_unary[op], w, a, &hf) & mask;
				if (got != want || (fout & ~0ull) != (hf & (FL_ARITH | 0x2))) {
					report(unames[op], w, a, 0, fin, got, want, fout, hf);
					failures++;
				}
			}
		}
	}
}
#endif
