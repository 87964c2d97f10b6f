/* ACPI tables, read in place. Fields are fetched with memcpy: the tables make
 * no alignment promises. A table is used only after its header length and its
 * checksum are found good, and every field or entry read from it lies inside
 * the length it declares. */
#include "arch/x86/acpi.h"
#include "arch/x86/direct_map.h"
#include "lib/bytes.h"
#include "lib/print.h"
#include "lib/string.h"

#define RSDP_V1_LEN 20
#define RSDP_V2_LEN 36
#define RSDP_MAX_LEN 4096
#define SDT_HEADER_LEN 36
/* Larger than any real DSDT; keeps a corrupt length from sweeping memory. */
#define SDT_MAX_LEN (16u << 20)

/* MADT */
#define MADT_ENTRIES 44
#define MADT_FLAG_PCAT_COMPAT (1u << 0)
#define MADT_LAPIC 0
#define MADT_IOAPIC 1
#define MADT_LAPIC_ADDR_OVERRIDE 5
#define MADT_X2APIC 9
#define MADT_CPU_ENABLED (1u << 0)
#define MADT_CPU_ONLINE_CAPABLE (1u << 1)

/* FADT field offsets (ACPI 6.5, table 5.9). */
#define FADT_DSDT 40
#define FADT_SMI_CMD 48
#define FADT_ACPI_ENABLE 52
#define FADT_PM1A_EVT_BLK 56
#define FADT_PM1B_EVT_BLK 60
#define FADT_PM1A_CNT_BLK 64
#define FADT_PM1B_CNT_BLK 68
#define FADT_PM_TMR_BLK 76
#define FADT_PM_TMR_LEN 91
#define FADT_FLAGS 112
#define FADT_RESET_REG 116
#define FADT_RESET_VALUE 128
#define FADT_X_DSDT 140
#define FADT_X_PM1A_EVT_BLK 148
#define FADT_X_PM1B_EVT_BLK 160
#define FADT_X_PM1A_CNT_BLK 172
#define FADT_X_PM1B_CNT_BLK 184
#define FADT_X_PM_TMR_BLK 208
#define GAS_LEN 12
#define FADT_FLAG_TMR_VAL_EXT (1u << 8)
#define FADT_FLAG_RESET_REG_SUP (1u << 10)

/* SPCR (Microsoft's Serial Port Console Redirection table, revision 2-4). */
#define SPCR_INTERFACE 36
#define SPCR_BASE 40
#define SPCR_BAUD 58
#define SPCR_PRECISE_BAUD 80
#define SPCR_REV_PRECISE_BAUD 4
#define SPCR_16550 0x00
#define SPCR_16450 0x01
#define SPCR_16550_GAS 0x12
/* SDT header: OEM ID and OEM table ID. */
#define SDT_OEM_ID 10
#define SDT_OEM_TABLE_ID 16

/* AML */
#define AML_ZERO_OP 0x00
#define AML_ONE_OP 0x01
#define AML_BYTE_PREFIX 0x0a
#define AML_WORD_PREFIX 0x0b
#define AML_DWORD_PREFIX 0x0c
#define AML_PACKAGE_OP 0x12

struct acpi_info acpi;

static uint8_t rd8(const uint8_t *p) { return *p; }

static uint8_t checksum(const uint8_t *p, uint64_t len)
{
	uint8_t s = 0;

	while (len--)
		s += *p++;
	return s;
}

static void sig_string(const uint8_t *p, char out[5])
{
	for (int i = 0; i < 4; i++)
		out[i] = p[i] >= 0x20 && p[i] < 0x7f ? (char)p[i] : '?';
	out[4] = '\0';
}

/* The table at pa if its header and checksum are sound (and, when sig is
 * given, it carries that signature); NULL with a message otherwise. */
static const uint8_t *table_at(uint64_t pa, const char *sig)
{
	const uint8_t *t = pa_to_va(pa);
	char name[5];

	if (!pa) {
		kprintf("acpi: null %s pointer, skipped\n", sig ? sig : "table");
		return NULL;
	}
	sig_string(t, name);
	if (sig && memcmp(t, sig, 4) != 0) {
		kprintf("acpi: expected %s at 0x%llx, found \"%s\", skipped\n", sig,
			(unsigned long long)pa, name);
		return NULL;
	}
	uint32_t len = rd32(t + 4);
	if (len < SDT_HEADER_LEN || len > SDT_MAX_LEN) {
		kprintf("acpi: %s at 0x%llx: bad length %u, skipped\n", name,
			(unsigned long long)pa, len);
		return NULL;
	}
	if (checksum(t, len)) {
		kprintf("acpi: %s at 0x%llx: bad checksum, skipped\n", name,
			(unsigned long long)pa);
		return NULL;
	}
	return t;
}

