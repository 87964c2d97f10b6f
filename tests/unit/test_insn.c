/* virt/insn.c: decoding (every supported form in 16-, 32- and 64-bit code,
 * against a table whose lengths and operands were checked with objdump),
 * and emulation against the fake machine (insn_fake.h): a table of cases,
 * REP iterations, segments and wrapping, faults. The newer ops one by one
 * are in test_insn_ops.c; results and flags against the host CPU in
 * test_insn_host.c. */
#include "tests/unit/insn_fake.h"
#include <stdio.h>

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

	/* XADD, CMOVcc */
	{ 64, B("\x0f\xc1\x03"), 3, INSN_OP_XADD, "xadd dword [rbx], eax" },
	{ 64, B("\x48\x0f\xc1\x0b"), 4, INSN_OP_XADD, "xadd qword [rbx], rcx" },
	{ 64, B("\x66\x0f\xc1\x03"), 4, INSN_OP_XADD, "xadd word [rbx], ax" },
	{ 64, B("\xf0\x0f\xc0\x1b"), 4, INSN_OP_XADD, "lock xadd byte [rbx], bl" },
	{ 64, B("\xf0\x48\x0f\xc1\x4c\x24\x08"), 7, INSN_OP_XADD, "lock xadd qword [rsp+0x8], rcx" },
	{ 64, B("\x0f\x40\x03"), 3, INSN_OP_CMOV, "cmovo eax, dword [rbx]" },
	{ 64, B("\x0f\x44\x03"), 3, INSN_OP_CMOV, "cmove eax, dword [rbx]" },
	{ 64, B("\x66\x0f\x42\x03"), 4, INSN_OP_CMOV, "cmovb ax, word [rbx]" },
	{ 64, B("\x48\x0f\x4f\x0b"), 4, INSN_OP_CMOV, "cmovg rcx, qword [rbx]" },
	{ 64, B("\x66\x0f\x48\x7e\x03"), 5, INSN_OP_CMOV, "cmovs di, word [rsi+0x3]" },
	/* BT BTS BTR BTC (register or imm8 bit offset), BSF BSR */
	{ 64, B("\x0f\xa3\x03"), 3, INSN_OP_BT, "bt dword [rbx], eax" },
	{ 64, B("\x48\x0f\xab\x0b"), 4, INSN_OP_BT, "bts qword [rbx], rcx" },
	{ 64, B("\xf0\x0f\xb3\x03"), 4, INSN_OP_BT, "lock btr dword [rbx], eax" },
	{ 64, B("\x0f\xbb\x0b"), 3, INSN_OP_BT, "btc dword [rbx], ecx" },
	{ 64, B("\x0f\xba\x23\x03"), 4, INSN_OP_BT, "bt dword [rbx], 0x3" },
	{ 64, B("\x48\x0f\xba\x2b\x3f"), 5, INSN_OP_BT, "bts qword [rbx], 0x3f" },
	{ 64, B("\xf0\x0f\xba\x33\x05"), 5, INSN_OP_BT, "lock btr dword [rbx], 0x5" },
	{ 64, B("\x66\x0f\xba\x3b\x0f"), 5, INSN_OP_BT, "btc word [rbx], 0xf" },
	{ 64, B("\x0f\xba\x23\x80"), 4, INSN_OP_BT, "bt dword [rbx], 0x80" }, /* an unsigned bit offset */
	{ 64, B("\x0f\xbc\x03"), 3, INSN_OP_BSF, "bsf eax, dword [rbx]" },
	{ 64, B("\x66\x0f\xbc\x03"), 4, INSN_OP_BSF, "bsf ax, word [rbx]" },
	{ 64, B("\x65\x0f\xbc\x03"), 4, INSN_OP_BSF, "bsf eax, dword gs:[rbx]" },
	{ 64, B("\x48\x0f\xbd\x0b"), 4, INSN_OP_BSR, "bsr rcx, qword [rbx]" },
	/* SHLD SHRD: the count an imm8 or CL */
	{ 64, B("\x0f\xa4\x03\x04"), 4, INSN_OP_SHLD, "shld dword [rbx], eax, 0x4" },
	{ 64, B("\x48\x0f\xa5\x0b"), 4, INSN_OP_SHLD, "shld qword [rbx], rcx, cl" },
	{ 64, B("\x0f\xac\x03\x01"), 4, INSN_OP_SHRD, "shrd dword [rbx], eax, 0x1" },
	{ 64, B("\x0f\xa4\x03\xff"), 4, INSN_OP_SHLD, "shld dword [rbx], eax, 0xff" }, /* an unsigned count */
	{ 64, B("\x66\x0f\xad\x03"), 4, INSN_OP_SHRD, "shrd word [rbx], ax, cl" },
	/* IMUL with two and three operands; MUL IMUL DIV IDIV of rDX:rAX */
	{ 64, B("\x0f\xaf\x03"), 3, INSN_OP_IMUL_REG, "imul eax, dword [rbx]" },
	{ 64, B("\x48\x0f\xaf\x0b"), 4, INSN_OP_IMUL_REG, "imul rcx, qword [rbx]" },
	{ 64, B("\x41\x0f\xaf\x45\x08"), 5, INSN_OP_IMUL_REG, "imul eax, dword [r13+0x8]" },
	{ 64, B("\x69\x03\x10\x00\x00\x00"), 6, INSN_OP_IMUL_REG, "imul eax, dword [rbx], 0x10" },
	{ 64, B("\x6b\x03\xfe"), 3, INSN_OP_IMUL_REG, "imul eax, dword [rbx], 0xfffffffe" },
	{ 64, B("\x66\x69\x03\x34\x12"), 5, INSN_OP_IMUL_REG, "imul ax, word [rbx], 0x1234" },
	{ 64, B("\x48\x6b\x03\x7f"), 4, INSN_OP_IMUL_REG, "imul rax, qword [rbx], 0x7f" },
	{ 64, B("\xf7\x23"), 2, INSN_OP_MULDIV, "mul dword [rbx]" },
	{ 64, B("\xf6\x2b"), 2, INSN_OP_MULDIV, "imul byte [rbx]" },
	{ 64, B("\x48\xf7\x33"), 3, INSN_OP_MULDIV, "div qword [rbx]" },
	{ 64, B("\x66\xf7\x3b"), 3, INSN_OP_MULDIV, "idiv word [rbx]" },
	{ 64, B("\x66\xf7\x63\x0c"), 4, INSN_OP_MULDIV, "mul word [rbx+0xc]" },
	/* SMSW and MOV from a segment register: always a word in memory */
	{ 64, B("\x0f\x01\x23"), 3, INSN_OP_SMSW, "smsw word [rbx]" },
	{ 64, B("\x48\x0f\x01\x23"), 4, INSN_OP_SMSW, "smsw word [rbx]" },
	{ 64, B("\x8c\x1b"), 2, INSN_OP_MOV_FROM_SEG, "mov word [rbx], ds" },
	{ 64, B("\x8c\x03"), 2, INSN_OP_MOV_FROM_SEG, "mov word [rbx], es" },
	{ 64, B("\x8c\x0b"), 2, INSN_OP_MOV_FROM_SEG, "mov word [rbx], cs" },
	{ 64, B("\x8c\x13"), 2, INSN_OP_MOV_FROM_SEG, "mov word [rbx], ss" },
	{ 64, B("\x8c\x23"), 2, INSN_OP_MOV_FROM_SEG, "mov word [rbx], fs" },
	{ 64, B("\x48\x8c\x2b"), 3, INSN_OP_MOV_FROM_SEG, "mov word [rbx], gs" },
	/* the stack: 64-bit slots, 16-bit with 66 */
	{ 64, B("\x50"), 1, INSN_OP_PUSH, "push rax" },
	{ 64, B("\x41\x50"), 2, INSN_OP_PUSH, "push r8" },
	{ 64, B("\x66\x50"), 2, INSN_OP_PUSH, "push ax" },
	{ 64, B("\x6a\x01"), 2, INSN_OP_PUSH, "push 0x1" },
	{ 64, B("\x6a\x80"), 2, INSN_OP_PUSH, "push 0xffffffffffffff80" },
	{ 64, B("\x68\x78\x56\x34\x12"), 5, INSN_OP_PUSH, "push 0x12345678" },
	{ 64, B("\x66\x68\x34\x12"), 4, INSN_OP_PUSH, "push 0x1234" },
	{ 64, B("\xff\x33"), 2, INSN_OP_PUSH, "push qword [rbx]" },
	{ 64, B("\x66\xff\x33"), 3, INSN_OP_PUSH, "push word [rbx]" },
	/* REX.W wins over 66, as everywhere: 64-bit slots, an imm32 */
	{ 64, B("\x66\x48\x50"), 3, INSN_OP_PUSH, "push rax" },
	{ 64, B("\x66\x48\xff\x33"), 4, INSN_OP_PUSH, "push qword [rbx]" },
	{ 64, B("\x66\x48\x68\x78\x56\x34\x12"), 7, INSN_OP_PUSH, "push 0x12345678" },
	{ 64, B("\x66\x48\x8f\x03"), 4, INSN_OP_POP, "pop qword [rbx]" },
	{ 64, B("\xff\x74\x24\x08"), 4, INSN_OP_PUSH, "push qword [rsp+0x8]" },
	{ 64, B("\xff\x35\x10\x00\x00\x00"), 6, INSN_OP_PUSH, "push qword [rip+0x10]" },
	{ 64, B("\x65\xff\x33"), 3, INSN_OP_PUSH, "push qword gs:[rbx]" },
	{ 64, B("\x58"), 1, INSN_OP_POP, "pop rax" },
	{ 64, B("\x41\x5f"), 2, INSN_OP_POP, "pop r15" },
	{ 64, B("\x8f\x03"), 2, INSN_OP_POP, "pop qword [rbx]" },
	{ 64, B("\x8f\x44\x24\x08"), 4, INSN_OP_POP, "pop qword [rsp+0x8]" },
	{ 64, B("\x8f\x45\x00"), 3, INSN_OP_POP, "pop qword [rbp]" },
	{ 64, B("\x66\x8f\x03"), 3, INSN_OP_POP, "pop word [rbx]" },
	{ 64, B("\xc9"), 1, INSN_OP_LEAVE, "leave" },
	{ 64, B("\x66\xc9"), 2, INSN_OP_LEAVE, "leave" },
	{ 64, B("\xc8\x20\x00\x00"), 4, INSN_OP_ENTER, "enter 0x20, 0x0" },
	{ 64, B("\xc8\x20\x00\x01"), 4, INSN_OP_ENTER, "enter 0x20, 0x1" },
	/* near branches: 64-bit operands whatever 66 says; the text of a
	 * relative CALL is its displacement (describe has no RIP) */
	{ 64, B("\xe8\x10\x00\x00\x00"), 5, INSN_OP_CALL, "call 0x10" },
	{ 64, B("\xe8\xf0\xff\xff\xff"), 5, INSN_OP_CALL, "call 0xfffffffffffffff0" },
	{ 64, B("\xff\x13"), 2, INSN_OP_CALL, "call qword [rbx]" },
	{ 64, B("\xff\x15\xf0\xff\xff\xff"), 6, INSN_OP_CALL, "call qword [rip-0x10]" },
	{ 64, B("\xff\x23"), 2, INSN_OP_JMP, "jmp qword [rbx]" },
	{ 64, B("\x4a\xff\x24\xe0"), 4, INSN_OP_JMP, "jmp qword [rax+r12*8]" },
	{ 64, B("\xff\x24\x25\x00\x11\x00\x00"), 7, INSN_OP_JMP, "jmp qword [0x1100]" },
	{ 64, B("\xc3"), 1, INSN_OP_RET, "ret" },
	{ 64, B("\xc2\x08\x00"), 3, INSN_OP_RET, "ret 0x8" },
	/* INS OUTS: at most 32-bit operands, REX.W or not */
	{ 64, B("\x6c"), 1, INSN_OP_INS, "insb" },
	{ 64, B("\x6d"), 1, INSN_OP_INS, "insd" },
	{ 64, B("\x48\x6d"), 2, INSN_OP_INS, "insd" },
	{ 64, B("\xf3\x66\x6d"), 3, INSN_OP_INS, "rep insw" },
	{ 64, B("\xf3\x6e"), 2, INSN_OP_OUTS, "rep outsb" },
	{ 64, B("\x6f"), 1, INSN_OP_OUTS, "outsd" },
	{ 64, B("\x64\x6e"), 2, INSN_OP_OUTS, "outsb (fs:)" },
	{ 64, B("\x67\x6e"), 2, INSN_OP_OUTS, "outsb" },
	/* SSE and MMX moves: one mnemonic, the bytes say which; 16-byte
	 * operands are xmmwords */
	{ 64, B("\x0f\x10\x03"), 3, INSN_OP_VMOV, "vmov xmm0, xmmword [rbx]" },     /* movups */
	{ 64, B("\x0f\x11\x0b"), 3, INSN_OP_VMOV, "vmov xmmword [rbx], xmm1" },     /* movups */
	{ 64, B("\x66\x0f\x29\x03"), 4, INSN_OP_VMOV, "vmov xmmword [rbx], xmm0" }, /* movapd */
	{ 64, B("\x44\x0f\x28\x03"), 4, INSN_OP_VMOV, "vmov xmm8, xmmword [rbx]" }, /* movaps */
	{ 64, B("\xf3\x44\x0f\x7f\x43\x10"), 6, INSN_OP_VMOV, "vmov xmmword [rbx+0x10], xmm8" }, /* movdqu */
	{ 64, B("\xf3\x0f\x10\x03"), 4, INSN_OP_VMOV, "vmov xmm0, dword [rbx]" },   /* movss */
	{ 64, B("\xf2\x0f\x11\x03"), 4, INSN_OP_VMOV, "vmov qword [rbx], xmm0" },   /* movsd */
	{ 64, B("\x0f\x6f\x03"), 3, INSN_OP_VMOV, "vmov mm0, qword [rbx]" },        /* movq */
	{ 64, B("\x44\x0f\x6f\x03"), 4, INSN_OP_VMOV, "vmov mm0, qword [rbx]" },    /* REX.R: still mm0 */
	{ 64, B("\x0f\x7f\x03"), 3, INSN_OP_VMOV, "vmov qword [rbx], mm0" },
	{ 64, B("\x0f\x6e\x03"), 3, INSN_OP_VMOV, "vmov mm0, dword [rbx]" },        /* movd */
	{ 64, B("\x48\x0f\x6e\x03"), 4, INSN_OP_VMOV, "vmov mm0, qword [rbx]" },    /* movq */
	{ 64, B("\x66\x0f\x6e\x03"), 4, INSN_OP_VMOV, "vmov xmm0, dword [rbx]" },
	{ 64, B("\x66\x0f\x7e\x03"), 4, INSN_OP_VMOV, "vmov dword [rbx], xmm0" },
	{ 64, B("\xf3\x0f\x7e\x03"), 4, INSN_OP_VMOV, "vmov xmm0, qword [rbx]" },   /* movq */
	{ 64, B("\x66\x0f\xd6\x03"), 4, INSN_OP_VMOV, "vmov qword [rbx], xmm0" },   /* movq */
	{ 64, B("\x0f\xe7\x03"), 3, INSN_OP_VMOV, "vmov qword [rbx], mm0" },        /* movntq */
	{ 64, B("\x66\x0f\xe7\x03"), 4, INSN_OP_VMOV, "vmov xmmword [rbx], xmm0" }, /* movntdq */

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

	{ 32, B("\x0f\xc1\x03"), 3, INSN_OP_XADD, "xadd dword [ebx], eax" },
	{ 32, B("\x0f\x44\x03"), 3, INSN_OP_CMOV, "cmove eax, dword [ebx]" },
	{ 32, B("\x0f\xa3\x03"), 3, INSN_OP_BT, "bt dword [ebx], eax" },
	{ 32, B("\x0f\xa5\x0b"), 3, INSN_OP_SHLD, "shld dword [ebx], ecx, cl" },
	{ 32, B("\x6b\x03\xfe"), 3, INSN_OP_IMUL_REG, "imul eax, dword [ebx], 0xfffffffe" },
	{ 32, B("\xf7\x23"), 2, INSN_OP_MULDIV, "mul dword [ebx]" },
	{ 32, B("\x8c\x1b"), 2, INSN_OP_MOV_FROM_SEG, "mov word [ebx], ds" },
	{ 32, B("\x50"), 1, INSN_OP_PUSH, "push eax" },
	{ 32, B("\x66\x50"), 2, INSN_OP_PUSH, "push ax" },
	{ 32, B("\x6a\xc8"), 2, INSN_OP_PUSH, "push 0xffffffc8" },
	{ 32, B("\xff\x33"), 2, INSN_OP_PUSH, "push dword [ebx]" },
	{ 32, B("\x8f\x03"), 2, INSN_OP_POP, "pop dword [ebx]" },
	{ 32, B("\xe8\x10\x00\x00\x00"), 5, INSN_OP_CALL, "call 0x10" },
	{ 32, B("\xff\x13"), 2, INSN_OP_CALL, "call dword [ebx]" },
	{ 32, B("\xff\x23"), 2, INSN_OP_JMP, "jmp dword [ebx]" },
	{ 32, B("\xc2\x08\x00"), 3, INSN_OP_RET, "ret 0x8" },
	{ 32, B("\xc8\x10\x00\x01"), 4, INSN_OP_ENTER, "enter 0x10, 0x1" },
	{ 32, B("\x6d"), 1, INSN_OP_INS, "insd" },
	{ 32, B("\xf3\x6c"), 2, INSN_OP_INS, "rep insb" },
	{ 32, B("\x66\x0f\x6f\x03"), 4, INSN_OP_VMOV, "vmov xmm0, xmmword [ebx]" }, /* movdqa */

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
	{ 16, B("\x0f\xc1\x07"), 3, INSN_OP_XADD, "xadd word [bx], ax" },
	{ 16, B("\x0f\xa3\x07"), 3, INSN_OP_BT, "bt word [bx], ax" },
	{ 16, B("\x0f\xba\xa7\x10\x00\x03"), 6, INSN_OP_BT, "bt word [bx+0x10], 0x3" },
	{ 16, B("\xf6\x27"), 2, INSN_OP_MULDIV, "mul byte [bx]" },
	{ 16, B("\x0f\x01\x27"), 3, INSN_OP_SMSW, "smsw word [bx]" },
	{ 16, B("\x8c\x1f"), 2, INSN_OP_MOV_FROM_SEG, "mov word [bx], ds" },
	{ 16, B("\x50"), 1, INSN_OP_PUSH, "push ax" },
	{ 16, B("\x66\x50"), 2, INSN_OP_PUSH, "push eax" },
	{ 16, B("\xff\x37"), 2, INSN_OP_PUSH, "push word [bx]" },
	{ 16, B("\x8f\x07"), 2, INSN_OP_POP, "pop word [bx]" },
	{ 16, B("\xe8\x10\x00"), 3, INSN_OP_CALL, "call 0x10" },
	{ 16, B("\xff\x17"), 2, INSN_OP_CALL, "call word [bx]" },
	{ 16, B("\xff\x27"), 2, INSN_OP_JMP, "jmp word [bx]" },
	{ 16, B("\xc3"), 1, INSN_OP_RET, "ret" },
	{ 16, B("\xc2\x04\x00"), 3, INSN_OP_RET, "ret 0x4" },
	{ 16, B("\xc9"), 1, INSN_OP_LEAVE, "leave" },
	{ 16, B("\xc8\x08\x00\x00"), 4, INSN_OP_ENTER, "enter 0x8, 0x0" },
	{ 16, B("\x6c"), 1, INSN_OP_INS, "insb" },
	{ 16, B("\xf3\x6f"), 2, INSN_OP_OUTS, "rep outsw" },
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

