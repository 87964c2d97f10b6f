/* virt/insn.c's newer ops one by one on the fake machine (insn_fake.h):
 * the stack and near branches, faults they raise, bit ops, CMOV, SMSW and
 * segment register moves, string I/O, vector moves, segment loads. */
#include "tests/unit/insn_fake.h"
#include <stdio.h>

/* PUSH and POP of registers, immediates and memory in 64-bit code: rSP
 * moves by the slot first, PUSH rSP pushes the value from before, POP rSP
 * keeps the value popped. */
TEST(insn_emulate_push_pop)
{
	struct env e;
	env_init(&e, 64);
	REQUIRE(emulate_checked(&e, B("\x50")) == INSN_EMU_DONE); /* push rax */
	CHECK_EQ_U64(e.r.rsp, 0x14f8);
	CHECK_EQ_U64(mem64(&e, 0x14f8), 0x1122334455667788ull);
	CHECK(e.r.rip == 0x101 && e.f.acc[0].size == 8 && e.f.acc[0].write);
	REQUIRE(emulate_checked(&e, B("\x41\x54")) == INSN_EMU_DONE); /* push r12 */
	CHECK_EQ_U64(mem64(&e, 0x14f0), 0x1600);
	REQUIRE(emulate_checked(&e, B("\x6a\x80")) == INSN_EMU_DONE); /* imm8, sign-extended */
	CHECK_EQ_U64(mem64(&e, 0x14e8), 0xffffffffffffff80ull);
	REQUIRE(emulate_checked(&e, B("\x68\x78\x56\x34\x92")) == INSN_EMU_DONE); /* imm32, too */
	CHECK_EQ_U64(mem64(&e, 0x14e0), 0xffffffff92345678ull);
	REQUIRE(emulate_checked(&e, B("\xff\x33")) == INSN_EMU_DONE); /* push [rbx]: read, then push */
	CHECK(e.f.nacc == 2 && e.f.acc[0].addr == 0x1100 && e.f.acc[1].addr == 0x14d8);
	CHECK_EQ_U64(mem64(&e, 0x14d8), MEM_VAL);
	REQUIRE(emulate_checked(&e, B("\x54")) == INSN_EMU_DONE); /* push rsp: the old rsp */
	CHECK_EQ_U64(mem64(&e, 0x14d0), 0x14d8);
	CHECK_EQ_U64(e.r.rsp, 0x14d0);

	REQUIRE(emulate_checked(&e, B("\x58")) == INSN_EMU_DONE); /* pop rax */
	CHECK(e.r.rax == 0x14d8 && e.r.rsp == 0x14d8);
	REQUIRE(emulate_checked(&e, B("\x59")) == INSN_EMU_DONE);
	CHECK(e.r.rcx == MEM_VAL && e.r.rsp == 0x14e0);
	REQUIRE(emulate_checked(&e, B("\x8f\x03")) == INSN_EMU_DONE); /* pop [rbx]: stack, then memory */
	CHECK(e.f.nacc == 2 && e.f.acc[0].addr == 0x14e0 && !e.f.acc[0].write &&
	      e.f.acc[1].addr == 0x1100 && e.f.acc[1].write);
	CHECK_EQ_U64(mem64(&e, 0x1100), 0xffffffff92345678ull);
	REQUIRE(emulate_checked(&e, B("\x41\x5f")) == INSN_EMU_DONE); /* pop r15 */
	CHECK(e.r.r15 == 0xffffffffffffff80ull && e.r.rsp == 0x14f0);
	REQUIRE(emulate_checked(&e, B("\x5c")) == INSN_EMU_DONE); /* pop rsp: the value popped */
	CHECK_EQ_U64(e.r.rsp, 0x1600);
	CHECK_EQ_U64(e.r.rip, 0x114);
	CHECK(e.r.rflags == 0x2);

	/* POP [rSP+8] addresses with rSP already moved (SDM: POP). */
	env_init(&e, 64);
	uint64_t top = mem64(&e, 0x1500), next = mem64(&e, 0x1508);
	REQUIRE(emulate_checked(&e, B("\x8f\x44\x24\x08")) == INSN_EMU_DONE);
	CHECK(e.f.acc[0].addr == 0x1500 && e.f.acc[1].addr == 0x1510);
	CHECK_EQ_U64(mem64(&e, 0x1510), top);
	CHECK_EQ_U64(mem64(&e, 0x1508), next);
	CHECK_EQ_U64(e.r.rsp, 0x1508);
	REQUIRE(emulate_checked(&e, B("\x8f\x04\x24")) == INSN_EMU_DONE); /* pop [rsp]: onto the new top */
	CHECK(e.f.acc[0].addr == 0x1508 && e.f.acc[1].addr == 0x1510);
	CHECK_EQ_U64(mem64(&e, 0x1510), next);

	/* 66 in 64-bit code: 16-bit slots on the 64-bit stack. */
	env_init(&e, 64);
	uint64_t above = mem64(&e, 0x1500);
	REQUIRE(emulate_checked(&e, B("\x66\x50")) == INSN_EMU_DONE); /* push ax */
	CHECK(e.r.rsp == 0x14fe && e.f.acc[0].size == 2 && mem_get(&e, 0x14fe, 2) == 0x7788);
	CHECK_EQ_U64(mem64(&e, 0x1500), above);
	REQUIRE(emulate_checked(&e, B("\x66\x6a\xff")) == INSN_EMU_DONE);
	CHECK(e.r.rsp == 0x14fc && mem_get(&e, 0x14fc, 2) == 0xffff);
	REQUIRE(emulate_checked(&e, B("\x66\x68\x34\x12")) == INSN_EMU_DONE);
	CHECK(e.r.rsp == 0x14fa && mem_get(&e, 0x14fa, 2) == 0x1234);
	REQUIRE(emulate_checked(&e, B("\x66\xff\x33")) == INSN_EMU_DONE); /* push word [rbx] */
	CHECK(e.r.rsp == 0x14f8 && mem_get(&e, 0x14f8, 2) == 0x9080);
	REQUIRE(emulate_checked(&e, B("\x66\x59")) == INSN_EMU_DONE); /* pop cx: the rest of rcx stays */
	CHECK(e.r.rcx == 0x8899aabbccdd9080ull && e.r.rsp == 0x14fa);
	REQUIRE(emulate_checked(&e, B("\x66\x8f\x03")) == INSN_EMU_DONE); /* pop word [rbx] */
	CHECK(mem64(&e, 0x1100) == 0xf0e0d0c0b0a01234ull && e.r.rsp == 0x14fc);

	/* PUSH [rSP+8] reads with rSP from before the push. */
	env_init(&e, 64);
	REQUIRE(emulate_checked(&e, B("\xff\x74\x24\x08")) == INSN_EMU_DONE);
	CHECK(e.f.acc[0].addr == 0x1508 && e.f.acc[1].addr == 0x14f8);
	CHECK_EQ_U64(mem64(&e, 0x14f8), mem64(&e, 0x1508));

	/* 66 with REX.W: REX.W wins, the slot is 8 bytes (and 68's immediate
	 * 4 bytes, so the instruction is 7 long). */
	env_init(&e, 64);
	CHECK(emulate_checked(&e, B("\x66\x48\x50")) == INSN_EMU_DONE);
	CHECK(e.r.rsp == 0x14f8 && mem64(&e, 0x14f8) == 0x1122334455667788ull);
	env_init(&e, 64);
	CHECK(emulate_checked(&e, B("\x66\x48\x68\x78\x56\x34\x12")) == INSN_EMU_DONE);
	CHECK(e.r.rip == 0x107 && e.r.rsp == 0x14f8 && mem64(&e, 0x14f8) == 0x12345678);
}

