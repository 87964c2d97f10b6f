/* The virtio-pci modern transport (virtio_pci.h). */
#include "dev/virtio_pci.h"
#include "lib/bytes.h"
#include "lib/print.h"
#include "lib/string.h"

#define PCI_VENDOR_REDHAT 0x1af4
#define PCI_CAP_VENDOR 0x09
#define PCI_CAP_ID_MSIX 0x11
#define PCI_STATUS_CAP_LIST 0x10
#define PCI_COMMAND_MEMORY 0x2
#define PCI_COMMAND_INTX_DISABLE 0x400
#define MSIX_ENABLE 0x80 /* message control's high byte */
#define MSIX_MASKALL 0x40
#define MSIX_ENTRY_MASKED 1

/* virtio_pci_cap cfg_type (4.1.4) */
enum { CAP_COMMON = 1, CAP_NOTIFY, CAP_ISR, CAP_DEVICE };

/* Common configuration offsets (4.1.4.3) */
enum {
	CC_DFSELECT = 0x00, CC_DF = 0x04, CC_GFSELECT = 0x08, CC_GF = 0x0c,
	CC_MSIX = 0x10, CC_NUMQ = 0x12, CC_STATUS = 0x14, CC_CFGGEN = 0x15,
	CC_Q_SELECT = 0x16, CC_Q_SIZE = 0x18, CC_Q_MSIX = 0x1a, CC_Q_ENABLE = 0x1c,
	CC_Q_NOFF = 0x1e, CC_Q_DESC = 0x20, CC_Q_AVAIL = 0x28, CC_Q_USED = 0x30,
	CC_BYTES = 0x38,
};

static uint64_t offered(const struct virtio_pci *vp)
{
	return vp->dev->features | VIRTIO_F_VERSION_1 | VIRTIO_F_INDIRECT_DESC | VIRTIO_F_EVENT_IDX;
}

/* A vendor capability at off, pointing at [bar_off, bar_off + len) of BAR 0. */
static void vendor_cap(uint8_t *cfg, unsigned off, unsigned next, uint8_t type, uint8_t caplen,
		       uint32_t bar_off, uint32_t len)
{
	cfg[off] = PCI_CAP_VENDOR;
	cfg[off + 1] = (uint8_t)next;
	cfg[off + 2] = caplen;
	cfg[off + 3] = type;
	cfg[off + 4] = 0; /* BAR 0 */
	put32(cfg + off + 8, bar_off);
	put32(cfg + off + 12, len);
}

static void build_config(struct virtio_pci *vp, uint8_t devfn, uint32_t bar_gpa, uint8_t irq_line)
{
	struct pci_function *f = &vp->fn;
	uint8_t *c = f->cfg;
	unsigned m = VIRTIO_PCI_CAP_MSIX;

	memset(f, 0, sizeof(*f));
	f->devfn = devfn;
	put16(c + 0x00, PCI_VENDOR_REDHAT);
	put16(c + 0x02, (uint16_t)(0x1040 + vp->dev->id));
	put16(c + 0x04, PCI_COMMAND_MEMORY); /* as firmware leaves it */
	put16(c + 0x06, PCI_STATUS_CAP_LIST);
	c[0x08] = 1; /* revision 1: a modern device (4.1.2.1) */
	c[0x09] = (uint8_t)vp->dev->class;
	c[0x0a] = (uint8_t)(vp->dev->class >> 8);
	c[0x0b] = (uint8_t)(vp->dev->class >> 16);
	put32(c + 0x10, bar_gpa); /* memory, 32-bit, not prefetchable */
	put16(c + 0x2c, PCI_VENDOR_REDHAT);
	put16(c + 0x2e, 0x1100);
	c[0x34] = (uint8_t)m;
	c[0x3c] = irq_line;
	c[0x3d] = 1; /* INTA# */
	/* MSI-X: table size N-1, table and PBA in BAR 0 */
	c[m] = PCI_CAP_ID_MSIX;
	c[m + 1] = 0x50;
	put16(c + m + 2, VIRTIO_VECTORS - 1);
	put32(c + m + 4, VIRTIO_PCI_MSIX_TABLE);
	put32(c + m + 8, VIRTIO_PCI_MSIX_PBA);
	vendor_cap(c, 0x50, 0x60, CAP_COMMON, 16, VIRTIO_PCI_COMMON, CC_BYTES);
	vendor_cap(c, 0x60, 0x74, CAP_NOTIFY, 20, VIRTIO_PCI_NOTIFY,
		   VIRTIO_QUEUES_MAX * VIRTIO_PCI_NOTIFY_MULT);
	put32(c + 0x60 + 16, VIRTIO_PCI_NOTIFY_MULT);
	vendor_cap(c, 0x74, 0x84, CAP_ISR, 16, VIRTIO_PCI_ISR, 1);
	vendor_cap(c, 0x84, 0, CAP_DEVICE, 16, VIRTIO_PCI_DEVICE, vp->dev->config_bytes);
	/* writable: command (memory, bus master, INTx disable ...), BAR 0's
	 * address bits (sizing reads back ~(size - 1)), interrupt line, MSI-X
	 * enable and function mask */
	put16(f->wmask + 0x04, 0x0547);
	put32(f->wmask + 0x10, ~(VIRTIO_PCI_BAR_SIZE - 1));
	f->wmask[0x3c] = 0xff;
	f->wmask[m + 3] = MSIX_ENABLE | MSIX_MASKALL;
}

