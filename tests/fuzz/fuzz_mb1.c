/* loader/mb1_loader.c: the input is a multiboot (v1) kernel image, loaded into a
 * VM's memory through the real MMU over host "physical memory", as
 * tests/unit/test_mb1_loader.c does.
 *
 * Input: the image, optionally followed by the marker "\nMB1-ARGS\n" and then
 * [guest memory selector byte][module count byte][u32 size per module]
 * [the command line, then each module's string, NUL-separated]. Without the
 * marker: 16 MiB of guest memory, no modules, command line "fuzz". The image
 * is copied to a heap block of exactly its length (ASan sees reads past it).
 *
 * Properties: mb1_check and mb1_load agree (same verdict, same message: the
 * check must foresee every refusal); a load gives the entry state and the info
 * structure, strings and modules that mb1_loader.h describes, and the kernel's
 * bytes where its program headers (or a.out fields) put them, checked after
 * everything is written (nothing landed on the kernel); a refused load
 * backs no guest page (writes nothing); destroying the VM returns every frame.
 * Guest memory sizes above 16 MiB are only checked, not loaded. */
#define _GNU_SOURCE /* memmem */
#include "mm/mmu.h"
#include "svm/npt.h"
#include "tests/fuzz/fuzz_guest.h"
#include "tests/unit/host_mem.h"
#include "loader/mb1_loader.h"
#include <string.h>

#define MiB (1ull << 20)
#define GiB (1ull << 30)
#define HOST_MEM (512 * MiB)
#define LOAD_MAX_MEM (16 * MiB)
#define MAX_MODS 4

static const char marker[] = "\nMB1-ARGS\n";

static const uint64_t guest_mems[] = {
	16 * MiB, MiB, MiB + 4096, 2 * MiB, 5 * MiB + 12288, 16 * MiB - 4096, 64 * MiB,
	4 * GiB, 4 * GiB + 4 * MiB, 1ull << 40, UINT64_MAX & ~0xfffull,
};

struct args {
	size_t mem; /* index in guest_mems */
	size_t n_mods;
	struct mb1_module_src mods[MAX_MODS];
	const char *cmdline;
	char *strings; /* holds cmdline and the module strings */
};

static const uint8_t *find_marker(const uint8_t *data, size_t size)
{
	const uint8_t *found = NULL, *p = data;
	size_t m = sizeof(marker) - 1;

	while (p + m <= data + size && (p = memmem(p, data + size - p, marker, m))) {
		found = p;
		p++;
	}
	return found;
}

/* Module data: small modules get heap blocks of their exact size (ASan sees
 * reads past them), large ones point into one buffer filled once. */
#define SMALL_MODULE 65536
static const uint8_t *big_module(void)
{
	static uint8_t *buf;

	if (!buf) {
		buf = malloc(LOAD_MAX_MEM);
		for (size_t i = 0; i < LOAD_MAX_MEM; i++)
			buf[i] = (uint8_t)(i * 13 + 5);
	}
	return buf;
}

/* Reads the trailer after the marker. Module data is there when the modules
 * fit in the guest memory and it is loaded, else NULL: no load may read it
 * then, as the check refuses such a layout. */
static void parse_args(const uint8_t *t, size_t len, struct args *a)
{
	size_t at = 2, total = 0;

	a->mem = len ? t[0] % (sizeof(guest_mems) / sizeof(guest_mems[0])) : 0;
	a->cmdline = NULL;
	a->n_mods = len > 1 ? t[1] % (MAX_MODS + 1) : 0;
	for (size_t i = 0; i < a->n_mods; i++) {
		uint32_t size = 0;
		if (at + 4 <= len)
			memcpy(&size, t + at, 4);
		at += 4;
		a->mods[i].size = size;
		total += size;
	}
	/* Strings: NUL-separated, absent ones NULL. */
	size_t slen = at < len ? len - at : 0;
	a->strings = malloc(slen + 1);
	memcpy(a->strings, t + (at < len ? at : len), slen);
	a->strings[slen] = '\0';
	const char *s = a->strings, *end = a->strings + slen;
	a->cmdline = slen ? s : NULL;
	s += strlen(s) + 1;
	for (size_t i = 0; i < a->n_mods; i++) {
		a->mods[i].cmdline = s <= end ? s : NULL;
		if (s <= end)
			s += strlen(s) + 1;
	}
	if (total > guest_mems[a->mem] || guest_mems[a->mem] > LOAD_MAX_MEM)
		return;
	for (size_t i = 0; i < a->n_mods; i++) {
		uint64_t size = a->mods[i].size;
		if (size <= SMALL_MODULE) {
			uint8_t *d = malloc(size ? size : 1);
			memset(d, (int)(0x11 * (i + 1)), size);
			a->mods[i].data = d;
		} else {
			a->mods[i].data = big_module() + (LOAD_MAX_MEM - size) / (i + 1);
		}
	}
}