static void add_cpu(struct acpi_info *info, uint32_t apic_id, uint32_t flags)
{
	if (!(flags & (MADT_CPU_ENABLED | MADT_CPU_ONLINE_CAPABLE)))
		return;
	/* Firmware may describe one processor by both entry types. */
	for (unsigned i = 0; i < info->cpu_ids_stored; i++)
		if (info->cpu_apic_ids[i] == apic_id)
			return;
	if (info->cpu_ids_stored < ACPI_MAX_CPUS) {
		info->cpu_apic_ids[info->cpu_ids_stored] = apic_id;
		info->cpu_online_capable_only[info->cpu_ids_stored] =
			!(flags & MADT_CPU_ENABLED);
		info->cpu_ids_stored++;
	}
	info->cpu_count++;
}

static void add_ioapic(struct acpi_info *info, uint32_t addr)
{
	if (info->ioapic_count < ACPI_MAX_IOAPICS)
		info->ioapic_addrs[info->ioapic_count] = addr;
	info->ioapic_count++;
}

static void parse_madt(struct acpi_info *info, const uint8_t *t)
{
	uint32_t len = rd32(t + 4);

	if (len < MADT_ENTRIES) {
		kprintf("acpi: MADT too short (%u bytes), skipped\n", len);
		return;
	}
	info->has_madt = true;
	info->lapic_addr = rd32(t + 36);
	info->pcat_compat = rd32(t + 40) & MADT_FLAG_PCAT_COMPAT;

	for (uint32_t off = MADT_ENTRIES; off + 2 <= len;) {
		const uint8_t *e = t + off;
		uint8_t type = e[0], elen = e[1];

		if (elen < 2 || elen > len - off) {
			kprintf("acpi: MADT entry type %u at offset %u has length %u, "
				"ignoring the rest\n", type, off, elen);
			break;
		}
		switch (type) {
		case MADT_LAPIC:
			/* APIC ID 0xff is the broadcast ID, never a processor's. */
			if (elen >= 8 && e[3] != 0xff)
				add_cpu(info, e[3], rd32(e + 4));
			break;
		case MADT_IOAPIC:
			if (elen >= 12)
				add_ioapic(info, rd32(e + 4));
			break;
		case MADT_LAPIC_ADDR_OVERRIDE:
			if (elen >= 12)
				info->lapic_addr = rd64(e + 4);
			break;
		case MADT_X2APIC:
			if (elen >= 16)
				add_cpu(info, rd32(e + 4), rd32(e + 8));
			break;
		}
		off += elen;
	}
}

static void read_gas(const uint8_t *p, struct acpi_gas *g)
{
	g->space_id = rd8(p);
	g->bit_width = rd8(p + 1);
	g->bit_offset = rd8(p + 2);
	g->access_size = rd8(p + 3);
	g->address = rd64(p + 4);
}

/* A FADT register block as an I/O port: the X_ field when present (the spec
 * says to ignore the legacy one then), unless it is not in I/O space, where
 * sprig can only use the legacy field. */
static uint16_t fadt_port(const uint8_t *t, uint32_t len, uint32_t legacy, uint32_t x_off)
{
	if (x_off + GAS_LEN <= len) {
		struct acpi_gas g;
		read_gas(t + x_off, &g);
		if (g.address && g.space_id == ACPI_SPACE_IO && g.address <= 0xffff)
			return (uint16_t)g.address;
		if (g.address && !legacy)
			kprintf("acpi: FADT register at offset %u in space %u at 0x%llx "
				"is not usable\n", x_off, g.space_id,
				(unsigned long long)g.address);
	}
	return legacy <= 0xffff ? (uint16_t)legacy : 0;
}

/* \_S5 in the definition block t (the DSDT or an SSDT), if none was found yet. */
static void find_s5_in(struct acpi_info *info, const uint8_t *t)
{
	if (info->has_s5 || !acpi_find_s5(t + SDT_HEADER_LEN, rd32(t + 4) - SDT_HEADER_LEN,
					  &info->slp_typa, &info->slp_typb))
		return;
	info->has_s5 = true;
	memcpy(info->s5_table, t, 4);
	info->s5_table[4] = '\0';
}

static void parse_dsdt(struct acpi_info *info)
{
	const uint8_t *t = table_at(info->dsdt, "DSDT");

	if (t)
		find_s5_in(info, t);
}

/* Firmware may define \_S5 in an SSDT rather than the DSDT (ACPI 6.5, 5.2.11.2:
 * the namespace is the DSDT and every SSDT together). */
