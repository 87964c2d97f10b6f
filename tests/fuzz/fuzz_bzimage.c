/* loader/bzimage_loader.c: the input is [guest memory selector byte][initrd
 * size in 256-byte units, u16][command line length byte] then that many command-line
 * bytes, then a bzImage, loaded into a VM's memory through the real MMU over
 * host "physical memory", as tests/unit/test_bzimage_loader.c does. The image
 * is copied to a heap block of exactly its length (ASan sees reads past it).
 *
 * Properties: bzimage_check and bzimage_load agree (same verdict, same
 * message); a load puts the protected-mode kernel at the entry, the initrd at
 * the gpa boot_params names, inside guest memory and above the kernel, the
 * command line where cmd_line_ptr says, and boot_params' loader fields as
 * bzimage_loader.h describes; a refused load backs no guest page; destroying
 * the VM returns every frame. */
#include "mm/mmu.h"
#include "svm/npt.h"
#include "tests/fuzz/fuzz_guest.h"
#include "tests/unit/host_mem.h"
#include "loader/bzimage_loader.h"
#include <string.h>

#define MiB (1ull << 20)
#define HOST_MEM (512 * MiB)
#define HEADER_BYTES 4
#define INITRD_MAX (16 * MiB)

static const uint64_t guest_mems[] = { 128 * MiB, 2 * MiB, 16 * MiB, 80 * MiB, 81 * MiB,
				       256 * MiB };

static uint64_t free_bytes(void)
{
	struct frame_stats st;

	frame_get_stats(&st);
	return st.free_bytes;
}

static void check_loaded(struct mmu *mmu, const struct bzimage_boot *b, const struct bzimage_entry *e)
{
	const uint8_t *img = b->image;
	uint64_t setup = ((uint64_t)(img[0x1f1] ? img[0x1f1] : 4) + 1) * 512;
	uint64_t bp = e->esi;

	FUZZ_ASSERT(e->eip == e->kernel_gpa && e->kernel_gpa >= MiB);
	FUZZ_ASSERT(guest_equals(mmu, e->kernel_gpa, img + setup, b->size - setup));
	FUZZ_ASSERT(guest32(mmu, bp + 0x214) == e->kernel_gpa);
	FUZZ_ASSERT(guest32(mmu, bp + 0x218) == e->initrd_gpa);
	FUZZ_ASSERT(guest32(mmu, bp + 0x21c) == b->initrd_size);
	if (b->initrd_size) {
		FUZZ_ASSERT(e->initrd_gpa % 4096 == 0 && e->initrd_gpa >= e->kernel_gpa + b->size - setup);
		FUZZ_ASSERT(e->initrd_gpa + b->initrd_size <= b->guest_mem);
		FUZZ_ASSERT(guest_equals(mmu, e->initrd_gpa, b->initrd, b->initrd_size));
	}
	FUZZ_ASSERT(guest_equals(mmu, guest32(mmu, bp + 0x228), b->cmdline, strlen(b->cmdline) + 1));
	FUZZ_ASSERT((guest32(mmu, bp + 0x210) & 0xff) == 0xff);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool inited;
	static uint8_t *initrd_bytes;
	struct bzimage_boot b = { 0 };
	struct bzimage_entry e = { 0 };
	char err_check[200] = "", err_load[200] = "", cmdline[256];
	size_t cmd_len;

	if (!inited) {
		host_mem_init(HOST_MEM);
		initrd_bytes = malloc(INITRD_MAX);
		for (size_t i = 0; i < INITRD_MAX; i++)
			initrd_bytes[i] = (uint8_t)(i * 11 + 1);
		inited = true;
	}
	if (size < HEADER_BYTES)
		return 0;
	cmd_len = data[3];
	if (size < HEADER_BYTES + cmd_len)
		return 0;
	memcpy(cmdline, data + HEADER_BYTES, cmd_len);
	cmdline[cmd_len] = '\0';
	b.guest_mem = guest_mems[data[0] % (sizeof(guest_mems) / sizeof(guest_mems[0]))];
	b.initrd_size = (uint64_t)(data[1] | data[2] << 8) * 256;
	b.initrd = initrd_bytes;
	b.cmdline = cmdline;
	b.size = size - HEADER_BYTES - cmd_len;
	uint8_t *image = malloc(b.size ? b.size : 1);
	memcpy(image, data + HEADER_BYTES + cmd_len, b.size);
	b.image = image;

	int rc = bzimage_check(&b, err_check, sizeof(err_check));
	FUZZ_ASSERT(rc == 0 || (rc == -1 && err_check[0]));
	if (fuzz_verbose())
		printf("bzimage: %llu-byte image, guest memory %llu MiB, initrd %llu bytes: %s\n",
		       (unsigned long long)b.size, (unsigned long long)(b.guest_mem >> 20),
		       (unsigned long long)b.initrd_size, rc ? err_check : "loads");

	struct memslot_config cfg = { .gpa = 0, .size = b.guest_mem,
				      .backing = { .kind = BACKING_LAZY } };
	struct mmu mmu;
	uint64_t before = free_bytes();

	FUZZ_ASSERT(mmu_init(&mmu, &npt_format, no_flush, NULL) == 0);
	FUZZ_ASSERT(mmu_slot_add(&mmu, &cfg) == 0);
	uint64_t empty = free_bytes();
	int lrc = bzimage_load(&mmu, &b, &e, err_load, sizeof(err_load));
	FUZZ_ASSERT(lrc == rc && !strcmp(err_check, err_load));
	if (lrc == 0)
		check_loaded(&mmu, &b, &e);
	else
		FUZZ_ASSERT(free_bytes() == empty);
	mmu_destroy(&mmu);
	FUZZ_ASSERT(free_bytes() == before);
	free(image);
	return 0;
}
