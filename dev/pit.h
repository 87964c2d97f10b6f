/* The 8254 programmable interval timer (ports 0x40-0x43) and the port 0x61
 * bits it shares with the speaker, as a pure model: it knows nothing of VMs or
 * backends, ports are function calls, and time comes in as `now`, the guest's
 * TSC, whose rate (tsc_khz) is given at init. Channel 0's OUT is reported as
 * rising edges, turned into interrupts (pit_irq0_raise) for the integrator
 * to route to ISA IRQ 0.
 * Sources: the Intel 8254 datasheet (231164), with QEMU's hw/timer/i8254.c,
 * i8254_common.c and hw/audio/pcspk.c for what a PC around it does.
 * Also built for the host (tests/unit/test_pit.c).
 *
 * Time: PIT tick d of a counting period is floor((now - t0) * PIT_HZ /
 * (tsc_khz * 1000)) from the TSC t0 at which the count was loaded, in 128-bit
 * arithmetic; each OUT edge is computed from t0, never from the previous edge,
 * so periodic modes never drift from the TSC.
 *
 * Choices where the datasheet leaves one or a PC differs:
 *   - Power-on state (as QEMU's reset): every channel in mode 3, lo/hi access,
 *     binary, count 0 (65536) loaded at TSC 0; channels 0 and 1 count from TSC
 *     0 (so OUT0 is an 18.2 Hz square wave until the guest reprograms it),
 *     channel 2 waits for its gate (port 0x61 bit 0, 0 at power-on). A VM
 *     that boots a kernel then gets channel 0 as the firmware leaves it
 *     (dev/firmware.h).
 *   - A count is loaded at the TSC of the write that completes it (the
 *     datasheet's "on the next CLK pulse" is not modelled: no extra tick).
 *   - Modes 2 and 3: a new count written while counting restarts the period at
 *     once (as QEMU), not at the end of the current period.
 *   - Mode 0: writing the first byte of a lo/hi count stops counting and sets
 *     OUT low (datasheet); the counter holds its value until the second byte.
 *   - Mode 3 reads count - (2d mod count) (as QEMU); OUT is high for the first
 *     ceil(count / 2) ticks of each period. Counts of 1 in modes 2 and 3 (which
 *     the datasheet forbids) keep OUT high and give no edges.
 *   - Modes 1 and 5 start only on a rising gate edge: channels 0 and 1, whose
 *     gates are tied high, never start in them (the counter reads the count).
 *     A count written in these modes ends a pulse in progress and waits for
 *     the next trigger (the datasheet lets the pulse finish).
 *   - BCD: counted in BCD (modulus 10000, count 0 = 10000); reads give BCD.
 *   - Control word: resets the channel's flip-flops and latches, OUT goes to
 *     the mode's initial level (low for mode 0, high otherwise), counting stops
 *     until a count is written. Status null-count (bit 6) is 1 from a control
 *     word or count write until the count is loaded.
 *   - A latched count or status is held until read; a second latch command
 *     before the read is ignored. A status latch is read before a count latch.
 *   - Port 0x43 reads 0 (write-only). Port 0x61 reads bit 0 gate 2, bit 1
 *     speaker data, bit 4 a refresh bit that toggles on every read (as QEMU),
 *     bit 5 OUT2; other bits 0. Writes keep bits 0 and 1 only.
 *   - OUT0 rising edges are also counted when a control word or count write
 *     itself moves OUT0 from low to high.
 *
 * Channel 0's interrupt in modes 2 and 3 is reinjected, as KVM's in-kernel
 * PIT does by default (arch/x86/kvm/i8254.c, reinject mode): every period
 * owes one interrupt, and the next is raised only once the guest has
 * acknowledged the one before (pit_irq0_raise), so a guest that ran late (its
 * CPU starved) still gets one interrupt per period, one at a time, instead of
 * several periods' edges merged into one request. The periods owed (the
 * backlog) are dropped when channel 0 is reprogrammed (a control word or a
 * count, as KVM's create_pit_timer; the edges of the old programming not yet
 * collected then give one interrupt), while IRQ 0 reaches no CPU (KVM drops
 * them when the guest unmasks IRQ 0) and when the VM resumes
 * (pit_irq0_resumed). KVM does not bound its count;
 * here a guest that never acknowledges is owed at most one second of periods
 * (PIT_HZ / count), so the backlog cannot grow without end nor replay more
 * than a second of ticks once the guest takes them. Other modes raise IRQ 0
 * once for the edges collected together.
 */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include "virt/state_record.h"

#define PIT_HZ 1193182u

#define PIT_PORT_CH0 0x40
#define PIT_PORT_CMD 0x43
#define PIT_PORT_61 0x61

/* Port 0x61 bits */
#define PIT_61_GATE2 0x01
#define PIT_61_SPEAKER 0x02
#define PIT_61_REFRESH 0x10
#define PIT_61_OUT2 0x20