/* The fields behind the text of the newer forms: what the emulator runs on. */
TEST(insn_decode_fields_new_ops)
{
	struct insn in;

	REQUIRE(insn_decode((const uint8_t *)"\xf0\x0f\xc1\x03", 4, 64, &in) == INSN_OK);
	CHECK(in.op == INSN_OP_XADD && in.width == 4 && in.reg == RAX && in.mem_is_dst && in.lock);
	REQUIRE(insn_decode((const uint8_t *)"\x0f\x4c\x0b", 3, 64, &in) == INSN_OK); /* cmovl */
	CHECK(in.op == INSN_OP_CMOV && in.sub == 0xc && in.reg == RCX && !in.mem_is_dst);
	REQUIRE(insn_decode((const uint8_t *)"\x48\x0f\xba\x2b\x3f", 5, 64, &in) == INSN_OK);
	CHECK(in.op == INSN_OP_BT && in.sub == INSN_BTS && in.has_imm && in.imm == 0x3f);
	CHECK(in.reg == INSN_REG_NONE && in.mem_is_dst && in.width == 8);
	REQUIRE(insn_decode((const uint8_t *)"\x0f\xb3\x0b", 3, 64, &in) == INSN_OK);
	CHECK(in.op == INSN_OP_BT && in.sub == INSN_BTR && !in.has_imm && in.reg == RCX);
	REQUIRE(insn_decode((const uint8_t *)"\x0f\xba\x23\x80", 4, 64, &in) == INSN_OK);
	CHECK(in.sub == INSN_BT && (in.imm & 0xff) == 0x80); /* sign-extended, only the low bits count */
	CHECK(insn_decode((const uint8_t *)"\x0f\xbd\x03", 3, 64, &in) == INSN_OK && in.op == INSN_OP_BSR &&
	      in.reg == RAX && !in.mem_is_dst);
	REQUIRE(insn_decode((const uint8_t *)"\x0f\xa5\x13", 3, 64, &in) == INSN_OK);
	CHECK(in.op == INSN_OP_SHLD && in.sub == 1 && !in.has_imm && in.reg == RDX && in.mem_is_dst);
	REQUIRE(insn_decode((const uint8_t *)"\x0f\xac\x13\x05", 4, 64, &in) == INSN_OK);
	CHECK(in.op == INSN_OP_SHRD && in.sub == 0 && in.has_imm && in.imm == 5);
	REQUIRE(insn_decode((const uint8_t *)"\x6b\x03\xfe", 3, 64, &in) == INSN_OK);
	CHECK(in.op == INSN_OP_IMUL_REG && in.has_imm && in.imm == (uint64_t)-2 && in.reg == RAX &&
	      !in.mem_is_dst && in.width == 4);
	REQUIRE(insn_decode((const uint8_t *)"\x48\xf7\x3b", 3, 64, &in) == INSN_OK);
	CHECK(in.op == INSN_OP_MULDIV && in.sub == INSN_IDIV && in.reg == INSN_REG_NONE && in.width == 8);
	REQUIRE(insn_decode((const uint8_t *)"\xf6\x23", 2, 64, &in) == INSN_OK);
	CHECK(in.op == INSN_OP_MULDIV && in.sub == INSN_MUL && in.width == 1 && !in.has_imm);
	REQUIRE(insn_decode((const uint8_t *)"\x48\x0f\x01\x23", 4, 64, &in) == INSN_OK);
	CHECK(in.op == INSN_OP_SMSW && in.width == 2 && in.mem_is_dst);
	REQUIRE(insn_decode((const uint8_t *)"\x8c\x23", 2, 64, &in) == INSN_OK);
	CHECK(in.op == INSN_OP_MOV_FROM_SEG && in.reg == SEG_FS && in.width == 2 && in.mem_is_dst);

	/* The stack ops: 8-byte slots in 64-bit code, 2 with 66; no ModRM for the
	 * register and immediate forms. */
	REQUIRE(insn_decode((const uint8_t *)"\x41\x57", 2, 64, &in) == INSN_OK);
	CHECK(in.op == INSN_OP_PUSH && in.reg == R15 && in.width == 8 && !in.has_mem && !in.has_imm);
	REQUIRE(insn_decode((const uint8_t *)"\x66\x5b", 2, 64, &in) == INSN_OK);
	CHECK(in.op == INSN_OP_POP && in.reg == RBX && in.width == 2);
	REQUIRE(insn_decode((const uint8_t *)"\x50", 1, 32, &in) == INSN_OK);
	CHECK(in.width == 4);
	REQUIRE(insn_decode((const uint8_t *)"\x50", 1, 16, &in) == INSN_OK);
	CHECK(in.width == 2);
	REQUIRE(insn_decode((const uint8_t *)"\x6a\x80", 2, 64, &in) == INSN_OK);
	CHECK(in.has_imm && in.imm == 0xffffffffffffff80ull && !in.has_mem && in.reg == INSN_REG_NONE);
	REQUIRE(insn_decode((const uint8_t *)"\xff\x33", 2, 64, &in) == INSN_OK);
	CHECK(in.op == INSN_OP_PUSH && in.has_mem && in.width == 8 && !in.mem_is_dst);
	REQUIRE(insn_decode((const uint8_t *)"\x8f\x03", 2, 64, &in) == INSN_OK);
	CHECK(in.op == INSN_OP_POP && in.has_mem && in.mem_is_dst);
	REQUIRE(insn_decode((const uint8_t *)"\xc2\xff\xff", 3, 64, &in) == INSN_OK);
	CHECK(in.op == INSN_OP_RET && in.has_imm && in.imm == 0xffff && in.width == 8); /* zero-extended */
	REQUIRE(insn_decode((const uint8_t *)"\xc8\x00\x80\x01", 4, 64, &in) == INSN_OK);
	CHECK(in.op == INSN_OP_ENTER && in.imm == 0x8000 && in.sub == 1);
	REQUIRE(insn_decode((const uint8_t *)"\xc8\x10\x00\x21", 4, 64, &in) == INSN_OK);
	CHECK(in.sub == 1); /* the level is taken modulo 32 */
	REQUIRE(insn_decode((const uint8_t *)"\xe8\xf0\xff\xff\xff", 5, 64, &in) == INSN_OK);
	CHECK(in.op == INSN_OP_CALL && in.imm == (uint64_t)-16 && !in.has_mem && in.width == 8);
	/* 66 on a near branch in 64-bit code: ignored (Intel), rel32 stays. */
	REQUIRE(insn_decode((const uint8_t *)"\x66\xe8\x10\x00\x00\x00", 6, 64, &in) == INSN_OK);
	CHECK(in.len == 6 && in.width == 8 && in.imm == 0x10);
	REQUIRE(insn_decode((const uint8_t *)"\xff\x23", 2, 32, &in) == INSN_OK);
	CHECK(in.op == INSN_OP_JMP && in.width == 4);
	REQUIRE(insn_decode((const uint8_t *)"\xe8\x10\x00", 3, 16, &in) == INSN_OK);
	CHECK(in.op == INSN_OP_CALL && in.width == 2 && in.imm == 0x10);

	/* INS: ES:rDI whatever the prefixes; 4 bytes at most. */
	REQUIRE(insn_decode((const uint8_t *)"\x64\x48\x6d", 3, 64, &in) == INSN_OK);
	CHECK(in.op == INSN_OP_INS && in.width == 4 && in.seg == SEG_ES && !in.seg_override);
	REQUIRE(insn_decode((const uint8_t *)"\x64\x6e", 2, 64, &in) == INSN_OK);
	CHECK(in.op == INSN_OP_OUTS && in.width == 1 && in.seg == SEG_FS && in.seg_override);

	/* The vector moves. */
	static const struct {
		const char *bytes;
		size_t n;
		uint8_t width;
		bool mmx, aligned, zero_upper, store;
		int8_t reg;
	} vec[] = {
		{ B("\x0f\x10\x0b"), 16, false, false, false, false, 1 },     /* movups */
		{ B("\x66\x0f\x11\x0b"), 16, false, false, false, true, 1 },  /* movupd */
		{ B("\x0f\x28\x03"), 16, false, true, false, false, 0 },      /* movaps */
		{ B("\x66\x0f\x29\x03"), 16, false, true, false, true, 0 },   /* movapd */
		{ B("\x0f\x2b\x03"), 16, false, true, false, true, 0 },       /* movntps */
		{ B("\x66\x0f\x2b\x03"), 16, false, true, false, true, 0 },   /* movntpd */
		{ B("\xf3\x0f\x10\x03"), 4, false, false, true, false, 0 },   /* movss */
		{ B("\xf3\x0f\x11\x03"), 4, false, false, false, true, 0 },
		{ B("\xf2\x0f\x10\x03"), 8, false, false, true, false, 0 },   /* movsd */
		{ B("\xf2\x0f\x11\x03"), 8, false, false, false, true, 0 },
		{ B("\x66\x0f\x6f\x03"), 16, false, true, false, false, 0 },  /* movdqa */
		{ B("\x66\x0f\x7f\x03"), 16, false, true, false, true, 0 },
		{ B("\xf3\x0f\x6f\x03"), 16, false, false, false, false, 0 }, /* movdqu */
		{ B("\xf3\x0f\x7f\x03"), 16, false, false, false, true, 0 },
		{ B("\x0f\x6f\x03"), 8, true, false, false, false, 0 },       /* movq mm */
		{ B("\x0f\x7f\x03"), 8, true, false, false, true, 0 },
		{ B("\x44\x0f\x6f\x3b"), 8, true, false, false, false, 7 },   /* REX.R: mm7 */
		{ B("\x0f\x6e\x03"), 4, true, false, true, false, 0 },        /* movd mm */
		{ B("\x48\x0f\x6e\x03"), 8, true, false, true, false, 0 },    /* movq mm */
		{ B("\x0f\x7e\x03"), 4, true, false, false, true, 0 },
		{ B("\x66\x0f\x6e\x03"), 4, false, false, true, false, 0 },   /* movd xmm */
		{ B("\x66\x48\x0f\x6e\x03"), 8, false, false, true, false, 0 },
		{ B("\x66\x0f\x7e\x03"), 4, false, false, false, true, 0 },
		{ B("\xf3\x0f\x7e\x03"), 8, false, false, true, false, 0 },   /* movq xmm */
		{ B("\x66\x0f\xd6\x03"), 8, false, false, false, true, 0 },
		{ B("\x0f\xe7\x03"), 8, true, false, false, true, 0 },        /* movntq */
		{ B("\x66\x0f\xe7\x03"), 16, false, true, false, true, 0 },   /* movntdq */
		{ B("\x44\x0f\x10\x03"), 16, false, false, false, false, 8 }, /* xmm8 */
		{ B("\x66\x45\x0f\x7f\x3f"), 16, false, true, false, true, 15 }, /* movdqa [r15], xmm15 */
	};
	for (size_t i = 0; i < sizeof vec / sizeof vec[0]; i++) {
		if (insn_decode((const uint8_t *)vec[i].bytes, vec[i].n, 64, &in) != INSN_OK ||
		    in.op != INSN_OP_VMOV || in.len != vec[i].n || in.width != vec[i].width ||
		    in.vec_mmx != vec[i].mmx || in.vec_aligned != vec[i].aligned ||
		    in.vec_zero_upper != vec[i].zero_upper || in.mem_is_dst != vec[i].store ||
		    in.reg != vec[i].reg) {
			char m[160];
			snprintf(m, sizeof m, "vector move %zu: op %d len %u width %u mmx %d aligned %d zero %d store %d reg %d",
				 i, in.op, in.len, in.width, in.vec_mmx, in.vec_aligned, in.vec_zero_upper,
				 in.mem_is_dst, in.reg);
			unit_fail(__FILE__, __LINE__, m);
		}
	}
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
	{ 64, B("\x0f\x12\x03"), INSN_UNSUPPORTED },     /* movlps */
	{ 64, B("\xf2\x0f\x6f\x03"), INSN_UNSUPPORTED }, /* no such move */
	{ 64, B("\xd9\x03"), INSN_UNSUPPORTED },         /* fld */
	{ 64, B("\xf3\x89\x03"), INSN_UNSUPPORTED },     /* rep on a non-string op */
	{ 64, B("\xf3\x0f\xb8\x03"), INSN_UNSUPPORTED }, /* popcnt */
	{ 64, B("\xd1\x23"), INSN_UNSUPPORTED },         /* shl [rbx], 1 */
	{ 64, B("\xf7\x0b\x00\x00\x00\x00"), INSN_UNSUPPORTED }, /* test /1 alias */
	{ 64, B("\xff\x1b"), INSN_UNSUPPORTED },         /* call far [rbx] */
	{ 64, B("\x8e\x0b"), INSN_INVALID },           /* mov cs, [rbx] */
	{ 64, B("\x0f\x00\x13"), INSN_UNSUPPORTED },     /* lldt [rbx] */
	{ 64, B("\x0f\x01\x13"), INSN_UNSUPPORTED },     /* lgdt [rbx] */
	{ 64, B("\xc8\x10\x00\x02"), INSN_UNSUPPORTED }, /* enter 0x10, 2 */
	{ 64, B("\xc6\x0b\x00"), INSN_UNSUPPORTED },     /* c6 /1 */
	{ 64, B("\x82\x03\x01"), INSN_UNSUPPORTED },
	{ 64, B("\x8c\x3b"), INSN_INVALID },           /* mov [rbx], segment 7 */
	{ 64, B("\xf0\x0f\xa3\x03"), INSN_INVALID },   /* LOCK BT */
	{ 64, B("\xf3\x0f\xbc\x03"), INSN_UNSUPPORTED }, /* tzcnt */
	{ 64, B("\xf0\x0f\x10\x03"), INSN_INVALID },   /* LOCK on an SSE move */
	{ 64, B("\xf0\xff\x33"), INSN_INVALID },       /* LOCK PUSH */
	{ 64, B("\xf0\x0f\xaf\x03"), INSN_INVALID },   /* LOCK IMUL */
	{ 64, B("\xf0\xf7\x23"), INSN_INVALID },       /* LOCK MUL */
	{ 64, B("\xf0\x0f\x44\x03"), INSN_INVALID },   /* LOCK CMOV */
	{ 64, B("\xf0\x0f\xba\x23\x01"), INSN_INVALID }, /* LOCK BT imm8 */
	{ 64, B("\xf0\x0f\xa4\x03\x01"), INSN_INVALID }, /* LOCK SHLD */
	{ 64, B("\xf0\x0f\xbc\x03"), INSN_INVALID },   /* LOCK BSF */
	{ 64, B("\xf0\x8c\x1b"), INSN_INVALID },
	{ 64, B("\x0f\xba\x03\x00"), INSN_UNSUPPORTED }, /* 0f ba /0: no such op */
	{ 64, B("\x8f\x0b"), INSN_UNSUPPORTED },       /* 8f /1 */
	{ 64, B("\xf3\x0f\xc1\x03"), INSN_UNSUPPORTED }, /* F3 on XADD */
	{ 64, B("\xf3\xff\x33"), INSN_UNSUPPORTED },
	{ 64, B("\x0f\xa3\xc0"), INSN_UNSUPPORTED },   /* bt eax, eax: no memory */
	{ 64, B("\x0f\xc1\xc8"), INSN_UNSUPPORTED },   /* xadd eax, ecx */
	{ 64, B("\x0f\x28\xc1"), INSN_UNSUPPORTED },   /* movaps xmm0, xmm1 */
	{ 64, B("\xff\xd0"), INSN_UNSUPPORTED },       /* call rax */
	{ 64, B("\xff\xe0"), INSN_UNSUPPORTED },       /* jmp rax */
	{ 64, B("\x6a"), INSN_TRUNCATED },
	{ 64, B("\xc2\x08"), INSN_TRUNCATED },
	{ 64, B("\xc8\x10\x00"), INSN_TRUNCATED },     /* the level byte */
	{ 64, B("\x0f\xba\x23"), INSN_TRUNCATED },
	{ 64, B("\x66\x0f\x6f"), INSN_TRUNCATED },
	{ 64, B("\x69\x03\x10\x00\x00"), INSN_TRUNCATED },
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
	/* XADD: memory gets the sum, the register the old memory (flags of ADD) */
	{ 64, B("\x0f\xc1\x03"), 0xf0e0d0c006070808ull, RAX, 0xb0a09080ull, 0x2 | FL_CF },
	{ 64, B("\x48\x0f\xc1\x03"), 0x0203040506070808ull, RAX, MEM_VAL, 0x2 | FL_CF },
	{ 64, B("\xf0\x0f\xc0\x23"), 0xf0e0d0c0b0a090f7ull, RAX, 0x1122334455668088ull, 0x2 | FL_SF },
	{ 64, B("\x66\x0f\xc1\x0b"), 0xf0e0d0c0b0a07f7full, RCX, 0x8899aabbccdd9080ull, 0x2 | FL_CF | FL_OF },
	/* CMOVcc with RFLAGS 2: the memory is read either way; a 32-bit one
	 * not taken still zeroes bits 63:32, a 16-bit one keeps them */
	{ 64, B("\x0f\x44\x03"), MEM_VAL, RAX, 0x55667788ull, NOFLAGS },          /* cmove: not taken */
	{ 64, B("\x0f\x45\x03"), MEM_VAL, RAX, 0xb0a09080ull, NOFLAGS },          /* cmovne: taken */
	{ 64, B("\x48\x0f\x45\x03"), MEM_VAL, RAX, MEM_VAL, NOFLAGS },
	{ 64, B("\x48\x0f\x44\x03"), MEM_VAL, RAX, 0x1122334455667788ull, NOFLAGS },
	{ 64, B("\x66\x0f\x44\x03"), MEM_VAL, RAX, 0x1122334455667788ull, NOFLAGS },
	{ 64, B("\x66\x0f\x45\x03"), MEM_VAL, RAX, 0x1122334455669080ull, NOFLAGS },
	{ 64, B("\x0f\x4c\x0b"), MEM_VAL, RCX, 0xccddeeffull, NOFLAGS },          /* cmovl: SF == OF */
	{ 64, B("\x0f\x4f\x0b"), MEM_VAL, RCX, 0xb0a09080ull, NOFLAGS },          /* cmovg */
	/* BT BTS BTR BTC with an imm8, taken modulo the operand size: CF the
	 * bit before, the others kept */
	{ 64, B("\x0f\xba\x23\x07"), MEM_VAL, -1, 0, 0x2 | FL_CF },
	{ 64, B("\x0f\xba\x23\x27"), MEM_VAL, -1, 0, 0x2 | FL_CF },               /* 39 % 32 */
	{ 64, B("\x0f\xba\x2b\x00"), 0xf0e0d0c0b0a09081ull, -1, 0, NOFLAGS },
	{ 64, B("\x0f\xba\x33\x07"), 0xf0e0d0c0b0a09000ull, -1, 0, 0x2 | FL_CF },
	{ 64, B("\x0f\xba\x3b\x1f"), 0xf0e0d0c030a09080ull, -1, 0, 0x2 | FL_CF },
	{ 64, B("\x48\x0f\xba\x3b\x3f"), 0x70e0d0c0b0a09080ull, -1, 0, 0x2 | FL_CF },
	{ 64, B("\x48\x0f\xba\x2b\x60"), 0xf0e0d0c1b0a09080ull, -1, 0, NOFLAGS },  /* 96 % 64: bit 32 */
	{ 64, B("\x66\x0f\xba\x33\x1f"), 0xf0e0d0c0b0a01080ull, -1, 0, 0x2 | FL_CF }, /* 31 % 16 */
	/* BSF BSR */
	{ 64, B("\x0f\xbc\x03"), MEM_VAL, RAX, 7, NOFLAGS },
	{ 64, B("\x0f\xbd\x03"), MEM_VAL, RAX, 31, NOFLAGS },
	{ 64, B("\x48\x0f\xbd\x03"), MEM_VAL, RAX, 63, NOFLAGS },
	{ 64, B("\x66\x0f\xbc\x03"), MEM_VAL, RAX, 0x1122334455660007ull, NOFLAGS },
	{ 64, B("\x66\x0f\xbd\x03"), MEM_VAL, RAX, 0x112233445566000full, NOFLAGS },
	{ 64, B("\x48\x0f\xbc\x0b"), MEM_VAL, RCX, 7, NOFLAGS },
	/* SHLD SHRD: CF the last bit out, OF only for a count of 1 (else kept);
	 * a count of 0 (after masking) reads, writes nothing, keeps the flags */
	{ 64, B("\x0f\xa4\x03\x04"), 0xf0e0d0c00a090805ull, -1, 0, 0x2 | FL_CF | FL_PF },
	{ 64, B("\x0f\xac\x03\x08"), 0xf0e0d0c088b0a090ull, -1, 0, 0x2 | FL_CF | FL_SF | FL_PF },
	{ 64, B("\x0f\xa5\x03"), 0xf0e0d0c02ab33bc4ull, -1, 0, NOFLAGS },          /* CL 0xff: 31 */
	{ 64, B("\x48\x0f\xac\x03\x01"), 0x7870686058504840ull, -1, 0, 0x2 | FL_OF },
	{ 64, B("\x66\x0f\xa4\x03\x0f"), 0xf0e0d0c0b0a03bc4ull, -1, 0, NOFLAGS },
	{ 64, B("\x0f\xa4\x03\x00"), MEM_VAL, -1, 0, NOFLAGS },
	{ 64, B("\x0f\xac\x03\x20"), MEM_VAL, -1, 0, NOFLAGS },                   /* 32 & 31 */
	/* IMUL: CF and OF when the signed product does not fit */
	{ 64, B("\x0f\xaf\x03"), MEM_VAL, RAX, 0x8b784400ull, 0x2 | FL_CF | FL_OF },
	{ 64, B("\x48\x0f\xaf\x0b"), MEM_VAL, RCX, 0xb6da0f67f4c6ef80ull, 0x2 | FL_CF | FL_OF },
	{ 64, B("\x6b\x03\xfe"), MEM_VAL, RAX, 0x9ebedf00ull, 0x2 | FL_CF | FL_OF },
	{ 64, B("\x6b\x03\x01"), MEM_VAL, RAX, 0xb0a09080ull, NOFLAGS },
	{ 64, B("\x48\x69\x03\x10\x00\x00\x00"), MEM_VAL, RAX, 0x0e0d0c0b0a090800ull, 0x2 | FL_CF | FL_OF },
	{ 64, B("\x66\x6b\x03\x02"), MEM_VAL, RAX, 0x1122334455662100ull, 0x2 | FL_CF | FL_OF },
	/* MUL IMUL DIV IDIV: rDX:rAX (AX for bytes); DIV leaves the flags */
	{ 64, B("\xf7\x23"), MEM_VAL, RDX, 0x3aec026cull, 0x2 | FL_CF | FL_OF },
	{ 64, B("\x48\xf7\x23"), MEM_VAL, RDX, 0x101f1bf59afb04a6ull, 0x2 | FL_CF | FL_OF },
	{ 64, B("\x48\xf7\x2b"), MEM_VAL, RDX, 0xfefce8b145948d1eull, 0x2 | FL_CF | FL_OF },
	{ 64, B("\xf6\x23"), MEM_VAL, RAX, 0x1122334455664400ull, 0x2 | FL_CF | FL_OF },
	{ 64, B("\xf6\x33"), MEM_VAL, RAX, 0x11223344556608efull, NOFLAGS },
	{ 64, B("\xf7\x33"), MEM_VAL, RAX, 0xc789ad76ull, NOFLAGS },
	{ 64, B("\xf7\x33"), MEM_VAL, RDX, 0x953d5c88ull, NOFLAGS },
	{ 64, B("\x48\xf7\x33"), MEM_VAL, RAX, 0x01358e75d303369full, NOFLAGS },
	{ 64, B("\x48\xf7\x3b"), MEM_VAL, RAX, 0xecbd04772b41621dull, NOFLAGS },
	{ 64, B("\x48\xf7\x3b"), MEM_VAL, RDX, 0x0dc3cd48ab651908ull, NOFLAGS },
	{ 64, B("\x66\xf7\x3b"), MEM_VAL, RAX, 0x11223344556672f2ull, NOFLAGS },
	{ 64, B("\x66\xf7\x3b"), MEM_VAL, RDX, 0x0123456789abde88ull, NOFLAGS },
	/* SMSW, MOV from DS: CR0 and the selectors are 0 here; a word written */
	{ 64, B("\x0f\x01\x23"), 0xf0e0d0c0b0a00000ull, -1, 0, NOFLAGS },
	{ 64, B("\x8c\x1b"), 0xf0e0d0c0b0a00000ull, -1, 0, NOFLAGS },
	/* PUSH from memory: the operand read, then the stack written */
	{ 64, B("\xff\x33"), MEM_VAL, RSP, 0x14f8, NOFLAGS },
	{ 64, B("\x66\xff\x33"), MEM_VAL, RSP, 0x14fe, NOFLAGS },
	{ 32, B("\xff\x33"), MEM_VAL, RSP, 0x14fc, NOFLAGS },
	/* vector stores of registers that are zero; a load leaves memory */
	{ 64, B("\x0f\x11\x03"), 0, -1, 0, NOFLAGS },                               /* movups: 2 writes */
	{ 64, B("\xf3\x0f\x11\x03"), 0xf0e0d0c000000000ull, -1, 0, NOFLAGS },       /* movss */
	{ 64, B("\x0f\x7f\x03"), 0, -1, 0, NOFLAGS },                               /* movq mm0 */
	{ 64, B("\x66\x0f\x7e\x03"), 0xf0e0d0c000000000ull, -1, 0, NOFLAGS },       /* movd */
	{ 64, B("\x66\x0f\x6f\x03"), MEM_VAL, -1, 0, NOFLAGS },                     /* movdqa: 2 reads */
	/* 32- and 16-bit code */
	{ 32, B("\x0f\xc1\x03"), 0xf0e0d0c006070808ull, RAX, 0xb0a09080ull, 0x2 | FL_CF },
	{ 32, B("\x0f\xba\x3b\x1f"), 0xf0e0d0c030a09080ull, -1, 0, 0x2 | FL_CF },
	{ 16, B("\x0f\xc1\x07"), 0xf0e0d0c0b0a00808ull, RAX, 0x1122334455669080ull, 0x2 | FL_CF },
	{ 16, B("\x0f\xbc\x07"), MEM_VAL, RAX, 0x1122334455660007ull, NOFLAGS },
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
	CHECK(insn_emulate(&e.in, &e.m, &e.r, &fake_ops, &e.f, &fault) == INSN_EMU_AGAIN);
	CHECK(e.r.rcx == 2 && e.r.rsi == 0x1104 && e.r.rdi == 0x1804 && e.r.rip == 0x100);
	CHECK(e.f.nacc == 2 && e.f.acc[0].addr == 0x1100 && !e.f.acc[0].write &&
	      e.f.acc[1].addr == 0x1800 && e.f.acc[1].write && e.f.acc[1].val == 0xb0a09080);
	CHECK(insn_emulate(&e.in, &e.m, &e.r, &fake_ops, &e.f, &fault) == INSN_EMU_AGAIN);
	CHECK(insn_emulate(&e.in, &e.m, &e.r, &fake_ops, &e.f, &fault) == INSN_EMU_DONE);
	CHECK(e.r.rcx == 0 && e.r.rsi == 0x110c && e.r.rdi == 0x180c && e.r.rip == 0x102);
	CHECK(memcmp(&e.f.mem[0x800], &e.f.mem[0x100], 12) == 0);
	CHECK(e.r.rflags == 0x2);

	/* Count 0 at entry: done, no access. */
	e.f.nacc = 0;
	e.r.rip = 0x100;
	CHECK(insn_emulate(&e.in, &e.m, &e.r, &fake_ops, &e.f, &fault) == INSN_EMU_DONE);
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
	CHECK(insn_emulate(&e.in, &e.m, &e.r, &fake_ops, &e.f, &fault) == INSN_EMU_AGAIN);
	CHECK(e.r.rsi == 0x1106 && e.r.rdi == 0x1806 && e.r.rcx == 1);
	CHECK(insn_emulate(&e.in, &e.m, &e.r, &fake_ops, &e.f, &fault) == INSN_EMU_DONE);
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
	while ((st = insn_emulate(&e.in, &e.m, &e.r, &fake_ops, &e.f, &fault)) == INSN_EMU_AGAIN)
		iters++;
	CHECK(st == INSN_EMU_DONE && iters == 3 && e.r.rcx == 0 && e.r.rdi == 0x1808);
	CHECK_EQ_U64(mem64(&e, 0x1800), 0x7788778877887788ull);
	CHECK(e.r.rip == 0x103);

	env_init(&e, 64);
	e.r.rcx = 2;
	e.r.rsi = 0x1100;
	REQUIRE(insn_decode((const uint8_t *)"\xf3\x48\xad", 3, 64, &e.in) == INSN_OK);
	CHECK(insn_emulate(&e.in, &e.m, &e.r, &fake_ops, &e.f, &fault) == INSN_EMU_AGAIN);
	CHECK_EQ_U64(e.r.rax, MEM_VAL);
	CHECK(insn_emulate(&e.in, &e.m, &e.r, &fake_ops, &e.f, &fault) == INSN_EMU_DONE);
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
	while ((st = insn_emulate(&e.in, &e.m, &e.r, &fake_ops, &e.f, &fault)) == INSN_EMU_AGAIN)
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
	CHECK(insn_emulate(&e.in, &e.m, &e.r, &fake_ops, &e.f, &fault) == INSN_EMU_AGAIN);
	CHECK(insn_emulate(&e.in, &e.m, &e.r, &fake_ops, &e.f, &fault) == INSN_EMU_DONE);
	CHECK(e.r.rcx == 0 && e.r.rsi == 0x1110 && e.r.rdi == 0x1810 && (e.r.rflags & FL_ZF));

	/* repne scasw finds AX at the third word, backwards from DI. */
	env_init(&e, 64);
	e.r.rflags = 0x2 | FL_DF;
	e.r.rax = 0xffff0000u | e.f.mem[0x7fc] | e.f.mem[0x7fd] << 8;
	e.r.rcx = 10;
	e.r.rdi = 0x1800;
	REQUIRE(insn_decode((const uint8_t *)"\xf2\x66\xaf", 3, 64, &e.in) == INSN_OK);
	iters = 0;
	while ((st = insn_emulate(&e.in, &e.m, &e.r, &fake_ops, &e.f, &fault)) == INSN_EMU_AGAIN)
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
	CHECK(insn_emulate(&e.in, &e.m, &e.r, &fake_ops, &e.f, &fault) == INSN_EMU_AGAIN);
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
	CHECK(insn_emulate(&e.in, &e.m, &e.r, &fake_ops, &e.f, &fault) == INSN_EMU_DONE);
	CHECK(e.f.nacc == 0 && e.r.rcx == 0x10000);

	/* 64-bit code with 67: ECX, ESI, EDI, written as 32-bit registers. */
	env_init(&e, 64);
	e.r.rcx = 0xffffffff00000002ull;
	e.r.rsi = 0xffffffff00001100ull;
	e.r.rdi = 0xffffffff00001800ull;
	REQUIRE(insn_decode((const uint8_t *)"\x67\xf3\xa4", 3, 64, &e.in) == INSN_OK);
	CHECK(insn_emulate(&e.in, &e.m, &e.r, &fake_ops, &e.f, &fault) == INSN_EMU_AGAIN);
	CHECK(e.f.acc[0].addr == 0x1100 && e.f.acc[1].addr == 0x1800);
	CHECK(e.r.rcx == 1 && e.r.rsi == 0x1101 && e.r.rdi == 0x1801);

	/* 64-bit REP: all of RCX counts. */
	env_init(&e, 64);
	e.r.rcx = 0x100000000ull;
	e.r.rsi = 0x1100;
	e.r.rdi = 0x1800;
	REQUIRE(insn_decode((const uint8_t *)"\xf3\xa4", 2, 64, &e.in) == INSN_OK);
	CHECK(insn_emulate(&e.in, &e.m, &e.r, &fake_ops, &e.f, &fault) == INSN_EMU_AGAIN);
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
	CHECK(insn_emulate(&none, &e.m, &e.r, &fake_ops, &e.f, &fault) == INSN_EMU_UNSUPPORTED);
	REQUIRE(insn_decode((const uint8_t *)"\x8b\x03", 2, 32, &e.in) == INSN_OK);
	CHECK(insn_emulate(&e.in, &e.m, &e.r, &fake_ops, &e.f, &fault) == INSN_EMU_UNSUPPORTED); /* mode */
	CHECK(e.f.nacc == 0 && e.r.rip == 0x100);
}
