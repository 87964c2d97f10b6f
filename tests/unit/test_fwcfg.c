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

/* ---- the saved state (fwcfg_record) ---- */

#define VM_MEM (128ull << 20)
static const struct record_limits vm_lim = { .nr_vcpus = 2, .mem_bytes = VM_MEM };

static uint32_t save(struct fwcfg *f, uint8_t *buf, uint32_t len)
{
	struct field_io io = field_saver(buf, len);

	fwcfg_record.fields(f, &io);
	CHECK(!io.overrun);
	return io.pos;
}

/* A VM's fw_cfg (as the loading VM builds it) loaded from buf. */
static void load_vm(struct fwcfg *f, const uint8_t *buf, uint32_t len)
{
	struct field_io io = field_loader(buf, len);

	fwcfg_init_vm(f, VM_MEM, 2);
	fwcfg_record.fields(f, &io);
	CHECK(!io.overrun && !io.bad && io.pos == len);
}

/* Both read the same bytes from here to past the item's end. */
static void check_same_reads(struct fwcfg *a, struct fwcfg *b, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		CHECK_EQ_U64(fwcfg_port_read(a, FWCFG_PORT_DATA, 1), fwcfg_port_read(b, FWCFG_PORT_DATA, 1));
}

TEST(fwcfg_record_round_trip)
{
	static const uint16_t keys[] = {
		FW_CFG_WRITE_CHANNEL | (FW_CFG_FILE_FIRST + 1), /* etc/e820, write bit ignored */
		FW_CFG_FILE_DIR, FW_CFG_IRQ0_OVERRIDE, FW_CFG_NUMA /* not offered */,
	};
	struct fwcfg a, b;
	uint8_t buf[16], skip[3 * FW_CFG_E820_ENTRY_LEN];
	char err[160] = "";

	for (unsigned k = 0; k < sizeof keys / sizeof keys[0]; k++) {
		fwcfg_init_vm(&a, VM_MEM, 2);
		sel(&a, keys[k]);
		for (int i = 0; i < 25; i++)
			fwcfg_port_read(&a, FWCFG_PORT_DATA, 1);
		load_vm(&b, buf, save(&a, buf, sizeof buf));
		CHECK(fwcfg_record.check(&b, &vm_lim, err, sizeof err));
		CHECK(b.select == keys[k] && b.offset == a.offset && b.cur == a.cur);
		check_same_reads(&a, &b, 200);
		/* and they go on alike after the same selection */
		sel(&a, FW_CFG_NB_CPUS);
		sel(&b, FW_CFG_NB_CPUS);
		check_same_reads(&a, &b, 3);
	}
	/* mid-map: the next entry's bytes come out of the loaded model */
	fwcfg_init_vm(&a, VM_MEM, 2);
	sel(&a, FW_CFG_FILE_FIRST + 1);
	rd_bytes(&a, skip, sizeof skip);
	load_vm(&b, buf, save(&a, buf, sizeof buf));
	CHECK_EQ_U64(rd_le(&b, 8), 0x100000);
	CHECK_EQ_U64(rd_le(&b, 8), VM_MEM - 0x100000);
}

/* Power-on, every item read to its end, nothing selected: all pass. */
TEST(fwcfg_record_check_passes_model_states)
{
	struct fwcfg f, l;
	uint8_t buf[16];
	char err[160] = "";

	fwcfg_init_vm(&f, VM_MEM, 2);
	load_vm(&l, buf, save(&f, buf, sizeof buf));
	CHECK(fwcfg_record.check(&l, &vm_lim, err, sizeof err));
	for (unsigned i = 0; i < f.nitems; i++) {
		sel(&f, f.items[i].key);
		for (unsigned n = 0; n <= f.items[i].len; n++)
			fwcfg_port_read(&f, FWCFG_PORT_DATA, 1);
		CHECK_EQ_U64(f.offset, f.items[i].len);
		load_vm(&l, buf, save(&f, buf, sizeof buf));
		CHECK(fwcfg_record.check(&l, &vm_lim, err, sizeof err));
	}
	sel(&f, 0x7fff);
	fwcfg_port_read(&f, FWCFG_PORT_DATA, 1);
	load_vm(&l, buf, save(&f, buf, sizeof buf));
	CHECK(fwcfg_record.check(&l, &vm_lim, err, sizeof err));
	if (err[0])
		fprintf(stderr, "  refused: %s\n", err);
}

/* The check runs on a zeroed model (no items): an offset past the item's
 * end in the loading VM is refused, naming the field. */
TEST(fwcfg_record_check_refuses)
{
	static const struct {
		uint16_t select;
		uint32_t offset;
		const char *reason;
	} cases[] = {
		{ FW_CFG_RAM_SIZE, 9, "offset 9 is past the end of selector 0x3's item (8 bytes here)" },
		{ FW_CFG_FILE_DIR, 4 + 2 * FW_CFG_FILE_ENTRY_LEN + 1, "offset 133" },
		{ FW_CFG_WRITE_CHANNEL | FW_CFG_SIGNATURE, 5, "selector 0x4000's item (4 bytes here)" },
		{ FW_CFG_NUMA, 1, "offset 1 is past the end of selector 0xd's item (0 bytes here)" },
		{ FW_CFG_FILE_FIRST + 1, 0xffffffff, "offset 4294967295" },
	};
	uint8_t buf[16];
	struct field_io io;
	struct fwcfg l;
	char err[160];

	for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		memcpy(buf, &cases[i].select, 2);
		memcpy(buf + 2, &cases[i].offset, 4);
		memset(&l, 0, sizeof l);
		io = field_loader(buf, 6);
		fwcfg_record.fields(&l, &io);
		CHECK(!io.overrun);
		err[0] = 0;
		CHECK(!fwcfg_record.check(&l, &vm_lim, err, sizeof err));
		if (!strstr(err, cases[i].reason))
			fprintf(stderr, "  case %u: '%s' lacks '%s'\n", i, err, cases[i].reason);
		CHECK(strstr(err, cases[i].reason) != NULL);
		/* one byte less is the item's end: taken */
		memset(&l, 0, sizeof l);
		l.select = cases[i].select;
		l.offset = cases[i].offset - 1;
		CHECK(fwcfg_record.check(&l, &vm_lim, err, sizeof err) == (i < 4));
	}
}