static void free_args(struct args *a)
{
	for (size_t i = 0; i < a->n_mods; i++)
		if (a->mods[i].size <= SMALL_MODULE)
			free((void *)a->mods[i].data);
	free(a->strings);
}

static bool guest_zero(struct mmu *mmu, uint64_t gpa, uint64_t len)
{
	static const uint8_t zeros[4096];

	for (uint64_t off = 0; off < len; off += sizeof(zeros)) {
		uint64_t n = len - off < sizeof(zeros) ? len - off : sizeof(zeros);
		if (!guest_equals(mmu, gpa + off, zeros, n))
			return false;
	}
	return true;
}

static uint32_t img32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static uint16_t img16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return v;
}

/* The kernel as the spec says it lands, read here from the image the loader
 * accepted: each range's file bytes at its address, then zeros to its memory
 * size; the entry inside a range's file bytes. */
static void check_kernel(struct mmu *mmu, const uint8_t *img, size_t len, uint32_t eip)
{
	uint64_t hoff = 0;
	uint32_t flags = 0;
	bool entry_in = false;

	for (uint64_t i = 0; i + 12 <= len && i + 12 <= 8192; i += 4) {
		if (img32(img + i) == MB1_HEADER_MAGIC &&
		    (uint32_t)(img32(img + i) + img32(img + i + 4) + img32(img + i + 8)) == 0) {
			hoff = i;
			flags = img32(img + i + 4);
			break;
		}
	}
	if (flags & (1u << 16)) { /* a.out kludge */
		const uint8_t *h = img + hoff;
		uint64_t load = img32(h + 16), load_end = img32(h + 20), bss_end = img32(h + 24);
		uint64_t off = hoff - (img32(h + 12) - load);
		uint64_t file = load_end ? load_end - load : len - off;

		FUZZ_ASSERT(guest_equals(mmu, load, img + off, file));
		if (bss_end)
			FUZZ_ASSERT(guest_zero(mmu, load + file, bss_end - load - file));
		FUZZ_ASSERT(eip >= load && eip - load < file);
		return;
	}
	for (uint32_t i = 0; i < img16(img + 44); i++) {
		const uint8_t *ph = img + img32(img + 28) + (uint64_t)i * img16(img + 42);
		uint64_t off = img32(ph + 4), paddr = img32(ph + 12);
		uint64_t filesz = img32(ph + 16), memsz = img32(ph + 20);

		if (img32(ph) != 1 || !memsz)
			continue;
		FUZZ_ASSERT(guest_equals(mmu, paddr, img + off, filesz));
		FUZZ_ASSERT(guest_zero(mmu, paddr + filesz, memsz - filesz));
		entry_in |= eip >= paddr && eip - paddr < filesz;
	}
	FUZZ_ASSERT(entry_in);
}

static void check_loaded(struct mmu *mmu, const struct args *a, const struct mb1_entry *e)
{
	const char *cmdline = a->cmdline ? a->cmdline : "";

	uint64_t info = e->ebx, mmap;

	/* QEMU's addresses, or (the kernel or its strings on them) both after
	 * the strings, below the first module. */
	FUZZ_ASSERT(e->eax == MB1_BOOTLOADER_MAGIC);
	FUZZ_ASSERT(e->eip < guest_mems[a->mem]);
	FUZZ_ASSERT(guest32(mmu, info) == 0x24f);
	mmap = guest32(mmu, info + 48);
	if (info == MB1_INFO_GPA)
		FUZZ_ASSERT(mmap == MB1_MMAP_GPA);
	else
		FUZZ_ASSERT(info % 4 == 0 && mmap + guest32(mmu, info + 44) == info &&
			    mmap > guest32(mmu, info + 16) && info + 88 <= guest_mems[a->mem]);
	FUZZ_ASSERT(guest32(mmu, info + 44) == 4 * 24 && guest32(mmu, info + 4) == 639);
	FUZZ_ASSERT(guest_equals(mmu, guest32(mmu, info + 16), cmdline, strlen(cmdline) + 1));
	FUZZ_ASSERT(guest_equals(mmu, guest32(mmu, info + 64), "sprig", 6));
	FUZZ_ASSERT(guest32(mmu, info + 20) == a->n_mods);
	uint64_t table = guest32(mmu, info + 24), prev_end = info == MB1_INFO_GPA ? table : info + 88;
	for (size_t i = 0; i < a->n_mods; i++) {
		const struct mb1_module_src *m = &a->mods[i];
		uint64_t start = guest32(mmu, table + 16 * i);
		const char *str = m->cmdline ? m->cmdline : "";

		FUZZ_ASSERT(start % 4096 == 0 && start >= prev_end);
		FUZZ_ASSERT(guest32(mmu, table + 16 * i + 4) == start + m->size);
		FUZZ_ASSERT(start + m->size <= guest_mems[a->mem]);
		FUZZ_ASSERT(guest_equals(mmu, start, m->data, m->size));
		FUZZ_ASSERT(guest_equals(mmu, guest32(mmu, table + 16 * i + 8), str, strlen(str) + 1));
		prev_end = start + m->size;
	}
}

