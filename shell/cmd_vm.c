/* The vm command: create, run, list, destroy, audit, snapshot and clone VMs. */
#include "lib/parse.h"
#include "lib/print.h"
#include "lib/string.h"
#include "virt/clone.h"
#include "shell/cmd_console.h"
#include "shell/cmd_vm.h"
#include "virt/cpu_list.h"
#include "boot/boot_info.h"
#include "shell/shell.h"
#include "virt/sched.h"
#include "virt/snapshot.h"
#include "virt/state_check.h"
#include "virt/vm.h"

#define DEFAULT_MEM (128ull << 20)
#define MAX_MEM (3ull << 30) /* below the 32-bit MMIO hole, as multiboot's mem_upper can say */
#define MIN_MEM (2ull << 20)
#define ALIAS_GPA_LIMIT (1ull << 40) /* aliases lie below 1 TiB of guest-physical space */

static struct vm *vm_arg(const char *cmd, int argc, char **argv)
{
	struct vm *vm;

	if (argc < 3) {
		shell_usage_error(cmd, "which VM?");
		return NULL;
	}
	if (!(vm = vm_find(argv[2])))
		kprintf("%s: no VM named '%s' (see 'vm list')\n", cmd, argv[2]);
	return vm;
}

/* chunk=SIZE: a power of two from 4 KiB to 2 MiB, as pages. */
static bool parse_chunk(const char *val, uint32_t *pages)
{
	uint64_t chunk;

	if (!parse_size_in(val, 4096, 2u << 20, &chunk) || (chunk & (chunk - 1)))
		return false;
	*pages = (uint32_t)(chunk >> 12);
	return true;
}

/* alias=GPA:SIZE@TARGET: [GPA, GPA + SIZE) maps the memory at TARGET. */
static bool parse_alias(const char *val, struct vm_alias *al)
{
	char buf[64], *size, *target;

	if (strnlen(val, sizeof(buf)) == sizeof(buf))
		return false;
	memcpy(buf, val, strlen(val) + 1);
	if (!(size = strchr(buf, ':')) || !(target = strchr(size, '@')))
		return false;
	*size++ = 0;
	*target++ = 0;
	return parse_size_in(buf, 0, ALIAS_GPA_LIMIT, &al->gpa) &&
	       parse_size_in(size, 1, ALIAS_GPA_LIMIT - al->gpa, &al->size) &&
	       parse_size_in(target, 0, ALIAS_GPA_LIMIT, &al->target_gpa);
}

/* Join argv[from..argc) with spaces after `prefix`; false if too long. */
static bool join_words(char *buf, size_t size, const char *prefix, int from, int argc, char **argv)
{
	size_t len = (size_t)ksnprintf(buf, size, "%s", prefix);

	for (int i = from; i < argc && len < size; i++)
		len += (size_t)ksnprintf(buf + len, size - len, "%s%s", len ? " " : "", argv[i]);
	return len < size;
}

/* vm create NAME restore=IMG [chunk=SIZE] [-- ARGS]: resume a snapshot. */
static int vm_restore_cmd(int argc, char **argv)
{
	static char args[VM_ARGS_MAX];
	const struct snapshot_image *img = NULL;
	uint32_t chunk_pages = 1;
	char err[192];
	int i;

	for (i = 3; i < argc && strcmp(argv[i], "--") != 0; i++) {
		const char *val = strchr(argv[i], '=');

		if (val && strncmp(argv[i], "restore=", 8) == 0) {
			if (!(img = snapshot_find(val + 1, err, sizeof(err)))) {
				kprintf("vm: %s\n", err);
				return 1;
			}
		} else if (val && strncmp(argv[i], "chunk=", 6) == 0) {
			if (!parse_chunk(val + 1, &chunk_pages))
				return shell_usage_error("vm", "bad chunk '%s' (a power of two, 4K to 2M)",
							 val + 1);
		} else {
			return shell_usage_error("vm", "unexpected argument '%s' with restore= (memory "
						 "and kernel come from the image)", argv[i]);
		}
	}
	if (!join_words(args, sizeof(args), "", i + 1, argc, argv))
		return shell_usage_error("vm", "guest arguments longer than %zu characters",
					 sizeof(args) - 1);
	if (!vm_restore(argv[2], img, chunk_pages, args, err, sizeof(err))) {
		kprintf("vm: cannot create '%s': %s\n", argv[2], err);
		return 1;
	}
	kprintf("vm %s created: %llu MiB restored from image '%s' in %u KiB chunks", argv[2],
		(unsigned long long)(img->mem_bytes >> 20), img->name, chunk_pages * 4);
	if (img->nr_vcpus > 1)
		kprintf(", %u vCPUs", img->nr_vcpus);
	kprintf("\n");
	return 0;
}

