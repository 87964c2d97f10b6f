/* dev/fwcfg.c: fw_cfg's traditional I/O interface. */
#include "check.h"
#include "tests/unit/vm_e820.h"
#include "dev/fwcfg.h"
#include <string.h>

static void sel(struct fwcfg *f, uint16_t key)
{
	fwcfg_port_write(f, FWCFG_PORT_SEL, 2, key);
}

static void rd_bytes(struct fwcfg *f, void *dst, size_t n)
{
	uint8_t *d = dst;
	for (size_t i = 0; i < n; i++)
		d[i] = (uint8_t)fwcfg_port_read(f, FWCFG_PORT_DATA, 1);
}

static uint64_t rd_le(struct fwcfg *f, unsigned n)
{
	uint8_t b[8];
	uint64_t v = 0;
	rd_bytes(f, b, n);
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)b[i] << (8 * i);
	return v;
}

static uint64_t rd_be(struct fwcfg *f, unsigned n)
{
	uint8_t b[8];
	uint64_t v = 0;
	rd_bytes(f, b, n);
	for (unsigned i = 0; i < n; i++)
		v = v << 8 | b[i];
	return v;
}

static const struct e820_entry map[] = {
	{ 0, 0x9fc00, E820_RAM },
	{ 0x9fc00, 0x400, E820_RESERVED },
	{ 0x100000, 0x7f00000, E820_RAM },
};

static void setup(struct fwcfg *f, unsigned cpus)
{
	struct fwcfg_config c = {
		.ram_bytes = 128ull << 20, .cpus = cpus, .e820 = map, .e820_count = 3,
		.kernel_entry = 0x100020, .kernel_addr = 0x100000, .kernel_size = 0x3000,
		.mbi_addr = 0x9500, .mbi_size = 0x58,
	};
	fwcfg_init(f, &c);
}

/* Walk the directory for name; its selector and size, or 0. */
static uint16_t find_file(struct fwcfg *f, const char *name, uint32_t *size)
{
	sel(f, FW_CFG_FILE_DIR);
	uint32_t n = (uint32_t)rd_be(f, 4);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t sz = (uint32_t)rd_be(f, 4);
		uint16_t s = (uint16_t)rd_be(f, 2);
		char nm[FW_CFG_FILE_NAME_LEN];
		rd_le(f, 2);
		rd_bytes(f, nm, sizeof nm);
		if (!strncmp(nm, name, sizeof nm)) {
			*size = sz;
			return s;
		}
	}
	return 0;
}

TEST(fwcfg_signature_id_scalars)
{
	static struct fwcfg f;
	char sig[5] = { 0 };
	setup(&f, 4);
	sel(&f, FW_CFG_SIGNATURE);
	rd_bytes(&f, sig, 4);
	CHECK(!strcmp(sig, "QEMU"));
	CHECK_EQ_U64(fwcfg_port_read(&f, FWCFG_PORT_DATA, 1), 0); /* past the end */
	sel(&f, FW_CFG_ID);
	CHECK_EQ_U64(rd_le(&f, 4), FW_CFG_ID_TRADITIONAL); /* no DMA */
	sel(&f, FW_CFG_RAM_SIZE);
	CHECK_EQ_U64(rd_le(&f, 8), 128ull << 20);
	sel(&f, FW_CFG_NB_CPUS);
	CHECK_EQ_U64(rd_le(&f, 2), 4);
	sel(&f, FW_CFG_MAX_CPUS);
	CHECK_EQ_U64(rd_le(&f, 2), 4);
	sel(&f, FW_CFG_UUID);
	CHECK_EQ_U64(rd_le(&f, 8) | rd_le(&f, 8), 0);
	sel(&f, FW_CFG_KERNEL_ENTRY);
	CHECK_EQ_U64(rd_le(&f, 4), 0x100020);
	sel(&f, FW_CFG_INITRD_ADDR);
	CHECK_EQ_U64(rd_le(&f, 4), 0x9500);
	sel(&f, FW_CFG_IRQ0_OVERRIDE);
	CHECK_EQ_U64(rd_le(&f, 4), 1);
	/* reselecting rewinds */
	sel(&f, FW_CFG_NB_CPUS);
	rd_le(&f, 1);
	sel(&f, FW_CFG_NB_CPUS);
	CHECK_EQ_U64(rd_le(&f, 2), 4);
	/* the write-channel bit is ignored for reads */
	sel(&f, FW_CFG_WRITE_CHANNEL | FW_CFG_NB_CPUS);
	CHECK_EQ_U64(rd_le(&f, 2), 4);
}

