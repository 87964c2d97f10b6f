/* virt/insn.c: the input's first 16 bytes (fewer if it is shorter) are
 * instruction bytes, decoded as 16-, 32- and 64-bit code; the bytes after them,
 * read in turn (zeros once used up), give the registers, RFLAGS, segment bases
 * and which memory access fails. Properties checked, besides the sanitizers:
 * - decoding is deterministic, gives a known status, and an INSN_OK result is
 *   self-consistent (1 <= len <= min(15, n), widths, registers, sizes fit the
 *   mode); every shorter prefix of it is INSN_TRUNCATED and exactly len bytes
 *   decode to the same instruction;
 * - insn_describe stays inside buffers of any size and NUL-terminates;
 * - emulating an INSN_OK result never says UNSUPPORTED (and always does in a
 *   different mode); its accesses are exactly those insn_accesses announced
 *   (fewer when it raises an exception); DONE advances RIP by len (wrapped to
 *   the code size) but for branches, AGAIN is a REP string op with RIP
 *   unchanged and the count one less, MEM_FAULT and FAULT (#DE, #GP) leave
 *   every register as it was; only the registers the instruction may write
 *   change, and of RFLAGS only CF PF AF ZF SF OF. */
#include "tests/fuzz/fuzz.h"
#include "virt/insn.h"
#include "virt/backend.h"
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define WINDOW 16

struct state_reader {
	const uint8_t *p;
	size_t n, pos;
};

static uint64_t take(struct state_reader *s, unsigned bytes)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < bytes; i++)
		v |= (uint64_t)(s->pos < s->n ? s->p[s->pos++] : 0) << (8 * i);
	return v;
}

/* Fake memory: a value derived from the address, every access recorded,
 * access number fail_at (1-based) fails. */
struct fake {
	unsigned nacc, fail_at;
	struct insn_access acc[4];
	uint64_t wval[4];
	uint64_t salt;
};

static bool record(struct fake *f, uint64_t linear, unsigned size, bool write, uint64_t val)
{
	unsigned i = f->nacc++;
	FUZZ_ASSERT(i < 4);
	f->acc[i] = (struct insn_access){ linear, (uint8_t)size, write };
	f->wval[i] = val;
	return f->nacc != f->fail_at;
}

static bool fake_read(void *ctx, uint64_t linear, unsigned size, uint64_t *val, bool rmw)
{
	struct fake *f = ctx;
	(void)rmw;
	/* garbage above size: the emulator must mask it */
	*val = (linear ^ f->salt) * 0x9e3779b97f4a7c15ull;
	return record(f, linear, size, false, 0);
}

static bool fake_write(void *ctx, uint64_t linear, unsigned size, uint64_t val)
{
	struct fake *f = ctx;
	FUZZ_ASSERT(size == 8 || (val >> (8 * size)) == 0);
	return record(f, linear, size, true, val);
}

static bool fake_port(void *ctx, uint16_t port, unsigned size, uint64_t *val, bool in)
{
	struct fake *f = ctx;
	FUZZ_ASSERT(size == 1 || size == 2 || size == 4);
	if (in)
		*val = (port ^ f->salt) * 0x9e3779b97f4a7c15ull; /* garbage above size */
	else
		FUZZ_ASSERT((*val >> (8 * size)) == 0);
	return true;
}

static void fake_vec_read(void *ctx, bool mmx, unsigned reg, uint8_t val[16])
{
	FUZZ_ASSERT(mmx ? reg < 8 : reg < 16);
	memset(val, (int)(reg ^ ((struct fake *)ctx)->salt), 16);
}

static void fake_vec_write(void *ctx, bool mmx, unsigned reg, const uint8_t val[16])
{
	(void)ctx;
	(void)val;
	FUZZ_ASSERT(mmx ? reg < 8 : reg < 16);
}

static void fake_load_seg(void *ctx, enum guest_seg seg, const struct guest_segment *g)
{
	(void)ctx;
	(void)g;
	FUZZ_ASSERT(seg < SEG_COUNT || seg == SEG_TR);
	FUZZ_ASSERT(seg != SEG_CS || !g->unusable);
}

static struct insn_fault fault;

