/* virt/kvm_pv.c: KVM_HC_SEND_IPI's argument checks and bitmap walk as KVM's
 * kvm_pv_send_ipi has them (arch/x86/kvm/lapic.c), over real APICs on a
 * bus (dev/lapic*.c); the steal-time record's protocol as KVM's
 * record_steal_time writes it, in guest memory of a real MMU, read back as
 * Linux's kvm_steal_clock reads it. */
#include "check.h"
#include "dev/lapic.h"
#include "lib/bytes.h"
#include "mm/mmu.h"
#include "svm/npt.h"
#include "tests/unit/host_mem.h"
#include "virt/kvm_pv.h"
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
	uint8_t preempted = 0, junk[KVM_STEAL_TIME_SIZE];
	uint64_t steal;

	guest_mem(&mmu);
	/* A zeroed record: version 0 -> 2, steal the delta, preempted cleared. */
	REQUIRE(kvm_steal_time_preempt(&mmu, ST_GPA) == 0);
	REQUIRE(mmu_read_guest(&mmu, ST_GPA + 16, &preempted, 1) == 0);
	CHECK_EQ_U64(preempted, KVM_VCPU_PREEMPTED);
	CHECK(kvm_steal_time_record(&mmu, ST_GPA, 1500) == 0);
	CHECK(guest_steal(&mmu, ST_GPA, &steal));
	CHECK_EQ_U64(steal, 1500);
	CHECK_EQ_U64(field32(&mmu, ST_GPA + 8), 2);
	REQUIRE(mmu_read_guest(&mmu, ST_GPA + 16, &preempted, 1) == 0);
	CHECK_EQ_U64(preempted, 0);
	/* The sum goes on; the version moves by 2 each time. */
	CHECK(kvm_steal_time_record(&mmu, ST_GPA, 500) == 0);
	CHECK(guest_steal(&mmu, ST_GPA, &steal));
	CHECK_EQ_U64(steal, 2000);
	CHECK_EQ_U64(field32(&mmu, ST_GPA + 8), 4);
	/* An odd version the guest left (junk): made even first, as KVM does. */
	memset(junk, 0, sizeof(junk));
	put32(junk + 8, 7);
	REQUIRE(mmu_write_guest(&mmu, ST_GPA, junk, sizeof(junk)) == 0);
	CHECK(kvm_steal_time_record(&mmu, ST_GPA, 3) == 0);
	CHECK_EQ_U64(field32(&mmu, ST_GPA + 8), 10);
	CHECK(guest_steal(&mmu, ST_GPA, &steal));
	CHECK_EQ_U64(steal, 3);
	/* Past guest memory: refused, nothing written. */
	CHECK(kvm_steal_time_record(&mmu, ST_PAGES * PAGE_SIZE, 1) != 0);
	CHECK(kvm_steal_time_record(&mmu, ST_PAGES * PAGE_SIZE - 32, 1) != 0);
	CHECK(kvm_steal_time_preempt(&mmu, ST_PAGES * PAGE_SIZE) != 0);
	CHECK_EQ_U64(field32(&mmu, ST_PAGES * PAGE_SIZE - 32 + 8), 0);
	mmu_destroy(&mmu);
}