/* The stack's width is SS's (stack_bits), not the code's: ESP in a 32-bit
 * stack, SP in a 16-bit one, which wraps and keeps the bits above it. */
TEST(insn_emulate_stack_width)
{
	struct env e;

	/* 32-bit code and stack, SS based. */
	env_init(&e, 32);
	e.m.seg_base[SEG_SS] = 0x100;
	e.r.rsp = 0x1400;
	REQUIRE(emulate_checked(&e, B("\x50")) == INSN_EMU_DONE); /* push eax */
	CHECK(e.r.rsp == 0x13fc && e.f.acc[0].addr == 0x14fc && e.f.acc[0].size == 4);
	CHECK_EQ_U64(mem_get(&e, 0x14fc, 4), 0x55667788);
	REQUIRE(emulate_checked(&e, B("\xff\x33")) == INSN_EMU_DONE); /* push dword [ebx]: DS, then SS */
	CHECK(e.f.acc[0].addr == 0x1100 && e.f.acc[1].addr == 0x14f8);
	REQUIRE(emulate_checked(&e, B("\x59")) == INSN_EMU_DONE); /* pop ecx */
	CHECK(e.r.rcx == 0xb0a09080ull && e.r.rsp == 0x13fc);
	REQUIRE(emulate_checked(&e, B("\x66\x5a")) == INSN_EMU_DONE); /* pop dx: 2 bytes */
	CHECK(e.r.rdx == 0x0123456789ab7788ull && e.r.rsp == 0x13fe);

	/* 16-bit code and stack: SP 0 wraps to 0xfffe (SS.base + 0xfffe wraps
	 * at 4 GiB onto the fake's memory). */
	env_init(&e, 16);
	e.m.seg_base[SEG_SS] = (0x1800 - 0xfffeu) & 0xffffffffu;
	e.r.rsp = 0xabcd0000ull;
	REQUIRE(emulate_checked(&e, B("\x50")) == INSN_EMU_DONE); /* push ax */
	CHECK(e.f.acc[0].addr == 0x1800 && e.f.acc[0].size == 2);
	CHECK_EQ_U64(e.r.rsp, 0xabcdfffeull);
	CHECK_EQ_U64(mem_get(&e, 0x1800, 2), 0x7788);
	REQUIRE(emulate_checked(&e, B("\x66\x50")) == INSN_EMU_DONE); /* push eax: 4 bytes */
	CHECK(e.r.rsp == 0xabcdfffaull && mem_get(&e, 0x17fc, 4) == 0x55667788);
	REQUIRE(emulate_checked(&e, B("\x66\x59")) == INSN_EMU_DONE); /* pop ecx */
	CHECK(e.r.rcx == 0x55667788 && e.r.rsp == 0xabcdfffeull);
	REQUIRE(emulate_checked(&e, B("\xc3")) == INSN_EMU_DONE); /* ret: SP wraps back to 0 */
	CHECK(e.r.rip == 0x7788 && e.r.rsp == 0xabcd0000ull);

	/* 32-bit code on a 16-bit stack: 4-byte slots, SP wraps. */
	env_init(&e, 32);
	e.m.stack_bits = 16;
	e.m.seg_base[SEG_SS] = (0x1800 - 0xfffcu) & 0xffffffffu;
	e.r.rsp = 0x12340000ull;
	REQUIRE(emulate_checked(&e, B("\x50")) == INSN_EMU_DONE);
	CHECK(e.f.acc[0].addr == 0x1800 && e.f.acc[0].size == 4);
	CHECK_EQ_U64(e.r.rsp, 0x1234fffcull);
	CHECK_EQ_U64(mem_get(&e, 0x1800, 4), 0x55667788);
}

/* CALL RET JMP LEAVE ENTER. */
TEST(insn_emulate_call_ret)
{
	struct env e;

	env_init(&e, 64);
	e.r.rip = 0x2000;
	REQUIRE(emulate_checked(&e, B("\xe8\x10\x00\x00\x00")) == INSN_EMU_DONE); /* call +0x10 */
	CHECK(e.r.rip == 0x2015 && e.r.rsp == 0x14f8 && mem64(&e, 0x14f8) == 0x2005);
	REQUIRE(emulate_checked(&e, B("\xe8\xf0\xff\xff\xff")) == INSN_EMU_DONE); /* call -0x10 */
	CHECK(e.r.rip == 0x200a && e.r.rsp == 0x14f0 && mem64(&e, 0x14f0) == 0x201a);
	REQUIRE(emulate_checked(&e, B("\xc3")) == INSN_EMU_DONE);
	CHECK(e.r.rip == 0x201a && e.r.rsp == 0x14f8);
	REQUIRE(emulate_checked(&e, B("\xc2\x10\x00")) == INSN_EMU_DONE); /* ret 0x10: and 16 more */
	CHECK(e.r.rip == 0x2005 && e.r.rsp == 0x1510);
	CHECK(e.r.rflags == 0x2);

	/* Through memory: the operand is read before the push. */
	env_init(&e, 64);
	mem_put(&e, 0x1100, 8, 0x3000);
	REQUIRE(emulate_checked(&e, B("\xff\x13")) == INSN_EMU_DONE); /* call [rbx] */
	CHECK(e.r.rip == 0x3000 && mem64(&e, 0x14f8) == 0x102);
	CHECK(e.f.acc[0].addr == 0x1100 && !e.f.acc[0].write && e.f.acc[1].addr == 0x14f8);
	mem_put(&e, 0x14f8, 8, 0x4000);
	REQUIRE(emulate_checked(&e, B("\xff\x14\x24")) == INSN_EMU_DONE); /* call [rsp] */
	CHECK(e.r.rip == 0x4000 && e.r.rsp == 0x14f0 && mem64(&e, 0x14f0) == 0x3003);
	mem_put(&e, 0x1100, 8, 0xffff800000001234ull);
	REQUIRE(emulate_checked(&e, B("\xff\x23")) == INSN_EMU_DONE); /* jmp [rbx]: no stack */
	CHECK(e.r.rip == 0xffff800000001234ull && e.r.rsp == 0x14f0 && e.f.nacc == 1);

	/* 32- and 16-bit code: 4- and 2-byte slots; EIP and IP wrap. */
	env_init(&e, 32);
	e.r.rip = 0xfffffff0ull;
	REQUIRE(emulate_checked(&e, B("\xe8\x20\x00\x00\x00")) == INSN_EMU_DONE);
	CHECK(e.r.rip == 0x15 && e.r.rsp == 0x14fc && mem_get(&e, 0x14fc, 4) == 0xfffffff5ull);
	REQUIRE(emulate_checked(&e, B("\xff\x23")) == INSN_EMU_DONE); /* jmp dword [ebx] */
	CHECK_EQ_U64(e.r.rip, 0xb0a09080ull);
	env_init(&e, 16);
	e.r.rip = 0xfff0;
	REQUIRE(emulate_checked(&e, B("\xe8\x20\x00")) == INSN_EMU_DONE);
	CHECK(e.r.rip == 0x13 && e.r.rsp == 0x14fe && mem_get(&e, 0x14fe, 2) == 0xfff3);
	REQUIRE(emulate_checked(&e, B("\xc2\x04\x00")) == INSN_EMU_DONE); /* ret 4 */
	CHECK(e.r.rip == 0xfff3 && e.r.rsp == 0x1504);
	REQUIRE(emulate_checked(&e, B("\xff\x17")) == INSN_EMU_DONE); /* call word [bx] */
	CHECK(e.r.rip == 0x9080 && mem_get(&e, 0x1502, 2) == 0xfff5);

	/* LEAVE: rSP <- rBP, then rBP popped from there. */
	env_init(&e, 64);
	uint64_t saved = mem64(&e, 0x1400);
	REQUIRE(emulate_checked(&e, B("\xc9")) == INSN_EMU_DONE);
	CHECK(e.f.acc[0].addr == 0x1400 && e.r.rbp == saved && e.r.rsp == 0x1408);
	env_init(&e, 64);
	REQUIRE(emulate_checked(&e, B("\x66\xc9")) == INSN_EMU_DONE); /* 16-bit: BP only */
	CHECK(e.r.rbp == (saved & 0xffff) && e.r.rsp == 0x1402);

	/* ENTER 0x20, 0: push rBP, rBP <- rSP, rSP -= 0x20. Level 1 pushes the
	 * new frame pointer too. */
	env_init(&e, 64);
	REQUIRE(emulate_checked(&e, B("\xc8\x20\x00\x00")) == INSN_EMU_DONE);
	CHECK(e.f.nacc == 1 && mem64(&e, 0x14f8) == 0x1400);
	CHECK(e.r.rbp == 0x14f8 && e.r.rsp == 0x14d8 && e.r.rip == 0x104);
	env_init(&e, 64);
	REQUIRE(emulate_checked(&e, B("\xc8\x20\x00\x01")) == INSN_EMU_DONE);
	CHECK(e.f.nacc == 2 && mem64(&e, 0x14f8) == 0x1400 && mem64(&e, 0x14f0) == 0x14f8);
	CHECK(e.r.rbp == 0x14f8 && e.r.rsp == 0x14d0);
	env_init(&e, 32);
	e.r.rbp = 0xffffffff00001400ull; /* bits 63:32 are not EBP's */
	REQUIRE(emulate_checked(&e, B("\xc8\x10\x00\x01")) == INSN_EMU_DONE);
	CHECK(mem_get(&e, 0x14fc, 4) == 0x1400 && mem_get(&e, 0x14f8, 4) == 0x14fc);
	CHECK(e.r.rbp == 0x14fc && e.r.rsp == 0x14e8);
	env_init(&e, 64);
	REQUIRE(emulate_checked(&e, B("\x66\xc8\x10\x00\x00")) == INSN_EMU_DONE); /* 16-bit frame */
	CHECK(mem_get(&e, 0x14fe, 2) == 0x1400 && e.r.rbp == 0x14fe && e.r.rsp == 0x14ee);
}

