/* A local APIC per vCPU (Intel SDM vol. 3A ch. 10 "APIC", x2APIC in 10.12), as a
 * pure model shared by the SVM and VMX backends. It knows nothing of backends,
 * VMs or hardware: time comes in as `now`, the guest's TSC; the exit handlers
 * call in (MMIO, MSRs, injection) and the IPIs go over a lapic_bus. Also built
 * for the host (tests/unit/test_lapic.c).
 *
 * Choices where the SDM leaves one (details at each function in lapic*.c):
 *   - version 0x00050014: six LVTs (timer, thermal, perf, LINT0, LINT1, error),
 *     no LVT CMCI (0x2F0 / MSR 0x82f are reserved), no EOI-broadcast suppression
 *     (SVR bit 12 reserved); TSC-deadline timer mode supported.
 *   - IA32_APIC_BASE.BSP is read-only: writes of either value are ignored.
 *   - Leaving the enabled state (EN=0) resets every register to its power-on
 *     value; xAPIC -> x2APIC keeps the state, with the x2APIC ID and derived LDR.
 *   - MMIO reads of any width and alignment return the bytes they cover (the
 *     register in the first 4 bytes of each 16-byte slot, zeros after it); a
 *     write of any width merges its bytes into the register's current value and
 *     writes that as one 32-bit write (bytes in the padding are dropped).
 *   - Reserved offsets: reads 0, writes dropped, ESR "illegal register address".
 *   - APR (0x90) reads the arbitration priority computed from TPR, ISR and IRR;
 *     lowest-priority IPIs go to the matching APIC with the lowest APR, ties to
 *     the lowest APIC ID (no focus processor, no rotation).
 *   - SMI IPIs and ExtINT are not modelled: ignored.
 *   - A sent fixed/lowest-priority IPI with a vector below 16 sets the sender's
 *     ESR "send illegal vector" and is dropped.
 *   - timer_fires counts timer interrupts delivered (not masked expiries).
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "virt/state_record.h"

#define LAPIC_DEFAULT_BASE 0xfee00000ull
#define LAPIC_BUS_HZ 1000000000ull /* the APIC timer's input clock (before the divider), as KVM's: 1 GHz */
#define LAPIC_BUS_MAX 128          /* APICs one VM can have: xAPIC IDs, below broadcast 0xff */

/* IA32_APIC_BASE (MSR 0x1b) bits */
#define LAPIC_BASE_BSP (1ull << 8)
#define LAPIC_BASE_EXTD (1ull << 10) /* x2APIC mode */
#define LAPIC_BASE_EN (1ull << 11)

#define LAPIC_VERSION 0x00050014u /* max LVT entry 5 (six LVTs), version 0x14 */
#define LAPIC_X2APIC_MSR_FIRST 0x800u
#define LAPIC_X2APIC_MSR_LAST 0x8ffu

/* xAPIC register offsets (x2APIC MSR = 0x800 + offset / 16) */
enum {
	LAPIC_REG_ID = 0x20,
	LAPIC_REG_VERSION = 0x30,
	LAPIC_REG_TPR = 0x80,
	LAPIC_REG_APR = 0x90,
	LAPIC_REG_PPR = 0xa0,
	LAPIC_REG_EOI = 0xb0,
	LAPIC_REG_RRD = 0xc0,
	LAPIC_REG_LDR = 0xd0,
	LAPIC_REG_DFR = 0xe0,
	LAPIC_REG_SVR = 0xf0,
	LAPIC_REG_ISR = 0x100, /* 8 registers, 16 bytes apart */
	LAPIC_REG_TMR = 0x180,
	LAPIC_REG_IRR = 0x200,
	LAPIC_REG_ESR = 0x280,
	LAPIC_REG_ICR_LO = 0x300,
	LAPIC_REG_ICR_HI = 0x310,
	LAPIC_REG_LVT_TIMER = 0x320,
	LAPIC_REG_LVT_THERMAL = 0x330,
	LAPIC_REG_LVT_PERF = 0x340,
	LAPIC_REG_LVT_LINT0 = 0x350,
	LAPIC_REG_LVT_LINT1 = 0x360,
	LAPIC_REG_LVT_ERROR = 0x370,
	LAPIC_REG_TIMER_INITIAL = 0x380,
	LAPIC_REG_TIMER_CURRENT = 0x390,
	LAPIC_REG_TIMER_DIVIDE = 0x3e0,
	LAPIC_REG_SELF_IPI = 0x3f0, /* x2APIC only */
};