static int vm_create_cmd(int argc, char **argv)
{
	static char cmdline[VM_ARGS_MAX], args[VM_ARGS_MAX];
	struct vm_create_args a = { .mem_bytes = DEFAULT_MEM, .backing = BACKING_LAZY,
				    .chunk_pages = 1 };
	const struct boot_module *mod;
	char err[128];
	bool on;
	int i;

	if (argc < 4)
		return shell_usage_error("vm", "create needs a NAME and a MODULE or restore=IMAGE");
	a.name = argv[2];
	if (!name_valid(a.name))
		return shell_usage_error("vm", "bad VM name '%s' (%s)", a.name, NAME_RULE);
	if (strncmp(argv[3], "restore=", 8) == 0)
		return vm_restore_cmd(argc, argv);
	if (!(mod = boot_module_find(argv[3]))) {
		kprintf("vm: no module '%s' (see 'modules')\n", argv[3]);
		return 1;
	}
	a.image = (const void *)(uintptr_t)mod->start;
	a.image_size = mod->end - mod->start;
	for (i = 4; i < argc && strcmp(argv[i], "--") != 0; i++) {
		const char *val = strchr(argv[i], '=');
		if (!val)
			return shell_usage_error("vm", "unexpected argument '%s'", argv[i]);
		val++;
		if (strncmp(argv[i], "mem=", 4) == 0) {
			if (!parse_size_in(val, MIN_MEM, MAX_MEM, &a.mem_bytes) || (a.mem_bytes & 0xfff))
				return shell_usage_error("vm", "bad mem '%s' (2M to 3G, whole pages)", val);
		} else if (strncmp(argv[i], "backing=", 8) == 0) {
			if (strcmp(val, "eager") == 0)
				a.backing = BACKING_EAGER;
			else if (strcmp(val, "lazy") == 0)
				a.backing = BACKING_LAZY;
			else if (strcmp(val, "restore") == 0)
				a.backing = BACKING_RESTORE;
			else
				return shell_usage_error("vm", "bad backing '%s' (eager, lazy or restore)", val);
		} else if (strncmp(argv[i], "image=", 6) == 0) {
			/* A raw memory image: the guest boots MODULE over it. */
			const struct boot_module *img = boot_module_find(val);
			if (!img) {
				kprintf("vm: no module '%s' for the restore image\n", val);
				return 1;
			}
			a.restore_image = (const void *)(uintptr_t)img->start;
			a.restore_bytes = img->end - img->start;
		} else if (strncmp(argv[i], "initrd=", 7) == 0) {
			/* A Linux kernel's initial RAM disk. */
			const struct boot_module *rd = boot_module_find(val);
			if (!rd) {
				kprintf("vm: no module '%s' for the initrd\n", val);
				return 1;
			}
			a.initrd = (const void *)(uintptr_t)rd->start;
			a.initrd_size = rd->end - rd->start;
		} else if (strncmp(argv[i], "disk=", 5) == 0) {
			/* A virtio disk: MODULE read-only, MODULE:rw a writable copy. */
			char name[64];
			const char *colon = strchr(val, ':');
			size_t n = colon ? (size_t)(colon - val) : strlen(val);
			const struct boot_module *dm;

			if (n >= sizeof(name) || (colon && strcmp(colon, ":rw") != 0))
				return shell_usage_error("vm", "bad disk '%s' (MODULE or MODULE:rw)", val);
			memcpy(name, val, n);
			name[n] = 0;
			if (!(dm = boot_module_find(name))) {
				kprintf("vm: no module '%s' for the disk\n", name);
				return 1;
			}
			a.disk = (struct disk_args){ (const void *)(uintptr_t)dm->start,
						     dm->end - dm->start, colon != NULL };
		} else if (strncmp(argv[i], "chunk=", 6) == 0) {
			if (!parse_chunk(val, &a.chunk_pages))
				return shell_usage_error("vm", "bad chunk '%s' (a power of two, 4K to 2M)", val);
		} else if (strncmp(argv[i], "testdev=", 8) == 0) {
			if (!parse_on_off(val, &on))
				return shell_usage_error("vm", "bad testdev '%s' (on or off)", val);
			a.no_testdev = !on;
		} else if (strncmp(argv[i], "balloon=", 8) == 0) {
			if (!parse_on_off(val, &a.balloon))
				return shell_usage_error("vm", "bad balloon '%s' (on or off)", val);
		} else if (strncmp(argv[i], "strict_mmio=", 12) == 0) {
			if (!parse_on_off(val, &a.strict_mmio))
				return shell_usage_error("vm", "bad strict_mmio '%s' (on or off)", val);
		} else if (strncmp(argv[i], "pv=", 3) == 0) {
			if (!parse_on_off(val, &on))
				return shell_usage_error("vm", "bad pv '%s' (on or off)", val);
			a.no_kvm_pv = !on;
		} else if (strncmp(argv[i], "vcpus=", 6) == 0) {
			uint64_t n;

			if (!parse_u64_in(val, 1, VM_VCPUS_MAX, &n))
				return shell_usage_error("vm", "bad vcpus '%s' (1 to %u)", val,
							 VM_VCPUS_MAX);
			a.vcpus = (unsigned)n;
		} else if (strncmp(argv[i], "cpus=", 5) == 0) {
			if (!(a.cpu_list_len = cpu_list_parse(val, CPU_MAX, a.cpu_list, CPU_MAX, err,
							      sizeof(err))))
				return shell_usage_error("vm", "%s", err);
		} else if (strncmp(argv[i], "alias=", 6) == 0) {
			if (a.aliases == VM_ALIASES_MAX || !parse_alias(val, &a.alias[a.aliases++]))
				return shell_usage_error("vm", "bad alias '%s' (GPA:SIZE@TARGET_GPA, at "
							 "most %d)", val, VM_ALIASES_MAX);
		} else {
			return shell_usage_error("vm", "unexpected argument '%s'", argv[i]);
		}
	}
	if (a.backing == BACKING_RESTORE && !a.restore_image)
		return shell_usage_error("vm", "backing=restore needs image=MODULE");
	/* The guest sees "MODULE ARGS", as QEMU passes "KERNEL ARGS". */
	if (!join_words(args, sizeof(args), "", i + 1, argc, argv) ||
	    !join_words(cmdline, sizeof(cmdline), argv[3], i + 1, argc, argv))
		return shell_usage_error("vm", "guest arguments longer than %zu characters",
					 sizeof(cmdline) - 1 - strlen(argv[3]));
	a.cmdline = cmdline;
	a.args = args;

	if (!vm_create(&a, err, sizeof(err))) {
		kprintf("vm: cannot create '%s': %s\n", a.name, err);
		return 1;
	}
	kprintf("vm %s created: %llu MiB %s memory, kernel '%s'", a.name,
		(unsigned long long)(a.mem_bytes >> 20),
		a.backing == BACKING_EAGER ? "eager" : a.backing == BACKING_LAZY ? "lazy" : "restore",
		argv[3]);
	if (a.vcpus > 1)
		kprintf(", %u vCPUs", a.vcpus);
	kprintf("\n");
	return 0;
}

