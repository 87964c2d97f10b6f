/* The guest's own page tables, walked in software: what instruction emulation
 * (MMIO) needs to turn the guest's linear addresses (RIP for the fetch, the
 * operands) into guest-physical ones, in whatever paging mode the guest runs
 * (SDM vol. 3A chapter 4, APM vol. 2 chapter 5):
 *   CR0.PG=0        none: linear = physical (32 bits outside long mode)
 *   CR4.PAE=0       32-bit paging: 2 levels, 4 MiB pages with CR4.PSE and
 *                   PSE-36 (physical bits 39:32 in PDE bits 20:13)
 *   PAE, LMA=0      3 levels; the 4 PDPTEs are read from memory at each walk
 *                   (the CPU caches them at MOV CR3: SDM 4.4.1)
 *   EFER.LMA=1      4 levels, or 5 with CR4.LA57; 1 GiB pages in PDPTEs
 * Pure code, also built for the host (tests/unit/test_guest_walk.c).
 *
 * Checks, in the CPU's order: present bits and reserved bits level by level
 * (a #PF with P=1 and RSVD for a reserved bit), then the access rights of the
 * whole walk (SDM 4.6): R/W (supervisor writes only with CR0.WP=1), U/S, XD
 * (with EFER.NXE in PAE and long mode; bit 63 is reserved when NXE=0), SMEP
 * and SMAP. Protection keys are not checked (sprig does not offer PKU).
 *
 * SMAP and RFLAGS.AC: an explicit supervisor data access to a user page is
 * allowed when RFLAGS.AC=1 (SDM 4.6.1). The walker cannot see RFLAGS, so the
 * caller says it with GWALK_AC; implicit supervisor accesses (descriptor
 * tables...) must not pass it.
 *
 * Accessed and dirty bits are not set. The walker serves the emulation of an
 * access that already faulted in the second-level tables (EPT/NPT) at the
 * final guest-physical address: the CPU walked the same guest tables for the
 * same linear address first and set their A bits (and D for a write) before
 * the EPT violation or nested page fault. Setting them again needs an atomic
 * write to guest memory that is only worth adding with an emulator of
 * accesses the hardware never walked (a second memory operand, say).
 *
 * Non-canonical addresses (long mode) raise #GP or #SS, not #PF: the walker
 * reports them as GWALK_NONCANONICAL for the caller to raise the right one. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "virt/guest_mode.h"

#define GWALK_W 1u  /* write access */
#define GWALK_U 2u  /* user access (CPL 3) */
#define GWALK_F 4u  /* instruction fetch */
#define GWALK_AC 8u /* RFLAGS.AC=1 on an explicit access: SMAP lets supervisor data through */

/* The #PF error code (SDM 4.7). */
#define PFEC_P (1u << 0)    /* protection violation (0: page not present) */
#define PFEC_W (1u << 1)    /* write */
#define PFEC_U (1u << 2)    /* user-mode access */
#define PFEC_RSVD (1u << 3) /* reserved bit set in a paging-structure entry */
#define PFEC_I (1u << 4)    /* instruction fetch (with NX in use or SMEP) */

enum gwalk_status {
	GWALK_OK,
	GWALK_FAULT,        /* a #PF the guest would get: *pf_error holds the error code */
	GWALK_BAD_GPA,      /* a paging-structure entry (or, in guest_fetch, the bytes)
			     * lies outside guest RAM: mem->read failed */
	GWALK_NONCANONICAL, /* long mode, linear address not canonical: #GP/#SS, not #PF */
};

/* Guest-physical memory as the walker reads it. read copies len bytes at gpa
 * into buf, false if they are not RAM. guest_walk asks for one entry at a
 * time (8 bytes, 4 with 32-bit paging); guest_fetch asks for instruction
 * bytes, any length that stays within one 4 KiB page. */
struct gwalk_mem {
	bool (*read)(void *ctx, uint64_t gpa, void *buf, unsigned len);
	void *ctx;
	/* The guest's MAXPHYADDR (its CPUID 0x80000008 EAX[7:0]): entry bits
	 * from here up to 51 are reserved. 0 means 52 (no such check). */
	unsigned phys_bits;
};

/* Translate linear for an access (GWALK_* bits) through the guest's tables.
 * GWALK_OK with *gpa; GWALK_FAULT with *pf_error; GWALK_BAD_GPA with *gpa set
 * to the address of the entry that could not be read. */
enum gwalk_status guest_walk(const struct guest_mode *m, uint64_t linear, unsigned access,
			     const struct gwalk_mem *mem, uint64_t *gpa, uint32_t *pf_error);

/* Copy up to n bytes at linear (CS base already added) through guest_walk
 * with GWALK_F (and GWALK_U at CPL 3), a page at a time: stops at the first
 * page that does not translate or whose bytes mem->read refuses. Returns the
 * bytes copied; *st is GWALK_OK when all n were, else the status of the page
 * that stopped the copy (with *pf_error for GWALK_FAULT): a decoder that
 * needs bytes beyond the returned count raises that fault. */
size_t guest_fetch(const struct guest_mode *m, uint64_t linear, void *buf, size_t n,
		   const struct gwalk_mem *mem, enum gwalk_status *st, uint32_t *pf_error);
