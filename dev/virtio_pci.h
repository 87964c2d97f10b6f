/* virtio over PCI, the modern (virtio 1.x) transport (OASIS virtio v1.2,
 * 4.1), as a pure model: one PCI function whose configuration space lists
 * the vendor capabilities, and one 32-bit memory BAR that holds them and
 * MSI-X. Also built for the host (tests/unit/test_virtio_pci.c). A device
 * type (virtio_blk.c, ...) fills in struct virtio_device; the integrator
 * routes the BAR's accesses here and sends the interrupts it is asked for.
 *
 * BAR 0 (VIRTIO_PCI_BAR_SIZE, 32-bit, non-prefetchable), QEMU's layout:
 *   0x0000 common configuration (4.1.4.3)
 *   0x1000 ISR status: a read returns it and clears it (4.1.4.5)
 *   0x2000 device-specific configuration
 *   0x3000 notifications: queue q at q * VIRTIO_PCI_NOTIFY_MULT
 *   0x4000 MSI-X table, one entry per queue and one for configuration changes
 *   0x4800 MSI-X pending bits
 * Capabilities: MSI-X at 0x40, then common, notify, ISR and device at 0x50
 * on. The VIRTIO_PCI_CAP_PCI_CFG window is not offered (Linux does not use
 * it; the spec asks for it).
 *
 * Features offered: VIRTIO_F_VERSION_1, INDIRECT_DESC, EVENT_IDX and the
 * device's own. FEATURES_OK sticks only when the driver's features are a
 * subset of those and include VERSION_1 (2.2.2). Writing 0 to device_status
 * resets the device, its queues and vectors. A queue is enabled only with a
 * layout virtq_layout_ok accepts. Notifications before DRIVER_OK are
 * dropped (3.1.1); when the driver sets it, the device takes what the
 * enabled queues already hold. A bad layout or a bad ring sets
 * DEVICE_NEEDS_RESET, counts in bad_rings, reports through ops.report and
 * raises a configuration change interrupt (2.1.2).
 *
 * Interrupts: with MSI-X enabled, a queue's or the configuration's vector
 * (VIRTIO_MSI_NO_VECTOR: none) sends its table entry's message, or sets its
 * pending bit while the entry or the function is masked (sent on unmask).
 * Without MSI-X, the ISR bits and INTx: the line is high while the ISR is
 * non-zero and the command register does not disable INTx. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "dev/pci.h"
#include "dev/lapic.h"
#include "dev/virtqueue.h"

#define VIRTIO_PCI_BAR_SIZE 0x8000u
#define VIRTIO_PCI_COMMON 0x0000u
#define VIRTIO_PCI_ISR 0x1000u
#define VIRTIO_PCI_DEVICE 0x2000u
#define VIRTIO_PCI_NOTIFY 0x3000u
#define VIRTIO_PCI_NOTIFY_MULT 4u
#define VIRTIO_PCI_MSIX_TABLE 0x4000u
#define VIRTIO_PCI_MSIX_PBA 0x4800u
#define VIRTIO_PCI_CAP_MSIX 0x40u

#define VIRTIO_QUEUES_MAX 4
#define VIRTIO_VECTORS (VIRTIO_QUEUES_MAX + 1)
#define VIRTIO_MSI_NO_VECTOR 0xffff

/* Device status (2.1) */
#define VIRTIO_STATUS_ACKNOWLEDGE 1
#define VIRTIO_STATUS_DRIVER 2
#define VIRTIO_STATUS_DRIVER_OK 4
#define VIRTIO_STATUS_FEATURES_OK 8
#define VIRTIO_STATUS_NEEDS_RESET 0x40
#define VIRTIO_STATUS_FAILED 0x80

/* Feature bits (6) */
#define VIRTIO_F_INDIRECT_DESC (1ull << 28)
#define VIRTIO_F_EVENT_IDX (1ull << 29)
#define VIRTIO_F_VERSION_1 (1ull << 32)

#define VIRTIO_ISR_QUEUE 1
#define VIRTIO_ISR_CONFIG 2

struct virtio_pci;