/* vm snapshot NAME IMG: capture a paused (or never run) VM. */
static int vm_snapshot_cmd(int argc, char **argv)
{
	struct vm *vm = vm_arg("vm", argc, argv);
	const struct snapshot_image *img;
	char err[192] = "";

	if (!vm)
		return 1;
	if (argc != 4)
		return shell_usage_error("vm", "snapshot needs a VM and an image name (%s)",
					 NAME_RULE);
	if (!(img = snapshot_take(vm, argv[3], err, sizeof(err)))) {
		kprintf("vm: cannot snapshot '%s': %s\n", vm->name, err);
		return 1;
	}
	kprintf("vm %s snapshot: image '%s', %llu MiB at rip 0x%llx", vm->name, img->name,
		(unsigned long long)(img->mem_bytes >> 20),
		(unsigned long long)img->rip);
	if (img->nr_vcpus > 1)
		kprintf(", %u vCPUs", img->nr_vcpus);
	kprintf("\n");
	return 0;
}

static int vm_images_cmd(void)
{
	const struct snapshot_image *img = snapshot_next(NULL);

	if (!img)
		kprintf("no images\n");
	for (; img; img = snapshot_next(img))
		kprintf("%-16s %6llu MiB  %s  %2u vCPUs  rip 0x%llx%s\n", img->name,
			(unsigned long long)(img->mem_bytes >> 20), img->backend,
			img->nr_vcpus, (unsigned long long)img->rip,
			img->memory_pa ? "" : "  (module)");
	return 0;
}

