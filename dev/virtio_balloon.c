/* virtio-balloon (virtio_balloon.h). */
#include "dev/virtio_balloon.h"
#include "lib/bytes.h"
#include "lib/print.h"
#include "lib/string.h"

#define CONFIG_BYTES 8 /* num_pages, actual */
#define PAGE_BYTES (1ull << VIRTIO_BALLOON_PFN_SHIFT)
#define PFNS_AT_ONCE 64

/* Linux's VIRTIO_BALLOON_S_NAMES. */
const char *const virtio_balloon_stat_names[VIRTIO_BALLOON_S_NR] = {
	"swap-in", "swap-out", "major-faults", "minor-faults", "free-memory", "total-memory",
	"available-memory", "disk-caches", "hugetlb-allocations", "hugetlb-failures",
	"oom-kills", "alloc-stalls", "async-scans", "direct-scans", "async-reclaims",
	"direct-reclaims",
};

static struct virtio_balloon *bal(struct virtio_pci *vp)
{
	return vp->dev_state;
}

enum balloon_queue virtio_balloon_queue(uint64_t driver_features, unsigned q)
{
	enum balloon_queue job[4] = { BALLOON_INFLATE, BALLOON_DEFLATE };
	unsigned n = 2;

	if (driver_features & VIRTIO_BALLOON_F_STATS_VQ)
		job[n++] = BALLOON_STATS;
	if (driver_features & VIRTIO_BALLOON_F_REPORTING)
		job[n++] = BALLOON_REPORTING;
	return q < n ? job[q] : BALLOON_NO_QUEUE;
}

/* The queue that does job, or -1. */
static int queue_of(const struct virtio_pci *vp, enum balloon_queue job)
{
	for (unsigned q = 0; q < vp->dev->nr_queues; q++)
		if (virtio_balloon_queue(vp->driver_features, q) == job)
			return (int)q;
	return -1;
}

static void config_read(struct virtio_pci *vp, unsigned off, void *buf, unsigned len)
{
	uint8_t c[CONFIG_BYTES];

	put32(c, bal(vp)->num_pages);
	put32(c + 4, bal(vp)->actual);
	memcpy(buf, c + off, len);
}

/* Only actual is the driver's to write, in whole or in part. */
static void config_write(struct virtio_pci *vp, unsigned off, const void *buf, unsigned len)
{
	uint8_t c[CONFIG_BYTES];

	put32(c, bal(vp)->num_pages);
	put32(c + 4, bal(vp)->actual);
	for (unsigned i = 0; i < len; i++)
		if (off + i >= 4)
			c[off + i] = ((const uint8_t *)buf)[i];
	bal(vp)->actual = rd32(c + 4);
}

void virtio_balloon_set_target(struct virtio_pci *vp, uint32_t pages)
{
	bal(vp)->num_pages = pages;
	virtio_config_changed(vp);
}

/* A run of contiguous pages waiting to be discarded. */
struct run {
	uint64_t gpa, len;
};

static void run_flush(struct virtio_balloon *b, struct run *r)
{
	if (!r->len)
		return;
	b->discards++;
	b->discarded_bytes += r->len;
	b->ops.discard(b->ops.ctx, r->gpa, r->len);
	r->len = 0;
}

static void run_add(struct virtio_balloon *b, struct run *r, uint64_t gpa, uint64_t len)
{
	if (r->len && gpa == r->gpa + r->len) {
		r->len += len;
		return;
	}
	run_flush(b, r);
	*r = (struct run){ gpa, len };
}

static void report(struct virtio_pci *vp, const char *fmt, unsigned long long n,
		   unsigned long long first)
{
	char msg[160];

	if (!vp->ops.report)
		return;
	ksnprintf(msg, sizeof msg, fmt, n, first);
	vp->ops.report(vp->ops.ctx, msg);
}

/* An inflate or deflate buffer's PFNs; false: a bad ring. */
static bool serve_pfns(struct virtio_pci *vp, const struct virtq_chain *c, bool inflate)
{
	struct virtio_balloon *b = bal(vp);
	uint32_t pfn[PFNS_AT_ONCE];
	uint64_t bad = 0, first_bad = 0;
	struct run r = { 0, 0 };

	if (c->nr_in || c->out_bytes % 4 || c->out_bytes > BALLOON_CHAIN_BYTES_MAX)
		return false;
	for (uint64_t at = 0; at < c->out_bytes; at += sizeof pfn) {
		unsigned n = (unsigned)((c->out_bytes - at < sizeof pfn ? c->out_bytes - at
									: sizeof pfn) / 4);

		if (!virtq_chain_read(&vp->mem, c, at, pfn, 4ull * n))
			return false;
		for (unsigned i = 0; i < n; i++) {
			uint64_t gpa = (uint64_t)pfn[i] << VIRTIO_BALLOON_PFN_SHIFT;

			if (!guest_mem_ok(&vp->mem, gpa, PAGE_BYTES)) {
				first_bad = bad++ ? first_bad : pfn[i];
				continue;
			}
			if (!inflate) {
				b->deflated_pages++;
				continue;
			}
			b->inflated_pages++;
			run_add(b, &r, gpa, PAGE_BYTES);
		}
	}
	run_flush(b, &r);
	if (bad) {
		b->bad_pfns += bad;
		report(vp, inflate ? "virtio-balloon: inflate: %llu PFNs outside guest RAM refused "
				     "(the first 0x%llx)"
				   : "virtio-balloon: deflate: %llu PFNs outside guest RAM refused "
				     "(the first 0x%llx)", bad, first_bad);
	}
	return true;
}