/* A branch to a non-canonical address raises #GP(0) at the branch: nothing
 * pushed, nothing popped, RIP where it was. */
TEST(insn_emulate_branch_noncanonical)
{
	static const struct {
		const char *bytes;
		size_t n;
		uint64_t rip, target; /* the target at [rbx] and on the stack */
		uint64_t cr4;
		bool faults;
	} cases[] = {
		{ B("\xff\x23"), 0x100, MEM_VAL, 0, true },                /* jmp [rbx] */
		{ B("\xff\x13"), 0x100, MEM_VAL, 0, true },                /* call [rbx] */
		{ B("\xff\x23"), 0x100, 0x0000800000000000ull, 0, true },
		{ B("\xff\x23"), 0x100, 0x0000800000000000ull, 1ull << 12, false }, /* LA57 */
		{ B("\xff\x23"), 0x100, 0x0100000000000000ull, 1ull << 12, true },
		{ B("\xff\x23"), 0x100, 0xffff800000000000ull, 0, false },
		{ B("\xff\x13"), 0x100, 0x00007fffffffffffull, 0, false },
		{ B("\xc3"), 0x100, 0x0000800000000000ull, 0, true },      /* ret */
		{ B("\xc2\x08\x00"), 0x100, 0x8000000000000000ull, 0, true },
		{ B("\xc3"), 0x100, 0xfffffffffffffff0ull, 0, false },
		/* call rel32 from near the top of the lower half */
		{ B("\xe8\x00\x01\x00\x00"), 0x00007ffffffffff0ull, 0, 0, true },
		{ B("\xe8\x00\x01\x00\x00"), 0x00007ffffffffff0ull, 0, 1ull << 12, false },
		{ B("\xe8\x00\x01\x00\x00"), 0x00007fffffeffff0ull, 0, 0, false },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct env e;
		env_init(&e, 64);
		e.m.cr4 = cases[i].cr4;
		e.r.rip = cases[i].rip;
		mem_put(&e, 0x1100, 8, cases[i].target);
		mem_put(&e, 0x1500, 8, cases[i].target);
		struct vcpu_regs before = e.r;
		uint8_t mem_before[MEM_SIZE];
		memcpy(mem_before, e.f.mem, MEM_SIZE);
		enum insn_emu_status st = emulate_checked(&e, cases[i].bytes, cases[i].n);
		if (cases[i].faults) {
			CHECK(st == INSN_EMU_FAULT && fault.vector == 13);
			CHECK(memcmp(&before, &e.r, sizeof before) == 0);
			CHECK(memcmp(mem_before, e.f.mem, MEM_SIZE) == 0);
		} else {
			uint64_t want = cases[i].bytes[0] == '\xe8' ? cases[i].rip + 5 + 0x100 : cases[i].target;
			CHECK(st == INSN_EMU_DONE && e.r.rip == want);
		}
		if (unit_failures_in_current) {
			char m[64];
			snprintf(m, sizeof m, "branch case %zu", i);
			unit_fail(__FILE__, __LINE__, m);
			break;
		}
	}
}

/* #DE: a zero divisor or a quotient too wide for rAX. Registers unchanged,
 * nothing written, RIP at the DIV. */
