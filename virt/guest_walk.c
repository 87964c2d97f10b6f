/* The guest's page tables walked in software (guest_walk.h). */
#include "virt/guest_walk.h"
#include "arch/x86/msr.h"
#include "arch/x86/regs.h"

#define GW_CR4_PSE (1ull << 4) /* 4 MiB pages in 32-bit paging */

/* Paging-structure entry bits (SDM 4.3-4.5, tables 4-4 to 4-20). */
#define PTE_P (1ull << 0)
#define PTE_RW (1ull << 1)
#define PTE_US (1ull << 2)
#define PTE_PS (1ull << 7)
#define PTE_XD (1ull << 63)

#define PAGE_4K 0x1000ull

/* What a walk has found so far: the rights of every level combined (SDM
 * 4.6: an access needs U/S and R/W set at every level, XD clear at every
 * level) and the mode's rules. */
struct walk {
	const struct guest_mode *m;
	const struct gwalk_mem *mem;
	unsigned access;
	bool nx;         /* XD bits in force: PAE or long mode with EFER.NXE */
	uint64_t rsvd_hi; /* bits 51:MAXPHYADDR, reserved in every 64-bit entry */
	bool user, writable, exec_disabled;
};

static uint64_t bits(unsigned hi, unsigned lo)
{
	return ((hi >= 63 ? ~0ull : (1ull << (hi + 1)) - 1)) & ~((1ull << lo) - 1);
}

static unsigned phys_bits(const struct gwalk_mem *mem)
{
	return mem->phys_bits && mem->phys_bits < 52 ? mem->phys_bits : 52;
}

/* The error code of a fault in this walk: the access's W and U bits, and
 * I/D for a fetch when the fetch could have been refused for it (NX in use
 * or SMEP; SDM 4.7, APM 8.4.2). */
static uint32_t pf_code(const struct walk *w, uint32_t cause)
{
	uint32_t ec = cause;

	if (w->access & GWALK_W)
		ec |= PFEC_W;
	if (w->access & GWALK_U)
		ec |= PFEC_U;
	if ((w->access & GWALK_F) && (w->nx || (w->m->cr4 & CR4_SMEP)))
		ec |= PFEC_I;
	return ec;
}

/* One 64-bit entry (PAE, 4- and 5-level) at gpa: GWALK_OK with *e present
 * and free of reserved bits, else the fault. extra_rsvd: the bits reserved
 * at this level besides 51:MAXPHYADDR and XD without NXE. */
static enum gwalk_status read_entry64(struct walk *w, uint64_t gpa, uint64_t extra_rsvd,
				      uint64_t *e, uint64_t *out_gpa, uint32_t *pf_error)
{
	uint64_t rsvd = w->rsvd_hi | extra_rsvd | (w->nx ? 0 : PTE_XD);

	if (!w->mem->read(w->mem->ctx, gpa, e, 8)) {
		*out_gpa = gpa;
		return GWALK_BAD_GPA;
	}
	if (!(*e & PTE_P)) {
		*pf_error = pf_code(w, 0);
		return GWALK_FAULT;
	}
	if (*e & rsvd) {
		*pf_error = pf_code(w, PFEC_P | PFEC_RSVD);
		return GWALK_FAULT;
	}
	return GWALK_OK;
}

static void add_rights(struct walk *w, uint64_t e)
{
	w->user = w->user && (e & PTE_US);
	w->writable = w->writable && (e & PTE_RW);
	w->exec_disabled = w->exec_disabled || (w->nx && (e & PTE_XD));
}

/* The access rights of the complete walk (SDM 4.6.1, APM 5.6). */
static enum gwalk_status check_rights(const struct walk *w, uint32_t *pf_error)
{
	const struct guest_mode *m = w->m;
	unsigned a = w->access;
	bool denied;

	if (a & GWALK_U) {
		denied = !w->user || ((a & GWALK_W) && !w->writable);
	} else {
		/* Supervisor: writes to read-only pages only with CR0.WP=0;
		 * SMEP refuses fetches from user pages; SMAP refuses data
		 * accesses to user pages unless RFLAGS.AC=1 (explicit ones). */
		denied = ((a & GWALK_W) && !w->writable && (m->cr0 & CR0_WP)) ||
			 (w->user && (a & GWALK_F) && (m->cr4 & CR4_SMEP)) ||
			 (w->user && !(a & GWALK_F) && (m->cr4 & CR4_SMAP) && !(a & GWALK_AC));
	}
	if ((a & GWALK_F) && w->exec_disabled)
		denied = true;
	if (denied) {
		*pf_error = pf_code(w, PFEC_P);
		return GWALK_FAULT;
	}
	return GWALK_OK;
}