static void reset(struct virtio_pci *vp)
{
	vp->status = 0;
	vp->isr = 0;
	vp->queue_select = 0;
	vp->config_vector = VIRTIO_MSI_NO_VECTOR;
	vp->dfselect = vp->gfselect = 0;
	vp->driver_features = 0;
	vp->msix_pending = 0;
	for (unsigned q = 0; q < VIRTIO_QUEUES_MAX; q++)
		virtq_reset(&vp->vq[q], q < vp->dev->nr_queues ? vp->dev->queue_size : 0);
	if (vp->intx && vp->ops.set_intx)
		vp->ops.set_intx(vp->ops.ctx, false);
	vp->intx = false;
	if (vp->dev->reset)
		vp->dev->reset(vp);
}

void virtio_pci_init(struct virtio_pci *vp, const struct virtio_device *dev, void *dev_state,
		     uint8_t devfn, uint32_t bar_gpa, uint8_t irq_line, const struct guest_mem *mem,
		     const struct virtio_pci_ops *ops)
{
	memset(vp, 0, sizeof(*vp));
	vp->dev = dev;
	vp->dev_state = dev_state;
	vp->mem = *mem;
	vp->ops = *ops;
	build_config(vp, devfn, bar_gpa, irq_line);
	for (unsigned v = 0; v < VIRTIO_VECTORS; v++)
		vp->msix[v][3] = MSIX_ENTRY_MASKED;
	reset(vp);
}

uint32_t virtio_pci_bar(const struct virtio_pci *vp)
{
	if (!(rd16(vp->fn.cfg + 0x04) & PCI_COMMAND_MEMORY))
		return 0;
	return rd32(vp->fn.cfg + 0x10) & ~(VIRTIO_PCI_BAR_SIZE - 1);
}

/* ---- interrupts ---- */

static uint8_t msix_control(const struct virtio_pci *vp)
{
	return vp->fn.cfg[VIRTIO_PCI_CAP_MSIX + 3];
}

/* Send vector v's message, or hold it pending while masked. */
static void msix_send(struct virtio_pci *vp, unsigned v)
{
	const uint32_t *e = vp->msix[v];

	if ((msix_control(vp) & MSIX_MASKALL) || (e[3] & MSIX_ENTRY_MASKED)) {
		vp->msix_pending |= 1u << v;
		return;
	}
	vp->msix_pending &= ~(1u << v);
	/* An MSI is a write to 0xFEExxxxx (SDM 10.11.1): else it reaches no APIC. */
	if (e[1] || (e[0] >> 20) != 0xfee)
		return;
	struct apic_msg m = {
		.dest = (e[0] >> 12) & 0xff,
		.vector = (uint8_t)e[2],
		.mode = (enum lapic_delivery)((e[2] >> 8) & 7),
		.logical = e[0] & 4,
		.shorthand = LAPIC_DEST_NONE,
	};
	if (m.dest == 0xff)
		m.dest = 0xffffffffu; /* broadcast */
	vp->interrupts++;
	vp->ops.msi(vp->ops.ctx, &m);
}

