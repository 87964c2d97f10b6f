/* A VM's device table and buses (bus.h). */
#include "dev/bus.h"
#include "lib/print.h"
#include "lib/string.h"

/* The index of the first range that ends after addr (count: none). */
static unsigned first_ending_after(const struct bus *b, uint64_t addr)
{
	unsigned lo = 0, hi = b->count;

	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;
		const struct bus_range *r = &b->range[mid];

		if (r->base + r->len <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const struct bus_range *bus_find(const struct bus *b, uint64_t addr)
{
	unsigned i = first_ending_after(b, addr);

	return i < b->count && b->range[i].base <= addr ? &b->range[i] : NULL;
}

bool bus_access(const struct bus *b, struct vm *vm, uint64_t addr, unsigned size, uint64_t *val,
		bool write)
{
	const struct bus_range *r = bus_find(b, addr);

	if (!r || !(write ? r->ops->write(vm, r->dev, addr, size, *val)
			  : r->ops->read(vm, r->dev, addr, size, val)))
		return false;
	r->dev->exits++;
	return true;
}

enum bus_error bus_register(struct bus *b, uint64_t base, uint64_t len, const struct bus_ops *ops,
			    struct vm_device *dev)
{
	unsigned i;

	if (!len || base + len < base)
		return BUS_EMPTY;
	i = first_ending_after(b, base);
	if (i < b->count && b->range[i].base < base + len)
		return BUS_OVERLAP;
	if (b->count == BUS_RANGES_MAX)
		return BUS_FULL;
	memmove(&b->range[i + 1], &b->range[i], (b->count - i) * sizeof(b->range[0]));
	b->range[i] = (struct bus_range){ .base = base, .len = len, .ops = ops, .dev = dev };
	b->count++;
	return BUS_OK;
}

static const char *bus_error_name(enum bus_error e)
{
	switch (e) {
	case BUS_OK:
		return "ok";
	case BUS_EMPTY:
		return "an empty range";
	case BUS_OVERLAP:
		return "overlaps a range of device ";
	case BUS_FULL:
		return "the bus is full";
	}
	return "?";
}

/* Register a device's spans on one bus; false with the reason in err. */
static bool attach_spans(struct bus *b, const char *bus_name, const struct bus_span *s,
			 unsigned n, const struct bus_ops *ops, struct vm_device *d, char *err,
			 size_t errlen)
{
	for (unsigned i = 0; i < n && s[i].len; i++) {
		enum bus_error e = bus_register(b, s[i].base, s[i].len, ops, d);
		unsigned at = first_ending_after(b, s[i].base);

		if (e == BUS_OK)
			continue;
		ksnprintf(err, errlen, "device %s: %s 0x%llx-0x%llx: %s%s", d->name, bus_name,
			  (unsigned long long)s[i].base,
			  (unsigned long long)(s[i].base + s[i].len - 1), bus_error_name(e),
			  e == BUS_OVERLAP ? b->range[at].dev->name : "");
		return false;
	}
	return true;
}

struct vm_device *device_attach(struct vm_devices *t, struct bus *ports, struct bus *mmio,
				const struct device_spec *spec, void *model, bool ranges, char *err,
				size_t errlen)
{
	struct vm_device *d;

	if (t->count == VM_DEVICES_MAX) {
		ksnprintf(err, errlen, "device %s: the device table is full", spec->name);
		return NULL;
	}
	d = &t->dev[t->count];
	*d = (struct vm_device){
		.name = spec->name, .model = model, .record = ranges ? spec->record : NULL,
		.loaded = spec->loaded,
	};
	if (ranges && (!attach_spans(ports, "ports", spec->ports,
				     sizeof(spec->ports) / sizeof(spec->ports[0]), spec->port_ops, d,
				     err, errlen) ||
		       !attach_spans(mmio, "memory", spec->mmio,
				     sizeof(spec->mmio) / sizeof(spec->mmio[0]), spec->mmio_ops, d, err,
				     errlen)))
		return NULL;
	t->count++;
	return d;
}