static void parse_ssdts(struct acpi_info *info, const uint8_t *root)
{
	unsigned entry_size = info->root_is_xsdt ? 8 : 4;
	uint32_t n = (rd32(root + 4) - SDT_HEADER_LEN) / entry_size;

	for (uint32_t i = 0; i < n && !info->has_s5; i++) {
		const uint8_t *e = root + SDT_HEADER_LEN + i * entry_size;
		uint64_t pa = info->root_is_xsdt ? rd64(e) : rd32(e);
		const uint8_t *t;

		if (pa && !memcmp(pa_to_va(pa), "SSDT", 4) && (t = table_at(pa, "SSDT")))
			find_s5_in(info, t);
	}
	if (!info->has_s5)
		kprintf("acpi: no \\_S5 package in the DSDT or an SSDT\n");
}

bool acpi_header_is_emulator(const uint8_t *hdr)
{
	return !memcmp(hdr + SDT_OEM_ID, "BOCHS ", 6) && !memcmp(hdr + SDT_OEM_TABLE_ID, "BXPC", 4);
}

static void parse_fadt(struct acpi_info *info, const uint8_t *t)
{
	uint32_t len = rd32(t + 4);
	uint32_t flags = FADT_FLAGS + 4 <= len ? rd32(t + FADT_FLAGS) : 0;

	if (len < FADT_PM1B_CNT_BLK + 4) {
		kprintf("acpi: FADT too short (%u bytes), skipped\n", len);
		return;
	}
	info->has_fadt = true;
	info->smi_cmd = rd32(t + FADT_SMI_CMD) <= 0xffff ? (uint16_t)rd32(t + FADT_SMI_CMD) : 0;
	info->acpi_enable = rd8(t + FADT_ACPI_ENABLE);
	info->pm1a_cnt = fadt_port(t, len, rd32(t + FADT_PM1A_CNT_BLK), FADT_X_PM1A_CNT_BLK);
	info->pm1b_cnt = fadt_port(t, len, rd32(t + FADT_PM1B_CNT_BLK), FADT_X_PM1B_CNT_BLK);
	info->pm1a_evt = fadt_port(t, len, rd32(t + FADT_PM1A_EVT_BLK), FADT_X_PM1A_EVT_BLK);
	info->pm1b_evt = fadt_port(t, len, rd32(t + FADT_PM1B_EVT_BLK), FADT_X_PM1B_EVT_BLK);
	info->emulator |= acpi_header_is_emulator(t);
	/* The legacy PM timer block is valid only with PM_TMR_LEN 4. */
	bool tmr_legacy = len > FADT_PM_TMR_LEN && rd8(t + FADT_PM_TMR_LEN) == 4;
	info->pm_tmr_port = fadt_port(t, len, tmr_legacy ? rd32(t + FADT_PM_TMR_BLK) : 0,
				      FADT_X_PM_TMR_BLK);
	info->pm_tmr_32bit = flags & FADT_FLAG_TMR_VAL_EXT;

	if ((flags & FADT_FLAG_RESET_REG_SUP) && FADT_RESET_VALUE + 1 <= len) {
		read_gas(t + FADT_RESET_REG, &info->reset_reg);
		info->reset_value = rd8(t + FADT_RESET_VALUE);
		info->has_reset_reg = info->reset_reg.address != 0;
	}

	uint64_t x_dsdt = FADT_X_DSDT + 8 <= len ? rd64(t + FADT_X_DSDT) : 0;
	info->dsdt = x_dsdt ? x_dsdt : rd32(t + FADT_DSDT);
	parse_dsdt(info);
}

/* The configured baud rate's codes; 0 is "as the firmware left it". */
static uint32_t spcr_baud(uint8_t code)
{
	switch (code) {
	case 3: return 9600;
	case 4: return 19200;
	case 6: return 57600;
	case 7: return 115200;
	default: return 0;
	}
}

static void parse_spcr(struct acpi_info *info, const uint8_t *t)
{
	uint32_t len = rd32(t + 4);

	if (len < SPCR_BAUD + 1) {
		kprintf("acpi: SPCR too short (%u bytes), skipped\n", len);
		return;
	}
	info->has_spcr = true;
	info->spcr_interface = rd8(t + SPCR_INTERFACE);
	read_gas(t + SPCR_BASE, &info->spcr_base);
	info->spcr_baud = spcr_baud(rd8(t + SPCR_BAUD));
	if (rd8(t + SPCR_BAUD) && !info->spcr_baud)
		kprintf("acpi: SPCR baud rate code %u unknown; keeping the port's rate\n",
			rd8(t + SPCR_BAUD));
	/* Revision 4's precise rate, when given, overrides the code. */
	if (rd8(t + 8) >= SPCR_REV_PRECISE_BAUD && len >= SPCR_PRECISE_BAUD + 4 &&
	    rd32(t + SPCR_PRECISE_BAUD))
		info->spcr_baud = rd32(t + SPCR_PRECISE_BAUD);
}

