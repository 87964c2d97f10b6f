/* A VM's balloon, wired (balloon.h). */
#include "dev/balloon.h"
#include "lib/print.h"
#include "lib/string.h"
#include "virt/sched.h"
#include "virt/vm.h"
#include "mm/cow.h"

static const struct device_spec balloon_device = {
	.name = "virtio_balloon", .mmio_ops = &virtio_vm_bar_ops,
	.mmio = { { BALLOON_BAR_GPA, VIRTIO_PCI_BAR_SIZE } },
};

/* Under the VM's lock, from a vCPU's exit: what the guest gave up. */
static void discard(void *ctx, uint64_t gpa, uint64_t len)
{
	mmu_discard(&((struct vm *)ctx)->mmu, gpa, len);
}

int balloon_attach(struct vm *vm, bool on, char *err, size_t errlen)
{
	struct vm_balloon *bl = &vm->platform.balloon;

	memset(bl, 0, sizeof(*bl));
	bl->on = on;
	bl->b.ops = (struct virtio_balloon_ops){ .discard = discard, .ctx = vm };
	return virtio_vm_attach(&bl->vv, vm, &balloon_device, &virtio_balloon_device, &bl->b,
				BALLOON_DEVFN, BALLOON_BAR_GPA, BALLOON_IRQ, on, err, errlen);
}

void balloon_set_target(struct vm *vm, uint32_t pages)
{
	virtio_balloon_set_target(&vm->platform.balloon.vv.vp, pages);
}

static void row(const char *name, uint64_t v)
{
	kprintf("  %-26s %llu\n", name, (unsigned long long)v);
}

void balloon_print(struct vm *vm)
{
	static struct virtio_balloon b;
	struct vm_balloon *bl = &vm->platform.balloon;
	uint64_t bad_rings;
	uint8_t status;
	bool asked;

	vm_lock(vm);
	b = bl->b;
	bad_rings = bl->vv.vp.bad_rings;
	status = bl->vv.vp.status;
	asked = virtio_balloon_request_stats(&bl->vv.vp);
	vm_unlock(vm, NULL);
	kprintf("vm %s balloon: target %llu KiB, actual %llu KiB%s\n", vm->name,
		(unsigned long long)b.num_pages * 4, (unsigned long long)b.actual * 4,
		status & VIRTIO_STATUS_DRIVER_OK ? "" : " (no driver)");
	row("balloon_pages", b.actual);
	row("target_pages", b.num_pages);
	row("inflated_pages", b.inflated_pages);
	row("deflated_pages", b.deflated_pages);
	row("reported_ranges", b.reported_ranges);
	row("reported_bytes", b.reported_bytes);
	row("discards", b.discards);
	row("discarded_bytes", b.discarded_bytes);
	row("bad_pfns", b.bad_pfns);
	row("bad_ranges", b.bad_ranges);
	row("bad_rings", bad_rings);
	row("stat_updates", b.stat_updates);
	for (unsigned t = 0; t < VIRTIO_BALLOON_S_NR; t++)
		if (b.stat_seen & (1u << t))
			kprintf("  stat-%-21s %llu\n", virtio_balloon_stat_names[t],
				(unsigned long long)b.stat[t]);
	if (asked)
		kprintf("  (fresh statistics asked for: the guest sends them as it runs)\n");
}
