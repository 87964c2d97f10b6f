/* VPIDs and the TLB invalidations a VMX entry needs (SDM vol. 3C, 28.3). Pure
 * code, also built for the host; run.c issues the INVEPT and INVVPID that
 * vmx_tlb_entry_flush asks for. svm/tlb.h is its mirror. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#define VMX_MAX_VPIDS 256 /* tags 1 .. 256 */

/* The VPIDs in use, 1 .. VMX_MAX_VPIDS. */
struct vpid_pool {
	bool used[VMX_MAX_VPIDS];
};

/* The lowest free VPID, or 0 when all are in use. */
uint16_t vpid_alloc(struct vpid_pool *p);
/* Give back a VPID from vpid_alloc; 0 is ignored. */
void vpid_free(struct vpid_pool *p, uint16_t vpid);

/* A vCPU's tag and whether translations cached under it must go. */
struct vmx_tlb {
	uint16_t vpid;   /* 0 without VPIDs */
	bool vpid_flush; /* INVVPID before the next entry */
	bool entered;    /* it entered the guest once, on cpu */
	unsigned cpu;    /* the CPU of its last entry */
};

/* The guest did what flushes its own TLB on a real CPU (a MOV to CR0/CR3/
 * CR4, a change of EFER.NXE): its VPID's translations go before it runs
 * again. Without a VPID every entry and exit flushes them anyway. */
static inline void vmx_tlb_guest_flush(struct vmx_tlb *t)
{
	t->vpid_flush = t->vpid != 0;
}

struct vmx_tlb_flush {
	bool invept;  /* the EPT tables changed (the MMU's flush callback) */
	bool invvpid; /* the guest's linear translations under t->vpid */
};

/* What must be invalidated before the next entry on CPU cpu, from the
 * requests made since the last one (*ept_pending from the MMU, t->vpid_flush);
 * both requests are consumed. Each CPU has its own TLB, and requests made
 * while the vCPU ran elsewhere were carried out there: an entry on another CPU
 * than the last invalidates both, since this CPU may still hold translations
 * from an earlier stay (as KVM does when a vCPU moves). */
struct vmx_tlb_flush vmx_tlb_entry_flush(bool *ept_pending, struct vmx_tlb *t, unsigned cpu);