static const struct insn_ops fake_ops = { fake_read, fake_write, fake_port, fake_vec_read,
					  fake_vec_write, fake_load_seg };

static bool same_insn(const struct insn *a, const struct insn *b)
{
	return a->len == b->len && a->code_bits == b->code_bits && a->op == b->op &&
	       a->alu == b->alu && a->width == b->width && a->reg_width == b->reg_width &&
	       a->reg == b->reg && a->reg_high8 == b->reg_high8 && a->has_imm == b->has_imm &&
	       a->imm == b->imm && a->mem_is_dst == b->mem_is_dst && a->rep == b->rep &&
	       a->lock == b->lock && a->seg == b->seg && a->seg_override == b->seg_override &&
	       a->addr_size == b->addr_size && a->rex == b->rex && a->two_byte == b->two_byte &&
	       a->opcode == b->opcode && a->mem.base == b->mem.base &&
	       a->mem.index == b->mem.index && a->mem.scale == b->mem.scale &&
	       a->mem.rip_rel == b->mem.rip_rel && a->mem.disp == b->mem.disp;
}

static bool is_width(unsigned w)
{
	return w == 1 || w == 2 || w == 4 || w == 8;
}

static bool is_string(const struct insn *in)
{
	return in->op == INSN_OP_MOVS || in->op == INSN_OP_STOS || in->op == INSN_OP_LODS ||
	       in->op == INSN_OP_CMPS || in->op == INSN_OP_SCAS || in->op == INSN_OP_INS ||
	       in->op == INSN_OP_OUTS;
}

static bool is_branch(const struct insn *in)
{
	return in->op == INSN_OP_CALL || in->op == INSN_OP_JMP || in->op == INSN_OP_RET ||
	       in->op == INSN_OP_JMP_FAR;
}

/* Segment loads read a descriptor after the operand insn_accesses lists. */
static bool is_seg_load(const struct insn *in)
{
	return in->op == INSN_OP_MOV_TO_SEG || in->op == INSN_OP_LTR || in->op == INSN_OP_JMP_FAR;
}

static void check_decoded(const struct insn *in, size_t n, unsigned bits)
{
	FUZZ_ASSERT(in->len >= 1 && in->len <= INSN_MAX_LEN && in->len <= n);
	FUZZ_ASSERT(in->code_bits == bits);
	FUZZ_ASSERT(in->op > INSN_OP_NONE && in->op < INSN_OP_COUNT);
	if (in->op == INSN_OP_VMOV)
		FUZZ_ASSERT((in->width == 4 || in->width == 8 || in->width == 16) &&
			    in->reg_width == in->width && in->reg >= 0 && (!in->vec_mmx || in->reg < 8));
	else
		FUZZ_ASSERT(is_width(in->width) && is_width(in->reg_width) &&
			    in->width <= in->reg_width);
	FUZZ_ASSERT(in->addr_size == (bits == 64 ? 8 : 4) || in->addr_size == (bits == 64 ? 4 : 2));
	FUZZ_ASSERT(in->reg >= INSN_REG_NONE && in->reg <= 15);
	FUZZ_ASSERT(!in->reg_high8 || (in->reg >= 0 && in->reg < 4 && in->width == 1 && !in->rex));
	FUZZ_ASSERT(bits == 64 || (in->reg < 8 && !in->rex));
	FUZZ_ASSERT(in->mem.base >= INSN_REG_NONE && in->mem.base <= 15);
	FUZZ_ASSERT(in->mem.index >= INSN_REG_NONE && in->mem.index <= 15);
	FUZZ_ASSERT(is_width(in->mem.scale));
	FUZZ_ASSERT(!in->mem.rip_rel || (bits == 64 && in->mem.base == INSN_REG_NONE &&
					 in->mem.index == INSN_REG_NONE));
	FUZZ_ASSERT(in->rep == INSN_REP_NONE || is_string(in));
	FUZZ_ASSERT(in->seg < SEG_COUNT);
	FUZZ_ASSERT(bits != 64 || !in->seg_override || in->seg == SEG_FS || in->seg == SEG_GS);
	FUZZ_ASSERT(in->op != INSN_OP_ALU || in->alu <= INSN_ALU_CMP);
	FUZZ_ASSERT((in->op != INSN_OP_MOV_FROM_SEG && in->op != INSN_OP_MOV_TO_SEG) ||
		    in->reg < SEG_COUNT);
	FUZZ_ASSERT(in->op != INSN_OP_MOV_TO_SEG || in->reg != SEG_CS);
	/* a register operand, an immediate, or the implicit ones */
	FUZZ_ASSERT(in->has_imm || in->reg != INSN_REG_NONE || in->op == INSN_OP_MOVS ||
		    in->op == INSN_OP_CMPS || in->op == INSN_OP_INS || in->op == INSN_OP_OUTS ||
		    in->op == INSN_OP_NOT || in->op == INSN_OP_NEG || in->op == INSN_OP_INC ||
		    in->op == INSN_OP_DEC || in->op == INSN_OP_MULDIV || in->op == INSN_OP_SMSW ||
		    in->op == INSN_OP_RET || in->op == INSN_OP_LEAVE || in->op == INSN_OP_LTR ||
		    in->op == INSN_OP_JMP_FAR || ((in->op == INSN_OP_PUSH || in->op == INSN_OP_POP || in->op == INSN_OP_CALL ||
		      in->op == INSN_OP_JMP) && in->has_mem));
	/* a memory operand unless a stack or string op */
	FUZZ_ASSERT(in->has_mem || is_string(in) || in->op == INSN_OP_PUSH ||
		    in->op == INSN_OP_POP || in->op == INSN_OP_CALL || in->op == INSN_OP_RET ||
		    in->op == INSN_OP_LEAVE || in->op == INSN_OP_ENTER);
}