TEST(insn_emulate_divide_error)
{
	static const struct {
		const char *bytes;
		size_t n;
		uint64_t mem, rax, rdx;
	} faults[] = {
		{ B("\xf7\x33"), 0xffffffff00000000ull, 1, 0 },                        /* div dword by 0 */
		{ B("\x48\xf7\x33"), 0, 1, 0 },
		{ B("\xf6\x33"), 0xff00, 1, 0 },                                       /* div byte by 0 */
		{ B("\x66\xf7\x3b"), 0xffff0000ull, 1, 0 },                            /* idiv word by 0 */
		{ B("\xf7\x33"), 0xb0a09080, 0, 0xb0a09080 },                          /* EDX >= divisor */
		{ B("\x48\xf7\x33"), 2, 0, 2 },
		{ B("\xf6\x33"), 0x80, 0xffff, 0 },                                    /* AX / 0x80 = 0x1ff */
		{ B("\xf7\x3b"), 0xffffffff, 0x80000000, 0xffffffff },                 /* INT_MIN / -1 */
		{ B("\x48\xf7\x3b"), ~0ull, 0x8000000000000000ull, ~0ull },
		{ B("\x48\xf7\x3b"), ~0ull, 0, 0x8000000000000000ull },                /* -2^127 / -1 */
		{ B("\x48\xf7\x3b"), 1, 0, 1 },                                        /* 2^64 / 1 */
		{ B("\xf6\x3b"), 0x80, 0x7788, 0 },                                    /* 30600 / -128 */
		{ B("\xf6\x3b"), 0x01, 0x0080, 0 },                                    /* 128 / 1 */
		{ B("\x66\xf7\x3b"), 0xffff, 0x8000, 0xffff },                         /* -32768 / -1 */
	};
	for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++) {
		struct env e;
		env_init(&e, 64);
		mem_put(&e, 0x1100, 8, faults[i].mem);
		e.r.rax = faults[i].rax;
		e.r.rdx = faults[i].rdx;
		struct vcpu_regs before = e.r;
		enum insn_emu_status st = emulate_checked(&e, faults[i].bytes, faults[i].n);
		if (st != INSN_EMU_FAULT || fault.vector != 0 || memcmp(&before, &e.r, sizeof before) != 0 ||
		    e.f.nacc != 1 || e.f.acc[0].write) {
			char m[128];
			snprintf(m, sizeof m, "divide case %zu: status %d vector %u rax %llx rdx %llx", i, st,
				 fault.vector, (unsigned long long)e.r.rax, (unsigned long long)e.r.rdx);
			unit_fail(__FILE__, __LINE__, m);
		}
	}

	/* At the edges, but no fault. */
	static const struct {
		const char *bytes;
		size_t n;
		uint64_t mem, rax, rdx, want_rax, want_rdx;
	} fine[] = {
		{ B("\xf7\x3b"), 1, 0x80000000, 0xffffffff, 0x80000000, 0 },           /* INT_MIN / 1 */
		{ B("\xf6\x3b"), 1, 0xff80, 0, 0x80, 0 },                               /* -128 / 1 */
		{ B("\xf6\x3b"), 2, 0xfff9, 0, 0xfffd, 0 },                             /* -7 / 2: -3 r -1 */
		{ B("\xf7\x33"), 0x10, 0xffffffff, 0xf, 0xffffffff, 0xf },              /* EDX < divisor */
		{ B("\x48\xf7\x3b"), ~0ull, 0x8000000000000001ull, ~0ull, 0x7fffffffffffffffull, 0 },
		{ B("\x66\xf7\x33"), 0x100, 0x12345678, 0xabcd00ff,
		  0x1234ff56, 0xabcd0078 },                                              /* DX:AX 0xff5678 */
	};
	for (size_t i = 0; i < sizeof fine / sizeof fine[0]; i++) {
		struct env e;
		env_init(&e, 64);
		mem_put(&e, 0x1100, 8, fine[i].mem);
		e.r.rax = fine[i].rax;
		e.r.rdx = fine[i].rdx;
		enum insn_emu_status st = emulate_checked(&e, fine[i].bytes, fine[i].n);
		if (st != INSN_EMU_DONE || e.r.rax != fine[i].want_rax || e.r.rdx != fine[i].want_rdx) {
			char m[128];
			snprintf(m, sizeof m, "divide case %zu: status %d rax %llx rdx %llx", i, st,
				 (unsigned long long)e.r.rax, (unsigned long long)e.r.rdx);
			unit_fail(__FILE__, __LINE__, m);
		}
	}
}

/* BT and friends with a register offset: the offset is signed at the
 * operand size and moves the operand by whole operands, so any bit around
 * the address can be reached (SDM: BT, "bit base"). */
TEST(insn_emulate_bt_register_offset)
{
	struct env e;

	/* btc dword [rbx], ecx with ecx -1: bit 31 of the dword at rbx-4. */
	env_init(&e, 64);
	e.r.rcx = 0xffffffff;
	uint64_t before = mem_get(&e, 0x10fc, 4);
	REQUIRE(insn_decode((const uint8_t *)"\x0f\xbb\x0b", 3, 64, &e.in) == INSN_OK);
	CHECK_EQ_U64(insn_mem_linear(&e.in, &e.m, &e.r), 0x10fc);
	REQUIRE(emulate_checked(&e, B("\x0f\xbb\x0b")) == INSN_EMU_DONE);
	CHECK(e.f.acc[0].addr == 0x10fc && e.f.acc[0].size == 4 && e.f.acc[1].addr == 0x10fc);
	CHECK_EQ_U64(mem_get(&e, 0x10fc, 4), before ^ 0x80000000u);
	CHECK_EQ_U64(e.r.rflags & FL_CF, before >> 31 ? FL_CF : 0);
	CHECK_EQ_U64(mem64(&e, 0x1100), MEM_VAL);

	/* Only the operand size's bits of the register count: ecx is 3. */
	env_init(&e, 64);
	e.r.rcx = 0xffffffff00000003ull;
	REQUIRE(emulate_checked(&e, B("\x0f\xab\x0b")) == INSN_EMU_DONE); /* bts */
	CHECK(e.f.acc[0].addr == 0x1100 && mem64(&e, 0x1100) == (MEM_VAL | 8) && !(e.r.rflags & FL_CF));

	/* 64-bit: 69 is bit 5 of the next qword, -65 bit 63 two qwords down. */
	env_init(&e, 64);
	e.r.rcx = 69;
	before = mem64(&e, 0x1108);
	REQUIRE(emulate_checked(&e, B("\x48\x0f\xab\x0b")) == INSN_EMU_DONE);
	CHECK(e.f.acc[0].addr == 0x1108 && e.f.acc[0].size == 8);
	CHECK_EQ_U64(mem64(&e, 0x1108), before | 0x20);
	e.r.rcx = (uint64_t)-65;
	before = mem64(&e, 0x10f0);
	REQUIRE(emulate_checked(&e, B("\x48\x0f\xb3\x0b")) == INSN_EMU_DONE); /* btr */
	CHECK(e.f.acc[0].addr == 0x10f0);
	CHECK_EQ_U64(mem64(&e, 0x10f0), before & ~(1ull << 63));
	CHECK_EQ_U64(e.r.rflags & FL_CF, before >> 63 ? FL_CF : 0);

	/* 16-bit: cx 0x11 is bit 1 of the word at rbx+2; bt writes nothing. */
	env_init(&e, 64);
	e.r.rcx = 0xffff0011;
	REQUIRE(emulate_checked(&e, B("\x66\x0f\xa3\x0b")) == INSN_EMU_DONE);
	CHECK(e.f.nacc == 1 && e.f.acc[0].addr == 0x1102 && e.f.acc[0].size == 2);
	CHECK_EQ_U64(e.r.rflags & FL_CF, (mem_get(&e, 0x1102, 2) >> 1 & 1) ? FL_CF : 0);

	/* Far away: the address says where, the fake's memory is not there. */
	env_init(&e, 64);
	e.r.rcx = 0x80000000; /* -2^31 bits: 2^28 bytes down */
	REQUIRE(insn_decode((const uint8_t *)"\x0f\xa3\x0b", 3, 64, &e.in) == INSN_OK);
	CHECK_EQ_U64(insn_mem_linear(&e.in, &e.m, &e.r), 0x1100 - 0x10000000ull);
	e.r.rcx = 0x7fffffff;
	CHECK_EQ_U64(insn_mem_linear(&e.in, &e.m, &e.r), 0x1100 + 0xffffffcull);
	CHECK(emulate_checked(&e, B("\x0f\xa3\x0b")) == INSN_EMU_MEM_FAULT);
	/* ... wrapped to the address size with 67 */
	e.r.rcx = 0x80000000;
	REQUIRE(insn_decode((const uint8_t *)"\x67\x0f\xa3\x0b", 4, 64, &e.in) == INSN_OK);
	CHECK_EQ_U64(insn_mem_linear(&e.in, &e.m, &e.r), (0x1100 - 0x10000000ull) & 0xffffffffull);

	/* 16-bit code: -1 in AX is bit 15 of the word at bx-2. */
	env_init(&e, 16);
	e.r.rax = 0xffff;
	before = mem_get(&e, 0x10fe, 2);
	REQUIRE(emulate_checked(&e, B("\x0f\xbb\x07")) == INSN_EMU_DONE); /* btc [bx], ax */
	CHECK(e.f.acc[0].addr == 0x10fe && mem_get(&e, 0x10fe, 2) == (before ^ 0x8000));

	/* The imm8 form never moves the operand: 0xff is bit 31 of [rbx]. */
	env_init(&e, 64);
	REQUIRE(emulate_checked(&e, B("\x0f\xba\x33\xff")) == INSN_EMU_DONE); /* btr [rbx], 0xff */
	CHECK(e.f.acc[0].addr == 0x1100 && mem64(&e, 0x1100) == (MEM_VAL & ~0x80000000ull));
	CHECK(e.r.rflags & FL_CF);
}

