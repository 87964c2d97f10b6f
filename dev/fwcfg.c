/* fw_cfg's traditional I/O interface; the choices are in fwcfg.h. */
#include "dev/fwcfg.h"
#include "lib/print.h"
#include "lib/string.h"

/* Everything fwcfg_init can add, at the largest config: the items' fixed data
 * plus two directory entries and a full e820 table. */
_Static_assert(4 + 4 + 16 + 8 + 2 + 2 + 2 + 2 + 5 * 4 + 4 + (4 + 2 * FW_CFG_FILE_ENTRY_LEN) +
		       FWCFG_E820_MAX * FW_CFG_E820_ENTRY_LEN <= FWCFG_DATA_MAX,
	       "fwcfg data array too small");

/* An item of len bytes; returns its data (zeroed). */
static uint8_t *add(struct fwcfg *f, uint16_t key, uint16_t len)
{
	struct fwcfg_item *it = &f->items[f->nitems++];

	it->key = key;
	it->off = f->used;
	it->len = len;
	f->used = (uint16_t)(f->used + len);
	return f->data + it->off;
}

static void le(uint8_t *p, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void be(uint8_t *p, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
}

static void add_int(struct fwcfg *f, uint16_t key, uint64_t v, unsigned n)
{
	le(add(f, key, (uint16_t)n), v, n);
}

static void add_u32_if(struct fwcfg *f, uint16_t key, uint32_t v)
{
	if (v)
		add_int(f, key, v, 4);
}

void fwcfg_init(struct fwcfg *f, const struct fwcfg_config *c)
{
	unsigned cpus = c->cpus ? c->cpus : 1;
	unsigned max_cpus = c->max_cpus > cpus ? c->max_cpus : cpus;
	unsigned n820 = c->e820 ? c->e820_count : 0;

	memset(f, 0, sizeof(*f));
	f->cur = -1;
	if (n820 > FWCFG_E820_MAX)
		n820 = FWCFG_E820_MAX;

	memcpy(add(f, FW_CFG_SIGNATURE, 4), "QEMU", 4);
	add_int(f, FW_CFG_ID, FW_CFG_ID_TRADITIONAL, 4);
	add(f, FW_CFG_UUID, 16);
	add_int(f, FW_CFG_RAM_SIZE, c->ram_bytes, 8);
	add_int(f, FW_CFG_NOGRAPHIC, c->nographic, 2);
	add_int(f, FW_CFG_NB_CPUS, cpus, 2);
	add_int(f, FW_CFG_BOOT_MENU, 0, 2);
	add_int(f, FW_CFG_MAX_CPUS, max_cpus, 2);
	add_u32_if(f, FW_CFG_KERNEL_ENTRY, c->kernel_entry);
	add_u32_if(f, FW_CFG_KERNEL_ADDR, c->kernel_addr);
	add_u32_if(f, FW_CFG_KERNEL_SIZE, c->kernel_size);
	add_u32_if(f, FW_CFG_INITRD_ADDR, c->mbi_addr);
	add_u32_if(f, FW_CFG_INITRD_SIZE, c->mbi_size);
	add_int(f, FW_CFG_IRQ0_OVERRIDE, 1, 4);

	/* Files in name order: "bootorder" < "etc/e820". */
	static const char *const names[] = { "bootorder", "etc/e820" };
	uint16_t sizes[] = { 0, (uint16_t)(n820 * FW_CFG_E820_ENTRY_LEN) };
	uint8_t *dir = add(f, FW_CFG_FILE_DIR, 4 + 2 * FW_CFG_FILE_ENTRY_LEN);
	be(dir, 2, 4);
	for (unsigned i = 0; i < 2; i++) {
		uint8_t *e = dir + 4 + i * FW_CFG_FILE_ENTRY_LEN;
		be(e, sizes[i], 4);
		be(e + 4, FW_CFG_FILE_FIRST + i, 2);
		memcpy(e + 8, names[i], strlen(names[i]));
	}
	add(f, FW_CFG_FILE_FIRST + 0, 0);
	uint8_t *map = add(f, FW_CFG_FILE_FIRST + 1, sizes[1]);
	for (unsigned i = 0; i < n820; i++) {
		uint8_t *e = map + i * FW_CFG_E820_ENTRY_LEN;
		le(e, c->e820[i].addr, 8);
		le(e + 8, c->e820[i].len, 8);
		le(e + 16, c->e820[i].type, 4);
	}
}

void fwcfg_init_vm(struct fwcfg *f, uint64_t ram_bytes, unsigned cpus)
{
	struct e820_entry map[PC_E820_MAX];
	struct fwcfg_config c = { .ram_bytes = ram_bytes, .cpus = cpus, .e820 = map,
				  .e820_count = pc_e820(ram_bytes, map), .nographic = true };

	fwcfg_init(f, &c);
}

/* The index of the item a selector reads, or -1. */
static int find_item(const struct fwcfg *f, uint16_t key)
{
	uint16_t k = key & (uint16_t)~FW_CFG_WRITE_CHANNEL;

	for (unsigned i = 0; i < f->nitems; i++)
		if (f->items[i].key == k)
			return (int)i;
	return -1;
}

static void select_item(struct fwcfg *f, uint16_t key)
{
	f->select = key;
	f->offset = 0;
	f->cur = find_item(f, key);
}

uint32_t fwcfg_port_read(struct fwcfg *f, uint16_t port, unsigned size)
{
	if ((port != FWCFG_PORT_SEL && port != FWCFG_PORT_DATA) || size != 1 || f->cur < 0)
		return 0;
	const struct fwcfg_item *it = &f->items[f->cur];
	if (f->offset >= it->len)
		return 0;
	return f->data[it->off + f->offset++];
}

void fwcfg_port_write(struct fwcfg *f, uint16_t port, unsigned size, uint32_t val)
{
	/* Byte writes are data writes, ignored; the rest QEMU rejects. */
	if (port == FWCFG_PORT_SEL && size == 2)
		select_item(f, (uint16_t)val);
}


/* Saved: what the guest set, the selector as written and the offset its
 * reads reached. Not saved: the items, which the loading VM builds from its
 * own memory size and vCPU count (fwcfg_init_vm); the load finds the
 * selected item among them again. Checked: the offset lies within that
 * item in the loading VM (reads stop at its end; with no item selected
 * they do not advance, so the offset is 0). Any selector is one a guest can
 * write. */
static void fwcfg_fields(void *model, struct field_io *io)
{
	struct fwcfg *f = model;

	FIELD(io, f->select);
	FIELD(io, f->offset);
	if (io->load)
		f->cur = find_item(f, f->select);
}

static bool fwcfg_state_check(const void *model, const struct record_limits *lim, char *err,
			      size_t errlen)
{
	const struct fwcfg *f = model;
	struct fwcfg vm;
	int i;
	uint32_t len;

	fwcfg_init_vm(&vm, lim->mem_bytes, lim->nr_vcpus);
	i = find_item(&vm, f->select);
	len = i < 0 ? 0 : vm.items[i].len;
	if (f->offset > len) {
		ksnprintf(err, errlen, "offset %u is past the end of selector 0x%x's item (%u bytes here)",
			  f->offset, f->select, len);
		return false;
	}
	return true;
}

const struct record_type fwcfg_record = {
	.id = REC_FWCFG,
	.version = 1,
	.name = "fwcfg",
	.model_bytes = sizeof(struct fwcfg),
	.fields = fwcfg_fields,
	.check = fwcfg_state_check,
};