/* LVT indexes (lapic.lvt[]), in register order from 0x320 */
enum { LAPIC_LVT_TIMER, LAPIC_LVT_THERMAL, LAPIC_LVT_PERF, LAPIC_LVT_LINT0, LAPIC_LVT_LINT1,
       LAPIC_LVT_ERROR, LAPIC_LVT_COUNT };

#define LAPIC_LVT_MASKED (1u << 16)
#define LAPIC_LVT_LEVEL (1u << 15)     /* trigger mode: level */
#define LAPIC_LVT_REMOTE_IRR (1u << 14)
#define LAPIC_TIMER_MODE_SHIFT 17
enum { LAPIC_TIMER_ONESHOT, LAPIC_TIMER_PERIODIC, LAPIC_TIMER_TSC_DEADLINE };

#define LAPIC_SVR_ENABLE (1u << 8)

/* ESR bits */
#define LAPIC_ESR_SEND_ILLEGAL_VECTOR (1u << 5)
#define LAPIC_ESR_RECV_ILLEGAL_VECTOR (1u << 6)
#define LAPIC_ESR_ILLEGAL_REGISTER (1u << 7)

/* Delivery modes (ICR and LVT bits 10:8) */
enum lapic_delivery {
	LAPIC_DM_FIXED = 0,
	LAPIC_DM_LOWEST = 1,
	LAPIC_DM_SMI = 2,
	LAPIC_DM_NMI = 4,
	LAPIC_DM_INIT = 5,
	LAPIC_DM_SIPI = 6,
	LAPIC_DM_EXTINT = 7,
};

/* ICR fields */
#define LAPIC_ICR_LOGICAL (1u << 11)
#define LAPIC_ICR_ASSERT (1u << 14)
#define LAPIC_ICR_LEVEL (1u << 15)
#define LAPIC_ICR_SHORTHAND_SHIFT 18
enum { LAPIC_DEST_NONE, LAPIC_DEST_SELF, LAPIC_DEST_ALL, LAPIC_DEST_OTHERS };

struct lapic_bus; /* the APICs of one VM: IPIs are routed over it */

struct lapic {
	uint64_t apic_base;     /* IA32_APIC_BASE */
	uint32_t initial_id;    /* the ID hardware assigned (the x2APIC ID) */
	uint32_t id;            /* ID register as read: xAPIC bits 31:24, x2APIC 32 bits */
	uint32_t tpr, ldr, dfr, svr;
	uint32_t isr[8], tmr[8], irr[8]; /* vector v: word v / 32, bit v % 32 */
	uint32_t esr;                    /* readable value, latched by an ESR write */
	uint32_t esr_pending;            /* errors seen since the last latch */
	uint32_t icr_lo, icr_hi;         /* x2APIC: icr_hi is the 32-bit destination */
	uint32_t lvt[LAPIC_LVT_COUNT];
	uint32_t timer_initial, timer_divide; /* initial count and divide configuration */

	/* One-shot and periodic timer: counting started at guest TSC timer_base
	 * from timer_first; each later period counts from timer_initial. Expiry k
	 * (from 0) is at timer_first + k * timer_initial counts after timer_base,
	 * so periods never accumulate rounding. */
	bool timer_armed;
	uint32_t timer_first;
	uint64_t timer_base;
	uint64_t timer_expiries; /* expiries since timer_base */
	uint64_t tsc_deadline;   /* TSC-deadline mode: armed deadline, 0 = disarmed */

	struct lapic_bus *bus; /* set by lapic_init; may be NULL (then only self-delivery works) */
	uint64_t tsc_khz;      /* guest TSC rate: converts bus ticks <-> TSC */
	uint8_t nmi_pending;   /* NMIs sent to this CPU and not yet injected: 0-2 */
	bool init_pending;     /* taken by lapic_accept_start before the CPU runs */
	uint8_t sipi_vector;
	bool sipi_pending;
	uint64_t timer_fires; /* timer interrupts delivered, for stats */
	uint64_t ipis_sent;   /* IPIs its ICR sent (not self-IPIs), for stats */
	/* Messages accepted (fixed, NMI, INIT, SIPI): another CPU that sent
	 * some knows by it whether this APIC's CPU must be woken. */
	uint64_t arrivals;
};

struct lapic_bus {
	struct lapic *apic[LAPIC_BUS_MAX];
	unsigned count;
	/* Optional (NULL: none): called when an APIC on this bus EOIs a vector
	 * whose TMR bit was set, i.e. a level-triggered interrupt. This is the EOI
	 * message the local APICs broadcast to the I/O APICs (SDM 10.8.5), which
	 * clears their Remote IRR (dev/ioapic.h: ioapic_eoi). */
	void (*level_eoi)(void *ctx, uint8_t vector);
	void *level_eoi_ctx;
};

