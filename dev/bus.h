/* A VM's devices and the two buses that reach them (docs/platform.md,
 * "Devices"), as KVM's kvm_io_bus and Xen's handler registration: each
 * device is in the VM's table once (its name, exit counter, model and state
 * record) and registers its ranges of ports and of guest-physical addresses
 * when the VM is created. A bus holds sorted, non-overlapping ranges
 * [base, base + len), each pointing at its device and the device's
 * operations; the exit handlers find an access's range by binary search on
 * its first address. Nothing is registered after creation, so lookups need
 * no lock. Pure: also built for the host (tests/unit/test_bus.c). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vm;
struct record_type;

/* One device of a VM. */
struct vm_device {
	const char *name; /* stats print exits_<name> */
	uint64_t exits;   /* accesses it took (under the VM's lock) */
	/* Its state record (virt/state_record.h); NULL: none yet. */
	const struct record_type *record;
	void *model; /* the pure model's struct, its operations' state */
	/* After a restore loaded the model: re-derive what follows from it
	 * (IRQ lines, ...). NULL: nothing to do. */
	void (*loaded)(struct vm *vm, void *model);
};

/* The same operations for every device on either bus. addr is the port or
 * guest-physical address the access starts at (not an offset), size 1, 2 or
 * 4 for ports, 1 to 8 for memory. True: the device took it (a read set
 * *val); false: as if nothing were there. Called under the VM's lock. */
struct bus_ops {
	bool (*read)(struct vm *vm, struct vm_device *dev, uint64_t addr, unsigned size,
		     uint64_t *val);
	bool (*write)(struct vm *vm, struct vm_device *dev, uint64_t addr, unsigned size,
		      uint64_t val);
};

struct bus_range {
	uint64_t base, len;
	const struct bus_ops *ops;
	struct vm_device *dev;
};

#define BUS_RANGES_MAX 32
struct bus {
	struct bus_range range[BUS_RANGES_MAX]; /* sorted by base, disjoint */
	unsigned count;
};

/* Why bus_register refused a range. */
enum bus_error {
	BUS_OK = 0,
	BUS_EMPTY = -1,   /* len 0, or base + len past the end of the address space */
	BUS_OVERLAP = -2, /* shares an address with a registered range */
	BUS_FULL = -3,    /* BUS_RANGES_MAX ranges already */
};

/* Add [base, base + len) for dev with ops, keeping the bus sorted: BUS_OK, or
 * why not (nothing changed). Ranges that touch (one ends where the next
 * begins) do not overlap. */
enum bus_error bus_register(struct bus *b, uint64_t base, uint64_t len, const struct bus_ops *ops,
			    struct vm_device *dev);
/* The range holding addr, or NULL. */
const struct bus_range *bus_find(const struct bus *b, uint64_t addr);
/* An access starting at addr to the device whose range holds it: true when
 * one took it (counted in its exits; a read set *val). Under the VM's lock. */
bool bus_access(const struct bus *b, struct vm *vm, uint64_t addr, unsigned size, uint64_t *val,
		bool write);

#define VM_DEVICES_MAX 16
struct vm_devices {
	struct vm_device dev[VM_DEVICES_MAX];
	unsigned count;
};

/* A span of one bus; len 0 ends a list. */
struct bus_span {
	uint64_t base, len;
};

/* How a device is wired: what platform_init registers for it. */
struct device_spec {
	const char *name;
	/* Its state record and the hook after a load (struct vm_device). */
	const struct record_type *record;
	void (*loaded)(struct vm *vm, void *model);
	const struct bus_ops *port_ops;
	struct bus_span ports[4];
	const struct bus_ops *mmio_ops;
	struct bus_span mmio[2];
};

/* Add a device to the table, model its state, and, when `ranges`, its spans
 * to the port and MMIO buses and its record to the VM's state (a device can
 * be in the table without ranges and state: pc-testdev when the VM has none). NULL with the reason in err (a full
 * table, a refused range and the device that holds it); the buses may then
 * hold some of its ranges, and the VM is not to be run. */
struct vm_device *device_attach(struct vm_devices *t, struct bus *ports, struct bus *mmio,
				const struct device_spec *spec, void *model, bool ranges, char *err,
				size_t errlen);
