/* Snapshot images: a paused VM's memory and vCPU state, kept in memory under
 * a name (`vm snapshot`), or read from a GRUB module in the same format; a VM
 * created from one (`vm create NEW restore=IMG`) has its memory filled from
 * the image on first touch. The format is in docs/snapshot.md. */
#pragma once
#include "lib/parse.h"
#include "virt/vcpu_state.h"

#define SNAPSHOT_MAGIC "SPRIGSNP"
#define SNAPSHOT_VERSION 6
#define SNAPSHOT_MAX 8

/* At offset 0 of an image file; offsets count from there. */
struct snapshot_header {
	char magic[8];
	uint32_t version;
	uint32_t state_bytes;   /* the VM state's records (virt/vcpu_state.h) */
	uint64_t mem_bytes;     /* guest memory, one slot at guest-physical 0 */
	uint64_t state_offset;  /* the records, 8-byte aligned */
	uint64_t memory_offset; /* the guest's memory, page-aligned */
	uint32_t vcpus;         /* 1 to VM_VCPUS_MAX, as the VM record says */
	uint32_t reserved;      /* zero */
};

struct snapshot_image {
	char name[NAME_LEN_MAX + 1];
	uint64_t mem_bytes;
	const void *state;      /* the records */
	uint32_t state_bytes;
	unsigned nr_vcpus;
	char backend[8];        /* vCPU 0's backend and RIP, for the console */
	uint64_t rip;
	const void *memory;
	/* Taken images own two blocks; a module's image owns nothing. */
	paddr_t state_pa, memory_pa;
	unsigned state_order, memory_order;
};

/* Capture a VM that is ready or paused into a new image; NULL with a reason. */
const struct snapshot_image *snapshot_take(struct vm *vm, const char *name, char *err,
					   size_t errlen);
/* The image of that name: a taken one, or a GRUB module holding an image
 * (registered on first use); NULL with a reason. */
const struct snapshot_image *snapshot_find(const char *name, char *err, size_t errlen);
/* Free a taken image (VMs restored from it must be gone); forget a module's. */
void snapshot_free(const struct snapshot_image *img);
/* Each image in turn; NULL after the last. */
const struct snapshot_image *snapshot_next(const struct snapshot_image *prev);

/* Create VM `name` from an image: as many vCPUs, placed as vm create's
 * default places them, each resuming where the snapshot found it, its memory fills from the image chunk_pages at a time on first touch
 * (mapped at 4 KiB); args are what HC_ARGS returns. NULL with a reason. */
struct vm *vm_restore(const char *name, const struct snapshot_image *img, uint32_t chunk_pages,
		      const char *args, char *err, size_t errlen);