/* A device type: its identity, its queues and its configuration space. */
struct virtio_device {
	const char *name;
	uint16_t id;        /* virtio device ID (5): PCI device 0x1040 + id */
	uint32_t class;     /* PCI class code */
	uint16_t nr_queues; /* at most VIRTIO_QUEUES_MAX */
	uint16_t queue_size;
	uint64_t features;  /* device-specific bits offered */
	uint32_t config_bytes;
	/* The device configuration's bytes [off, off + len), inside config_bytes. */
	void (*config_read)(struct virtio_pci *vp, unsigned off, void *buf, unsigned len);
	void (*config_write)(struct virtio_pci *vp, unsigned off, const void *buf, unsigned len);
	/* The driver notified queue q (enabled, DRIVER_OK): take its chains. */
	void (*notify)(struct virtio_pci *vp, unsigned q);
	/* The device state besides the transport's goes back to reset. */
	void (*reset)(struct virtio_pci *vp);
};

/* What the transport asks of its integrator. */
struct virtio_pci_ops {
	void (*msi)(void *ctx, const struct apic_msg *m);
	void (*set_intx)(void *ctx, bool level);
	void (*report)(void *ctx, const char *what); /* a guest's bad ring or layout */
	void *ctx;
};

struct virtio_pci {
	struct pci_function fn; /* configuration space */
	uint8_t status;
	uint8_t isr;
	uint8_t config_generation;
	bool intx;              /* the INTx line as last set */
	uint16_t queue_select;
	uint16_t config_vector;
	uint32_t dfselect, gfselect;
	uint64_t driver_features;
	struct virtq vq[VIRTIO_QUEUES_MAX];
	uint32_t msix[VIRTIO_VECTORS][4]; /* address low, high, data, vector control */
	uint32_t msix_pending;  /* a bit per vector */
	uint64_t bad_rings;     /* bad layouts and rings the guest gave */
	uint64_t interrupts;    /* messages sent and INTx raised */
	/* Not device state: fixed when the device is made. */
	const struct virtio_device *dev;
	void *dev_state;
	struct guest_mem mem;
	struct virtio_pci_ops ops;
};

/* A device at bus 0 devfn with its BAR at bar_gpa (as firmware leaves it:
 * memory decoding on), its INTx pin A on ISA IRQ irq_line; mem is the
 * guest memory its queues may use. Then reset. */
void virtio_pci_init(struct virtio_pci *vp, const struct virtio_device *dev, void *dev_state,
		     uint8_t devfn, uint32_t bar_gpa, uint8_t irq_line, const struct guest_mem *mem,
		     const struct virtio_pci_ops *ops);
/* The BAR's base as the guest last programmed it, or 0 while memory
 * decoding is off (the command register). */
uint32_t virtio_pci_bar(const struct virtio_pci *vp);
/* An access of size 1, 2, 4 or 8 at offset off of the BAR (little-endian);
 * reads of nothing are 0, writes to nothing are dropped. */
uint64_t virtio_pci_read(struct virtio_pci *vp, uint32_t off, unsigned size);
void virtio_pci_write(struct virtio_pci *vp, uint32_t off, unsigned size, uint64_t val);
/* The configuration space changed (a config write): MSI-X unmasking. */
void virtio_pci_config_written(struct virtio_pci *vp);

/* For the device types. */
/* The negotiated features (as the rings read them). */
struct virtq_features virtio_queue_features(const struct virtio_pci *vp);
/* Take queue q's next chain: true with *c; false when empty or the ring is
 * bad (then the device needs a reset, see above). */
bool virtio_pop(struct virtio_pci *vp, unsigned q, struct virtq_chain *c);
/* Hand a chain back, then (virtio_interrupt) the driver learns of it. */
void virtio_push(struct virtio_pci *vp, unsigned q, uint16_t head, uint32_t written);
void virtio_interrupt(struct virtio_pci *vp, unsigned q);
/* The device met something no driver may send: it needs a reset. */
void virtio_device_error(struct virtio_pci *vp, const char *why);
/* The device configuration changed. */
void virtio_config_changed(struct virtio_pci *vp);