/* 32-bit paging (SDM 4.3): 4-byte entries, no XD, no reserved bits but in a
 * 4 MiB PDE (bit 21, and PSE-36 bits at or above MAXPHYADDR, max 40). */
static enum gwalk_status walk32(struct walk *w, uint32_t linear, uint64_t *gpa,
				uint32_t *pf_error)
{
	uint32_t pde, pte;
	uint64_t at = (w->m->cr3 & 0xfffff000u) + ((linear >> 22) << 2);

	if (!w->mem->read(w->mem->ctx, at, &pde, 4)) {
		*gpa = at;
		return GWALK_BAD_GPA;
	}
	if (!(pde & PTE_P)) {
		*pf_error = pf_code(w, 0);
		return GWALK_FAULT;
	}
	add_rights(w, pde);
	if ((pde & PTE_PS) && (w->m->cr4 & GW_CR4_PSE)) {
		unsigned pbits = phys_bits(w->mem);
		/* PDE bit 13 + k holds physical bit 32 + k, up to bit 39. */
		uint32_t rsvd;

		pbits = pbits < 32 ? 32 : pbits > 40 ? 40 : pbits;
		rsvd = (1u << 21) | (uint32_t)bits(20, 13 + (pbits - 32));
		if (pde & rsvd) {
			*pf_error = pf_code(w, PFEC_P | PFEC_RSVD);
			return GWALK_FAULT;
		}
		*gpa = (pde & 0xffc00000u) | ((uint64_t)((pde >> 13) & 0xff) << 32) |
		       (linear & 0x3fffffu);
		return check_rights(w, pf_error);
	}
	at = (pde & 0xfffff000u) + (((linear >> 12) & 0x3ff) << 2);
	if (!w->mem->read(w->mem->ctx, at, &pte, 4)) {
		*gpa = at;
		return GWALK_BAD_GPA;
	}
	if (!(pte & PTE_P)) {
		*pf_error = pf_code(w, 0);
		return GWALK_FAULT;
	}
	add_rights(w, pte);
	*gpa = (pte & 0xfffff000u) | (linear & 0xfffu);
	return check_rights(w, pf_error);
}

/* PAE paging (SDM 4.4): a PDPTE of the 4 at CR3, then 2 levels of 64-bit
 * entries whose bits 62:MAXPHYADDR are all reserved (tables 4-9 to 4-11).
 * PDPTEs carry no rights; their bits 2:1 and 63:MAXPHYADDR are reserved
 * (table 4-8: a CPU refuses them at MOV CR3 with #GP; here, read at walk
 * time, they give a reserved-bit #PF). Bits 8:5 are reserved by the SDM too
 * but not checked: QEMU's AMD walker sets A (bit 5) in the PDPTEs it uses,
 * and this walk follows one the CPU just made; it must not refuse it. */
static enum gwalk_status walk_pae(struct walk *w, uint32_t linear, uint64_t *gpa,
				  uint32_t *pf_error)
{
	uint64_t e, at = (w->m->cr3 & 0xffffffe0u) + ((linear >> 30) << 3);
	uint64_t rsvd_62_52 = bits(62, 52);
	enum gwalk_status st;

	if (!w->mem->read(w->mem->ctx, at, &e, 8)) {
		*gpa = at;
		return GWALK_BAD_GPA;
	}
	if (!(e & PTE_P)) {
		*pf_error = pf_code(w, 0);
		return GWALK_FAULT;
	}
	if (e & (w->rsvd_hi | bits(63, 52) | bits(2, 1))) {
		*pf_error = pf_code(w, PFEC_P | PFEC_RSVD);
		return GWALK_FAULT;
	}

	at = (e & bits(51, 12)) + (((linear >> 21) & 0x1ff) << 3);
	st = read_entry64(w, at, rsvd_62_52, &e, gpa, pf_error);
	if (st != GWALK_OK)
		return st;
	add_rights(w, e);
	if (e & PTE_PS) {
		if (e & bits(20, 13)) {
			*pf_error = pf_code(w, PFEC_P | PFEC_RSVD);
			return GWALK_FAULT;
		}
		*gpa = (e & bits(51, 21)) | (linear & 0x1fffffu);
		return check_rights(w, pf_error);
	}

	at = (e & bits(51, 12)) + (((linear >> 12) & 0x1ff) << 3);
	st = read_entry64(w, at, rsvd_62_52, &e, gpa, pf_error);
	if (st != GWALK_OK)
		return st;
	add_rights(w, e);
	*gpa = (e & bits(51, 12)) | (linear & 0xfffu);
	return check_rights(w, pf_error);
}

