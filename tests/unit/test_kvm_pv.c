/* virt/kvm_pv.c: KVM_HC_SEND_IPI's argument checks and bitmap walk as KVM's
 * kvm_pv_send_ipi has them (arch/x86/kvm/lapic.c), over real APICs on a
 * bus (dev/lapic*.c); the steal-time record's protocol as KVM's
 * record_steal_time writes it, in guest memory of a real MMU, read back as
 * Linux's kvm_steal_clock reads it; PV TLB flush, a flush Linux's
 * kvm_flush_tlb_multi leaves in a preempted vCPU's record taken at that
 * vCPU's next entry, seen in its model TLB (tests/unit/model_tlb.h); PV
 * EOI's word around a real APIC's EOIs, as Linux's kvm_guest_apic_eoi_write
 * uses it. */
#include "check.h"
#include "dev/lapic.h"
#include "lib/bytes.h"
#include "mm/mmu.h"
#include "svm/npt.h"
#include "tests/unit/host_mem.h"
#include "tests/unit/model_tlb.h"
#include "virt/kvm_pv.h"
#include <pthread.h>
#include <string.h>

#define NR 40 /* APICs: IDs 0-39, past one 32-bit and below one 64-bit bitmap */
#define VEC 0x42

static struct lapic apics[NR];
static struct lapic_bus bus;

/* NR software-enabled APICs, x2APIC mode on the odd IDs. */
static void setup(void)
{
	memset(&bus, 0, sizeof(bus));
	for (unsigned i = 0; i < NR; i++) {
		lapic_init(&apics[i], &bus, i, i == 0, 2000000);
		lapic_mmio_write(&apics[i], LAPIC_REG_SVR, 4, 0x1ff, 0);
		if (i & 1)
			lapic_set_base_msr(&apics[i], LAPIC_DEFAULT_BASE | LAPIC_BASE_EN |
					   LAPIC_BASE_EXTD, 46);
	}
}

static bool has_irr(unsigned id, unsigned v)
{
	return (apics[id].irr[v / 32] >> (v % 32)) & 1;
}

/* The APICs holding vector v, as a bitmap of IDs. */
static uint64_t holders(unsigned v)
{
	uint64_t m = 0;

	for (unsigned i = 0; i < NR; i++)
		m |= (uint64_t)has_irr(i, v) << i;
	return m;
}

TEST(kvm_pv_send_ipi_bitmap)
{
	setup();
	/* Low bitmap from min 2: IDs 2, 3, 5; high from min + 64: nobody there. */
	CHECK_EQ_U64(kvm_pv_send_ipi(&bus, 0x0b, 0x1, 2, VEC, true), 3);
	CHECK_EQ_U64(holders(VEC), (1ull << 2) | (1ull << 3) | (1ull << 5));
	/* Outside 64-bit mode the high bitmap starts 32 above min. */
	setup();
	CHECK_EQ_U64(kvm_pv_send_ipi(&bus, 0x1, 0x3, 1, VEC, false), 3);
	CHECK_EQ_U64(holders(VEC), (1ull << 1) | (1ull << 33) | (1ull << 34));
	/* In 64-bit mode bit 63 of the low bitmap from min 0 is ID 63: none. */
	setup();
	CHECK_EQ_U64(kvm_pv_send_ipi(&bus, 1ull << 63 | 1ull << 39, 0, 0, VEC, true), 1);
	CHECK_EQ_U64(holders(VEC), 1ull << 39);
}

/* kvm-unit-tests' apic test: min 0xffffffff is past every ID, and min + 64
 * wraps to 63 (KVM's u32), where its high bitmap 0 names nobody: 0. A high
 * bitmap there would reach IDs from 63 on, as in KVM. */
TEST(kvm_pv_send_ipi_min_wraps)
{
	setup();
	CHECK_EQ_U64(kvm_pv_send_ipi(&bus, 0xffffffff, 0, 0xffffffff, 0, true), 0);
	CHECK_EQ_U64(kvm_pv_send_ipi(&bus, ~0ull, 0, 256, VEC, true), 0);
	CHECK_EQ_U64(holders(VEC), 0);
	CHECK_EQ_U64(kvm_pv_send_ipi(&bus, 0, 1, 0xffffffd0, VEC, true), 1); /* ID 16 */
	CHECK_EQ_U64(holders(VEC), 1ull << 16);
}