static int vm_image_free_cmd(int argc, char **argv)
{
	char err[128];
	const struct snapshot_image *img;

	if (argc != 3)
		return shell_usage_error("vm", "image-free needs an image name");
	for (struct vm *vm = vm_next(NULL); vm; vm = vm_next(vm))
		if (vm->restored_from && strcmp(vm->restored_from->name, argv[2]) == 0) {
			kprintf("vm: '%s' restores from '%s': destroy it first\n", vm->name, argv[2]);
			return 1;
		}
	if (!(img = snapshot_find(argv[2], err, sizeof(err)))) {
		kprintf("vm: %s\n", err);
		return 1;
	}
	snapshot_free(img);
	kprintf("image %s freed\n", argv[2]);
	return 0;
}

/* vm clone PARENT NAME: a copy-on-write child of a paused VM. */
static int vm_clone_cmd(int argc, char **argv)
{
	char err[192] = "";
	struct vm *parent, *clone;

	if (argc != 4)
		return shell_usage_error("vm", "clone needs a paused VM and a new VM's name");
	if (!(parent = vm_find(argv[2]))) {
		kprintf("vm: no VM named '%s' (see 'vm list')\n", argv[2]);
		return 1;
	}
	if (!(clone = vm_clone(parent, argv[3], err, sizeof(err)))) {
		kprintf("vm: cannot clone '%s': %s\n", parent->name, err);
		return 1;
	}
	kprintf("vm %s cloned from %s: %llu MiB shared copy-on-write, family of %u", clone->name,
		parent->name, (unsigned long long)(clone->mem_bytes >> 20),
		mmu_family_size(&clone->mmu));
	if (clone->nr_vcpus > 1)
		kprintf(", %u vCPUs", clone->nr_vcpus);
	kprintf("\n");
	return 0;
}

int vm_run_args(int argc, char **argv, struct vm **vm, uint64_t *timeout_s)
{
	*timeout_s = shell_default_run_timeout();
	if (!(*vm = vm_arg("vm", argc, argv)))
		return 1;
	for (int i = 3; i < argc; i++) {
		if (strncmp(argv[i], "timeout=", 8) != 0 ||
		    !parse_u64_in(argv[i] + 8, 1, 86400, timeout_s))
			return shell_usage_error("vm", "bad argument '%s' (timeout=SECONDS, 1-86400)",
						 argv[i]);
	}
	if ((*vm)->state != VM_READY && (*vm)->state != VM_PAUSED) {
		kprintf("vm: '%s' has %s; destroy it and create it again\n", (*vm)->name,
			(*vm)->state == VM_EXITED ? "exited" : "stopped");
		return 1;
	}
	return 0;
}