/* Power-on state per SDM 10.4.7.1: IA32_APIC_BASE = 0xfee00000 | EN | (BSP),
 * xAPIC mode, ID apic_id << 24, SVR 0xff (software-disabled), LVTs masked, DFR
 * all ones, everything else 0. Joins `bus` (when not NULL). */
void lapic_init(struct lapic *a, struct lapic_bus *bus, uint32_t apic_id, bool bsp, uint64_t tsc_khz);
/* An INIT signal: the power-on register state, keeping IA32_APIC_BASE (and so
 * the mode) and the ID (SDM 10.4.7.3, 10.12.5.1). */
void lapic_init_signal(struct lapic *a);

/* What the CPU of this APIC does with the INIT and start-up IPIs it received,
 * taken before it runs (SDM vol. 3A 8.4, 10.6.1; in the order of KVM's
 * kvm_apic_accept_events): an INIT resets the APIC (lapic_init_signal) and
 * puts an application processor in wait-for-SIPI (*wait_sipi), the BSP
 * straight back to running; a SIPI starts a CPU that waits for one with its
 * vector (*vector) and is dropped by any other. INIT before SIPI when both
 * arrived: the SIPI then starts the CPU the INIT just reset. */
#define LAPIC_ACCEPT_INIT (1u << 0) /* load the INIT state */
#define LAPIC_ACCEPT_SIPI (1u << 1) /* start at vector << 12 */
unsigned lapic_accept_start(struct lapic *a, bool *wait_sipi, uint8_t *vector);

/* IA32_APIC_BASE (MSR 0x1b) */
uint64_t lapic_base_msr(const struct lapic *a);
/* false -> the caller raises #GP: reserved bits (0-7, 9, phys_bits and up),
 * EXTD without EN, disabled -> x2APIC, x2APIC -> xAPIC. */
bool lapic_set_base_msr(struct lapic *a, uint64_t val, unsigned phys_bits);
bool lapic_hw_enabled(const struct lapic *a); /* IA32_APIC_BASE.EN */
bool lapic_sw_enabled(const struct lapic *a); /* and SVR bit 8 */
bool lapic_x2apic_mode(const struct lapic *a);
/* The xAPIC MMIO page's guest-physical base, when the APIC is enabled in xAPIC mode: true and *base. */
bool lapic_mmio_page(const struct lapic *a, uint64_t *base);
/* The APIC ID as destinations match it: 8 bits in xAPIC mode, 32 in x2APIC. */
uint32_t lapic_id(const struct lapic *a);

/* TPR for CR8 (CR8 = TPR[7:4]) */
uint32_t lapic_tpr(const struct lapic *a);
void lapic_set_tpr(struct lapic *a, uint32_t tpr);
uint32_t lapic_ppr(const struct lapic *a);

/* xAPIC MMIO: `offset` within the 4 KiB page; `size` 1, 2, 4 or 8; any alignment
 * (see the choices above). Does nothing (reads 0) unless enabled in xAPIC mode. */
uint64_t lapic_mmio_read(struct lapic *a, unsigned offset, unsigned size, uint64_t now);
void lapic_mmio_write(struct lapic *a, unsigned offset, unsigned size, uint64_t val, uint64_t now);

/* x2APIC MSRs 0x800-0x8ff, only in x2APIC mode; false -> #GP (absent or
 * reserved register, read of write-only, write of read-only, reserved bits set
 * in a write, nonzero EOI or ESR write). */
bool lapic_msr_read(struct lapic *a, uint32_t msr, uint64_t *val, uint64_t now);
bool lapic_msr_write(struct lapic *a, uint32_t msr, uint64_t val, uint64_t now);

/* IA32_TSC_DEADLINE (MSR 0x6e0): reads the armed deadline (0 when disarmed or
 * not in TSC-deadline mode); writes are ignored unless the timer LVT is in
 * TSC-deadline mode; 0 disarms; a deadline already passed fires at once. */
uint64_t lapic_tsc_deadline_read(const struct lapic *a);
void lapic_tsc_deadline_write(struct lapic *a, uint64_t val, uint64_t now);

/* A fixed interrupt arrives: IRR, and TMR set for level (cleared for edge).
 * Vectors 0-15: ESR "receive illegal vector", dropped. Dropped too while the
 * APIC is disabled (hardware or software). True if accepted. */