static void check_describe(const struct insn *in)
{
	static const size_t sizes[] = { 1, 2, 5, 9, 17, 33, 96 };
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		char *buf = malloc(sizes[i]);
		insn_describe(in, buf, sizes[i]);
		FUZZ_ASSERT(strnlen(buf, sizes[i]) < sizes[i]);
		if (i == sizeof sizes / sizeof sizes[0] - 1 && fuzz_verbose())
			printf("  %u-bit: %s (len %u)\n", in->code_bits, buf, in->len);
		free(buf);
	}
}

static uint64_t *slot(struct vcpu_regs *r, int reg)
{
	uint64_t *order[16] = { &r->rax, &r->rcx, &r->rdx, &r->rbx, &r->rsp, &r->rbp,
				&r->rsi, &r->rdi, &r->r8,  &r->r9,  &r->r10, &r->r11,
				&r->r12, &r->r13, &r->r14, &r->r15 };
	return order[reg & 15];
}

/* The general registers the instruction may write. */
static uint32_t writable_regs(const struct insn *in)
{
	switch (in->op) {
	case INSN_OP_MOV_LOAD:
	case INSN_OP_MOVZX:
	case INSN_OP_MOVSX:
	case INSN_OP_XCHG:
	case INSN_OP_XADD:
	case INSN_OP_CMOV:
	case INSN_OP_BSF:
	case INSN_OP_BSR:
	case INSN_OP_IMUL_REG:
		return 1u << in->reg;
	case INSN_OP_MULDIV: return 1u << 0 | 1u << 2;
	case INSN_OP_PUSH:
	case INSN_OP_CALL:
	case INSN_OP_RET: return 1u << 4;
	case INSN_OP_POP: return 1u << 4 | (in->has_mem ? 0 : 1u << in->reg);
	case INSN_OP_LEAVE:
	case INSN_OP_ENTER: return 1u << 4 | 1u << 5;
	case INSN_OP_INS: return 1u << 7 | 1u << 1;
	case INSN_OP_OUTS: return 1u << 6 | 1u << 1;
	case INSN_OP_ALU:
		return !in->mem_is_dst && in->alu != INSN_ALU_CMP ? 1u << in->reg : 0;
	case INSN_OP_MOVS: return 1u << 6 | 1u << 7 | 1u << 1;
	case INSN_OP_STOS: return 1u << 7 | 1u << 1;
	case INSN_OP_LODS: return 1u << 6 | 1u << 1 | 1u << 0;
	case INSN_OP_CMPS: return 1u << 6 | 1u << 7 | 1u << 1;
	case INSN_OP_SCAS: return 1u << 7 | 1u << 1;
	default: return 0;
	}
}

