/* Guest accesses to guest-physical addresses that no memory slot holds: the
 * local APIC's page, a device on the VM's MMIO bus (dev/bus.h), or nothing
 * (a PC's unclaimed addresses read all ones and drop writes); and string I/O,
 * whose memory operand may be anywhere. The instruction is fetched through
 * the guest's own page tables (or taken from the CPU's decode assists),
 * decoded and emulated (virt/insn.c) with every memory operand sent where its
 * address belongs. */
#include "virt/mmio.h"
#include "arch/x86/cpuinfo.h"
#include "arch/x86/regs.h"
#include "lib/print.h"
#include "lib/string.h"
#include "virt/fpu.h"
#include "virt/io.h"
#include "virt/msr.h"
#include "virt/vm.h"
#include "virt/guest_walk.h"
#include "virt/insn.h"
#include "virt/sched.h"

#define APIC_PAGE_SIZE 0x1000
/* Console lines per VM for unclaimed accesses; the counter goes on. */
#define UNCLAIMED_LOG_LINES 4

struct mmio_ctx {
	struct vcpu *v; /* the exiting vCPU: its APIC page, its registers */
	const struct guest_mode *mode;
	const char *failure; /* why emulation stopped, for the report */
	uint64_t failure_addr;
};

static bool read_gpa(void *ctx, uint64_t gpa, void *buf, unsigned len)
{
	return mmu_read_guest(ctx, gpa, buf, len) == 0;
}

static bool in_apic_page(struct vcpu *v, uint64_t gpa, unsigned *offset)
{
	uint64_t base;

	if (!lapic_mmio_page(v->apic, &base) || gpa < base || gpa >= base + APIC_PAGE_SIZE)
		return false;
	*offset = (unsigned)(gpa - base);
	return true;
}

/* The vCPU's own APIC page first, then the device on the MMIO bus: under
 * the VM's lock. */
static bool access_device(struct vcpu *v, uint64_t gpa, unsigned size, uint64_t *val, bool write)
{
	struct vm *vm = v->vm;
	unsigned offset;
	bool claimed = true;

	vm_lock(vm);
	if (!in_apic_page(v, gpa, &offset))
		claimed = bus_access(&vm->mmio_bus, vm, gpa, size, val, write);
	else if (write)
		lapic_mmio_write(v->apic, offset, size, *val, guest_tsc(v));
	else
		*val = lapic_mmio_read(v->apic, offset, size, guest_tsc(v));
	vm_unlock(vm, v);
	return claimed;
}

/* One access of size bytes at gpa: to a device, to RAM, or to nothing. */
static bool access_gpa(struct mmio_ctx *c, uint64_t gpa, unsigned size, uint64_t *val, bool write)
{
	struct vcpu *v = c->v;
	struct vm *vm = v->vm;

	if (access_device(v, gpa, size, val, write))
		return true;
	if (write ? !mmu_write_guest(&vm->mmu, gpa, val, size)
		  : !mmu_read_guest(&vm->mmu, gpa, val, size))
		return true;
	if (vm->strict_mmio) {
		c->failure = write ? "write outside guest memory" : "read outside guest memory";
		c->failure_addr = gpa;
		return false;
	}
	v->stats.mmio_unclaimed++;
	if (v->stats.mmio_unclaimed <= UNCLAIMED_LOG_LINES)
		kprintf("vm %s: %u-byte %s of unclaimed gpa 0x%llx: %s\n", vm->name, size,
			write ? "write" : "read", (unsigned long long)gpa,
			write ? "dropped" : "all ones");
	if (!write)
		*val = size == 8 ? ~0ull : (1ull << (8 * size)) - 1;
	return true;
}