static void intx_update(struct virtio_pci *vp)
{
	bool level = vp->isr && !(rd16(vp->fn.cfg + 0x04) & PCI_COMMAND_INTX_DISABLE);

	if (level == vp->intx)
		return;
	vp->intx = level;
	vp->interrupts += level;
	vp->ops.set_intx(vp->ops.ctx, level);
}

static void raise(struct virtio_pci *vp, uint16_t vector, uint8_t isr_bit)
{
	if (msix_control(vp) & MSIX_ENABLE) {
		if (vector < VIRTIO_VECTORS)
			msix_send(vp, vector);
		return;
	}
	vp->isr |= isr_bit;
	intx_update(vp);
}

void virtio_interrupt(struct virtio_pci *vp, unsigned q)
{
	struct virtq_features f = virtio_queue_features(vp);

	if (virtq_need_interrupt(&vp->vq[q], &vp->mem, &f))
		raise(vp, vp->vq[q].msix_vector, VIRTIO_ISR_QUEUE);
}

void virtio_config_changed(struct virtio_pci *vp)
{
	vp->config_generation++;
	raise(vp, vp->config_vector, VIRTIO_ISR_CONFIG);
}

void virtio_pci_config_written(struct virtio_pci *vp)
{
	for (unsigned v = 0; v < VIRTIO_VECTORS; v++)
		if (vp->msix_pending & (1u << v))
			msix_send(vp, v);
	intx_update(vp);
}

/* ---- the guest broke a rule ---- */

void virtio_device_error(struct virtio_pci *vp, const char *why)
{
	char msg[200];

	vp->bad_rings++;
	ksnprintf(msg, sizeof msg, "virtio-%s: %s; device needs reset", vp->dev->name, why);
	if (vp->ops.report)
		vp->ops.report(vp->ops.ctx, msg);
	if (vp->status & VIRTIO_STATUS_NEEDS_RESET)
		return;
	vp->status |= VIRTIO_STATUS_NEEDS_RESET;
	virtio_config_changed(vp);
}

/* ---- queues, for the device types ---- */

struct virtq_features virtio_queue_features(const struct virtio_pci *vp)
{
	return (struct virtq_features){
		.indirect = vp->driver_features & VIRTIO_F_INDIRECT_DESC,
		.event_idx = vp->driver_features & VIRTIO_F_EVENT_IDX,
	};
}

bool virtio_pop(struct virtio_pci *vp, unsigned q, struct virtq_chain *c)
{
	struct virtq_features f = virtio_queue_features(vp);
	char err[160];

	switch (virtq_pop(&vp->vq[q], &vp->mem, &f, c, err, sizeof err)) {
	case VIRTQ_CHAIN:
		return true;
	case VIRTQ_BAD:
		virtio_device_error(vp, err);
		return false;
	default:
		return false;
	}
}

void virtio_push(struct virtio_pci *vp, unsigned q, uint16_t head, uint32_t written)
{
	char err[160];

	if (!virtq_push(&vp->vq[q], &vp->mem, head, written, err, sizeof err))
		virtio_device_error(vp, err);
}

/* ---- common configuration ---- */

static struct virtq *selected(struct virtio_pci *vp)
{
	return vp->queue_select < vp->dev->nr_queues ? &vp->vq[vp->queue_select] : NULL;
}

static uint64_t common_read(struct virtio_pci *vp, uint32_t off, unsigned size)
{
	uint8_t r[CC_BYTES] = { 0 };
	struct virtq *q = selected(vp);
	uint64_t v = 0;

	put32(r + CC_DFSELECT, vp->dfselect);
	put32(r + CC_DF, vp->dfselect < 2 ? (uint32_t)(offered(vp) >> (32 * vp->dfselect)) : 0);
	put32(r + CC_GFSELECT, vp->gfselect);
	put32(r + CC_GF, vp->gfselect < 2 ? (uint32_t)(vp->driver_features >> (32 * vp->gfselect)) : 0);
	put16(r + CC_MSIX, vp->config_vector);
	put16(r + CC_NUMQ, vp->dev->nr_queues);
	r[CC_STATUS] = vp->status;
	r[CC_CFGGEN] = vp->config_generation;
	put16(r + CC_Q_SELECT, vp->queue_select);
	if (q) {
		put16(r + CC_Q_SIZE, q->size);
		put16(r + CC_Q_MSIX, q->msix_vector);
		put16(r + CC_Q_ENABLE, q->enabled);
		put16(r + CC_Q_NOFF, vp->queue_select);
		put64(r + CC_Q_DESC, q->desc);
		put64(r + CC_Q_AVAIL, q->avail);
		put64(r + CC_Q_USED, q->used);
	}
	for (unsigned i = 0; i < size && off + i < CC_BYTES; i++)
		v |= (uint64_t)r[off + i] << (8 * i);
	return v;
}