/* BSF and BSR of a zero source: ZF set, the destination as it was (all 64
 * bits, as AMD documents and the Intel CPUs do). */
TEST(insn_emulate_bsf_zero)
{
	static const char *const forms[] = { "\x0f\xbc\x0b", "\x0f\xbd\x0b", "\x66\x0f\xbc\x0b",
					     "\x48\x0f\xbd\x0b" };
	static const size_t lens[] = { 3, 3, 4, 4 };
	for (unsigned i = 0; i < 4; i++) {
		struct env e;
		env_init(&e, 64);
		mem_put(&e, 0x1100, 8, 0);
		e.r.rflags = 0x2 | FL_CF | FL_OF;
		REQUIRE(emulate_checked(&e, forms[i], lens[i]) == INSN_EMU_DONE);
		CHECK_EQ_U64(e.r.rcx, 0x8899aabbccddeeffull);
		CHECK_EQ_U64(e.r.rflags, 0x2 | FL_CF | FL_OF | FL_ZF);
	}
	/* A non-zero source clears ZF. */
	struct env e;
	env_init(&e, 64);
	mem_put(&e, 0x1100, 8, 0x0000000100000000ull);
	e.r.rflags = 0x2 | FL_ZF;
	REQUIRE(emulate_checked(&e, B("\x48\x0f\xbc\x0b")) == INSN_EMU_DONE);
	CHECK(e.r.rcx == 32 && e.r.rflags == 0x2);
	env_init(&e, 64);
	mem_put(&e, 0x1100, 8, 0x0000000100000000ull); /* zero in the low dword */
	REQUIRE(emulate_checked(&e, B("\x0f\xbc\x0b")) == INSN_EMU_DONE);
	CHECK(e.r.rcx == 0x8899aabbccddeeffull && (e.r.rflags & FL_ZF));
}

/* CMOVcc reads its operand whatever the condition (and faults on it);
 * a 32-bit one writes its destination either way, zeroing bits 63:32. */
TEST(insn_emulate_cmov)
{
	struct env e;
	env_init(&e, 64);
	e.r.rflags = 0x2 | FL_ZF;
	REQUIRE(emulate_checked(&e, B("\x0f\x44\x0b")) == INSN_EMU_DONE); /* cmove ecx: taken */
	CHECK_EQ_U64(e.r.rcx, 0xb0a09080ull);
	REQUIRE(emulate_checked(&e, B("\x0f\x45\x03")) == INSN_EMU_DONE); /* cmovne eax: not */
	CHECK_EQ_U64(e.r.rax, 0x55667788ull);
	CHECK(e.f.nacc == 1 && !e.f.acc[0].write);
	REQUIRE(emulate_checked(&e, B("\x48\x0f\x45\x13")) == INSN_EMU_DONE); /* 64-bit: not */
	CHECK_EQ_U64(e.r.rdx, 0x0123456789abcdefull);
	REQUIRE(emulate_checked(&e, B("\x66\x0f\x45\x13")) == INSN_EMU_DONE); /* 16-bit: not */
	CHECK_EQ_U64(e.r.rdx, 0x0123456789abcdefull);
	REQUIRE(emulate_checked(&e, B("\x66\x0f\x44\x13")) == INSN_EMU_DONE);
	CHECK_EQ_U64(e.r.rdx, 0x0123456789ab9080ull);
	CHECK_EQ_U64(e.r.rflags, 0x2 | FL_ZF);

	/* Not taken, and the read fails: the CPU faults too. */
	env_init(&e, 64);
	e.f.fail_at = 1;
	struct vcpu_regs before = e.r;
	CHECK(emulate(&e, B("\x0f\x44\x03")) == INSN_EMU_MEM_FAULT);
	CHECK(memcmp(&before, &e.r, sizeof before) == 0);

	/* The conditions that read SF, OF, PF. */
	static const struct {
		uint8_t cc;
		uint64_t flags;
		bool taken;
	} conds[] = {
		{ 0x0, FL_OF, true },  { 0x1, FL_OF, false }, { 0x2, FL_CF, true },  { 0x3, FL_CF, false },
		{ 0x6, FL_ZF, true },  { 0x6, 0, false },     { 0x7, FL_CF, false }, { 0x8, FL_SF, true },
		{ 0x9, FL_SF, false }, { 0xa, FL_PF, true },  { 0xb, FL_PF, false }, { 0xc, FL_SF, true },
		{ 0xc, FL_SF | FL_OF, false }, { 0xd, FL_OF, false }, { 0xe, FL_SF | FL_OF | FL_ZF, true },
		{ 0xf, FL_SF | FL_OF, true },
	};
	for (size_t i = 0; i < sizeof conds / sizeof conds[0]; i++) {
		char bytes[3] = { 0x0f, (char)(0x40 | conds[i].cc), 0x0b };
		env_init(&e, 64);
		e.r.rflags = 0x2 | conds[i].flags;
		REQUIRE(emulate_checked(&e, bytes, 3) == INSN_EMU_DONE);
		if (e.r.rcx != (conds[i].taken ? 0xb0a09080ull : 0xccddeeffull)) {
			char m[64];
			snprintf(m, sizeof m, "cmov cc %x flags %llx: rcx %llx", conds[i].cc,
				 (unsigned long long)conds[i].flags, (unsigned long long)e.r.rcx);
			unit_fail(__FILE__, __LINE__, m);
		}
	}
}

/* SMSW writes CR0[15:0]; MOV m16, Sreg the selector: a word, whatever the
 * operand size. */
TEST(insn_emulate_smsw_mov_sreg)
{
	struct env e;
	env_init(&e, 64);
	e.m.cr0 = 0x8005003bull;
	static const uint16_t sel[SEG_COUNT] = { 0x10, 0x08, 0x18, 0x2b, 0x33, 0x3b };
	memcpy(e.m.seg_sel, sel, sizeof sel);
	REQUIRE(emulate_checked(&e, B("\x0f\x01\x23")) == INSN_EMU_DONE);
	CHECK(e.f.nacc == 1 && e.f.acc[0].write && e.f.acc[0].size == 2);
	CHECK_EQ_U64(mem64(&e, 0x1100), 0xf0e0d0c0b0a0003bull);
	REQUIRE(emulate_checked(&e, B("\x48\x0f\x01\x63\x02")) == INSN_EMU_DONE); /* REX.W: still 2 */
	CHECK_EQ_U64(mem64(&e, 0x1100), 0xf0e0d0c0003b003bull);
	static const struct {
		const char *bytes;
		size_t n;
		uint16_t want;
	} movs[] = {
		{ B("\x8c\x03"), 0x10 }, { B("\x8c\x0b"), 0x08 },     { B("\x8c\x13"), 0x18 },
		{ B("\x8c\x1b"), 0x2b }, { B("\x66\x8c\x23"), 0x33 }, { B("\x48\x8c\x2b"), 0x3b },
	};
	for (size_t i = 0; i < sizeof movs / sizeof movs[0]; i++) {
		mem_put(&e, 0x1100, 8, MEM_VAL);
		REQUIRE(emulate_checked(&e, movs[i].bytes, movs[i].n) == INSN_EMU_DONE);
		CHECK(e.f.nacc == 1 && e.f.acc[0].size == 2);
		CHECK_EQ_U64(mem64(&e, 0x1100), (MEM_VAL & ~0xffffull) | movs[i].want);
	}
	CHECK(e.r.rflags == 0x2 && e.r.rax == 0x1122334455667788ull);

	env_init(&e, 16); /* real-mode style: DS:[bx] */
	e.m.seg_sel[SEG_DS] = 0x0100;
	e.m.seg_base[SEG_DS] = 0x1000;
	e.m.cr0 = 0x10;
	e.r.rbx = 0x100;
	REQUIRE(emulate_checked(&e, B("\x8c\x1f")) == INSN_EMU_DONE);
	CHECK(e.f.acc[0].addr == 0x1100 && mem_get(&e, 0x1100, 2) == 0x0100);
	REQUIRE(emulate_checked(&e, B("\x0f\x01\x27")) == INSN_EMU_DONE);
	CHECK(mem_get(&e, 0x1100, 2) == 0x0010);
}