static int vm_run_cmd(int argc, char **argv)
{
	uint64_t timeout_s;
	struct vm *vm;
	int rc = vm_run_args(argc, argv, &vm, &timeout_s);

	if (rc)
		return rc;
	vm_run(vm, timeout_s * 1000);
	return 0;
}

static int vm_list_cmd(void)
{
	struct vm *vm = vm_next(NULL);

	if (!vm)
		kprintf("no VMs\n");
	for (; vm; vm = vm_next(vm)) {
		uint64_t exits = 0;

		for (unsigned i = 0; i < vm->nr_vcpus; i++)
			exits += vm->vcpus[i]->stats.exits;
		kprintf("%-16s %-8s %6llu MiB  exits %llu\n", vm->name, vm_state_name(vm->state),
			(unsigned long long)(vm->mem_bytes >> 20), (unsigned long long)exits);
	}
	return 0;
}

static int vm_audit_cmd(int argc, char **argv)
{
	struct vm *vm = vm_arg("vm", argc, argv);
	struct mmu_audit_report report;

	if (!vm)
		return 1;
	mmu_audit(&vm->mmu, &report);
	mmu_audit_print(&report);
	return report.errors ? 1 : 0;
}

/* Print the runs of set bits: "gfn 0x..-0x.." for the first few. */
static void print_dirty_ranges(const uint64_t *bits, uint64_t npages)
{
	unsigned shown = 0;

	for (uint64_t g = 0; g < npages && shown < 8; g++) {
		uint64_t end = g;

		if (!(bits[g / 64] & (1ull << (g % 64))))
			continue;
		while (end + 1 < npages && (bits[(end + 1) / 64] & (1ull << ((end + 1) % 64))))
			end++;
		kprintf("  gpa 0x%llx-0x%llx\n", (unsigned long long)(g << 12),
			(unsigned long long)(((end + 1) << 12) - 1));
		shown++;
		g = end;
	}
}

/* vm discard NAME GPA SIZE: drop guest memory (MADV_DONTNEED); a frame shared
 * with clones or aliases leaves every page table that maps it. */
static int vm_discard_cmd(int argc, char **argv)
{
	struct vm *vm = vm_arg("vm", argc, argv);
	uint64_t gpa, size;

	if (!vm)
		return 1;
	if (argc != 5 || !parse_size(argv[3], &gpa) || !parse_size(argv[4], &size) || !size ||
	    ((gpa | size) & 0xfff) || gpa >= vm->mem_bytes || size > vm->mem_bytes - gpa)
		return shell_usage_error("vm", "discard needs a VM, a GPA and a SIZE (whole pages "
					 "in its memory)");
	vm_discard(vm, gpa, size);
	kprintf("vm %s discarded 0x%llx-0x%llx\n", vm->name, (unsigned long long)gpa,
		(unsigned long long)(gpa + size - 1));
	return 0;
}

/* vm balloon NAME [SIZE]: the balloon's state, or its target: SIZE of the
 * guest's memory to take (0 gives it all back). */
static int vm_balloon_cmd(int argc, char **argv)
{
	struct vm *vm = vm_arg("vm", argc, argv);
	uint64_t size;

	if (!vm)
		return 1;
	if (argc > 4)
		return shell_usage_error("vm", "balloon needs a VM and at most a SIZE");
	if (!vm->platform.balloon.on) {
		kprintf("vm: '%s' has no balloon (vm create ... balloon=on)\n", vm->name);
		return 1;
	}
	if (argc == 3) {
		balloon_print(vm);
		return 0;
	}
	if (!parse_size(argv[3], &size) || (size & 0xfff) || size > vm->mem_bytes)
		return shell_usage_error("vm", "bad balloon size '%s' (whole pages, 0 to the VM's "
					 "%llu MiB)", argv[3], (unsigned long long)(vm->mem_bytes >> 20));
	vm_lock(vm);
	balloon_set_target(vm, (uint32_t)(size >> 12));
	vm_unlock(vm, NULL);
	kprintf("vm %s balloon target %llu KiB\n", vm->name, (unsigned long long)(size >> 10));
	return 0;
}