/* A vector the table has, else NO_VECTOR (4.1.5.1.2: reads back as such). */
static uint16_t vector(uint64_t val)
{
	return val < VIRTIO_VECTORS ? (uint16_t)val : VIRTIO_MSI_NO_VECTOR;
}

static void status_write(struct virtio_pci *vp, uint8_t val)
{
	uint64_t f = vp->driver_features;

	if (!val) {
		reset(vp);
		return;
	}
	/* FEATURES_OK only for a subset of what is offered, with VERSION_1 */
	if ((val & VIRTIO_STATUS_FEATURES_OK) && ((f & ~offered(vp)) || !(f & VIRTIO_F_VERSION_1)))
		val &= (uint8_t)~VIRTIO_STATUS_FEATURES_OK;
	bool ready = !(vp->status & VIRTIO_STATUS_DRIVER_OK) && (val & VIRTIO_STATUS_DRIVER_OK);
	vp->status = (uint8_t)((val & ~VIRTIO_STATUS_NEEDS_RESET) |
			       (vp->status & VIRTIO_STATUS_NEEDS_RESET));
	/* A notification before DRIVER_OK is dropped (3.1.1 forbids it), but
	 * Linux's balloon kicks its statistics buffer in before: what the
	 * enabled queues hold is taken once the driver is ready. */
	if (ready && !(vp->status & VIRTIO_STATUS_NEEDS_RESET))
		for (unsigned q = 0; q < vp->dev->nr_queues; q++)
			if (vp->vq[q].enabled)
				vp->dev->notify(vp, q);
}

static void queue_enable(struct virtio_pci *vp, struct virtq *q)
{
	char err[160];

	if (q->enabled)
		return;
	if (!virtq_layout_ok(q, &vp->mem, err, sizeof err)) {
		virtio_device_error(vp, err);
		return;
	}
	q->enabled = true;
}

/* A 64-bit queue address, written whole or as two 32-bit halves. */
static void address_write(uint64_t *a, uint32_t at, unsigned size, uint64_t val)
{
	if (size == 8 && !at)
		*a = val;
	else if (size == 4)
		*a = at ? (*a & 0xffffffffull) | val << 32 : (*a & ~0xffffffffull) | (uint32_t)val;
}

static void common_write(struct virtio_pci *vp, uint32_t off, unsigned size, uint64_t val)
{
	struct virtq *q = selected(vp);
	bool features_set = vp->status & VIRTIO_STATUS_FEATURES_OK;

	if (off >= CC_Q_DESC && off < CC_BYTES && (size == 4 || size == 8)) {
		uint64_t *a[] = { q ? &q->desc : NULL, q ? &q->avail : NULL, q ? &q->used : NULL };
		unsigned i = (off - CC_Q_DESC) / 8;

		if (q && !q->enabled)
			address_write(a[i], (off - CC_Q_DESC) % 8, size, val);
		return;
	}
	switch (off | size << 8) {
	case CC_DFSELECT | 4 << 8:
		vp->dfselect = (uint32_t)val;
		break;
	case CC_GFSELECT | 4 << 8:
		vp->gfselect = (uint32_t)val;
		break;
	case CC_GF | 4 << 8:
		/* fixed once FEATURES_OK is set (3.1.1) */
		if (vp->gfselect < 2 && !features_set) {
			unsigned sh = 32 * vp->gfselect;

			vp->driver_features = (vp->driver_features & ~(0xffffffffull << sh)) |
					      (val & 0xffffffffull) << sh;
		}
		break;
	case CC_MSIX | 2 << 8:
		vp->config_vector = vector(val);
		break;
	case CC_STATUS | 1 << 8:
		status_write(vp, (uint8_t)val);
		break;
	case CC_Q_SELECT | 2 << 8:
		vp->queue_select = (uint16_t)val;
		break;
	case CC_Q_SIZE | 2 << 8:
		if (q && !q->enabled)
			q->size = (uint16_t)val;
		break;
	case CC_Q_MSIX | 2 << 8:
		if (q)
			q->msix_vector = vector(val);
		break;
	case CC_Q_ENABLE | 2 << 8:
		if (q && val == 1)
			queue_enable(vp, q);
		break;
	}
}