#define FL_ARITH 0x8d5ull

static void check_emulate(const struct insn *in, struct state_reader *s)
{
	struct guest_mode m = { 0 };
	struct vcpu_regs r, before;
	struct fake f = { 0 };
	struct insn_access want[2];

	m.code_bits = in->code_bits;
	for (int i = 0; i < SEG_COUNT; i++)
		m.seg_base[i] = take(s, 1) & 1 ? take(s, 8) : 0;
	for (int i = 0; i < 16; i++)
		*slot(&r, i) = take(s, 1) & 1 ? take(s, 8) : take(s, 1);
	r.rip = take(s, 8);
	r.rflags = take(s, 8);
	f.fail_at = (unsigned)take(s, 1) % 4;
	f.salt = take(s, 8);
	/* What the newer ops read, after what the older seeds give. */
	m.stack_bits = in->code_bits == 64 ? 64 : take(s, 1) & 1 ? 32 : 16;
	m.cr0 = take(s, 8);
	m.cr4 = take(s, 8);
	for (int i = 0; i < SEG_COUNT; i++)
		m.seg_sel[i] = (uint16_t)take(s, 2);
	m.cpl = (unsigned)take(s, 1) & 3;
	m.efer = take(s, 1) & 1 ? 1u << 10 /* LMA */ : 0;
	m.gdt_base = take(s, 8);
	m.gdt_limit = (uint32_t)take(s, 2);
	m.ldt_base = take(s, 8);
	m.ldt_limit = (uint32_t)take(s, 2);
	m.ldt_usable = take(s, 1) & 1;
	before = r;

	unsigned nwant = insn_accesses(in, &m, &r, want);
	FUZZ_ASSERT(nwant <= 2);
	uint64_t addr = insn_mem_linear(in, &m, &r);
	if (in->code_bits != 64)
		FUZZ_ASSERT(addr <= 0xffffffffull);
	/* MOVS reads its source first; POP [mem] reads the stack first */
	if (nwant && !(in->op == INSN_OP_MOVS || in->op == INSN_OP_STOS ||
		       (in->op == INSN_OP_POP && in->has_mem)))
		FUZZ_ASSERT(want[0].linear == addr);

	/* Another mode: refused, nothing touched. */
	struct guest_mode other = m;
	other.code_bits = in->code_bits == 64 ? 32 : 64;
	FUZZ_ASSERT(insn_emulate(in, &other, &r, &fake_ops, &f, &fault) == INSN_EMU_UNSUPPORTED);
	FUZZ_ASSERT(f.nacc == 0 && memcmp(&r, &before, sizeof r) == 0);

	enum insn_emu_status st = insn_emulate(in, &m, &r, &fake_ops, &f, &fault);
	/* Far jumps through gates are the one thing found unsupported only
	 * once the descriptor is read (and so is real mode's segment load). */
	FUZZ_ASSERT(st == INSN_EMU_DONE || st == INSN_EMU_AGAIN || st == INSN_EMU_MEM_FAULT ||
		    st == INSN_EMU_FAULT || (st == INSN_EMU_UNSUPPORTED && is_seg_load(in)));
	if (st == INSN_EMU_UNSUPPORTED) {
		FUZZ_ASSERT(memcmp(&r, &before, sizeof r) == 0);
		return;
	}
	FUZZ_ASSERT(st != INSN_EMU_FAULT || fault.vector == 0 || fault.vector == 11 ||
		    fault.vector == 12 || fault.vector == 13);

	/* The accesses made are those announced (up to a failing one); a
	 * segment load's descriptor accesses come after them. */
	FUZZ_ASSERT(f.nacc <= nwant || is_seg_load(in));
	for (unsigned i = 0; i < f.nacc && i < nwant; i++)
		FUZZ_ASSERT(f.acc[i].linear == want[i].linear && f.acc[i].size == want[i].size &&
			    f.acc[i].write == want[i].write &&
			    (f.acc[i].size == in->width || in->op == INSN_OP_VMOV ||
			     in->op == INSN_OP_JMP_FAR));
	if (st == INSN_EMU_MEM_FAULT)
		FUZZ_ASSERT(f.fail_at && f.nacc == f.fail_at);
	else if (st != INSN_EMU_FAULT && !is_seg_load(in))
		FUZZ_ASSERT(f.nacc == nwant);
	else
		FUZZ_ASSERT(f.nacc >= nwant || st == INSN_EMU_FAULT);

	uint64_t ipmask = in->code_bits == 64 ? ~0ull : in->code_bits == 32 ? 0xffffffffull : 0xffff;
	switch (st) {
	case INSN_EMU_MEM_FAULT:
	case INSN_EMU_FAULT:
		FUZZ_ASSERT(memcmp(&r, &before, sizeof r) == 0);
		return;
	case INSN_EMU_DONE:
		FUZZ_ASSERT(is_branch(in) || r.rip == ((before.rip + in->len) & ipmask));
		break;
	case INSN_EMU_AGAIN: {
		uint64_t amask = in->addr_size == 8 ? ~0ull : (1ull << (8 * in->addr_size)) - 1;
		FUZZ_ASSERT(is_string(in) && in->rep && r.rip == before.rip);
		FUZZ_ASSERT((r.rcx & amask) == ((before.rcx - 1) & amask) && (before.rcx & amask) > 1);
		break;
	}
	default:
		FUZZ_ASSERT(0);
	}
	if (in->rep && !(before.rcx & (in->addr_size == 8 ? ~0ull : (1ull << (8 * in->addr_size)) - 1)))
		FUZZ_ASSERT(f.nacc == 0);

	/* Only what the instruction may write has changed. */
	uint32_t may = writable_regs(in);
	for (int i = 0; i < 16; i++)
		if (!(may & (1u << i)))
			FUZZ_ASSERT(*slot(&r, i) == *slot(&before, i));
	FUZZ_ASSERT((r.rflags & ~FL_ARITH) == (before.rflags & ~FL_ARITH));

	/* Stores write the register or the immediate. */
	if (in->op == INSN_OP_MOV_STORE || in->op == INSN_OP_MOV_STORE_IMM) {
		uint64_t wmask = in->width == 8 ? ~0ull : (1ull << (8 * in->width)) - 1;
		uint64_t v = in->op == INSN_OP_MOV_STORE_IMM ? in->imm
			     : *slot(&before, in->reg) >> (in->reg_high8 ? 8 : 0);
		FUZZ_ASSERT(f.nacc == 1 && f.wval[0] == (v & wmask));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const unsigned modes[3] = { 16, 32, 64 };
	size_t n = size < WINDOW ? size : WINDOW;
	uint8_t *bytes = malloc(n ? n : 1); /* exact size: ASan sees reads past n */

	memcpy(bytes, data, n);
	for (int mi = 0; mi < 3; mi++) {
		unsigned bits = modes[mi];
		struct insn in, again;
		enum insn_status st = insn_decode(bytes, n, bits, &in);
		FUZZ_ASSERT(st == INSN_OK || st == INSN_TRUNCATED || st == INSN_UNSUPPORTED ||
			    st == INSN_INVALID);
		FUZZ_ASSERT(insn_decode(bytes, n, bits, &again) == st && same_insn(&in, &again));
		if (fuzz_verbose())
			printf("%u-bit: %s\n", bits, insn_status_name(st));
		if (st != INSN_OK) {
			FUZZ_ASSERT(in.op == INSN_OP_NONE && in.len <= n && in.len <= INSN_MAX_LEN);
			FUZZ_ASSERT(st != INSN_TRUNCATED || in.len == n);
			continue;
		}
		check_decoded(&in, n, bits);
		for (size_t k = 0; k < in.len; k++)
			FUZZ_ASSERT(insn_decode(bytes, k, bits, &again) == INSN_TRUNCATED);
		FUZZ_ASSERT(insn_decode(bytes, in.len, bits, &again) == INSN_OK && same_insn(&in, &again));
		check_describe(&in);

		struct state_reader s = { data + n, size - n, 0 };
		check_emulate(&in, &s);
	}
	free(bytes);
	return 0;
}