/* INS and OUTS: the port is DX, memory ES:rDI (INS) or seg:rSI (OUTS),
 * stepping down with DF; REP one iteration per call. */
TEST(insn_emulate_ins_outs)
{
	struct env e;
	enum insn_emu_status st;
	int iters = 0;

	env_init(&e, 64);
	e.r.rdx = 0xffffffff000003f8ull;
	e.r.rdi = 0x1800;
	e.r.rcx = 3;
	e.f.port_val = 0x11223344;
	REQUIRE(insn_decode((const uint8_t *)"\xf3\x66\x6d", 3, 64, &e.in) == INSN_OK); /* rep insw */
	while ((st = insn_emulate(&e.in, &e.m, &e.r, &fake_ops, &e.f, &fault)) == INSN_EMU_AGAIN) {
		CHECK(e.r.rip == 0x100);
		iters++;
	}
	CHECK(st == INSN_EMU_DONE && iters == 2 && e.r.rip == 0x103);
	CHECK(e.r.rcx == 0 && e.r.rdi == 0x1806 && e.f.nport == 3);
	for (unsigned i = 0; i < 3; i++) {
		CHECK(e.f.ports[i].port == 0x3f8 && e.f.ports[i].size == 2 && e.f.ports[i].in);
		CHECK(e.f.acc[i].addr == 0x1800 + 2 * i && e.f.acc[i].write && e.f.acc[i].val == 0x3344);
	}
	CHECK_EQ_U64(mem_get(&e, 0x1800, 6), 0x334433443344ull);

	/* rep outsb backwards: the bytes at 0x1102 0x1101 0x1100 go out. */
	env_init(&e, 64);
	e.r.rflags = 0x2 | FL_DF;
	e.r.rdx = 0x80;
	e.r.rsi = 0x1102;
	e.r.rcx = 3;
	REQUIRE(insn_decode((const uint8_t *)"\xf3\x6e", 2, 64, &e.in) == INSN_OK);
	iters = 0;
	while ((st = insn_emulate(&e.in, &e.m, &e.r, &fake_ops, &e.f, &fault)) == INSN_EMU_AGAIN)
		iters++;
	CHECK(st == INSN_EMU_DONE && iters == 2 && e.r.rsi == 0x10ff && e.r.rcx == 0);
	CHECK(e.f.nport == 3 && !e.f.ports[0].in && e.f.ports[0].port == 0x80 && e.f.ports[0].size == 1);
	CHECK(e.f.ports[0].val == 0xa0 && e.f.ports[1].val == 0x90 && e.f.ports[2].val == 0x80);
	CHECK(e.f.nacc == 3 && !e.f.acc[0].write && e.f.acc[0].addr == 0x1102);

	/* A count of 0: no port access either. */
	env_init(&e, 64);
	e.r.rcx = 0;
	REQUIRE(emulate(&e, B("\xf3\x6c")) == INSN_EMU_DONE);
	CHECK(e.f.nport == 0 && e.f.nacc == 0 && e.r.rip == 0x102);

	/* outsd from fs:rsi; insd with REX.W still 4 bytes, to ES whatever the
	 * override says. */
	env_init(&e, 64);
	e.m.seg_base[SEG_FS] = 0x100;
	e.r.rsi = 0x1000;
	e.r.rdx = 0x1234;
	REQUIRE(emulate_checked(&e, B("\x64\x6f")) == INSN_EMU_DONE);
	CHECK(e.f.acc[0].addr == 0x1100 && e.f.ports[0].val == 0xb0a09080 && e.f.ports[0].size == 4);
	CHECK(e.r.rsi == 0x1004);
	e.f.port_val = 0xdeadbeefcafef00dull;
	e.r.rdi = 0x1800;
	REQUIRE(emulate_checked(&e, B("\x64\x48\x6d")) == INSN_EMU_DONE);
	CHECK(e.f.acc[0].addr == 0x1800 && e.f.acc[0].size == 4 && e.f.ports[1].size == 4);
	CHECK(mem_get(&e, 0x1800, 8) == ((mem64(&e, 0x1800) & ~0xffffffffull) | 0xcafef00dull));
	CHECK(e.r.rdi == 0x1804);

	/* 16-bit code: ES:DI, DI wraps. */
	env_init(&e, 16);
	e.m.seg_base[SEG_ES] = (0x1800 - 0xffffu) & 0xffffffffu;
	e.r.rdi = 0xffff;
	e.r.rdx = 0x60;
	e.f.port_val = 0x5a;
	REQUIRE(emulate_checked(&e, B("\x6c")) == INSN_EMU_DONE);
	CHECK(e.f.acc[0].addr == 0x1800 && e.f.mem[0x800] == 0x5a && e.r.rdi == 0);
}

/* The SSE and MMX moves: registers through vec_read/vec_write, memory 8
 * bytes at a time. */