static bool access_linear(void *ctx, uint64_t linear, unsigned size, uint64_t *val, bool write)
{
	struct mmio_ctx *c = ctx;
	struct gwalk_mem mem = { .read = read_gpa, .ctx = c->v->mmu, .phys_bits = cpuinfo.phys_bits };
	unsigned access = (write ? GWALK_W : 0) | (c->mode->cpl == 3 ? GWALK_U : 0) |
			  (c->v->regs.rflags & RFLAGS_AC ? GWALK_AC : 0);
	uint64_t gpa;
	uint32_t pf_error;

	*val = write ? *val : 0;
	switch (guest_walk(c->mode, linear, access, &mem, &gpa, &pf_error)) {
	case GWALK_OK:
		break;
	case GWALK_FAULT:
		c->failure = "page fault on the operand";
		c->failure_addr = linear;
		return false;
	case GWALK_BAD_GPA:
		c->failure = "the guest's page tables lie outside its memory";
		c->failure_addr = linear;
		return false;
	case GWALK_NONCANONICAL:
		c->failure = "non-canonical operand address";
		c->failure_addr = linear;
		return false;
	}
	/* An operand that crosses into the next page is split where it does. */
	if ((gpa & 0xfff) + size > 0x1000) {
		unsigned first = (unsigned)(0x1000 - (gpa & 0xfff));
		uint64_t lo = *val, hi = *val >> (8 * first);

		if (!access_linear(ctx, linear, first, &lo, write) ||
		    !access_linear(ctx, linear + first, size - first, &hi, write))
			return false;
		if (!write)
			*val = (lo & ((1ull << (8 * first)) - 1)) | (hi << (8 * first));
		return true;
	}
	return access_gpa(c, gpa, size, val, write);
}

static bool mem_read(void *ctx, uint64_t linear, unsigned size, uint64_t *val, bool rmw)
{
	(void)rmw; /* the walk checks the write of a read-modify-write at the write */
	return access_linear(ctx, linear, size, val, false);
}

static bool mem_write(void *ctx, uint64_t linear, unsigned size, uint64_t val)
{
	return access_linear(ctx, linear, size, &val, true);
}

static bool port_io(void *ctx, uint16_t port, unsigned size, uint64_t *val, bool in)
{
	io_port_access(((struct mmio_ctx *)ctx)->v, port, size, val, in);
	return true;
}

static void vec_read(void *ctx, bool mmx, unsigned reg, uint8_t val[16])
{
	fpu_guest_vec_read(((struct mmio_ctx *)ctx)->v, mmx, reg, val);
}

static void vec_write(void *ctx, bool mmx, unsigned reg, const uint8_t val[16])
{
	fpu_guest_vec_write(((struct mmio_ctx *)ctx)->v, mmx, reg, val);
}

static void load_seg(void *ctx, enum guest_seg seg, const struct guest_segment *g)
{
	backend->set_segment(((struct mmio_ctx *)ctx)->v, seg, g);
}

static const struct insn_ops mmio_insn_ops = {
	.read = mem_read, .write = mem_write, .port = port_io,
	.vec_read = vec_read, .vec_write = vec_write, .load_seg = load_seg,
};

size_t fetch_at_rip(struct vcpu *v, const struct guest_mode *m, uint8_t *buf, size_t len)
{
	struct gwalk_mem mem = { .read = read_gpa, .ctx = v->mmu, .phys_bits = cpuinfo.phys_bits };
	uint64_t rip = v->regs.rip;
	enum gwalk_status st;
	uint32_t pf_error;

	if (m->code_bits != 64)
		rip = (uint32_t)(rip + m->seg_base[SEG_CS]);
	return guest_fetch(m, rip, buf, len, &mem, &st, &pf_error);
}

/* The instruction's bytes: from a nested page fault's decode assists (npf),
 * else fetched at CS:RIP. */
static size_t fetch(struct vcpu *v, const struct vexit *npf, const struct guest_mode *m,
		    uint8_t *buf)
{
	if (npf && npf->npf.insn_bytes_len) {
		memcpy(buf, npf->npf.insn_bytes, npf->npf.insn_bytes_len);
		return npf->npf.insn_bytes_len;
	}
	return fetch_at_rip(v, m, buf, INSN_MAX_LEN);
}