uint16_t acpi_spcr_io_16550(const struct acpi_info *info)
{
	const struct acpi_gas *g = &info->spcr_base;

	if (!info->has_spcr || g->space_id != ACPI_SPACE_IO || !g->address || g->address > 0xffff)
		return 0;
	switch (info->spcr_interface) {
	case SPCR_16550:
	case SPCR_16450:
	case SPCR_16550_GAS:
		return (uint16_t)g->address;
	default:
		return 0;
	}
}

static bool rsdp_valid(const uint8_t *p)
{
	return memcmp(p, "RSD PTR ", 8) == 0 && checksum(p, RSDP_V1_LEN) == 0;
}

/* The root table to use: the XSDT when the RSDP (revision 2 or later, with a
 * good extended checksum) has one and it is sound, else the RSDT. */
static const uint8_t *find_root(struct acpi_info *info, const uint8_t *rsdp)
{
	uint32_t rsdt = rd32(rsdp + 16);
	const uint8_t *t;

	if (info->rsdp_revision >= 2) {
		uint32_t len = rd32(rsdp + 20);
		if (len < RSDP_V2_LEN || len > RSDP_MAX_LEN || checksum(rsdp, len))
			kprintf("acpi: RSDP extended part invalid (length %u), using the RSDT\n",
				len);
		else if (rd64(rsdp + 24) && (t = table_at(rd64(rsdp + 24), "XSDT"))) {
			info->root_is_xsdt = true;
			info->root_table = rd64(rsdp + 24);
			return t;
		}
	}
	if (!rsdt) {
		kprintf("acpi: no usable XSDT and no RSDT\n");
		return NULL;
	}
	info->root_table = rsdt;
	return table_at(rsdt, "RSDT");
}

bool acpi_parse(uint64_t rsdp_pa, struct acpi_info *info)
{
	const uint8_t *rsdp = pa_to_va(rsdp_pa);

	memset(info, 0, sizeof(*info));
	if (!rsdp_pa || !rsdp_valid(rsdp)) {
		kprintf("acpi: no valid RSDP at 0x%llx\n", (unsigned long long)rsdp_pa);
		return false;
	}
	info->rsdp_revision = rsdp[15];
	memcpy(info->oem_id, rsdp + 9, 6);

	const uint8_t *root = find_root(info, rsdp);
	if (!root)
		return false;
	info->valid = true;
	info->emulator = acpi_header_is_emulator(root);

	unsigned entry_size = info->root_is_xsdt ? 8 : 4;
	uint32_t n = (rd32(root + 4) - SDT_HEADER_LEN) / entry_size;
	for (uint32_t i = 0; i < n; i++) {
		const uint8_t *e = root + SDT_HEADER_LEN + i * entry_size;
		const uint8_t *t = table_at(info->root_is_xsdt ? rd64(e) : rd32(e), NULL);

		if (!t)
			continue;
		if (!memcmp(t, "APIC", 4) && !info->has_madt)
			parse_madt(info, t);
		else if (!memcmp(t, "FACP", 4) && !info->has_fadt)
			parse_fadt(info, t);
		else if (!memcmp(t, "SPCR", 4) && !info->has_spcr)
			parse_spcr(info, t);
	}
	if (info->has_fadt)
		parse_ssdts(info, root);
	if (!info->has_madt)
		kprintf("acpi: no MADT\n");
	if (!info->has_fadt)
		kprintf("acpi: no FADT\n");
	return true;
}

bool acpi_init(uint64_t rsdp_pa)
{
	bool ok = acpi_parse(rsdp_pa, &acpi);

	if (acpi.emulator)
		kprintf("acpi: QEMU's or Bochs' tables (BOCHS/BXPC): their exit ports may be used\n");
	return ok;
}

unsigned acpi_cpu_count(void)
{
	return acpi.has_madt && acpi.cpu_count ? acpi.cpu_count : 1;
}

uint64_t acpi_find_rsdp(uint64_t start, uint64_t len)
{
	uint64_t end = start + len;

	for (uint64_t pa = (start + 15) & ~15ull; pa + RSDP_V1_LEN <= end; pa += 16)
		if (rsdp_valid(pa_to_va(pa)))
			return pa;
	return 0;
}

