/* The fake machine of virt/insn.c's tests (insn_fake.h). */
#include "tests/unit/insn_fake.h"
#include <stdio.h>

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

static bool fake_port(void *ctx, uint16_t port, unsigned size, uint64_t *val, bool in)
{
	struct fake *f = ctx;
	unsigned i = f->nport++;
	if (in)
		*val = f->port_val & (size == 4 ? 0xffffffffull : (1ull << (8 * size)) - 1);
	if (i < 4) {
		f->ports[i].port = port;
		f->ports[i].size = size;
		f->ports[i].val = *val;
		f->ports[i].in = in;
	}
	return true;
}

static void fake_vec_read(void *ctx, bool mmx, unsigned reg, uint8_t val[16])
{
	struct fake *f = ctx;
	memset(val, 0, 16);
	memcpy(val, mmx ? f->mm[reg & 7] : f->xmm[reg & 15], mmx ? 8 : 16);
}

static void fake_vec_write(void *ctx, bool mmx, unsigned reg, const uint8_t val[16])
{
	struct fake *f = ctx;
	memcpy(mmx ? f->mm[reg & 7] : f->xmm[reg & 15], val, mmx ? 8 : 16);
}

struct insn_fault fault;

static void fake_load_seg(void *ctx, enum guest_seg seg, const struct guest_segment *g)
{
	struct fake *f = ctx;
	f->segs[seg] = *g;
	f->seg_loads++;
}

const struct insn_ops fake_ops = { fake_read, fake_write, fake_port, fake_vec_read, fake_vec_write,
				   fake_load_seg };

void env_init(struct env *e, unsigned bits)
{
	memset(e, 0, sizeof *e);
	e->m.code_bits = bits;
	e->m.stack_bits = bits; /* SS.B follows CS.D here; 64 in 64-bit code */
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

uint64_t mem64(const struct env *e, uint64_t addr)
{
	uint64_t v;
	memcpy(&v, &e->f.mem[addr - MEM_BASE], 8);
	return v;
}

enum insn_emu_status emulate(struct env *e, const char *bytes, size_t n)
{
	if (insn_decode((const uint8_t *)bytes, n, e->m.code_bits, &e->in) != INSN_OK)
		return (enum insn_emu_status)-1;
	return insn_emulate(&e->in, &e->m, &e->r, &fake_ops, &e->f, &fault);
}

uint64_t get_reg(const struct vcpu_regs *r, int reg)
{
	const uint64_t *order[16] = { &r->rax, &r->rcx, &r->rdx, &r->rbx, &r->rsp, &r->rbp,
				      &r->rsi, &r->rdi, &r->r8,  &r->r9,  &r->r10, &r->r11,
				      &r->r12, &r->r13, &r->r14, &r->r15 };
	return *order[reg];
}

uint64_t mem_get(const struct env *e, uint64_t addr, unsigned size)
{
	uint64_t v = 0;
	memcpy(&v, &e->f.mem[addr - MEM_BASE], size);
	return v;
}

void mem_put(struct env *e, uint64_t addr, unsigned size, uint64_t v)
{
	memcpy(&e->f.mem[addr - MEM_BASE], &v, size);
}

enum insn_emu_status emulate_checked(struct env *e, const char *bytes, size_t n)
{
	struct insn_access want[2];
	if (insn_decode((const uint8_t *)bytes, n, e->m.code_bits, &e->in) != INSN_OK) {
		unit_fail(__FILE__, __LINE__, "does not decode");
		return (enum insn_emu_status)-1;
	}
	unsigned nwant = insn_accesses(&e->in, &e->m, &e->r, want);
	e->f.nacc = 0;
	fault.vector = 0xff;
	enum insn_emu_status st = insn_emulate(&e->in, &e->m, &e->r, &fake_ops, &e->f, &fault);
	bool ok = st == INSN_EMU_FAULT ? e->f.nacc <= nwant
		  : st == INSN_EMU_DONE || st == INSN_EMU_AGAIN ? e->f.nacc == nwant : true;
	for (unsigned k = 0; ok && k < e->f.nacc && k < nwant; k++)
		ok = want[k].linear == e->f.acc[k].addr && want[k].size == e->f.acc[k].size &&
		     want[k].write == e->f.acc[k].write && !(st == INSN_EMU_FAULT && want[k].write);
	if (!ok) {
		char m[200];
		snprintf(m, sizeof m, "accesses of %02x..: status %d, %u made (first %llx), %u announced (first %llx)",
			 (uint8_t)bytes[0], st, e->f.nacc, (unsigned long long)e->f.acc[0].addr, nwant,
			 (unsigned long long)want[0].linear);
		unit_fail(__FILE__, __LINE__, m);
	}
	return st;
}