/* Stop the guest: the instruction at RIP, which made the access what
 * says, cannot be emulated. */
static void fail_insn(struct vcpu *v, const char *what, const uint8_t *bytes, size_t n,
		      const char *why)
{
	char hex[3 * INSN_MAX_LEN + 1] = "";

	v->stats.decode_failures++;
	for (size_t i = 0; i < n; i++)
		ksnprintf(hex + 3 * i, sizeof(hex) - 3 * i, "%02x ", bytes[i]);
	if (n)
		hex[3 * n - 1] = 0;
	vm_fail(v->vm, "%s by the instruction at rip 0x%llx: %s (bytes: %s)", what,
		(unsigned long long)v->regs.rip, why, hex);
}

/* Emulate the instruction at RIP, which made the access what says (for
 * reports); npf: the nested page fault, for its decode assists. */
static void emulate_at_rip(struct vcpu *v, const struct vexit *npf, const struct guest_mode *m,
			   const char *what)
{
	struct insn in;
	struct insn_fault fault;
	uint8_t bytes[INSN_MAX_LEN];
	size_t n = fetch(v, npf, m, bytes);
	enum insn_status st;
	struct mmio_ctx c = { .v = v, .mode = m };

	if ((st = insn_decode(bytes, n, m->code_bits, &in)) != INSN_OK) {
		fail_insn(v, what, bytes, n,
			  !n ? "its bytes cannot be fetched"
			  : st == INSN_TRUNCATED ? "the instruction runs past what could be fetched"
						 : "an instruction sprig does not emulate");
		return;
	}
	switch (insn_emulate(&in, m, &v->regs, &mmio_insn_ops, &c, &fault)) {
	case INSN_EMU_DONE:
		if (in.op == INSN_OP_MOV_TO_SEG && in.reg == SEG_SS)
			backend->interrupt_shadow(v);
		return;
	case INSN_EMU_AGAIN:
		return;
	case INSN_EMU_FAULT:
		backend->inject_exception(v, fault.vector, fault.error_code);
		return;
	case INSN_EMU_MEM_FAULT:
		vm_fail(v->vm, "%s at 0x%llx (instruction at rip 0x%llx)",
			c.failure ? c.failure : "memory access failed",
			(unsigned long long)c.failure_addr, (unsigned long long)v->regs.rip);
		return;
	case INSN_EMU_UNSUPPORTED:
		fail_insn(v, what, bytes, n, "an instruction sprig does not emulate");
		return;
	}
}

void mmio_exit(struct vcpu *v, const struct vexit *e)
{
	struct vm *vm = v->vm;
	struct guest_mode m;
	unsigned offset;
	char what[48];
	const char *access = e->npf.access & TDP_ACC_EXEC ? "fetch"
			     : e->npf.access & TDP_ACC_WRITE ? "write" : "read";

	v->stats.mmio_exits++;
	/* strict_mmio: what no device claims stops the guest, as before sprig
	 * emulated a PC's unclaimed addresses; so does running code there. */
	if ((vm->strict_mmio && !in_apic_page(v, e->npf.gpa, &offset) &&
	     !bus_find(&vm->mmio_bus, e->npf.gpa)) ||
	    (e->npf.access & TDP_ACC_EXEC)) {
		vm_fail(vm, "%s outside guest memory at gpa 0x%llx", access,
			(unsigned long long)e->npf.gpa);
		return;
	}
	ksnprintf(what, sizeof what, "%s of gpa 0x%llx", access, (unsigned long long)e->npf.gpa);
	backend->guest_mode(v, &m);
	emulate_at_rip(v, e, &m, what);
}

bool string_io_exit(struct vcpu *v, const struct vexit *e)
{
	struct guest_mode m;
	char what[32];

	ksnprintf(what, sizeof what, "%s on port 0x%x", e->io.in ? "INS" : "OUTS", e->io.port);
	backend->guest_mode(v, &m);
	emulate_at_rip(v, NULL, &m, what);
	return false; /* the emulation moved RIP */
}