TEST(fwcfg_unknown_and_odd_accesses)
{
	static struct fwcfg f;
	setup(&f, 1);
	sel(&f, FW_CFG_MACHINE_ID);
	CHECK_EQ_U64(rd_le(&f, 4), 0);
	sel(&f, 0x1234);
	CHECK_EQ_U64(rd_le(&f, 8), 0);
	sel(&f, FW_CFG_NUMA);
	CHECK_EQ_U64(rd_le(&f, 8), 0);
	/* byte read of 0x510 reads data too (QEMU's shared region) */
	sel(&f, FW_CFG_SIGNATURE);
	CHECK_EQ_U64(fwcfg_port_read(&f, FWCFG_PORT_SEL, 1), 'Q');
	/* wide reads are rejected: 0, no advance */
	CHECK_EQ_U64(fwcfg_port_read(&f, FWCFG_PORT_DATA, 2), 0);
	CHECK_EQ_U64(fwcfg_port_read(&f, FWCFG_PORT_DATA, 4), 0);
	CHECK_EQ_U64(fwcfg_port_read(&f, FWCFG_PORT_DATA, 1), 'E');
	/* byte writes (data) and dword writes change nothing */
	fwcfg_port_write(&f, FWCFG_PORT_DATA, 1, 0);
	fwcfg_port_write(&f, FWCFG_PORT_SEL, 1, FW_CFG_NB_CPUS);
	fwcfg_port_write(&f, FWCFG_PORT_SEL, 4, FW_CFG_NB_CPUS);
	fwcfg_port_write(&f, FWCFG_PORT_DATA, 2, FW_CFG_NB_CPUS);
	CHECK_EQ_U64(fwcfg_port_read(&f, FWCFG_PORT_DATA, 1), 'M');
	/* other ports */
	CHECK_EQ_U64(fwcfg_port_read(&f, 0x514, 1), 0);
	/* no multiboot values: items absent */
	struct fwcfg_config c = { .ram_bytes = 1 << 20, .cpus = 1 };
	fwcfg_init(&f, &c);
	sel(&f, FW_CFG_KERNEL_ENTRY);
	CHECK_EQ_U64(rd_le(&f, 4), 0);
}

TEST(fwcfg_file_dir_and_e820)
{
	static struct fwcfg f;
	setup(&f, 2);
	sel(&f, FW_CFG_FILE_DIR);
	CHECK_EQ_U64(rd_be(&f, 4), 2);
	/* selectors from 0x20 in name order */
	char prev[FW_CFG_FILE_NAME_LEN] = "";
	for (unsigned i = 0; i < 2; i++) {
		char nm[FW_CFG_FILE_NAME_LEN];
		rd_be(&f, 4);
		CHECK_EQ_U64(rd_be(&f, 2), FW_CFG_FILE_FIRST + i);
		CHECK_EQ_U64(rd_le(&f, 2), 0);
		rd_bytes(&f, nm, sizeof nm);
		CHECK(nm[sizeof nm - 1] == 0);
		CHECK(strcmp(prev, nm) < 0);
		memcpy(prev, nm, sizeof nm);
	}
	uint32_t size = 99;
	uint16_t s = find_file(&f, "bootorder", &size);
	CHECK_EQ_U64(s, 0x20);
	CHECK_EQ_U64(size, 0);
	s = find_file(&f, "etc/e820", &size);
	REQUIRE(s == 0x21);
	CHECK_EQ_U64(size, 3 * FW_CFG_E820_ENTRY_LEN);
	sel(&f, s);
	for (unsigned i = 0; i < 3; i++) {
		CHECK_EQ_U64(rd_le(&f, 8), map[i].addr);
		CHECK_EQ_U64(rd_le(&f, 8), map[i].len);
		CHECK_EQ_U64(rd_le(&f, 4), map[i].type);
	}
	CHECK_EQ_U64(rd_le(&f, 4), 0);
}

TEST(fwcfg_e820_clamped)
{
	static struct fwcfg f;
	static struct e820_entry big[FWCFG_E820_MAX + 5];
	for (unsigned i = 0; i < FWCFG_E820_MAX + 5; i++)
		big[i] = (struct e820_entry){ i * 0x1000ull, 0x1000, E820_RAM };
	struct fwcfg_config c = { .ram_bytes = 1 << 30, .cpus = 64, .max_cpus = 128,
				  .e820 = big, .e820_count = FWCFG_E820_MAX + 5 };
	fwcfg_init(&f, &c);
	uint32_t size = 0;
	uint16_t s = find_file(&f, "etc/e820", &size);
	CHECK_EQ_U64(s, 0x21);
	CHECK_EQ_U64(size, FWCFG_E820_MAX * FW_CFG_E820_ENTRY_LEN);
	CHECK(f.used <= FWCFG_DATA_MAX);
	sel(&f, FW_CFG_MAX_CPUS);
	CHECK_EQ_U64(rd_le(&f, 2), 128);
}

/* A VM's etc/e820 is the map its boot loader gives it: the ACPI tables'
 * area reserved, not RAM as before. */
TEST(fwcfg_vm_e820_is_the_boot_map)
{
	const uint64_t mem = 128ull << 20;
	uint64_t want[VM_E820_ENTRIES][3];
	struct fwcfg f;
	uint32_t size = 0;

	fwcfg_init_vm(&f, mem, 2);
	vm_e820_want(mem, want);
	sel(&f, find_file(&f, "etc/e820", &size));
	REQUIRE(size == VM_E820_ENTRIES * FW_CFG_E820_ENTRY_LEN);
	for (int i = 0; i < VM_E820_ENTRIES; i++) {
		CHECK_EQ_U64(rd_le(&f, 8), want[i][0]);
		CHECK_EQ_U64(rd_le(&f, 8), want[i][1]);
		CHECK_EQ_U64(rd_le(&f, 4), want[i][2]);
	}
	sel(&f, FW_CFG_RAM_SIZE);
	CHECK_EQ_U64(rd_le(&f, 8), mem);
	sel(&f, FW_CFG_NB_CPUS);
	CHECK_EQ_U64(rd_le(&f, 2), 2);
}