TEST(insn_emulate_vector_moves)
{
	struct env e;
	uint8_t want[16];

	/* movups xmm1, [rbx]: 16 bytes, two reads. */
	env_init(&e, 64);
	REQUIRE(emulate_checked(&e, B("\x0f\x10\x0b")) == INSN_EMU_DONE);
	CHECK(e.f.nacc == 2 && e.f.acc[0].addr == 0x1100 && e.f.acc[1].addr == 0x1108);
	CHECK(memcmp(e.f.xmm[1], &e.f.mem[0x100], 16) == 0 && e.r.rip == 0x103);
	/* movdqu [rbx+8], xmm8 (REX.R): unaligned is fine */
	memset(e.f.xmm[8], 0x5a, 16);
	REQUIRE(emulate_checked(&e, B("\xf3\x44\x0f\x7f\x43\x08")) == INSN_EMU_DONE);
	memset(want, 0x5a, 16);
	CHECK(memcmp(&e.f.mem[0x108], want, 16) == 0);

	/* The aligned forms: #GP(0) off a 16-byte boundary, before any access. */
	static const struct {
		const char *bytes;
		size_t n;
	} aligned[] = {
		{ B("\x0f\x28\x43\x08") },     /* movaps xmm0, [rbx+8] */
		{ B("\x66\x0f\x29\x43\x04") }, /* movapd [rbx+4], xmm0 */
		{ B("\x66\x0f\x6f\x43\x01") }, /* movdqa */
		{ B("\x66\x0f\x7f\x43\x08") },
		{ B("\x0f\x2b\x43\x08") },     /* movntps */
		{ B("\x66\x0f\xe7\x43\x08") }, /* movntdq */
	};
	for (size_t i = 0; i < sizeof aligned / sizeof aligned[0]; i++) {
		env_init(&e, 64);
		memset(e.f.xmm[0], 0x77, 16);
		struct vcpu_regs before = e.r;
		CHECK(emulate_checked(&e, aligned[i].bytes, aligned[i].n) == INSN_EMU_FAULT);
		CHECK(fault.vector == 13 && e.f.nacc == 0);
		CHECK(memcmp(&before, &e.r, sizeof before) == 0);
		memset(want, 0x77, 16);
		CHECK(memcmp(e.f.xmm[0], want, 16) == 0);
		CHECK(mem64(&e, 0x1100) == MEM_VAL);
	}
	env_init(&e, 64); /* aligned: fine */
	memset(e.f.xmm[2], 0x33, 16);
	REQUIRE(emulate_checked(&e, B("\x0f\x29\x13")) == INSN_EMU_DONE); /* movaps [rbx], xmm2 */
	memset(want, 0x33, 16);
	CHECK(memcmp(&e.f.mem[0x100], want, 16) == 0);

	/* Scalar loads zero the rest of the XMM register, stores write only
	 * their bytes. */
	static const struct {
		const char *bytes;
		size_t n;
		unsigned size, reg;
		bool load;
	} scalar[] = {
		{ B("\xf3\x0f\x10\x1b"), 4, 3, true },       /* movss xmm3, [rbx] */
		{ B("\xf2\x0f\x10\x1b"), 8, 3, true },       /* movsd */
		{ B("\xf3\x0f\x7e\x1b"), 8, 3, true },       /* movq xmm3, [rbx] */
		{ B("\x66\x0f\x6e\x1b"), 4, 3, true },       /* movd xmm3, [rbx] */
		{ B("\x66\x48\x0f\x6e\x1b"), 8, 3, true },   /* movq (66 REX.W 0f 6e) */
		{ B("\xf3\x0f\x11\x1b"), 4, 3, false },      /* movss [rbx], xmm3 */
		{ B("\xf2\x0f\x11\x1b"), 8, 3, false },
		{ B("\x66\x0f\xd6\x1b"), 8, 3, false },      /* movq [rbx], xmm3 */
		{ B("\x66\x0f\x7e\x1b"), 4, 3, false },      /* movd [rbx], xmm3 */
		{ B("\x66\x48\x0f\x7e\x1b"), 8, 3, false },
	};
	for (size_t i = 0; i < sizeof scalar / sizeof scalar[0]; i++) {
		env_init(&e, 64);
		memset(e.f.xmm[3], 0xee, 16);
		REQUIRE(emulate_checked(&e, scalar[i].bytes, scalar[i].n) == INSN_EMU_DONE);
		CHECK(e.f.nacc == 1 && e.f.acc[0].size == scalar[i].size && e.f.acc[0].write == !scalar[i].load);
		if (scalar[i].load) {
			memset(want, 0, 16);
			memcpy(want, &e.f.mem[0x100], scalar[i].size);
			CHECK(memcmp(e.f.xmm[3], want, 16) == 0);
		} else {
			uint64_t m = scalar[i].size == 8 ? ~0ull : 0xffffffffull;
			CHECK_EQ_U64(mem64(&e, 0x1100), (MEM_VAL & ~m) | (0xeeeeeeeeeeeeeeeeull & m));
		}
	}

	/* MMX: 8-byte registers, REX.R ignored; movd zeroes the upper half. */
	env_init(&e, 64);
	memset(e.f.xmm[1], 0x11, 16);
	memset(e.f.mm[1], 0x22, 8);
	REQUIRE(emulate_checked(&e, B("\x0f\x6f\x0b")) == INSN_EMU_DONE); /* movq mm1, [rbx] */
	CHECK(e.f.nacc == 1 && e.f.acc[0].size == 8 && memcmp(e.f.mm[1], &e.f.mem[0x100], 8) == 0);
	memset(want, 0x11, 16);
	CHECK(memcmp(e.f.xmm[1], want, 16) == 0);
	memset(e.f.mm[2], 0x22, 8);
	REQUIRE(emulate_checked(&e, B("\x44\x0f\x6e\x13")) == INSN_EMU_DONE); /* movd mm2, [rbx] */
	uint64_t mm2;
	memcpy(&mm2, e.f.mm[2], 8);
	CHECK_EQ_U64(mm2, 0xb0a09080ull);
	memset(e.f.mm[3], 0x44, 8);
	REQUIRE(emulate_checked(&e, B("\x0f\x7f\x1b")) == INSN_EMU_DONE); /* movq [rbx], mm3 */
	CHECK_EQ_U64(mem64(&e, 0x1100), 0x4444444444444444ull);
	mem_put(&e, 0x1100, 8, MEM_VAL);
	REQUIRE(emulate_checked(&e, B("\x0f\xe7\x5b\x04")) == INSN_EMU_DONE); /* movntq [rbx+4]: any alignment */
	CHECK_EQ_U64(mem_get(&e, 0x1104, 8), 0x4444444444444444ull);
	REQUIRE(emulate_checked(&e, B("\x0f\x7e\x1b")) == INSN_EMU_DONE); /* movd [rbx], mm3 */
	CHECK(e.f.acc[0].size == 4 && mem_get(&e, 0x1100, 4) == 0x44444444);
}

/* ------------------------------------------------------- segment loads */

#define GDT 0x1800u

/* 64-bit code at CPL 0 in long mode, with a GDT of: null, 0x08 64-bit code,
 * 0x10 data, 0x18 a 16-byte available TSS, 0x28 data at DPL 3, 0x30 data
 * not present, 0x38 execute-only code, 0x40 32-bit code; none accessed. */
static void seg_env(struct env *e)
{
	static const uint64_t gdt[] = {
		0, 0x00209a0000000000ull, 0x00cf92000000ffffull,
		0x7800896def000067ull, 0x0000000012345678ull, /* TSS, base 0x12345678786def00 */
		0x00cff2000000ffffull, 0x00cf12000000ffffull, 0x0020980000000000ull,
		0x00cf9a000000ffffull,
	};
	env_init(e, 64);
	e->m.cr0 = 0x80000011;
	e->m.efer = 1u << 10; /* LMA */
	e->m.gdt_base = GDT;
	e->m.gdt_limit = sizeof gdt - 1;
	for (unsigned i = 0; i < sizeof gdt / 8; i++)
		mem_put(e, GDT + 8 * i, 8, gdt[i]);
}

/* Emulate with the selector (and for a far jump the offset before it) at
 * [rbx]; the first access made must be the operand insn_accesses names. */
static enum insn_emu_status seg_load(struct env *e, const char *bytes, size_t n)
{
	struct insn_access want[2];
	fault.vector = 0xff;
	fault.error_code = 0xdead;
	e->f.nacc = e->f.seg_loads = 0;
	if (insn_decode((const uint8_t *)bytes, n, 64, &e->in) != INSN_OK ||
	    !insn_accesses(&e->in, &e->m, &e->r, want)) {
		unit_fail(__FILE__, __LINE__, "does not decode, or accesses nothing");
		return (enum insn_emu_status)-1;
	}
	enum insn_emu_status st = insn_emulate(&e->in, &e->m, &e->r, &fake_ops, &e->f, &fault);
	CHECK(e->f.nacc >= 1 && e->f.acc[0].addr == want[0].linear && !e->f.acc[0].write);
	return st;
}

static bool raised(enum insn_emu_status st, uint8_t vector, uint32_t error_code)
{
	return st == INSN_EMU_FAULT && fault.vector == vector && fault.error_code == error_code;
}

/* MOV SS: a writable data segment at DPL = RPL = CPL (SDM vol. 2, MOV); a
 * null one only in 64-bit code below CPL 3 with RPL = CPL; not present is
 * #SS. The accessed bit is set in the GDT. */