/* vm dirty NAME on|off|get: dirty logging of the VM's memory. */
static int vm_dirty_cmd(int argc, char **argv)
{
	static uint64_t bits[MAX_MEM / 4096 / 64];
	_Static_assert(SNAPSHOT_MEM_MAX <= MAX_MEM, "a restored VM's dirty log fits");
	struct vm *vm = vm_arg("vm", argc, argv);
	int64_t n;

	if (!vm)
		return 1;
	if (argc != 4 || (strcmp(argv[3], "on") && strcmp(argv[3], "off") && strcmp(argv[3], "get")))
		return shell_usage_error("vm", "dirty needs a VM and on, off or get");
	if (strcmp(argv[3], "get") != 0) {
		if (mmu_dirty_log_enable(&vm->mmu, 0, strcmp(argv[3], "on") == 0)) {
			kprintf("vm: no memory for the dirty log of '%s'\n", vm->name);
			return 1;
		}
		kprintf("vm %s dirty logging %s\n", vm->name, argv[3]);
		return 0;
	}
	if ((n = mmu_dirty_log_get(&vm->mmu, 0, bits)) < 0) {
		kprintf("vm: dirty logging is off for '%s'\n", vm->name);
		return 1;
	}
	kprintf("vm %s dirty: %lld pages\n", vm->name, (long long)n);
	print_dirty_ranges(bits, vm->mem_bytes >> 12);
	return 0;
}

static int cmd_vm(int argc, char **argv)
{
	if (argc < 2)
		return shell_usage_error("vm", "which subcommand?");
	if (strcmp(argv[1], "create") == 0)
		return vm_create_cmd(argc, argv);
	if (strcmp(argv[1], "run") == 0)
		return vm_run_cmd(argc, argv);
	if (strcmp(argv[1], "list") == 0) {
		if (argc > 2)
			return shell_usage_error("vm", "unexpected argument '%s'", argv[2]);
		return vm_list_cmd();
	}
	if (strcmp(argv[1], "destroy") == 0) {
		struct vm *vm = vm_arg("vm", argc, argv);
		if (!vm)
			return 1;
		vm_destroy(vm);
		kprintf("vm %s destroyed\n", argv[2]);
		return 0;
	}
	if (strcmp(argv[1], "audit") == 0)
		return vm_audit_cmd(argc, argv);
	if (strcmp(argv[1], "dirty") == 0)
		return vm_dirty_cmd(argc, argv);
	if (strcmp(argv[1], "snapshot") == 0)
		return vm_snapshot_cmd(argc, argv);
	if (strcmp(argv[1], "images") == 0)
		return vm_images_cmd();
	if (strcmp(argv[1], "image-free") == 0)
		return vm_image_free_cmd(argc, argv);
	if (strcmp(argv[1], "clone") == 0)
		return vm_clone_cmd(argc, argv);
	if (strcmp(argv[1], "discard") == 0)
		return vm_discard_cmd(argc, argv);
	if (strcmp(argv[1], "console") == 0)
		return vm_console_cmd(argc, argv);
	if (strcmp(argv[1], "balloon") == 0)
		return vm_balloon_cmd(argc, argv);
	return shell_usage_error("vm", "unknown subcommand '%s'", argv[1]);
}
SHELL_COMMAND(vm, "vm",  cmd_vm,
	      "create NAME MODULE [initrd=MODULE] [disk=MODULE[:rw]] [mem=SIZE] [vcpus=N] [cpus=LIST] [backing=eager|lazy|restore image=MODULE chunk=SIZE] [alias=GPA:SIZE@GPA] [strict_mmio=on|off] [testdev=on|off] [balloon=on|off] [pv=on|off] [-- ARGS] | create NAME restore=IMAGE [chunk=SIZE] [-- ARGS] | run NAME [timeout=S] | console NAME [timeout=S] | list | destroy NAME | audit NAME | dirty NAME on|off|get | snapshot NAME IMAGE | images | image-free IMAGE | clone PARENT NAME | discard NAME GPA SIZE | balloon NAME [SIZE]",
	      "create, run, list, destroy, audit and snapshot VMs; log their writes; restore them from images; attach the console to a VM's COM1");
