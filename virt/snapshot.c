/* Snapshot images (snapshot.h, docs/snapshot.md). */
#include "virt/snapshot.h"
#include "lib/parse.h"
#include "lib/print.h"
#include "lib/string.h"
#include "boot/boot_info.h"
#include "virt/state_check.h"

static struct snapshot_image images[SNAPSHOT_MAX];
static bool image_used[SNAPSHOT_MAX];

static unsigned order_for(uint64_t bytes)
{
	unsigned order = 0;

	while ((PAGE_SIZE << order) < bytes)
		order++;
	return order;
}

static struct snapshot_image *image_slot(const char *name, char *err, size_t errlen)
{
	for (int i = 0; i < SNAPSHOT_MAX; i++) {
		if (!image_used[i]) {
			memset(&images[i], 0, sizeof(images[i]));
			memcpy(images[i].name, name, strlen(name) + 1);
			image_used[i] = true;
			return &images[i];
		}
	}
	ksnprintf(err, errlen, "all %d image slots are in use (see 'vm images')", SNAPSHOT_MAX);
	return NULL;
}

/* vCPU 0's backend and RIP, from its checked record. */
static void image_summary(struct snapshot_image *img)
{
	static struct vcpu_state cpu;
	const struct record_header *h;
	const void *payload;
	uint32_t pos = 0;
	char err[8];

	while (record_next(img->state, img->state_bytes, &pos, &h, &payload, err, sizeof(err))) {
		if (h->id == REC_CPU && !h->instance) {
			record_load(&cpu_record, payload, h->length, &cpu);
			memcpy(img->backend, cpu.backend, sizeof(img->backend));
			img->backend[sizeof(img->backend) - 1] = 0;
			img->rip = cpu.regs.rip;
		}
	}
}

static const struct snapshot_image *find_taken(const char *name)
{
	for (int i = 0; i < SNAPSHOT_MAX; i++)
		if (image_used[i] && strcmp(images[i].name, name) == 0)
			return &images[i];
	return NULL;
}

const struct snapshot_image *snapshot_take(struct vm *vm, const char *name, char *err,
					   size_t errlen)
{
	struct snapshot_image *img;
	uint32_t state_bytes = vm_state_bytes(vm);

	if (vm->state != VM_READY && vm->state != VM_PAUSED) {
		ksnprintf(err, errlen, "'%s' is not paused (run it to an HC_SNAPSHOT_POINT, or "
			  "with timeout=)", vm->name);
		return NULL;
	}
	if (!name_valid(name)) {
		ksnprintf(err, errlen, "bad image name '%s' (%s)", name, NAME_RULE);
		return NULL;
	}
	if (find_taken(name)) {
		ksnprintf(err, errlen, "an image named '%s' exists", name);
		return NULL;
	}
	if (!(img = image_slot(name, err, errlen)))
		return NULL;
	img->mem_bytes = vm->mem_bytes;
	img->nr_vcpus = vm->nr_vcpus;
	img->state_order = order_for(state_bytes);
	img->memory_order = order_for(vm->mem_bytes);
	img->state_pa = frame_alloc(img->state_order);
	img->memory_pa = frame_alloc(img->memory_order);
	if (!img->state_pa || !img->memory_pa) {
		ksnprintf(err, errlen, "out of memory for a %llu MiB image",
			  (unsigned long long)(vm->mem_bytes >> 20));
		snapshot_free(img);
		return NULL;
	}
	img->state = pa_to_va(img->state_pa);
	img->memory = pa_to_va(img->memory_pa);
	if (!vm_state_save(vm, pa_to_va(img->state_pa), state_bytes, &img->state_bytes, err,
			   errlen) ||
	    mmu_save_memory(&vm->mmu, 0, pa_to_va(img->memory_pa), vm->mem_bytes)) {
		if (!err[0])
			ksnprintf(err, errlen, "guest memory has a hole");
		snapshot_free(img);
		return NULL;
	}
	image_summary(img);
	return img;
}

/* Check a module as an image, all of it, and only then register it. */
static const struct snapshot_image *module_image(const char *name, const struct boot_module *mod,
						 char *err, size_t errlen)
{
	const struct snapshot_header *h = (const void *)(uintptr_t)mod->start;
	struct snapshot_image *img;
	unsigned nr_vcpus = 0;
	char why[160];

	if (!name_valid(name)) {
		ksnprintf(err, errlen, "module '%s' cannot name an image (%s)", name, NAME_RULE);
		return NULL;
	}
	if (!snapshot_header_check(h, mod->end - mod->start, why, sizeof(why)) ||
	    !vm_state_check((const char *)h + h->state_offset, h->state_bytes, h->mem_bytes,
			    &nr_vcpus, why, sizeof(why))) {
		ksnprintf(err, errlen, "module '%s': %s", name, why);
		return NULL;
	}
	if (nr_vcpus != h->vcpus) {
		ksnprintf(err, errlen, "module '%s': the VM state holds %u vCPUs, the header says %u",
			  name, nr_vcpus, h->vcpus);
		return NULL;
	}
	if (!(img = image_slot(name, err, errlen)))
		return NULL;
	img->mem_bytes = h->mem_bytes;
	img->state = (const char *)h + h->state_offset;
	img->state_bytes = h->state_bytes;
	img->nr_vcpus = nr_vcpus;
	image_summary(img);
	img->memory = (const char *)h + h->memory_offset;
	return img;
}

const struct snapshot_image *snapshot_find(const char *name, char *err, size_t errlen)
{
	const struct snapshot_image *img = find_taken(name);
	const struct boot_module *mod;

	if (img)
		return img;
	if (!(mod = boot_module_find(name))) {
		ksnprintf(err, errlen, "no image or module named '%s' (see 'vm images')", name);
		return NULL;
	}
	return module_image(name, mod, err, errlen);
}

void snapshot_free(const struct snapshot_image *img)
{
	int i = (int)(img - images);

	if (img->state_pa)
		frame_free(img->state_pa, img->state_order);
	if (img->memory_pa)
		frame_free(img->memory_pa, img->memory_order);
	image_used[i] = false;
}

const struct snapshot_image *snapshot_next(const struct snapshot_image *prev)
{
	for (int i = prev ? (int)(prev - images) + 1 : 0; i < SNAPSHOT_MAX; i++)
		if (image_used[i])
			return &images[i];
	return NULL;
}

struct vm *vm_restore(const char *name, const struct snapshot_image *img, uint32_t chunk_pages,
		      const char *args, char *err, size_t errlen)
{
	struct vm_create_args a = {
		.name = name,
		.mem_bytes = img->mem_bytes,
		.backing = BACKING_RESTORE,
		.restore_image = img->memory,
		.restore_bytes = img->mem_bytes,
		.chunk_pages = chunk_pages,
		.args = args,
		.vcpus = img->nr_vcpus,
		.state = img->state,
		.state_bytes = img->state_bytes,
		.no_testdev = !vm_state_has(img->state, img->state_bytes, REC_TESTDEV),
	};
	struct vm *vm;

	if ((vm = vm_create(&a, err, errlen)))
		vm->restored_from = img;
	return vm;
}
