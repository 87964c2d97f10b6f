/* A VM's buses and device table (dev/bus.c): overlaps refused at every edge,
 * lookups at the edges, ranges registered in any order kept sorted, the
 * access path and device registration. */
#include "check.h"
#include "dev/bus.h"
#include "tests/rng.h"
#include <string.h>

static struct vm_device dev_a = { .name = "a" }, dev_b = { .name = "b" };

/* A device that takes its accesses and remembers the last. */
struct fake {
	uint64_t addr, val;
	unsigned size;
	bool take;
};

static bool fake_read(struct vm *vm, struct vm_device *d, uint64_t addr, unsigned size,
		      uint64_t *val)
{
	struct fake *f = d->model;

	(void)vm;
	f->addr = addr;
	f->size = size;
	if (f->take)
		*val = f->val;
	return f->take;
}

static bool fake_write(struct vm *vm, struct vm_device *d, uint64_t addr, unsigned size,
		       uint64_t val)
{
	struct fake *f = d->model;

	(void)vm;
	f->addr = addr;
	f->size = size;
	if (f->take)
		f->val = val;
	return f->take;
}

static const struct bus_ops fake_ops = { .read = fake_read, .write = fake_write };

static bool sorted_and_disjoint(const struct bus *b)
{
	for (unsigned i = 1; i < b->count; i++)
		if (b->range[i - 1].base + b->range[i - 1].len > b->range[i].base)
			return false;
	return true;
}

TEST(bus_overlap_refused_at_every_edge)
{
	struct bus b = { 0 };

	REQUIRE(bus_register(&b, 0x40, 4, &fake_ops, &dev_a) == BUS_OK); /* 0x40-0x43 */
	/* each way of sharing an address */
	CHECK(bus_register(&b, 0x40, 4, &fake_ops, &dev_b) == BUS_OVERLAP); /* the same */
	CHECK(bus_register(&b, 0x3f, 2, &fake_ops, &dev_b) == BUS_OVERLAP); /* its first */
	CHECK(bus_register(&b, 0x43, 1, &fake_ops, &dev_b) == BUS_OVERLAP); /* its last */
	CHECK(bus_register(&b, 0x43, 8, &fake_ops, &dev_b) == BUS_OVERLAP);
	CHECK(bus_register(&b, 0x41, 2, &fake_ops, &dev_b) == BUS_OVERLAP); /* inside */
	CHECK(bus_register(&b, 0x00, 0x100, &fake_ops, &dev_b) == BUS_OVERLAP); /* around */
	CHECK_EQ_U64(b.count, 1);
	/* touching is not overlapping, on either side */
	CHECK(bus_register(&b, 0x3c, 4, &fake_ops, &dev_b) == BUS_OK);
	CHECK(bus_register(&b, 0x44, 1, &fake_ops, &dev_b) == BUS_OK);
	CHECK_EQ_U64(b.count, 3);
	/* a range between two that touches both */
	CHECK(bus_register(&b, 0x45, 3, &fake_ops, &dev_a) == BUS_OK);
	CHECK(bus_register(&b, 0x49, 1, &fake_ops, &dev_a) == BUS_OK);
	CHECK(bus_register(&b, 0x48, 1, &fake_ops, &dev_a) == BUS_OK);
	CHECK(bus_register(&b, 0x48, 1, &fake_ops, &dev_a) == BUS_OVERLAP);
	CHECK(sorted_and_disjoint(&b));
	/* no empty or wrapping ranges */
	CHECK(bus_register(&b, 0x1000, 0, &fake_ops, &dev_a) == BUS_EMPTY);
	CHECK(bus_register(&b, ~0ull - 1, 4, &fake_ops, &dev_a) == BUS_EMPTY);
	CHECK_EQ_U64(b.count, 6);
}