TEST(kvm_pv_send_ipi_refusals)
{
	setup();
	/* A logical destination or any shorthand: -KVM_EINVAL, nothing sent. */
	CHECK_EQ_U64(kvm_pv_send_ipi(&bus, 1, 0, 0, VEC | LAPIC_ICR_LOGICAL, true),
		     (uint64_t)-22);
	for (unsigned sh = 1; sh < 4; sh++)
		CHECK_EQ_U64(kvm_pv_send_ipi(&bus, 1, 0, 0, VEC | sh << 18, true), (uint64_t)-22);
	CHECK_EQ_U64(holders(VEC), 0);
	/* A level-triggered de-assert of a fixed interrupt or an INIT: dropped. */
	CHECK_EQ_U64(kvm_pv_send_ipi(&bus, 1, 0, 0, VEC | LAPIC_ICR_LEVEL, true), 0);
	CHECK_EQ_U64(kvm_pv_send_ipi(&bus, 2, 0, 0, LAPIC_DM_INIT << 8 | LAPIC_ICR_LEVEL, true),
		     0);
	CHECK(holders(VEC) == 0 && !apics[1].init_pending);
	/* Asserted, it arrives level-triggered (TMR). */
	CHECK_EQ_U64(kvm_pv_send_ipi(&bus, 1, 0, 0,
				     VEC | LAPIC_ICR_LEVEL | LAPIC_ICR_ASSERT, true), 1);
	CHECK(has_irr(0, VEC) && (apics[0].tmr[VEC / 32] >> (VEC % 32) & 1));
}

/* Each delivery mode as the ICR's; only APICs that accept count. */
TEST(kvm_pv_send_ipi_modes)
{
	setup();
	CHECK_EQ_U64(kvm_pv_send_ipi(&bus, 0x6, 0, 0, LAPIC_DM_NMI << 8, true), 2);
	CHECK(!apics[0].nmi_pending && apics[1].nmi_pending && apics[2].nmi_pending);
	CHECK_EQ_U64(kvm_pv_send_ipi(&bus, 0x8, 0, 0, LAPIC_DM_INIT << 8, true), 1);
	CHECK(apics[3].init_pending);
	/* Lowest priority to each APIC named, as fixed. */
	CHECK_EQ_U64(kvm_pv_send_ipi(&bus, 0x30, 0, 0, LAPIC_DM_LOWEST << 8 | VEC, true), 2);
	CHECK_EQ_U64(holders(VEC), (1ull << 4) | (1ull << 5));
	/* A software-disabled APIC takes no fixed interrupt; a disabled one nothing. */
	lapic_mmio_write(&apics[6], LAPIC_REG_SVR, 4, 0xff, 0);
	lapic_set_base_msr(&apics[8], LAPIC_DEFAULT_BASE, 46);
	CHECK_EQ_U64(kvm_pv_send_ipi(&bus, 0x1c0, 0, 0, VEC + 1, true), 1);
	CHECK_EQ_U64(holders(VEC + 1), 1ull << 7);
	CHECK_EQ_U64(kvm_pv_send_ipi(&bus, 0x140, 0, 0, LAPIC_DM_NMI << 8, true), 1);
	CHECK(apics[6].nmi_pending && !apics[8].nmi_pending);
	/* SMI and ExtINT are not modelled: nothing accepted. */
	CHECK_EQ_U64(kvm_pv_send_ipi(&bus, 0x1, 0, 0, LAPIC_DM_SMI << 8, true), 0);
	CHECK_EQ_U64(kvm_pv_send_ipi(&bus, 0x1, 0, 0, LAPIC_DM_EXTINT << 8, true), 0);
}

#define ST_PAGES 4
#define ST_GPA 0x1040 /* 64-byte aligned, inside the slot */

static void no_flush(void *ctx)
{
	(void)ctx;
}

static void guest_mem(struct mmu *mmu)
{
	struct memslot_config cfg = { .gpa = 0, .size = ST_PAGES * PAGE_SIZE,
				      .backing = { .kind = BACKING_LAZY } };

	host_mem_init(16u << 20);
	REQUIRE(mmu_init(mmu, &npt_format, no_flush, NULL) == 0);
	REQUIRE(mmu_slot_add(mmu, &cfg) == 0);
}

/* Linux's kvm_steal_clock: steal, read between two equal, even versions. */
static bool guest_steal(struct mmu *mmu, uint64_t gpa, uint64_t *steal)
{
	uint8_t rec[KVM_STEAL_TIME_SIZE];

	if (mmu_read_guest(mmu, gpa, rec, sizeof(rec)))
		return false;
	*steal = rd64(rec);
	return !(rd32(rec + 8) & 1);
}

static uint32_t field32(struct mmu *mmu, uint64_t gpa)
{
	uint32_t v = 0xdeadbeef;

	mmu_read_guest(mmu, gpa, &v, sizeof(v));
	return v;
}

