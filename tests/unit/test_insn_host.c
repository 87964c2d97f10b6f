/* virt/insn.c's results and arithmetic flags against the host CPU's own,
 * for random operands (fixed seeds, so that a failure replays). */
#include "tests/rng.h"
#include "tests/unit/insn_fake.h"
#include <stdio.h>

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
				  ? insn_emulate(&e.in, &e.m, &e.r, &fake_ops, &e.f, &fault)
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
/* ----------------------------- the newer ops against the host CPU */

/* Two registers of the operand size (modifier m: b w k q) between POPF and
 * PUSHF: "op b, a" in AT&T order, a the destination. The 64-bit variables
 * show what the CPU does to the rest of each register. */
#define HOST_RR(name, text)                                                                     \
	static void name(uint64_t *a, uint64_t *b, uint64_t *fl)                                \
	{                                                                                       \
		uint64_t x = *a, y = *b, f = *fl;                                               \
		__asm__ volatile("lea -128(%%rsp), %%rsp\n\tpushq %[f]\n\tpopfq\n\t" text       \
				 "\n\tpushfq\n\tpopq %[f]\n\tlea 128(%%rsp), %%rsp"              \
				 : [a] "+r"(x), [b] "+r"(y), [f] "+r"(f)                        \
				 :                                                              \
				 : "cc", "memory");                                             \
		*a = x;                                                                         \
		*b = y;                                                                         \
		*fl = f;                                                                        \
	}