TEST(bus_lookup_at_the_edges)
{
	struct bus b = { 0 };
	const struct bus_range *r;

	REQUIRE(bus_register(&b, 0x3f8, 8, &fake_ops, &dev_a) == BUS_OK);
	REQUIRE(bus_register(&b, 0x400, 2, &fake_ops, &dev_b) == BUS_OK);
	REQUIRE(bus_register(&b, 0xfec00000, 0x1000, &fake_ops, &dev_b) == BUS_OK);
	CHECK(!bus_find(&b, 0));
	CHECK(!bus_find(&b, 0x3f7));
	CHECK((r = bus_find(&b, 0x3f8)) && r->dev == &dev_a && r->base == 0x3f8);
	CHECK((r = bus_find(&b, 0x3ff)) && r->dev == &dev_a);
	CHECK((r = bus_find(&b, 0x400)) && r->dev == &dev_b && r->base == 0x400);
	CHECK((r = bus_find(&b, 0x401)) && r->dev == &dev_b);
	CHECK(!bus_find(&b, 0x402));
	CHECK(!bus_find(&b, 0xfebfffff));
	CHECK((r = bus_find(&b, 0xfec00000)) && r->len == 0x1000);
	CHECK((r = bus_find(&b, 0xfec00fff)) && r->len == 0x1000);
	CHECK(!bus_find(&b, 0xfec01000));
	CHECK(!bus_find(&b, ~0ull));
}

TEST(bus_full_table_refused)
{
	struct bus b = { 0 };

	for (unsigned i = 0; i < BUS_RANGES_MAX; i++)
		REQUIRE(bus_register(&b, 0x100 + 2 * i, 1, &fake_ops, &dev_a) == BUS_OK);
	CHECK(bus_register(&b, 0x10, 1, &fake_ops, &dev_a) == BUS_FULL);
	CHECK(bus_register(&b, 0x101, 1, &fake_ops, &dev_a) == BUS_FULL);
	CHECK_EQ_U64(b.count, BUS_RANGES_MAX);
	CHECK(!bus_find(&b, 0x10));
}

/* BUS_RANGES_MAX ranges of random lengths with random gaps, registered in a
 * random order, with refused overlapping ones in between: the bus stays
 * sorted and every address finds its own range or none. */
TEST(bus_random_order_stays_sorted)
{
	for (uint64_t seed = 1; seed <= 50; seed++) {
		struct rng rng = rng_seeded(seed);
		struct vm_device devs[BUS_RANGES_MAX];
		uint64_t base[BUS_RANGES_MAX], len[BUS_RANGES_MAX], at = rng_below(&rng, 16);
		unsigned order[BUS_RANGES_MAX];
		struct bus b = { 0 };

		for (unsigned i = 0; i < BUS_RANGES_MAX; i++) {
			base[i] = at;
			len[i] = 1 + rng_below(&rng, 8);
			at += len[i] + rng_below(&rng, 3); /* touching a third of the time */
			order[i] = i;
			devs[i] = (struct vm_device){ .name = "r" };
		}
		for (unsigned i = BUS_RANGES_MAX - 1; i > 0; i--) {
			unsigned j = (unsigned)rng_below(&rng, i + 1), t = order[i];

			order[i] = order[j];
			order[j] = t;
		}
		for (unsigned k = 0; k < BUS_RANGES_MAX; k++) {
			unsigned i = order[k];

			CHECK(bus_register(&b, base[i], len[i], &fake_ops, &devs[i]) == BUS_OK);
			/* something over the range's last address: always refused */
			CHECK(bus_register(&b, base[i] + len[i] - 1, 1 + rng_below(&rng, 4), &fake_ops,
					   &dev_b) == BUS_OVERLAP);
			CHECK(sorted_and_disjoint(&b));
		}
		REQUIRE(b.count == BUS_RANGES_MAX);
		for (uint64_t a = 0; a < at + 2; a++) {
			const struct bus_range *r = bus_find(&b, a);
			int want = -1;

			for (unsigned i = 0; i < BUS_RANGES_MAX; i++)
				if (a >= base[i] && a < base[i] + len[i])
					want = (int)i;
			if (want < 0)
				CHECK(!r);
			else
				CHECK(r && r->dev == &devs[want] && r->base == base[want]);
		}
	}
}