TEST(kvm_steal_time_record)
{
	static struct mmu mmu;
	struct kick_sync kick = { 0 };
	uint8_t preempted = 0, junk[KVM_STEAL_TIME_SIZE];
	uint64_t steal;

	guest_mem(&mmu);
	/* A zeroed record: version 0 -> 2, steal the delta, preempted cleared. */
	REQUIRE(kvm_steal_time_preempt(&mmu, ST_GPA) == 0);
	REQUIRE(mmu_read_guest(&mmu, ST_GPA + 16, &preempted, 1) == 0);
	CHECK_EQ_U64(preempted, KVM_VCPU_PREEMPTED);
	CHECK(kvm_steal_time_record(&mmu, ST_GPA, 1500, &kick) == 0);
	CHECK(guest_steal(&mmu, ST_GPA, &steal));
	CHECK_EQ_U64(steal, 1500);
	CHECK_EQ_U64(field32(&mmu, ST_GPA + 8), 2);
	REQUIRE(mmu_read_guest(&mmu, ST_GPA + 16, &preempted, 1) == 0);
	CHECK_EQ_U64(preempted, 0);
	/* The sum goes on; the version moves by 2 each time. */
	CHECK(kvm_steal_time_record(&mmu, ST_GPA, 500, &kick) == 0);
	CHECK(guest_steal(&mmu, ST_GPA, &steal));
	CHECK_EQ_U64(steal, 2000);
	CHECK_EQ_U64(field32(&mmu, ST_GPA + 8), 4);
	/* An odd version the guest left (junk): made even first, as KVM does. */
	memset(junk, 0, sizeof(junk));
	put32(junk + 8, 7);
	REQUIRE(mmu_write_guest(&mmu, ST_GPA, junk, sizeof(junk)) == 0);
	CHECK(kvm_steal_time_record(&mmu, ST_GPA, 3, &kick) == 0);
	CHECK_EQ_U64(field32(&mmu, ST_GPA + 8), 10);
	CHECK(guest_steal(&mmu, ST_GPA, &steal));
	CHECK_EQ_U64(steal, 3);
	/* Past guest memory: refused, nothing written. */
	CHECK(kvm_steal_time_record(&mmu, ST_PAGES * PAGE_SIZE, 1, &kick) != 0);
	CHECK(kvm_steal_time_record(&mmu, ST_PAGES * PAGE_SIZE - 32, 1, &kick) != 0);
	CHECK(kvm_steal_time_preempt(&mmu, ST_PAGES * PAGE_SIZE) != 0);
	CHECK_EQ_U64(field32(&mmu, ST_PAGES * PAGE_SIZE - 32 + 8), 0);
	CHECK_EQ_U64(kick.requests, 0); /* nobody asked for a flush */
	mmu_destroy(&mmu);
}

/* Linux's kvm_flush_tlb_multi for one target vCPU: one that is preempted
 * gets KVM_VCPU_FLUSH_TLB in its record (LOCK CMPXCHG) instead of an IPI.
 * True if it took the flush that way, and did not have one already. */