/* 4- and 5-level paging (SDM 4.5): PS is reserved in PML5Es and PML4Es;
 * a PDPTE with PS maps 1 GiB (bits 29:13 reserved), a PDE with PS 2 MiB
 * (bits 20:13 reserved). */
static enum gwalk_status walk_long(struct walk *w, uint64_t linear, uint64_t *gpa,
				   uint32_t *pf_error)
{
	unsigned levels = w->m->cr4 & CR4_LA57 ? 5 : 4;
	uint64_t table = w->m->cr3 & bits(51, 12) & ~w->rsvd_hi;

	for (unsigned level = levels; level >= 1; level--) {
		unsigned shift = 12 + 9 * (level - 1);
		uint64_t at = table + (((linear >> shift) & 0x1ff) << 3), e;
		uint64_t rsvd = level >= 4 ? PTE_PS : 0;
		enum gwalk_status st = read_entry64(w, at, rsvd, &e, gpa, pf_error);

		if (st != GWALK_OK)
			return st;
		add_rights(w, e);
		if (level == 1 || ((level == 2 || level == 3) && (e & PTE_PS))) {
			uint64_t leaf_rsvd = level == 3 ? bits(29, 13) : level == 2 ? bits(20, 13) : 0;
			uint64_t offset = bits(shift - 1, 0);

			if (e & leaf_rsvd) {
				*pf_error = pf_code(w, PFEC_P | PFEC_RSVD);
				return GWALK_FAULT;
			}
			*gpa = (e & bits(51, shift)) | (linear & offset);
			return check_rights(w, pf_error);
		}
		table = e & bits(51, 12);
	}
	return GWALK_FAULT; /* not reached: level 1 always ends the walk */
}

enum gwalk_status guest_walk(const struct guest_mode *m, uint64_t linear, unsigned access,
			     const struct gwalk_mem *mem, uint64_t *gpa, uint32_t *pf_error)
{
	bool long_mode = m->efer & EFER_LMA;
	unsigned pbits = phys_bits(mem);
	struct walk w = {
		.m = m,
		.mem = mem,
		.access = access,
		/* XD exists in PAE and long mode, with EFER.NXE (SDM 4.1.1). */
		.nx = (m->cr4 & CR4_PAE) && (m->efer & EFER_NXE),
		.rsvd_hi = pbits < 52 ? bits(51, pbits) : 0,
		.user = true,
		.writable = true,
		.exec_disabled = false,
	};

	*pf_error = 0;
	if (long_mode && !x86_canonical(linear, x86_va_bits(m->cr4)))
		return GWALK_NONCANONICAL;
	if (!long_mode)
		linear = (uint32_t)linear;
	if (!(m->cr0 & CR0_PG)) {
		*gpa = linear;
		return GWALK_OK;
	}
	if (long_mode)
		return walk_long(&w, linear, gpa, pf_error);
	if (m->cr4 & CR4_PAE)
		return walk_pae(&w, (uint32_t)linear, gpa, pf_error);
	w.nx = false;
	return walk32(&w, (uint32_t)linear, gpa, pf_error);
}

size_t guest_fetch(const struct guest_mode *m, uint64_t linear, void *buf, size_t n,
		   const struct gwalk_mem *mem, enum gwalk_status *st, uint32_t *pf_error)
{
	unsigned access = GWALK_F | (m->cpl == 3 ? GWALK_U : 0);
	bool long_mode = m->efer & EFER_LMA;
	uint8_t *out = buf;
	size_t done = 0;

	*st = GWALK_OK;
	*pf_error = 0;
	while (done < n) {
		/* Outside long mode the linear address wraps at 4 GiB. */
		uint64_t at = long_mode ? linear + done : (uint32_t)(linear + done);
		size_t chunk = PAGE_4K - (at & (PAGE_4K - 1));
		uint64_t gpa;

		if (chunk > n - done)
			chunk = n - done;
		*st = guest_walk(m, at, access, mem, &gpa, pf_error);
		if (*st != GWALK_OK)
			break;
		if (!mem->read(mem->ctx, gpa, out + done, (unsigned)chunk)) {
			*st = GWALK_BAD_GPA;
			break;
		}
		done += chunk;
	}
	return done;
}