/* One package element that is an integer constant; advances *p. */
static bool aml_byte_const(const uint8_t *aml, uint64_t end, uint64_t *p, uint8_t *out)
{
	if (*p >= end)
		return false;
	switch (aml[*p]) {
	case AML_ZERO_OP:
	case AML_ONE_OP:
		*out = aml[*p];
		*p += 1;
		return true;
	case AML_BYTE_PREFIX:
	case AML_WORD_PREFIX:
	case AML_DWORD_PREFIX: {
		/* Sleep types are 3-bit values; wider encodings still carry them. */
		uint64_t size = aml[*p] == AML_BYTE_PREFIX ? 1 : aml[*p] == AML_WORD_PREFIX ? 2 : 4;
		if (end - *p < 1 + size)
			return false;
		*out = aml[*p + 1];
		*p += 1 + size;
		return true;
	}
	default:
		return false;
	}
}

/* Decode the package that starts at aml[p] (the PackageOp). */
static bool s5_package(const uint8_t *aml, uint64_t len, uint64_t p, uint8_t *a, uint8_t *b)
{
	if (p >= len || aml[p] != AML_PACKAGE_OP)
		return false;
	uint64_t pkg_start = ++p;
	if (p >= len)
		return false;
	/* PkgLength: bits 7:6 of the lead byte count the bytes that follow. */
	unsigned follow = aml[p] >> 6;
	uint64_t pkg_len = follow ? aml[p] & 0x0f : aml[p] & 0x3f;
	if (len - p < 1 + follow)
		return false;
	for (unsigned i = 0; i < follow; i++)
		pkg_len |= (uint64_t)aml[p + 1 + i] << (4 + 8 * i);
	p += 1 + follow;
	if (pkg_len > len - pkg_start)
		return false;
	uint64_t end = pkg_start + pkg_len;
	if (p >= end || aml[p] < 2) /* NumElements */
		return false;
	p++;
	return aml_byte_const(aml, end, &p, a) && aml_byte_const(aml, end, &p, b);
}

bool acpi_find_s5(const uint8_t *aml, uint64_t len, uint8_t *slp_typa, uint8_t *slp_typb)
{
	for (uint64_t i = 0; i + 4 <= len; i++)
		if (!memcmp(aml + i, "_S5_", 4) &&
		    s5_package(aml, len, i + 4, slp_typa, slp_typb))
			return true;
	return false;
}

static void print_gas(const struct acpi_gas *g)
{
	static const char *const spaces[] = { "mem", "io", "pci" };

	if (g->space_id < 3)
		kprintf("%s", spaces[g->space_id]);
	else
		kprintf("space%u", g->space_id);
	kprintf(" 0x%llx", (unsigned long long)g->address);
}

void acpi_print(void)
{
	if (!acpi.valid) {
		kprintf("acpi: none\n");
		return;
	}
	kprintf("acpi: rsdp rev %u oem \"%s\" %s at 0x%llx%s\n", acpi.rsdp_revision,
		acpi.oem_id, acpi.root_is_xsdt ? "xsdt" : "rsdt",
		(unsigned long long)acpi.root_table, acpi.emulator ? " (emulator)" : "");
	if (acpi.has_madt)
		kprintf("acpi: madt lapic 0x%llx cpus %u io-apics %u pic %s\n",
			(unsigned long long)acpi.lapic_addr, acpi.cpu_count,
			acpi.ioapic_count, acpi.pcat_compat ? "yes" : "no");
	if (!acpi.has_fadt)
		return;
	kprintf("acpi: fadt pm1a_cnt 0x%x pm1b_cnt 0x%x pm_tmr 0x%x%s dsdt 0x%llx reset ",
		acpi.pm1a_cnt, acpi.pm1b_cnt, acpi.pm_tmr_port,
		acpi.pm_tmr_32bit ? " (32-bit)" : "", (unsigned long long)acpi.dsdt);
	if (acpi.has_reset_reg) {
		print_gas(&acpi.reset_reg);
		kprintf(" value 0x%x\n", acpi.reset_value);
	} else {
		kprintf("none\n");
	}
	if (acpi.has_s5)
		kprintf("acpi: s5 slp_typa %u slp_typb %u (%s)\n", acpi.slp_typa, acpi.slp_typb,
			acpi.s5_table);
	else
		kprintf("acpi: s5 none\n");
	if (acpi.has_spcr) {
		kprintf("acpi: spcr interface 0x%x ", acpi.spcr_interface);
		print_gas(&acpi.spcr_base);
		kprintf(" baud %u\n", acpi.spcr_baud);
	}
}