/* ---- the BAR ---- */

static uint64_t msix_read(struct virtio_pci *vp, uint32_t off, unsigned size)
{
	uint64_t v = 0;

	if (off >= VIRTIO_PCI_MSIX_PBA) {
		off -= VIRTIO_PCI_MSIX_PBA;
		return off < 8 ? ((uint64_t)vp->msix_pending >> (8 * off)) : 0;
	}
	off -= VIRTIO_PCI_MSIX_TABLE;
	for (unsigned i = 0; i < size; i++) {
		unsigned b = off + i;

		if (b < sizeof(vp->msix))
			v |= (uint64_t)((vp->msix[b / 16][b % 16 / 4] >> (8 * (b % 4))) & 0xff) << (8 * i);
	}
	return v;
}

static void msix_write(struct virtio_pci *vp, uint32_t off, unsigned size, uint64_t val)
{
	off -= VIRTIO_PCI_MSIX_TABLE;
	/* dword or qword accesses to whole fields (PCI 3.0, 6.8.2) */
	if (off >= sizeof(vp->msix) || (off & 3) || (size != 4 && size != 8))
		return;
	for (unsigned i = 0; i < size / 4 && off / 16 < VIRTIO_VECTORS; i++, off += 4) {
		unsigned v = off / 16;

		vp->msix[v][off % 16 / 4] = (uint32_t)(val >> (32 * i));
		if (off % 16 == 12 && (vp->msix_pending & (1u << v)))
			msix_send(vp, v);
	}
}

uint64_t virtio_pci_read(struct virtio_pci *vp, uint32_t off, unsigned size)
{
	uint64_t v = 0;

	if (size > 8 || off >= VIRTIO_PCI_BAR_SIZE || size > VIRTIO_PCI_BAR_SIZE - off)
		return 0;
	if (off < VIRTIO_PCI_ISR)
		return common_read(vp, off, size);
	if (off == VIRTIO_PCI_ISR) {
		v = vp->isr;
		vp->isr = 0;
		intx_update(vp);
		return v;
	}
	if (off >= VIRTIO_PCI_DEVICE && off < VIRTIO_PCI_NOTIFY) {
		off -= VIRTIO_PCI_DEVICE;
		if (off < vp->dev->config_bytes && size <= vp->dev->config_bytes - off)
			vp->dev->config_read(vp, off, &v, size);
		return v;
	}
	if (off >= VIRTIO_PCI_MSIX_TABLE)
		return msix_read(vp, off, size);
	return 0;
}

void virtio_pci_write(struct virtio_pci *vp, uint32_t off, unsigned size, uint64_t val)
{
	if (size > 8 || off >= VIRTIO_PCI_BAR_SIZE || size > VIRTIO_PCI_BAR_SIZE - off)
		return;
	if (off < VIRTIO_PCI_ISR) {
		common_write(vp, off, size, val);
	} else if (off >= VIRTIO_PCI_DEVICE && off < VIRTIO_PCI_NOTIFY) {
		off -= VIRTIO_PCI_DEVICE;
		if (vp->dev->config_write && off < vp->dev->config_bytes &&
		    size <= vp->dev->config_bytes - off)
			vp->dev->config_write(vp, off, &val, size);
	} else if (off >= VIRTIO_PCI_NOTIFY && off < VIRTIO_PCI_MSIX_TABLE) {
		unsigned q = (off - VIRTIO_PCI_NOTIFY) / VIRTIO_PCI_NOTIFY_MULT;

		if (q < vp->dev->nr_queues && vp->vq[q].enabled &&
		    (vp->status & VIRTIO_STATUS_DRIVER_OK) &&
		    !(vp->status & VIRTIO_STATUS_NEEDS_RESET))
			vp->dev->notify(vp, q);
	} else if (off >= VIRTIO_PCI_MSIX_TABLE) {
		msix_write(vp, off, size, val);
	}
}
