/* TLB tags of both backends: SVM's ASIDs recycled by generation with the
 * TLB_CONTROL each VMRUN needs (svm/tlb.c), VMX's VPIDs and the INVEPT /
 * INVVPID an entry needs (vmx/tlb.c). */
#include "check.h"
#include "svm/tlb.h"
#include "svm/vmcb.h"
#include "vmx/tlb.h"

TEST(svm_asid_generations)
{
	struct svm_asid_space s;
	struct svm_asid a = { 0 }, b = { 0 }, many[15];
	bool pending = false;

	/* QEMU 7.2: 16 ASIDs, 1-15 for guests, no flush-by-ASID. */
	svm_asid_space_init(&s, 16);
	/* The first entry starts generation 2 and flushes everything. */
	CHECK_EQ_U64(svm_asid_assign(&s, &a, &pending, false), TLB_CONTROL_FLUSH_ALL);
	CHECK_EQ_U64(a.asid, 1);
	CHECK_EQ_U64(a.generation, 2);
	CHECK(!pending);
	/* A second vCPU: a new ASID that may have tagged someone else's. */
	CHECK_EQ_U64(svm_asid_assign(&s, &b, &pending, true), TLB_CONTROL_FLUSH_ASID);
	CHECK_EQ_U64(b.asid, 2);
	CHECK_EQ_U64(svm_asid_assign(&s, &b, &pending, false), TLB_CONTROL_NONE);
	CHECK_EQ_U64(b.asid, 2);
	/* The MMU's flush request: the vCPU's ASID only where the CPU can. */
	pending = true;
	CHECK_EQ_U64(svm_asid_assign(&s, &a, &pending, true), TLB_CONTROL_FLUSH_ASID);
	CHECK(!pending);
	pending = true;
	CHECK_EQ_U64(svm_asid_assign(&s, &a, &pending, false), TLB_CONTROL_FLUSH_ALL);
	CHECK_EQ_U64(a.asid, 1);
	/* ASIDs 3-15 go to 13 more vCPUs; the 14th starts generation 3. */
	for (int i = 0; i < 13; i++) {
		many[i] = (struct svm_asid){ 0 };
		CHECK_EQ_U64(svm_asid_assign(&s, &many[i], &pending, true), TLB_CONTROL_FLUSH_ASID);
		CHECK_EQ_U64(many[i].asid, 3 + i);
	}
	many[13] = (struct svm_asid){ 0 };
	CHECK_EQ_U64(svm_asid_assign(&s, &many[13], &pending, true), TLB_CONTROL_FLUSH_ALL);
	CHECK_EQ_U64(many[13].asid, 1);
	CHECK_EQ_U64(s.generation, 3);
	/* An old vCPU comes back with a fresh ASID and a flush. */
	CHECK_EQ_U64(svm_asid_assign(&s, &a, &pending, true), TLB_CONTROL_FLUSH_ASID);
	CHECK_EQ_U64(a.asid, 2);
	CHECK_EQ_U64(a.generation, 3);
	/* With only one guest ASID every new assignment starts a generation. */
	svm_asid_space_init(&s, 2);
	a = (struct svm_asid){ 0 };
	b = (struct svm_asid){ 0 };
	CHECK_EQ_U64(svm_asid_assign(&s, &a, &pending, true), TLB_CONTROL_FLUSH_ALL);
	CHECK_EQ_U64(svm_asid_assign(&s, &b, &pending, true), TLB_CONTROL_FLUSH_ALL);
	CHECK_EQ_U64(a.asid, 1);
	CHECK_EQ_U64(b.asid, 1);
	CHECK(a.generation != b.generation);
}

TEST(vmx_vpid_pool)
{
	static struct vpid_pool p;

	for (unsigned i = 1; i <= VMX_MAX_VPIDS; i++)
		CHECK_EQ_U64(vpid_alloc(&p), i);
	CHECK_EQ_U64(vpid_alloc(&p), 0); /* all 256 in use */
	vpid_free(&p, 7);
	vpid_free(&p, 0);   /* no VPID: nothing */
	vpid_free(&p, 999); /* not one of ours: nothing */
	CHECK_EQ_U64(vpid_alloc(&p), 7);
	CHECK_EQ_U64(vpid_alloc(&p), 0);
	vpid_free(&p, 256);
	vpid_free(&p, 1);
	CHECK_EQ_U64(vpid_alloc(&p), 1);
	CHECK_EQ_U64(vpid_alloc(&p), 256);
}

TEST(vmx_tlb_entry_flushes)
{
	struct vmx_tlb t = { .vpid = 3, .vpid_flush = true };
	struct vmx_tlb none = { .vpid = 0 };
	struct vmx_tlb_flush f;
	bool ept = true;

	/* A new vCPU: its EPT root and its VPID may hold someone else's. */
	f = vmx_tlb_entry_flush(&ept, &t);
	CHECK(f.invept && f.invvpid);
	CHECK(!ept && !t.vpid_flush);
	f = vmx_tlb_entry_flush(&ept, &t);
	CHECK(!f.invept && !f.invvpid);
	/* The guest's MOV to CR: INVVPID only. */
	vmx_tlb_guest_flush(&t);
	f = vmx_tlb_entry_flush(&ept, &t);
	CHECK(!f.invept && f.invvpid);
	/* Without a VPID the CPU flushes at every entry: nothing to ask. */
	vmx_tlb_guest_flush(&none);
	CHECK(!none.vpid_flush);
	ept = true;
	f = vmx_tlb_entry_flush(&ept, &none);
	CHECK(f.invept && !f.invvpid);
}