static bool guest_defer_flush(uint8_t *preempted)
{
	uint8_t state = __atomic_load_n(preempted, __ATOMIC_RELAXED);

	return (state & KVM_VCPU_PREEMPTED) && !(state & KVM_VCPU_FLUSH_TLB) &&
	       __atomic_compare_exchange_n(preempted, &state, state | KVM_VCPU_FLUSH_TLB, false,
					   __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

static bool tlb_holds_any(const struct model_tlb *tlb)
{
	for (unsigned i = 0; i < MODEL_TLB_ENTRIES; i++)
		if (tlb->e[i].level)
			return true;
	return false;
}

/* The preempted byte as the other vCPU reaches it, through its own TLB;
 * NULL if it cannot. */
static uint8_t *guest_preempted(struct model_cpu *other, struct mmu *mmu)
{
	paddr_t hpa;

	if (model_access(&other->tlb, mmu, ST_GPA + 16, TDP_ACC_WRITE, &hpa))
		return NULL;
	return pa_to_va(hpa);
}

TEST(kvm_pv_tlb_flush)
{
	static struct mmu mmu;
	static struct model_cpu target, other;
	uint8_t *preempted;
	paddr_t hpa;

	guest_mem(&mmu);
	memset(&target, 0, sizeof(target));
	memset(&other, 0, sizeof(other));
	REQUIRE((preempted = guest_preempted(&other, &mmu)) != NULL);
	/* The target ran: its TLB holds a translation. */
	REQUIRE(model_access(&target.tlb, &mmu, 2 * PAGE_SIZE, TDP_ACC_READ, &hpa) == 0);
	/* Running, it is not preempted: Linux IPIs it, nothing is deferred. */
	CHECK(!guest_defer_flush(preempted));
	/* Preempted and nobody flushed: its next entry keeps its TLB. */
	REQUIRE(kvm_steal_time_preempt(&mmu, ST_GPA) == 0);
	CHECK_EQ_U64(kvm_steal_time_record(&mmu, ST_GPA, 0, &target.sync), 0);
	model_cpu_enter(&target);
	CHECK_EQ_U64(target.flushes, 0);
	CHECK(tlb_holds_any(&target.tlb));
	model_cpu_exit(&target);
	/* Preempted again, and the other vCPU defers a flush to it. */
	REQUIRE(kvm_steal_time_preempt(&mmu, ST_GPA) == 0);
	CHECK(guest_defer_flush(preempted));
	CHECK_EQ_U64(*preempted, KVM_VCPU_PREEMPTED | KVM_VCPU_FLUSH_TLB);
	/* Its record taken: neither preempted nor flush left; the TLB goes
	 * at the entry, on the CPU it enters on. */
	CHECK_EQ_U64(kvm_steal_time_record(&mmu, ST_GPA, 0, &target.sync), 1);
	CHECK_EQ_U64(*preempted, 0);
	CHECK(tlb_holds_any(&target.tlb));
	model_cpu_enter(&target);
	CHECK_EQ_U64(target.flushes, 1);
	CHECK(!tlb_holds_any(&target.tlb));
	model_cpu_exit(&target);
	/* Taken once: the next record asks for nothing. */
	REQUIRE(model_access(&target.tlb, &mmu, 2 * PAGE_SIZE, TDP_ACC_READ, &hpa) == 0);
	CHECK_EQ_U64(kvm_steal_time_record(&mmu, ST_GPA, 0, &target.sync), 0);
	model_cpu_enter(&target);
	CHECK_EQ_U64(target.flushes, 1);
	CHECK(tlb_holds_any(&target.tlb));
	model_cpu_exit(&target);
	CHECK_EQ_U64(target.tlb.violations, 0);
	mmu_destroy(&mmu);
}

struct deferrer {
	uint8_t *preempted;
	bool stop;
	uint64_t deferred;
};

static void *defer_loop(void *arg)
{
	struct deferrer *d = arg;

	while (!__atomic_load_n(&d->stop, __ATOMIC_ACQUIRE))
		if (guest_defer_flush(d->preempted))
			d->deferred++;
	return NULL;
}

/* Another vCPU defers flushes while the target is preempted and taken up
 * again, over and over: each deferral lands wholly before or after the
 * host's exchange of the byte, so every one comes out as a flush. */
TEST(conc_kvm_pv_tlb_flush_race)
{
	static struct mmu mmu;
	static struct model_cpu other;
	struct deferrer d = { 0 };
	struct kick_sync target = { 0 };
	uint64_t flushes = 0;
	pthread_t t;

	guest_mem(&mmu);
	memset(&other, 0, sizeof(other));
	REQUIRE((d.preempted = guest_preempted(&other, &mmu)) != NULL);
	REQUIRE(pthread_create(&t, NULL, defer_loop, &d) == 0);
	for (unsigned i = 0; i < 200000 && flushes < 1000; i++) {
		REQUIRE(kvm_steal_time_preempt(&mmu, ST_GPA) == 0);
		for (unsigned k = 0; k < i % 64; k++)
			cpu_relax();
		flushes += kvm_steal_time_record(&mmu, ST_GPA, 0, &target) == 1;
		/* The entry takes the request. */
		__atomic_store_n(&target.requests, 0, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&d.stop, true, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	flushes += kvm_steal_time_record(&mmu, ST_GPA, 0, &target) == 1;
	REQUIRE(d.deferred > 0);
	CHECK_EQ_U64(flushes, d.deferred);
	mmu_destroy(&mmu);
}

#define EOI_GPA 0x2004 /* 4-byte aligned, inside the slot */

static uint8_t guest_byte(struct mmu *mmu, uint64_t gpa)
{
	uint8_t b = 0xee;

	mmu_read_guest(mmu, gpa, &b, 1);
	return b;
}

/* The interrupt taken as sprig's deliver_events takes it. */
static void inject(struct lapic *a, uint8_t vector, bool level)
{
	REQUIRE(lapic_set_irq(a, vector, level));
	REQUIRE(lapic_pending_irq(a) == vector);
	lapic_ack_irq(a, vector);
}

static bool in_service(const struct lapic *a, unsigned v)
{
	return (a->isr[v / 32] >> (v % 32)) & 1;
}

/* One run of the vCPU between kvm_pv_eoi_before_entry and _after_exit: the
 * guest's handler ends as Linux's kvm_guest_apic_eoi_write does when
 * pv_eoi (the word's bit test-and-cleared, else the EOI register), or with
 * the EOI register anyway. Returns whether sprig did the EOI. */
static bool run_once(struct kvm_pv_eoi *p, struct lapic *a, struct mmu *mmu, bool pv_eoi)
{
	uint8_t word = guest_byte(mmu, EOI_GPA);
	bool eoi_write = true, done;

	if (pv_eoi && (word & KVM_PV_EOI_ENABLED)) {
		word &= (uint8_t)~KVM_PV_EOI_ENABLED;
		CHECK(mmu_write_guest(mmu, EOI_GPA, &word, 1) == 0);
		eoi_write = false;
	}
	/* The exit: the EOI register's write, or whatever comes next. */
	done = kvm_pv_eoi_after_exit(p, mmu);
	if (done)
		lapic_eoi(a);
	if (eoi_write)
		lapic_mmio_write(a, LAPIC_REG_EOI, 4, 0, 0);
	return done;
}

TEST(kvm_pv_eoi)
{
	static struct mmu mmu;
	static struct lapic a;
	struct kvm_pv_eoi p = { .msr = EOI_GPA | KVM_MSR_ENABLED };

	guest_mem(&mmu);
	lapic_init(&a, NULL, 0, true, 2000000);
	lapic_mmio_write(&a, LAPIC_REG_SVR, 4, 0x1ff, 0);
	/* Nothing in service: nothing to signal. */
	kvm_pv_eoi_before_entry(&p, &a, &mmu);
	CHECK(!p.pending);
	CHECK_EQ_U64(guest_byte(&mmu, EOI_GPA), 0);
	CHECK(!kvm_pv_eoi_after_exit(&p, &mmu));
	/* An edge-triggered vector in service: the word says enabled, the
	 * guest clears it, and sprig does the EOI at the exit. */
	inject(&a, 0x51, false);
	kvm_pv_eoi_before_entry(&p, &a, &mmu);
	CHECK(p.pending);
	CHECK_EQ_U64(guest_byte(&mmu, EOI_GPA), KVM_PV_EOI_ENABLED);
	CHECK(run_once(&p, &a, &mmu, true));
	CHECK(!p.pending);
	CHECK(!in_service(&a, 0x51));
	/* A guest may write the EOI register anyway: the exit finds the word
	 * still enabled, clears it and leaves the EOI to the register. */
	inject(&a, 0x52, false);
	kvm_pv_eoi_before_entry(&p, &a, &mmu);
	CHECK(!run_once(&p, &a, &mmu, false));
	CHECK_EQ_U64(guest_byte(&mmu, EOI_GPA), 0);
	CHECK(!in_service(&a, 0x52));
	/* Level-triggered: its EOI is the I/O APIC's too, never by memory. */
	inject(&a, 0x53, true);
	kvm_pv_eoi_before_entry(&p, &a, &mmu);
	CHECK(!p.pending);
	CHECK_EQ_U64(guest_byte(&mmu, EOI_GPA), 0);
	lapic_eoi(&a);
	/* Another vector requested: the EOI lets it through, so it exits. */
	inject(&a, 0x54, false);
	REQUIRE(lapic_set_irq(&a, 0x41, false));
	kvm_pv_eoi_before_entry(&p, &a, &mmu);
	CHECK(!p.pending);
	lapic_eoi(&a);
	/* Nested (0x41 in service under 0x61): not offered either. */
	inject(&a, 0x41, false);
	inject(&a, 0x61, false);
	kvm_pv_eoi_before_entry(&p, &a, &mmu);
	CHECK(!p.pending);
	lapic_eoi(&a);
	/* Alone again: offered. */
	kvm_pv_eoi_before_entry(&p, &a, &mmu);
	CHECK(p.pending);
	CHECK(run_once(&p, &a, &mmu, true));
	CHECK(!in_service(&a, 0x41));
	/* Disabled by the MSR: nothing written. */
	p.msr = EOI_GPA;
	inject(&a, 0x55, false);
	kvm_pv_eoi_before_entry(&p, &a, &mmu);
	CHECK(!p.pending);
	CHECK_EQ_U64(guest_byte(&mmu, EOI_GPA), 0);
	/* A word whose memory went: never pending. */
	p.msr = (ST_PAGES * PAGE_SIZE) | KVM_MSR_ENABLED;
	kvm_pv_eoi_before_entry(&p, &a, &mmu);
	CHECK(!p.pending);
	mmu_destroy(&mmu);
}
