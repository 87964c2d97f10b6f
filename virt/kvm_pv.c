/* KVM's paravirtual interface beyond the clock (kvm_pv.h). */
#include "virt/kvm_pv.h"
#include "virt/hypercall.h"
#include "dev/lapic.h"
#include "lib/bytes.h"
#include "mm/mmu.h"
#include "virt/kick.h"

/* KVM's apic_map->max_apic_id: at least 255, room for every xAPIC ID; the
 * x2APIC IDs sprig gives are below LAPIC_BUS_MAX. */
#define MAX_APIC_ID 255u
#define XAPIC_BROADCAST 0xffu

_Static_assert(LAPIC_BUS_MAX <= MAX_APIC_ID, "every APIC ID is in the map");

/* KVM's __pv_send_ipi: the set bits of one bitmap, from APIC ID min. */
static int64_t send_cluster(struct lapic_bus *bus, uint64_t bitmap, uint32_t min,
			    struct apic_msg *m)
{
	int64_t count = 0;

	if (min > MAX_APIC_ID)
		return 0;
	for (uint32_t i = 0; i < 64 && i <= MAX_APIC_ID - min; i++) {
		/* 0xff is a physical destination's xAPIC broadcast: KVM's
		 * map has no APIC there unless a guest renamed one so. */
		if (!(bitmap >> i & 1) || min + i == XAPIC_BROADCAST)
			continue;
		m->dest = min + i;
		count += lapic_bus_deliver(bus, m);
	}
	return count;
}

int64_t kvm_pv_send_ipi(struct lapic_bus *bus, uint64_t low, uint64_t high, uint32_t min,
			uint64_t icr, bool wide)
{
	struct apic_msg m = {
		.vector = icr & 0xff,
		.mode = (enum lapic_delivery)((icr >> 8) & 7),
		.level = icr & LAPIC_ICR_LEVEL,
		.shorthand = LAPIC_DEST_NONE,
	};

	if (icr & (LAPIC_ICR_LOGICAL | 3u << LAPIC_ICR_SHORTHAND_SHIFT))
		return -KVM_EINVAL;
	/* A level-triggered de-assert: KVM's __apic_accept_irq drops it
	 * (fixed, lowest priority, INIT). */
	if (m.level && !(icr & LAPIC_ICR_ASSERT) &&
	    (m.mode == LAPIC_DM_FIXED || m.mode == LAPIC_DM_LOWEST || m.mode == LAPIC_DM_INIT))
		return 0;
	return send_cluster(bus, low, min, &m) + send_cluster(bus, high, min + (wide ? 64 : 32), &m);
}

#define ST_STEAL 0
#define ST_VERSION 8
#define ST_PREEMPTED 16

int kvm_steal_time_record(struct mmu *mmu, uint64_t gpa, uint64_t delta_ns,
			  struct kick_sync *tlb)
{
	/* Steal and version, and the rest of the record only to know it is
	 * guest memory: other vCPUs change the preempted byte meanwhile,
	 * atomically, and only the exchange below touches it. */
	uint8_t rec[ST_PREEMPTED], rest[KVM_STEAL_TIME_SIZE - ST_PREEMPTED - 1], preempted = 0;
	uint32_t version, seq;
	uint64_t steal;
	bool flush;

	if (mmu_read_guest(mmu, gpa, rec, sizeof(rec)) ||
	    mmu_read_guest(mmu, gpa + ST_PREEMPTED + 1, rest, sizeof(rest)) ||
	    mmu_xchg_guest_u8(mmu, gpa + ST_PREEMPTED, &preempted))
		return -1;
	/* Before the guest runs again: it skipped the IPI for this flush. */
	flush = preempted & KVM_VCPU_FLUSH_TLB;
	if (flush)
		kick_sync_request(tlb, KICK_REQ_FLUSH_TLB, &seq);
	version = rd32(rec + ST_VERSION);
	version += (version & 1) + 1;
	steal = rd64(rec + ST_STEAL) + delta_ns;
	/* The guest retries while the version is odd or changed. */
	if (mmu_write_guest(mmu, gpa + ST_VERSION, &version, sizeof(version)) ||
	    mmu_write_guest(mmu, gpa + ST_STEAL, &steal, sizeof(steal)))
		return -1;
	version++;
	if (mmu_write_guest(mmu, gpa + ST_VERSION, &version, sizeof(version)))
		return -1;
	return flush;
}

int kvm_steal_time_preempt(struct mmu *mmu, uint64_t gpa)
{
	uint8_t preempted = KVM_VCPU_PREEMPTED;

	/* Atomic, as other vCPUs read the byte meanwhile. */
	return mmu_xchg_guest_u8(mmu, gpa + ST_PREEMPTED, &preempted);
}

static uint64_t pv_eoi_gpa(const struct kvm_pv_eoi *p)
{
	return p->msr & ~KVM_MSR_ENABLED;
}

void kvm_pv_eoi_before_entry(struct kvm_pv_eoi *p, const struct lapic *a, struct mmu *mmu)
{
	uint8_t enabled = KVM_PV_EOI_ENABLED;

	if ((p->msr & KVM_MSR_ENABLED) && lapic_eoi_is_plain(a) &&
	    !mmu_write_guest(mmu, pv_eoi_gpa(p), &enabled, 1))
		p->pending = true;
}

bool kvm_pv_eoi_after_exit(struct kvm_pv_eoi *p, struct mmu *mmu)
{
	uint8_t word, zero = 0;

	if (!p->pending)
		return false;
	p->pending = false;
	if (mmu_read_guest(mmu, pv_eoi_gpa(p), &word, 1))
		return true;
	/* Only the vCPU clears it, and it is not running: no race. */
	return !(word & KVM_PV_EOI_ENABLED) || mmu_write_guest(mmu, pv_eoi_gpa(p), &zero, 1);
}