/* A reporting buffer: each range discarded; false: a bad ring. The ranges
 * lie in guest RAM (the ring walk checked them). */
static bool serve_report(struct virtio_pci *vp, const struct virtq_chain *c)
{
	struct virtio_balloon *b = bal(vp);
	uint64_t bad = 0, first_bad = 0;
	struct run r = { 0, 0 };

	if (c->nr_out)
		return false;
	for (unsigned i = 0; i < c->nr_in; i++) {
		const struct virtq_seg *s = &c->seg[i];

		if (!s->len || ((s->gpa | s->len) & (PAGE_BYTES - 1))) {
			first_bad = bad++ ? first_bad : s->gpa;
			continue;
		}
		b->reported_ranges++;
		b->reported_bytes += s->len;
		run_add(b, &r, s->gpa, s->len);
	}
	run_flush(b, &r);
	if (bad) {
		b->bad_ranges += bad;
		report(vp, "virtio-balloon: %llu reported ranges not whole pages refused (the first "
			   "at 0x%llx)", bad, first_bad);
	}
	return true;
}

/* The statistics buffer: its entries kept, the buffer held; false: a bad ring. */
static bool serve_stats(struct virtio_pci *vp, const struct virtq_chain *c, unsigned q)
{
	struct virtio_balloon *b = bal(vp);
	uint8_t e[VIRTIO_BALLOON_STAT_BYTES];

	if (c->nr_in || c->out_bytes % VIRTIO_BALLOON_STAT_BYTES ||
	    c->out_bytes > BALLOON_CHAIN_BYTES_MAX)
		return false;
	for (uint64_t at = 0; at < c->out_bytes; at += sizeof e) {
		if (!virtq_chain_read(&vp->mem, c, at, e, sizeof e))
			return false;
		uint16_t tag = rd16(e);

		if (tag >= VIRTIO_BALLOON_S_NR) {
			b->stat_unknown++;
			continue;
		}
		b->stat[tag] = rd64(e + 2);
		b->stat_seen |= 1u << tag;
	}
	b->stat_updates++;
	/* A driver keeps one buffer here; an older one goes back unasked. */
	if (b->stat_held)
		virtio_push(vp, q, b->stat_head, 0);
	b->stat_held = true;
	b->stat_head = c->head;
	return true;
}

bool virtio_balloon_request_stats(struct virtio_pci *vp)
{
	struct virtio_balloon *b = bal(vp);
	int q = queue_of(vp, BALLOON_STATS);

	if (!b->stat_held || q < 0)
		return false;
	b->stat_held = false;
	virtio_push(vp, (unsigned)q, b->stat_head, 0);
	virtio_interrupt(vp, (unsigned)q);
	return true;
}

static void notify(struct virtio_pci *vp, unsigned q)
{
	enum balloon_queue job = virtio_balloon_queue(vp->driver_features, q);
	struct virtq_chain *c = &bal(vp)->chain;
	char why[96];

	if (job == BALLOON_NO_QUEUE) {
		ksnprintf(why, sizeof why, "queue %u does not exist with the features negotiated", q);
		virtio_device_error(vp, why);
		return;
	}
	while (virtio_pop(vp, q, c)) {
		bool ok = job == BALLOON_STATS	   ? serve_stats(vp, c, q)
			  : job == BALLOON_REPORTING ? serve_report(vp, c)
						     : serve_pfns(vp, c, job == BALLOON_INFLATE);

		if (!ok) {
			ksnprintf(why, sizeof why, "%s buffer of %llu+%llu bytes at head %u is malformed",
				  job == BALLOON_STATS ? "a statistics" : job == BALLOON_REPORTING
				  ? "a reporting" : job == BALLOON_INFLATE ? "an inflate" : "a deflate",
				  (unsigned long long)c->out_bytes, (unsigned long long)c->in_bytes,
				  c->head);
			virtio_device_error(vp, why);
			return;
		}
		if (job != BALLOON_STATS)
			virtio_push(vp, q, c->head, 0);
	}
	virtio_interrupt(vp, q);
}

/* The driver starts again with an empty balloon; the target stays. */
static void reset(struct virtio_pci *vp)
{
	struct virtio_balloon *b = bal(vp);

	b->actual = 0;
	b->stat_held = false;
}

const struct virtio_device virtio_balloon_device = {
	.name = "balloon", .id = VIRTIO_ID_BALLOON, .class = 0x00ff00, .nr_queues = 4,
	.queue_size = VIRTQ_SIZE_MAX,
	.features = VIRTIO_BALLOON_F_STATS_VQ | VIRTIO_BALLOON_F_REPORTING,
	.config_bytes = CONFIG_BYTES, .config_read = config_read, .config_write = config_write,
	.notify = notify, .reset = reset,
};
