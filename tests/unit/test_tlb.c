/* TLB tags of both backends: SVM's ASIDs recycled by generation, per CPU,
 * with the TLB_CONTROL each VMRUN needs (svm/tlb.c), VMX's VPIDs and the
 * INVEPT / INVVPID an entry needs, also when the vCPU moves (vmx/tlb.c). */
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
	svm_asid_space_init(&s, 16, 0);
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
	svm_asid_space_init(&s, 2, 0);
	a = (struct svm_asid){ 0 };
	b = (struct svm_asid){ 0 };
	CHECK_EQ_U64(svm_asid_assign(&s, &a, &pending, true), TLB_CONTROL_FLUSH_ALL);
	CHECK_EQ_U64(svm_asid_assign(&s, &b, &pending, true), TLB_CONTROL_FLUSH_ALL);
	CHECK_EQ_U64(a.asid, 1);
	CHECK_EQ_U64(b.asid, 1);
	CHECK(a.generation != b.generation);
}

TEST(svm_asid_per_cpu)
{
	struct svm_asid_space cpu0, cpu1;
	struct svm_asid a = { 0 }, b = { 0 };
	bool pending = false;

	svm_asid_space_init(&cpu0, 16, 0);
	svm_asid_space_init(&cpu1, 16, 1);
	CHECK_EQ_U64(svm_asid_assign(&cpu0, &a, &pending, true), TLB_CONTROL_FLUSH_ALL);
	CHECK_EQ_U64(svm_asid_assign(&cpu1, &b, &pending, true), TLB_CONTROL_FLUSH_ALL);
	/* Both CPUs hand out ASID 1 in their generation 2: the same numbers. */
	CHECK_EQ_U64(a.asid, 1);
	CHECK_EQ_U64(b.asid, 1);
	CHECK_EQ_U64(a.generation, b.generation);
	CHECK_EQ_U64(svm_asid_assign(&cpu0, &a, &pending, true), TLB_CONTROL_NONE);
	/* a moves to CPU 1: its ASID 1 there is b's, so it takes CPU 1's next,
	 * flushed, even though the generations match. */
	CHECK_EQ_U64(svm_asid_assign(&cpu1, &a, &pending, true), TLB_CONTROL_FLUSH_ASID);
	CHECK_EQ_U64(a.asid, 2);
	CHECK_EQ_U64(a.cpu, 1);
	CHECK(!pending);
	CHECK_EQ_U64(svm_asid_assign(&cpu1, &a, &pending, true), TLB_CONTROL_NONE);
	CHECK_EQ_U64(svm_asid_assign(&cpu1, &b, &pending, true), TLB_CONTROL_NONE);
	CHECK_EQ_U64(b.asid, 1);
	/* Back on CPU 0: not its old ASID 1, whose translations there may be
	 * stale (the MMU's requests went to CPU 1 meanwhile), but a fresh one. */
	CHECK_EQ_U64(svm_asid_assign(&cpu0, &a, &pending, false), TLB_CONTROL_FLUSH_ALL);
	CHECK_EQ_U64(a.asid, 2);
	CHECK_EQ_U64(a.cpu, 0);
	CHECK_EQ_U64(cpu0.next, 3);
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
	f = vmx_tlb_entry_flush(&ept, &t, 0);
	CHECK(f.invept && f.invvpid);
	CHECK(!ept && !t.vpid_flush);
	f = vmx_tlb_entry_flush(&ept, &t, 0);
	CHECK(!f.invept && !f.invvpid);
	/* The guest's MOV to CR: INVVPID only. */
	vmx_tlb_guest_flush(&t);
	f = vmx_tlb_entry_flush(&ept, &t, 0);
	CHECK(!f.invept && f.invvpid);
	/* Without a VPID the CPU flushes at every entry: nothing to ask. */
	vmx_tlb_guest_flush(&none);
	CHECK(!none.vpid_flush);
	ept = true;
	f = vmx_tlb_entry_flush(&ept, &none, 0);
	CHECK(f.invept && !f.invvpid);
	/* Never entered: the first entry flushes even without a request. */
	none = (struct vmx_tlb){ .vpid = 0 };
	f = vmx_tlb_entry_flush(&ept, &none, 2);
	CHECK(f.invept && !f.invvpid);
}

TEST(vmx_tlb_cpu_moves)
{
	struct vmx_tlb t = { .vpid = 5 };
	struct vmx_tlb_flush f;
	bool ept = false;

	f = vmx_tlb_entry_flush(&ept, &t, 0);
	CHECK(f.invept && f.invvpid);
	f = vmx_tlb_entry_flush(&ept, &t, 0);
	CHECK(!f.invept && !f.invvpid);
	/* On another CPU: both, though nothing was asked. */
	f = vmx_tlb_entry_flush(&ept, &t, 1);
	CHECK(f.invept && f.invvpid);
	CHECK_EQ_U64(t.cpu, 1);
	/* The MMU's request while on CPU 1 is carried out there... */
	ept = true;
	f = vmx_tlb_entry_flush(&ept, &t, 1);
	CHECK(f.invept && !f.invvpid);
	/* ...and CPU 0, which may hold translations from before it, flushes
	 * too when the vCPU comes back. */
	f = vmx_tlb_entry_flush(&ept, &t, 0);
	CHECK(f.invept && f.invvpid);
	f = vmx_tlb_entry_flush(&ept, &t, 0);
	CHECK(!f.invept && !f.invvpid);
}