/* Access modes (control word bits 5:4); also the read/write flip-flop states */
enum { PIT_RW_LATCH = 0, PIT_RW_LO = 1, PIT_RW_HI = 2, PIT_RW_LOHI = 3, PIT_RW_LOHI_2ND = 4 };

struct pit_channel {
	uint8_t mode;      /* 0-5 */
	uint8_t rw_mode;   /* PIT_RW_LO, _HI, _LOHI */
	bool bcd;
	uint8_t read_state;  /* rw_mode, or PIT_RW_LOHI_2ND between the bytes */
	uint8_t write_state; /* same */
	uint8_t write_lo;    /* the first byte of a lo/hi count */
	uint32_t count;      /* the loaded count, 1..65536 (1..10000 in BCD), binary */

	/* Counting: tick d = ticks(now - t0) - d_skip (mod 2^64) while running,
	 * else d = frozen_d. `loaded`: a count was written since the control
	 * word (otherwise the counter reads `held` and OUT is the mode's initial
	 * level). `waiting`: modes 1/5 loaded but not yet triggered by the gate.
	 * Status null count = !loaded || waiting. */
	bool loaded, running, waiting;
	uint64_t t0, d_skip, frozen_d;
	uint16_t held;

	bool gate;
	uint8_t latch_state; /* count latch: 0 none, else PIT_RW_LO/_HI/_LOHI/_LOHI_2ND still to read */
	uint16_t latched;
	bool status_latched;
	uint8_t status;

	/* OUT rising edges: edges_done of this counting period were accounted
	 * for, edges_pending are counted and not yet reported. */
	uint64_t edges_done;
	uint64_t edges_pending;
};

struct pit {
	struct pit_channel ch[3];
	uint64_t tsc_khz;
	bool speaker;      /* port 0x61 bit 1 */
	uint8_t refresh;   /* port 0x61 bit 4, toggled on each read */
	/* Reinjection (channel 0 in mode 2 or 3): periods whose interrupt is
	 * owed and not yet raised, and one raised and not yet acknowledged.
	 * irq0_masked: IRQ 0 reached no CPU at the last pit_irq0_raise. */
	uint32_t irq0_backlog;
	bool irq0_in_flight;
	bool irq0_masked;
};

void pit_init(struct pit *p, uint64_t tsc_khz);
uint8_t pit_port_read(struct pit *p, uint16_t port, uint64_t now);   /* 0x40-0x43, 0x61; other ports read 0xff */
void pit_port_write(struct pit *p, uint16_t port, uint8_t val, uint64_t now);
/* How many rising edges of OUT0 happened since the last call, up to now
 * (pit_irq0_raise collects them; the edges of channel 0's old programming
 * not yet collected when it is reprogrammed count as one). */
unsigned pit_irq0_edges(struct pit *p, uint64_t now);
/* What the integrator sees of IRQ 0 before a guest entry. */
enum pit_irq0_state {
	PIT_IRQ0_MASKED, /* it reaches no CPU: masked wherever it goes */
	PIT_IRQ0_BUSY,   /* the interrupt last raised is still requested or in service */
	PIT_IRQ0_IDLE,   /* neither: the guest acknowledged it (its EOI), or none came */
};
/* Channel 0's interrupt: whether to raise IRQ 0 now (the integrator raises
 * and lowers the line once), given IRQ 0's state; collects the edges up to
 * now. Reinjecting, IDLE is the acknowledgement (KVM's ack notifier) that
 * lets the next period owed be raised; MASKED drops the periods owed, and
 * those that pass until the first look that is not MASKED give one. */
bool pit_irq0_raise(struct pit *p, enum pit_irq0_state irq0, uint64_t now);
/* The VM runs again after a time in which it did not (paused, or saved in a
 * snapshot and restored): nothing is owed or in flight, and the edges of
 * that time give one interrupt. As QEMU's KVM PIT, which loads KVM's PIT
 * again when the VM resumes (kvm_pit_vm_state_change: KVM_SET_PIT2, whose
 * count load resets the reinjection), its clock moved past the stop. */
void pit_irq0_resumed(struct pit *p, uint64_t now);
/* Guest TSC at which pit_irq0_raise will next raise IRQ 0, 0 when none is
 * due or it waits for an acknowledgement (so sprig can arm its host timer). An edge or period owed and not yet raised is still "next":
 * the result may be <= now, then the caller should collect at once. */
uint64_t pit_next_irq0(const struct pit *p, uint64_t now);
/* OUT of channel `ch` (0-2) at now, for tests and debugging. */
bool pit_out(const struct pit *p, unsigned ch, uint64_t now);
/* The PIT's state record (REC_PIT), with gate 2 and port 0x61. */
extern const struct record_type pit_record;