bool lapic_set_irq(struct lapic *a, uint8_t vector, bool level);
/* The vector the CPU would take now: the highest IRR vector if its priority
 * class is above PPR's, else -1 (also -1 when hardware-disabled). IRR bits held
 * while software-disabled are still offered (SDM 10.4.7.2). */
int lapic_pending_irq(const struct lapic *a);
/* The CPU took that vector (the hypervisor injected it): IRR -> ISR. */
void lapic_ack_irq(struct lapic *a, uint8_t vector);
/* An EOI (10.8.5), as the guest's write of the EOI register does it. */
void lapic_eoi(struct lapic *a);
/* Would an EOI now only clear one ISR bit? One vector in service, edge-
 * triggered (no EOI message to the I/O APIC, no LINT Remote IRR), and none
 * requested (nothing for the EOI to let through): then the guest may signal
 * it through memory instead, KVM's PV EOI (virt/pv_eoi.h). */
bool lapic_eoi_is_plain(const struct lapic *a);

/* Is an NMI waiting for the CPU, which blocks NMIs now or not (`masked`:
 * one in its handler, or one on its way in)? Up to two wait, as in KVM; one
 * while the CPU blocks NMIs (lapic_ipi.c). */
bool lapic_nmi_pending(struct lapic *a, bool masked);
/* The CPU took one of them (the hypervisor injected it). */
void lapic_ack_nmi(struct lapic *a);

/* The timer (SDM 10.5.4): fire what expired by `now` (IRR unless the LVT is
 * masked); periodic re-arms from the previous expiry, once however many
 * periods were missed; one-shot and deadline disarm. */
void lapic_timer_update(struct lapic *a, uint64_t now);
/* Guest TSC of the next expiry, 0 when the timer is not armed. */
uint64_t lapic_timer_next(const struct lapic *a);

/* One interrupt message applied to one APIC: fixed/lowest -> lapic_set_irq,
 * NMI -> nmi_pending (lapic_nmi_pending), INIT -> init_pending, SIPI -> sipi_pending + vector;
 * SMI and ExtINT are ignored. `level`: level-triggered (TMR). True if the
 * APIC accepted it. */
/* Lowest-priority arbitration (for IPIs and the I/O APIC alike): x wins over
 * y with a lower arbitration priority, ties to the lower APIC ID. */
bool lapic_lower_priority(const struct lapic *x, const struct lapic *y);
bool lapic_deliver(struct lapic *to, enum lapic_delivery mode, uint8_t vector, bool level);
/* Does APIC `a` accept destination `dest` (physical or logical, per its mode
 * and DFR)? 0xffffffff is broadcast in both modes, and in xAPIC mode 0xff too.
 * Never matches a hardware-disabled APIC. For the I/O APIC later. */
bool lapic_match_dest(const struct lapic *a, uint32_t dest, bool logical);

/* An interrupt message (SDM 10.6.1, 10.11 for MSIs): what the I/O APIC, an
 * IPI or an MSI sends to the local APICs. */
struct apic_msg {
	uint32_t dest; /* per `logical` and each APIC's mode; 0xffffffff: broadcast */
	uint8_t vector;
	enum lapic_delivery mode;
	bool logical;
	bool level;         /* level-triggered (fixed and lowest priority only) */
	unsigned shorthand; /* an IPI's LAPIC_DEST_*; LAPIC_DEST_NONE for others */
	struct lapic *from; /* an IPI's sender (the shorthands' "self"), else NULL */
};
/* Deliver m to every APIC on bus it names, or for lowest priority to the
 * matching, software-enabled one that wins arbitration (lapic_lower_priority).
 * bus NULL: only m->from can receive it (an APIC on no bus). Returns how
 * many APICs accepted it. */
unsigned lapic_bus_deliver(struct lapic_bus *bus, const struct apic_msg *m);

/* LINT0/LINT1 asserted (pin 0 or 1): delivered per its LVT (fixed, NMI, INIT;
 * ExtINT and SMI unsupported, ignored). Hardware-disabled: LINT1 is the NMI pin. */
void lapic_lint(struct lapic *a, unsigned pin);


/* ---- saved state (snapshots and clones: virt/vcpu_state.h) ---- */

/* The state record (REC_LAPIC, one per vCPU; dev/lapic_state.c): the APIC's
 * whole architectural state and its timer, in guest-TSC times. Its check:
 * would a real APIC (this model) hold it, on the loading vCPU (instance: its
 * index, which is its APIC's initial ID; the BSP flag on vCPU 0's alone) of
 * the loading CPU's MAXPHYADDR? False with a reason naming the field. */
extern const struct record_type lapic_record;