TEST(bus_access_counts_what_a_device_took)
{
	struct fake f = { .val = 0x1234, .take = true };
	struct vm_device d = { .name = "fake", .model = &f };
	struct bus b = { 0 };
	uint64_t val = 0;

	REQUIRE(bus_register(&b, 0x70, 2, &fake_ops, &d) == BUS_OK);
	CHECK(bus_access(&b, NULL, 0x71, 1, &val, false));
	CHECK_EQ_U64(val, 0x1234);
	CHECK_EQ_U64(f.addr, 0x71); /* the address, not an offset */
	CHECK_EQ_U64(f.size, 1);
	val = 0x55;
	CHECK(bus_access(&b, NULL, 0x70, 2, &val, true));
	CHECK_EQ_U64(f.val, 0x55);
	CHECK_EQ_U64(d.exits, 2);
	/* nothing there, or a device that declines: not taken, not counted */
	val = 7;
	CHECK(!bus_access(&b, NULL, 0x72, 1, &val, false));
	f.take = false;
	CHECK(!bus_access(&b, NULL, 0x70, 1, &val, false));
	CHECK(!bus_access(&b, NULL, 0x70, 1, &val, true));
	CHECK_EQ_U64(val, 7);
	CHECK_EQ_U64(d.exits, 2);
}

TEST(device_attach_registers_or_names_the_conflict)
{
	static const struct device_spec pic = {
		.name = "pic", .port_ops = &fake_ops, .ports = { { 0x20, 2 }, { 0xa0, 2 } },
	};
	static const struct device_spec clash = {
		.name = "clash", .port_ops = &fake_ops, .ports = { { 0x10, 1 }, { 0xa1, 4 } },
	};
	static const struct device_spec mem = {
		.name = "mem", .port_ops = &fake_ops, .ports = { { 0x30, 1 } },
		.mmio_ops = &fake_ops, .mmio = { { 0xfec00000, 0x1000 } },
	};
	struct vm_devices t = { 0 };
	struct bus ports = { 0 }, mmio = { 0 };
	int model;
	char err[128] = "";
	struct vm_device *d;

	REQUIRE((d = device_attach(&t, &ports, &mmio, &pic, &model, true, err, sizeof(err))));
	CHECK(d == &t.dev[0] && d->model == &model && !strcmp(d->name, "pic") && !d->record &&
	      !d->loaded);
	CHECK(bus_find(&ports, 0x21)->dev == d && bus_find(&ports, 0xa0)->dev == d);
	CHECK(!device_attach(&t, &ports, &mmio, &clash, NULL, true, err, sizeof(err)));
	CHECK(strstr(err, "clash") && strstr(err, "0xa1-0xa4") && strstr(err, "pic"));
	CHECK_EQ_U64(t.count, 1);
	/* in the table without ranges, then with both buses' */
	REQUIRE(device_attach(&t, &ports, &mmio, &mem, NULL, false, err, sizeof(err)));
	CHECK(!bus_find(&ports, 0x30) && !bus_find(&mmio, 0xfec00000));
	REQUIRE((d = device_attach(&t, &ports, &mmio, &mem, NULL, true, err, sizeof(err))));
	CHECK(bus_find(&ports, 0x30)->dev == d && bus_find(&mmio, 0xfec00fff)->dev == d);
	CHECK(!bus_find(&mmio, 0x30) && !bus_find(&ports, 0xfec00000));
	CHECK_EQ_U64(t.count, 3);
	while (t.count < VM_DEVICES_MAX)
		REQUIRE(device_attach(&t, &ports, &mmio, &mem, NULL, false, err, sizeof(err)));
	CHECK(!device_attach(&t, &ports, &mmio, &mem, NULL, false, err, sizeof(err)));
	CHECK(strstr(err, "full"));
}