TEST(insn_seg_mov_ss)
{
	struct env e;
	seg_env(&e);
	mem_put(&e, 0x1100, 2, 0x10);
	REQUIRE(seg_load(&e, B("\x8e\x13")) == INSN_EMU_DONE);
	CHECK(e.f.seg_loads == 1 && e.f.segs[SEG_SS].sel == 0x10 && !e.f.segs[SEG_SS].unusable);
	CHECK_EQ_U64(e.f.segs[SEG_SS].attrib, 0xc93);
	CHECK_EQ_U64(e.f.segs[SEG_SS].limit, 0xffffffff);
	CHECK_EQ_U64(mem_get(&e, GDT + 0x10 + 5, 1), 0x93);
	CHECK_EQ_U64(e.r.rip, 0x102);

	struct { uint16_t sel; uint8_t vector; uint32_t err; } bad[] = {
		{ 0x03, 13, 0 },       /* null with RPL 3 at CPL 0 */
		{ 0x13, 13, 0x10 },    /* RPL 3 */
		{ 0x28, 13, 0x28 },    /* DPL 3 */
		{ 0x08, 13, 0x08 },    /* code */
		{ 0x30, 12, 0x30 },    /* not present: #SS */
		{ 0x48, 13, 0x48 },    /* past the GDT's limit */
		{ 0x0c, 13, 0x0c },    /* the LDT, unusable: the error code keeps TI */
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		seg_env(&e);
		mem_put(&e, 0x1100, 2, bad[i].sel);
		struct vcpu_regs before = e.r;
		enum insn_emu_status st = seg_load(&e, B("\x8e\x13"));
		if (!raised(st, bad[i].vector, bad[i].err) || e.f.seg_loads ||
		    memcmp(&before, &e.r, sizeof before)) {
			char m[96];
			snprintf(m, sizeof m, "mov ss, 0x%x: status %d vector %u error 0x%x", bad[i].sel,
				 st, fault.vector, fault.error_code);
			unit_fail(__FILE__, __LINE__, m);
		}
	}
	/* A null SS at CPL 0: unusable, with DPL 0. */
	seg_env(&e);
	mem_put(&e, 0x1100, 2, 0);
	REQUIRE(seg_load(&e, B("\x8e\x13")) == INSN_EMU_DONE);
	CHECK(e.f.segs[SEG_SS].unusable && e.f.segs[SEG_SS].sel == 0 &&
	      (e.f.segs[SEG_SS].attrib & 0x60) == 0);
}

/* MOV DS (and ES, FS, GS): data or readable code with RPL and CPL <= DPL;
 * not present is #NP; null loads an unusable segment. */
TEST(insn_seg_mov_ds)
{
	struct env e;
	static const struct { uint16_t sel; uint8_t vector; uint32_t err; } cases[] = {
		{ 0x10, 0xff, 0 },     /* loads */
		{ 0x2b, 0xff, 0 },     /* DPL 3 data at RPL 3 from CPL 0 */
		{ 0x00, 0xff, 0 },     /* null */
		{ 0x30, 11, 0x30 },    /* not present: #NP */
		{ 0x38, 13, 0x38 },    /* execute-only code */
		{ 0x18, 13, 0x18 },    /* a TSS */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		seg_env(&e);
		mem_put(&e, 0x1100, 2, cases[i].sel);
		enum insn_emu_status st = seg_load(&e, B("\x8e\x1b"));
		bool ok = cases[i].vector == 0xff
			  ? st == INSN_EMU_DONE && e.f.segs[SEG_DS].sel == cases[i].sel &&
			    e.f.segs[SEG_DS].unusable == !cases[i].sel
			  : raised(st, cases[i].vector, cases[i].err) && !e.f.seg_loads;
		if (!ok) {
			char m[96];
			snprintf(m, sizeof m, "mov ds, 0x%x: status %d vector %u error 0x%x",
				 cases[i].sel, st, fault.vector, fault.error_code);
			unit_fail(__FILE__, __LINE__, m);
		}
	}
	/* CPL 3 may not load a DPL 0 segment. */
	seg_env(&e);
	e.m.cpl = 3;
	mem_put(&e, 0x1100, 2, 0x13);
	CHECK(raised(seg_load(&e, B("\x8e\x1b")), 13, 0x10));
}

/* LTR: an available TSS in the GDT, at CPL 0; its 16-byte descriptor gives
 * a 64-bit base; the busy bit is set in memory, and a busy TSS refused. */
TEST(insn_seg_ltr)
{
	struct env e;
	seg_env(&e);
	mem_put(&e, 0x1100, 2, 0x18);
	REQUIRE(seg_load(&e, B("\x0f\x00\x1b")) == INSN_EMU_DONE);
	CHECK(e.f.segs[SEG_TR].sel == 0x18 && e.f.segs[SEG_TR].attrib == 0x8b);
	CHECK_EQ_U64(e.f.segs[SEG_TR].base, 0x12345678786def00ull);
	CHECK_EQ_U64(e.f.segs[SEG_TR].limit, 0x67);
	CHECK_EQ_U64(mem_get(&e, GDT + 0x18 + 5, 1), 0x8b);
	CHECK(raised(seg_load(&e, B("\x0f\x00\x1b")), 13, 0x18)); /* busy now */

	seg_env(&e);
	e.m.cpl = 3;
	mem_put(&e, 0x1100, 2, 0x18);
	CHECK(raised(seg_load(&e, B("\x0f\x00\x1b")), 13, 0));
	seg_env(&e);
	mem_put(&e, 0x1100, 2, 0x10); /* a data segment */
	CHECK(raised(seg_load(&e, B("\x0f\x00\x1b")), 13, 0x10));
	seg_env(&e);
	mem_put(&e, 0x1100, 2, 0);
	CHECK(raised(seg_load(&e, B("\x0f\x00\x1b")), 13, 0));
}

/* JMP m16:64 (REX.W ff /5): to a code segment at CPL, CS.RPL = CPL, RIP the
 * offset; a data segment, a null selector or a non-canonical offset into
 * 64-bit code raise #GP. */
TEST(insn_seg_jmp_far)
{
	struct env e;
	seg_env(&e);
	mem_put(&e, 0x1100, 8, 0x401000);
	mem_put(&e, 0x1108, 2, 0x0b); /* RPL 3 > CPL 0 */
	CHECK(raised(seg_load(&e, B("\x48\xff\x2b")), 13, 0x08));
	mem_put(&e, 0x1108, 2, 0x08);
	REQUIRE(seg_load(&e, B("\x48\xff\x2b")) == INSN_EMU_DONE);
	CHECK(e.f.segs[SEG_CS].sel == 0x08 && e.f.segs[SEG_CS].attrib == 0x29b);
	CHECK_EQ_U64(e.r.rip, 0x401000);
	CHECK_EQ_U64(mem_get(&e, GDT + 0x08 + 5, 1), 0x9b);

	seg_env(&e);
	mem_put(&e, 0x1100, 8, 0x401000);
	mem_put(&e, 0x1108, 2, 0x10);
	CHECK(raised(seg_load(&e, B("\x48\xff\x2b")), 13, 0x10));
	mem_put(&e, 0x1108, 2, 0);
	CHECK(raised(seg_load(&e, B("\x48\xff\x2b")), 13, 0));
	mem_put(&e, 0x1100, 8, 0x0000800000000000ull);
	mem_put(&e, 0x1108, 2, 0x08);
	CHECK(raised(seg_load(&e, B("\x48\xff\x2b")), 13, 0));
	CHECK_EQ_U64(e.r.rip, 0x100);
	/* m16:32 into 32-bit code: the offset within its limit. */
	seg_env(&e);
	mem_put(&e, 0x1100, 4, 0x2000);
	mem_put(&e, 0x1104, 2, 0x40);
	REQUIRE(seg_load(&e, B("\xff\x2b")) == INSN_EMU_DONE);
	CHECK(e.f.segs[SEG_CS].sel == 0x40 && e.r.rip == 0x2000);
}