#define HOST_RR_W(op, ...)                                                                      \
	HOST_RR(host_##op##2, #op " %w[b], %w[a]")                                              \
	HOST_RR(host_##op##4, #op " %k[b], %k[a]")                                              \
	HOST_RR(host_##op##8, #op " %q[b], %q[a]")
#define HOST_RR_ALL(op)                                                                         \
	HOST_RR(host_##op##1, #op " %b[b], %b[a]")                                              \
	HOST_RR_W(op)

HOST_RR_ALL(xadd)
HOST_RR_W(bt)
HOST_RR_W(bts)
HOST_RR_W(btr)
HOST_RR_W(btc)
HOST_RR_W(bsf)
HOST_RR_W(bsr)
HOST_RR_W(imul)
HOST_RR_W(cmovo)
HOST_RR_W(cmovno)
HOST_RR_W(cmovb)
HOST_RR_W(cmovae)
HOST_RR_W(cmove)
HOST_RR_W(cmovne)
HOST_RR_W(cmovbe)
HOST_RR_W(cmova)
HOST_RR_W(cmovs)
HOST_RR_W(cmovns)
HOST_RR_W(cmovp)
HOST_RR_W(cmovnp)
HOST_RR_W(cmovl)
HOST_RR_W(cmovge)
HOST_RR_W(cmovle)
HOST_RR_W(cmovg)

typedef void host_rr_fn(uint64_t *, uint64_t *, uint64_t *);
#define HOST_FN3(op) { NULL, host_##op##2, host_##op##4, host_##op##8 }

/* SHLD and SHRD by CL: a the destination, b the source. */
#define HOST_SH(name, text)                                                                     \
	static void name(uint64_t *a, uint64_t b, uint8_t count, uint64_t *fl)                  \
	{                                                                                       \
		uint64_t x = *a, f = *fl;                                                       \
		__asm__ volatile("lea -128(%%rsp), %%rsp\n\tpushq %[f]\n\tpopfq\n\t" text       \
				 "\n\tpushfq\n\tpopq %[f]\n\tlea 128(%%rsp), %%rsp"              \
				 : [a] "+r"(x), [f] "+r"(f)                                     \
				 : [b] "r"(b), "c"(count)                                       \
				 : "cc", "memory");                                             \
		*a = x;                                                                         \
		*fl = f;                                                                        \
	}
HOST_SH(host_shld2, "shld %%cl, %w[b], %w[a]")
HOST_SH(host_shld4, "shld %%cl, %k[b], %k[a]")
HOST_SH(host_shld8, "shld %%cl, %q[b], %q[a]")
HOST_SH(host_shrd2, "shrd %%cl, %w[b], %w[a]")
HOST_SH(host_shrd4, "shrd %%cl, %k[b], %k[a]")
HOST_SH(host_shrd8, "shrd %%cl, %q[b], %q[a]")

/* MUL IMUL DIV IDIV of rDX:rAX by b. Only called where it does not fault. */
#define HOST_MD(name, text)                                                                     \
	static void name(uint64_t *rax, uint64_t *rdx, uint64_t b, uint64_t *fl)                \
	{                                                                                       \
		uint64_t x = *rax, y = *rdx, f = *fl;                                           \
		__asm__ volatile("lea -128(%%rsp), %%rsp\n\tpushq %[f]\n\tpopfq\n\t" text       \
				 "\n\tpushfq\n\tpopq %[f]\n\tlea 128(%%rsp), %%rsp"              \
				 : "+a"(x), "+d"(y), [f] "+r"(f)                                \
				 : [b] "r"(b)                                                   \
				 : "cc", "memory");                                             \
		*rax = x;                                                                       \
		*rdx = y;                                                                       \
		*fl = f;                                                                        \
	}
#define HOST_MD4(op)                                                                            \
	HOST_MD(host_md_##op##1, #op "b %b[b]")                                                 \
	HOST_MD(host_md_##op##2, #op "w %w[b]")                                                 \
	HOST_MD(host_md_##op##4, #op "l %k[b]")                                                 \
	HOST_MD(host_md_##op##8, #op "q %q[b]")
HOST_MD4(mul)
HOST_MD4(imul)
HOST_MD4(div)
HOST_MD4(idiv)

/* The registers an emulated instruction sees and leaves, [rbx] = mem. */
struct hio {
	uint64_t mem, rax, rcx, rdx, rflags;
};

/* Emulate bytes (64-bit code) on io; the bytes of memory past the 8 at
 * [rbx] must not change. */
static enum insn_emu_status run_hio(const uint8_t *bytes, size_t n, struct hio *io)
{
	static struct env e;
	static struct vcpu_regs base;
	static bool ready;
	if (!ready) {
		env_init(&e, 64);
		base = e.r;
		ready = true;
	}
	e.r = base;
	e.r.rax = io->rax;
	e.r.rcx = io->rcx;
	e.r.rdx = io->rdx;
	e.r.rflags = io->rflags;
	e.f.nacc = e.f.fail_at = 0;
	mem_put(&e, 0x1100, 8, io->mem);
	uint64_t around = mem64(&e, 0x10f8) ^ mem64(&e, 0x1108);
	enum insn_emu_status st = insn_decode(bytes, n, 64, &e.in) == INSN_OK
				  ? insn_emulate(&e.in, &e.m, &e.r, &fake_ops, &e.f, &fault)
				  : INSN_EMU_UNSUPPORTED;
	CHECK((mem64(&e, 0x10f8) ^ mem64(&e, 0x1108)) == around);
	io->mem = mem64(&e, 0x1100);
	io->rax = e.r.rax;
	io->rcx = e.r.rcx;
	io->rdx = e.r.rdx;
	io->rflags = e.r.rflags;
	return st;
}

static void report_hio(const char *what, unsigned w, const struct hio *in, const struct hio *got,
		       const struct hio *want, uint64_t flagmask)
{
	char m[400];
	snprintf(m, sizeof m,
		 "%s/%u mem=%llx rax=%llx rcx=%llx rdx=%llx fl=%llx: got mem %llx rax %llx rcx %llx rdx %llx fl %llx,"
		 " want %llx %llx %llx %llx fl %llx (compared %llx)",
		 what, w, (unsigned long long)in->mem, (unsigned long long)in->rax,
		 (unsigned long long)in->rcx, (unsigned long long)in->rdx, (unsigned long long)in->rflags,
		 (unsigned long long)got->mem, (unsigned long long)got->rax, (unsigned long long)got->rcx,
		 (unsigned long long)got->rdx, (unsigned long long)got->rflags,
		 (unsigned long long)want->mem, (unsigned long long)want->rax,
		 (unsigned long long)want->rcx, (unsigned long long)want->rdx,
		 (unsigned long long)want->rflags, (unsigned long long)flagmask);
	unit_fail(__FILE__, __LINE__, m);
}

/* got against want: memory in the low w bytes (the rest unchanged from in),
 * the registers whole, the flags in flagmask; and the emulator keeps every
 * flag outside defined (undefined ones included). */
static bool hio_same(const struct hio *in, const struct hio *got, const struct hio *want, unsigned w,
		     uint64_t flagmask, uint64_t defined)
{
	uint64_t mask = w == 8 ? ~0ull : (1ull << (8 * w)) - 1;
	return (got->mem & mask) == (want->mem & mask) && (got->mem & ~mask) == (in->mem & ~mask) &&
	       got->rax == want->rax && got->rcx == want->rcx && got->rdx == want->rdx &&
	       (got->rflags & flagmask) == (want->rflags & flagmask) &&
	       (got->rflags & ~defined) == (in->rflags & ~defined);
}

/* Never DF: the host code runs on with the flags it computed. */
static uint64_t random_flags(struct rng *rng)
{
	return 0x2 | (rng_next(rng) & FL_ARITH);
}

static uint64_t width_mask_t(unsigned w)
{
	return w >= 8 ? ~0ull : (1ull << (8 * w)) - 1;
}

static uint64_t sext_t(uint64_t v, unsigned w)
{
	unsigned shift = 64 - 8 * w;
	return (uint64_t)((int64_t)(v << shift) >> shift);
}

/* XADD, BT BTS BTR BTC, BSF BSR, SHLD SHRD, IMUL, MUL IMUL DIV IDIV and
 * CMOVcc with memory operands, against the host's register forms (the same
 * semantics): results, the whole registers, and the flags the SDM defines.
 * A BT register offset stays within the operand here (the host's register
 * form takes it modulo the size); insn_emulate_bt_register_offset checks
 * the rest. */
TEST(insn_new_ops_vs_host_cpu)
{
	static const unsigned widths[4] = { 1, 2, 4, 8 };
	unsigned failures; /* reported, in each part: at most 3, so that one
			    * broken op leaves room for the others' reports */
	struct rng rng = rng_seeded(0x5eed1e55c0ffee01ull); /* fixed, so a failure replays */

#define FAILED(...)                                                                             \
	do {                                                                                    \
		report_hio(__VA_ARGS__);                                                        \
		failures++;                                                                     \
	} while (0)

	failures = 0;
	/* XADD [rbx], ecx: all six flags of ADD. */
	host_rr_fn *const xadd[4] = { host_xadd1, host_xadd2, host_xadd4, host_xadd8 };
	for (unsigned wi = 0; wi < 4; wi++) {
		unsigned w = widths[wi];
		for (int i = 0; i < 1500 && failures < 3; i++) {
			struct hio in = { operand(&rng, w) | (rng_next(&rng) & ~width_mask_t(w)), rng_next(&rng),
					  operand(&rng, w) | (rng_next(&rng) & ~width_mask_t(w)),
					  rng_next(&rng), random_flags(&rng) };
			uint8_t bytes[4];
			unsigned n = put_prefixes(bytes, w);
			bytes[n++] = 0x0f;
			bytes[n++] = w == 1 ? 0xc0 : 0xc1;
			bytes[n++] = 0x0b;
			struct hio got = in, want = in;
			CHECK(run_hio(bytes, n, &got) == INSN_EMU_DONE);
			xadd[wi](&want.mem, &want.rcx, &want.rflags);
			if (!hio_same(&in, &got, &want, w, FL_ARITH, FL_ARITH))
				FAILED("xadd", w, &in, &got, &want, FL_ARITH);
		}
	}

	failures = 0;
	/* BT BTS BTR BTC [rbx], ecx (offset within the operand, the register's
	 * bits above the operand size random) and [rbx], imm8: CF only. */
	static const char *const btn[4] = { "bt", "bts", "btr", "btc" };
	host_rr_fn *const bt[4][4] = { HOST_FN3(bt), HOST_FN3(bts), HOST_FN3(btr), HOST_FN3(btc) };
	for (unsigned op = 0; op < 4; op++) {
		for (unsigned wi = 1; wi < 4; wi++) {
			unsigned w = widths[wi];
			for (int i = 0; i < 600 && failures < 3; i++) {
				bool imm = rng_next(&rng) & 1;
				uint64_t off = imm ? rng_below(&rng, 256) : rng_below(&rng, 8 * w);
				struct hio in = { rng_next(&rng), rng_next(&rng),
						  off | (w < 8 ? rng_next(&rng) << (8 * w) : 0), rng_next(&rng),
						  random_flags(&rng) };
				uint8_t bytes[8];
				unsigned n = put_prefixes(bytes, w);
				bytes[n++] = 0x0f;
				if (imm) {
					bytes[n++] = 0xba;
					bytes[n++] = (uint8_t)(0x23 + 8 * op); /* /4 .. /7 [rbx] */
					bytes[n++] = (uint8_t)off;
				} else {
					bytes[n++] = (uint8_t)(0xa3 + 8 * op);
					bytes[n++] = 0x0b;
				}
				struct hio got = in, want = in;
				uint64_t hoff = off;
				CHECK(run_hio(bytes, n, &got) == INSN_EMU_DONE);
				bt[op][wi](&want.mem, &hoff, &want.rflags);
				if (!hio_same(&in, &got, &want, w, FL_CF, FL_CF))
					FAILED(btn[op], w, &in, &got, &want, FL_CF);
			}
		}
	}

	failures = 0;
	/* BSF BSR ecx, [rbx]: ZF, and ecx (as it was for a zero source). */
	host_rr_fn *const bs[2][4] = { HOST_FN3(bsf), HOST_FN3(bsr) };
	for (unsigned op = 0; op < 2; op++) {
		for (unsigned wi = 1; wi < 4; wi++) {
			unsigned w = widths[wi];
			for (int i = 0; i < 800 && failures < 3; i++) {
				uint64_t v = rng_below(&rng, 8) ? operand(&rng, w) : 0;
				if (rng_next(&rng) & 1) /* a single bit or a short run */
					v = (rng_below(&rng, 3) + 1) << rng_below(&rng, 8 * w);
				struct hio in = { v | (rng_next(&rng) & ~width_mask_t(w)), rng_next(&rng),
						  rng_next(&rng), rng_next(&rng), random_flags(&rng) };
				uint8_t bytes[4];
				unsigned n = put_prefixes(bytes, w);
				bytes[n++] = 0x0f;
				bytes[n++] = (uint8_t)(0xbc + op);
				bytes[n++] = 0x0b;
				struct hio got = in, want = in;
				uint64_t src = in.mem;
				CHECK(run_hio(bytes, n, &got) == INSN_EMU_DONE);
				bs[op][wi](&want.rcx, &src, &want.rflags);
				if (!hio_same(&in, &got, &want, w, FL_ZF, FL_ZF))
					FAILED(op ? "bsr" : "bsf", w, &in, &got, &want, FL_ZF);
			}
		}
	}

	failures = 0;
	/* SHLD SHRD [rbx], edx by imm8 or CL: counts 1 .. 8w-1 (16-bit ones
	 * below 16), and some that mask to 0. CF SF ZF PF; OF for a count of 1. */
	typedef void host_sh_fn(uint64_t *, uint64_t, uint8_t, uint64_t *);
	host_sh_fn *const sh[2][4] = { { NULL, host_shld2, host_shld4, host_shld8 },
				       { NULL, host_shrd2, host_shrd4, host_shrd8 } };
	for (unsigned op = 0; op < 2; op++) {
		for (unsigned wi = 1; wi < 4; wi++) {
			unsigned w = widths[wi];
			unsigned top = w == 2 ? 16 : 8 * w;
			for (int i = 0; i < 1200 && failures < 3; i++) {
				unsigned count = 1 + (unsigned)rng_below(&rng, top - 1);
				if (i % 50 == 0) /* masked to 0: nothing changes */
					count = w == 8 ? 64 : w == 4 ? (i % 100 ? 32 : 0) : 0;
				if (i % 7 == 0)
					count = 1;
				bool cl = rng_next(&rng) & 1;
				struct hio in = { operand(&rng, w) | (rng_next(&rng) & ~width_mask_t(w)),
						  rng_next(&rng), cl ? (rng_next(&rng) & ~0xffull) | count : rng_next(&rng),
						  operand(&rng, w) | (rng_next(&rng) & ~width_mask_t(w)),
						  random_flags(&rng) };
				uint8_t bytes[8];
				unsigned n = put_prefixes(bytes, w);
				bytes[n++] = 0x0f;
				bytes[n++] = (uint8_t)((op ? 0xac : 0xa4) + cl);
				bytes[n++] = 0x13;
				if (!cl)
					bytes[n++] = (uint8_t)count;
				struct hio got = in, want = in;
				CHECK(run_hio(bytes, n, &got) == INSN_EMU_DONE);
				sh[op][wi](&want.mem, in.rdx, (uint8_t)count, &want.rflags);
				uint64_t masked = count & (w == 8 ? 63 : 31);
				uint64_t flags = !masked ? FL_ARITH
						 : FL_CF | FL_SF | FL_ZF | FL_PF | (masked == 1 ? FL_OF : 0);
				if (!hio_same(&in, &got, &want, w, flags, flags))
					FAILED(op ? "shrd" : "shld", w, &in, &got, &want, flags);
			}
		}
	}

	failures = 0;
	/* IMUL ecx, [rbx] and IMUL ecx, [rbx], imm (69 and 6b): CF OF, and ecx.
	 * The host multiplies ecx (the immediate, for three operands) by the
	 * memory operand. */
	host_rr_fn *const imul2[4] = HOST_FN3(imul);
	for (unsigned form = 0; form < 3; form++) {
		for (unsigned wi = 1; wi < 4; wi++) {
			unsigned w = widths[wi];
			uint64_t mask = width_mask_t(w);
			for (int i = 0; i < 1000 && failures < 3; i++) {
				struct hio in = { operand(&rng, w) | (rng_next(&rng) & ~mask), rng_next(&rng),
						  operand(&rng, w) | (rng_next(&rng) & ~mask), rng_next(&rng),
						  random_flags(&rng) };
				uint8_t bytes[12];
				unsigned n = put_prefixes(bytes, w);
				uint64_t a = in.rcx;
				if (form == 0) {
					bytes[n++] = 0x0f;
					bytes[n++] = 0xaf;
					bytes[n++] = 0x0b;
				} else {
					unsigned isz = form == 2 ? 1 : w == 2 ? 2 : 4;
					uint64_t imm = operand(&rng, isz);
					bytes[n++] = form == 2 ? 0x6b : 0x69;
					bytes[n++] = 0x0b;
					for (unsigned k = 0; k < isz; k++)
						bytes[n++] = (uint8_t)(imm >> (8 * k));
					/* the destination's upper bits are rcx's; its low ones the imm */
					a = (in.rcx & ~mask) | (sext_t(imm, isz) & mask);
				}
				struct hio got = in, want = in;
				uint64_t b = in.mem;
				CHECK(run_hio(bytes, n, &got) == INSN_EMU_DONE);
				imul2[wi](&a, &b, &want.rflags);
				want.rcx = a;
				if (!hio_same(&in, &got, &want, w, FL_CF | FL_OF, FL_CF | FL_OF))
					FAILED(form ? "imul3" : "imul2", w, &in, &got, &want, FL_CF | FL_OF);
			}
		}
	}

	failures = 0;
	/* MUL IMUL [rbx]: CF OF, rDX:rAX (AX for bytes) whole. */
	typedef void host_md_fn(uint64_t *, uint64_t *, uint64_t, uint64_t *);
#define HOST_MD_FN4(op) { host_md_##op##1, host_md_##op##2, host_md_##op##4, host_md_##op##8 }
	host_md_fn *const md[4][4] = { HOST_MD_FN4(mul), HOST_MD_FN4(imul), HOST_MD_FN4(div),
				       HOST_MD_FN4(idiv) };
	static const char *const mdn[4] = { "mul", "imul", "div", "idiv" };
	for (unsigned op = 0; op < 2; op++) {
		for (unsigned wi = 0; wi < 4; wi++) {
			unsigned w = widths[wi];
			for (int i = 0; i < 1000 && failures < 3; i++) {
				struct hio in = { operand(&rng, w) | (rng_next(&rng) & ~width_mask_t(w)),
						  operand(&rng, w) | (rng_next(&rng) & ~width_mask_t(w)),
						  rng_next(&rng), rng_next(&rng), random_flags(&rng) };
				uint8_t bytes[4];
				unsigned n = put_prefixes(bytes, w);
				bytes[n++] = w == 1 ? 0xf6 : 0xf7;
				bytes[n++] = (uint8_t)(0x23 + 8 * op); /* /4 /5 [rbx] */
				struct hio got = in, want = in;
				CHECK(run_hio(bytes, n, &got) == INSN_EMU_DONE);
				md[op][wi](&want.rax, &want.rdx, in.mem, &want.rflags);
				if (!hio_same(&in, &got, &want, w, FL_CF | FL_OF, FL_CF | FL_OF))
					FAILED(mdn[op], w, &in, &got, &want, FL_CF | FL_OF);
			}
		}
	}

	failures = 0;
	/* DIV IDIV [rbx]: where the quotient fits, the host's rAX and rDX (and
	 * no flag changes); where it does not, #DE and nothing changed. The
	 * test tells which with 128-bit arithmetic of its own. */
	for (unsigned op = 2; op < 4; op++) {
		bool sign = op == 3;
		for (unsigned wi = 0; wi < 4; wi++) {
			unsigned w = widths[wi], bits = 8 * w;
			uint64_t mask = width_mask_t(w);
			for (int i = 0; i < 1000 && failures < 3; i++) {
				uint64_t d = operand(&rng, w), lo = rng_next(&rng), hi = rng_next(&rng);
				if (i % 8 == 0)
					d = 0;
				if (i % 4 == 1 && (d & mask)) /* a small high half: mostly no fault */
					hi = sign ? (uint64_t)-(int64_t)(hi & 1) : (hi & mask) % (d & mask);
				if (i % 4 == 2) /* a sign-extended dividend */
					hi = (uint64_t)-(int64_t)(sext_t(lo, w) >> 63 & 1);
				/* the dividend and the quotient, by the test */
				unsigned __int128 num = (unsigned __int128)(hi & mask) << bits | (lo & mask);
				__int128 snum = bits == 64 ? (__int128)num
					      : (__int128)(num << (128 - 2 * bits)) >> (128 - 2 * bits);
				bool fits;
				if (!(d & mask)) {
					fits = false;
				} else if (!sign) {
					fits = num / (d & mask) <= mask;
				} else {
					__int128 sd = (int64_t)sext_t(d, w);
					__int128 lim = (__int128)1 << (bits - 1);
					if (sd == -1) /* the quotient is -snum: no 128-bit overflow */
						fits = snum > -lim && snum <= lim;
					else
						fits = snum / sd >= -lim && snum / sd < lim;
				}
				struct hio in = { d | (rng_next(&rng) & ~mask),
						  w == 1 ? (rng_next(&rng) & ~0xffffull) | (hi & 0xff) << 8 | (lo & 0xff)
							 : lo,
						  rng_next(&rng), w == 1 ? rng_next(&rng) : hi, random_flags(&rng) };
				uint8_t bytes[4];
				unsigned n = put_prefixes(bytes, w);
				bytes[n++] = w == 1 ? 0xf6 : 0xf7;
				bytes[n++] = (uint8_t)(0x23 + 8 * op); /* /6 /7 [rbx] */
				struct hio got = in, want = in;
				fault.vector = 0xff;
				enum insn_emu_status st = run_hio(bytes, n, &got);
				if (fits)
					md[op][wi](&want.rax, &want.rdx, in.mem, &want.rflags);
				want.rflags = in.rflags; /* all six undefined: kept */
				if ((fits ? st != INSN_EMU_DONE : st != INSN_EMU_FAULT || fault.vector != 0) ||
				    !hio_same(&in, &got, &want, w, FL_ARITH, FL_ARITH))
					FAILED(mdn[op], w, &in, &got, &want, 0);
			}
		}
	}

	failures = 0;
	/* CMOVcc ecx, [rbx] for the 16 conditions and random flags. */
	host_rr_fn *const cmov[16][4] = {
		HOST_FN3(cmovo), HOST_FN3(cmovno), HOST_FN3(cmovb),  HOST_FN3(cmovae),
		HOST_FN3(cmove), HOST_FN3(cmovne), HOST_FN3(cmovbe), HOST_FN3(cmova),
		HOST_FN3(cmovs), HOST_FN3(cmovns), HOST_FN3(cmovp),  HOST_FN3(cmovnp),
		HOST_FN3(cmovl), HOST_FN3(cmovge), HOST_FN3(cmovle), HOST_FN3(cmovg),
	};
	for (unsigned cc = 0; cc < 16; cc++) {
		for (unsigned wi = 1; wi < 4; wi++) {
			unsigned w = widths[wi];
			for (int i = 0; i < 200 && failures < 3; i++) {
				struct hio in = { rng_next(&rng), rng_next(&rng), rng_next(&rng), rng_next(&rng),
						  random_flags(&rng) };
				uint8_t bytes[4];
				unsigned n = put_prefixes(bytes, w);
				bytes[n++] = 0x0f;
				bytes[n++] = (uint8_t)(0x40 + cc);
				bytes[n++] = 0x0b;
				struct hio got = in, want = in;
				uint64_t src = in.mem;
				CHECK(run_hio(bytes, n, &got) == INSN_EMU_DONE);
				cmov[cc][wi](&want.rcx, &src, &want.rflags);
				if (!hio_same(&in, &got, &want, w, FL_ARITH, 0))
					FAILED("cmov", cc, &in, &got, &want, FL_ARITH);
			}
		}
	}
#undef FAILED
}
#endif