static uint64_t free_bytes(void)
{
	struct frame_stats st;

	frame_get_stats(&st);
	return st.free_bytes;
}

/* One VM, kept while loads into the same guest memory size are refused (a
 * refusal writes nothing, so backs no page: the free frame count shows it),
 * destroyed after a load or for another size (every frame must come back). */
static struct vm {
	bool live;
	size_t mem; /* index in guest_mems */
	struct mmu mmu;
	uint64_t free_before;
} vm;

static void vm_put(void)
{
	mmu_destroy(&vm.mmu);
	vm.live = false;
	FUZZ_ASSERT(free_bytes() == vm.free_before);
}

static struct mmu *vm_get(size_t mem)
{
	struct memslot_config cfg = { .gpa = 0, .size = guest_mems[mem],
				      .backing = { .kind = BACKING_LAZY } };

	if (vm.live && vm.mem != mem)
		vm_put();
	if (!vm.live) {
		vm.free_before = free_bytes();
		FUZZ_ASSERT(mmu_init(&vm.mmu, &npt_format, no_flush, NULL) == 0);
		FUZZ_ASSERT(mmu_slot_add(&vm.mmu, &cfg) == 0);
		vm.live = true;
		vm.mem = mem;
	}
	return &vm.mmu;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool inited;
	const uint8_t *m = find_marker(data, size);
	size_t image_len = m ? (size_t)(m - data) : size;
	struct args a;
	char err_check[160], err_load[160];

	if (!inited) {
		host_mem_init(HOST_MEM);
		inited = true;
	}
	memset(&a, 0, sizeof(a));
	a.cmdline = "fuzz";
	if (m) {
		const uint8_t *t = m + sizeof(marker) - 1;
		parse_args(t, data + size - t, &a);
	}
	uint8_t *image = malloc(image_len ? image_len : 1);
	memcpy(image, data, image_len);

	memset(err_check, 0, sizeof(err_check));
	int rc = mb1_check(image, image_len, guest_mems[a.mem], a.cmdline, a.mods, a.n_mods,
			   err_check, sizeof(err_check));
	FUZZ_ASSERT(rc == 0 || (rc == -1 && err_check[0]));
	if (fuzz_verbose())
		printf("mb1: %zu-byte image, guest memory 0x%llx, %zu modules: %s\n", image_len,
		       (unsigned long long)guest_mems[a.mem], a.n_mods, rc ? err_check : "loads");
	if (guest_mems[a.mem] <= LOAD_MAX_MEM) {
		struct mmu *mmu = vm_get(a.mem);
		uint64_t before = free_bytes();
		struct mb1_entry e = { 0 };

		memset(err_load, 0, sizeof(err_load));
		int lrc = mb1_load(mmu, guest_mems[a.mem], image, image_len, a.cmdline, a.mods,
				   a.n_mods, &e, err_load, sizeof(err_load));
		if (lrc != rc || strcmp(err_check, err_load))
			fprintf(stderr, "fuzz: mb1_check %d \"%s\", mb1_load %d \"%s\"\n", rc,
				err_check, lrc, err_load);
		FUZZ_ASSERT(lrc == rc && !strcmp(err_check, err_load));
		if (lrc == 0) {
			check_kernel(mmu, image, image_len, e.eip);
			check_loaded(mmu, &a, &e);
			vm_put();
		} else {
			FUZZ_ASSERT(free_bytes() == before);
		}
	}
	free(image);
	if (m)
		free_args(&a);
	return 0;
}
