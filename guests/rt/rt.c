/* The guests' runtime in C: multiboot information, serial port, exit and
 * hypercalls. */
#include "guests/rt/rt.h"
#include "virt/hypercall.h"

#define COM1 0x3f8
#define COM1_LSR (COM1 + 5)
#define LSR_THR_EMPTY 0x20
#define LSR_TX_EMPTY 0x40
#define DEBUG_EXIT_PORT 0xf4
#define BOCHS_SHUTDOWN_PORT 0x8900

/* The multiboot information structure as the loader lays it out. */
struct mb1_raw_info {
	uint32_t flags;
	uint32_t mem_lower;
	uint32_t mem_upper;
	uint32_t boot_device;
	uint32_t cmdline;
	uint32_t mods_count;
	uint32_t mods_addr;
	uint32_t syms[4];
	uint32_t mmap_length;
	uint32_t mmap_addr;
} __attribute__((packed));

#define MB1_INFO_MEM (1 << 0)
#define MB1_INFO_CMDLINE (1 << 2)
#define MB1_INFO_MMAP (1 << 6)

struct mb1_raw_mmap {
	uint32_t size;		/* of the rest of the entry: it starts at addr */
	uint64_t addr;
	uint64_t len;
	uint32_t type;
} __attribute__((packed));

#define CMDLINE_MAX 1024

static char cmdline[CMDLINE_MAX];
static char args[CMDLINE_MAX];
static struct mb1_mmap_entry mmap[RT_MMAP_MAX];
static struct mb1_info info;

static bool is_space(char c)
{
	return c == ' ' || c == '\t';
}

/* Copies the command line and splits off its first word (QEMU passes
 * "KERNEL-PATH ARGS"), so that a guest sees the same arguments bare and
 * under sprig. */
static void parse_cmdline(const char *src)
{
	size_t n = 0, a = 0;
	const char *p;

	while (src[n] && n < CMDLINE_MAX - 1) {
		cmdline[n] = src[n];
		n++;
	}
	cmdline[n] = '\0';

	p = cmdline;
	while (is_space(*p))
		p++;
	while (*p && !is_space(*p))
		p++;
	while (is_space(*p))
		p++;
	while (*p)
		args[a++] = *p++;
	while (a > 0 && is_space(args[a - 1]))
		a--;
	args[a] = '\0';
}

static void parse_info(const struct mb1_raw_info *raw)
{
	info.cmdline = cmdline;
	info.args = args;
	info.mmap = mmap;
	if (raw->flags & MB1_INFO_CMDLINE && raw->cmdline)
		parse_cmdline((const char *)(uintptr_t)raw->cmdline);
	if (raw->flags & MB1_INFO_MEM) {
		info.has_mem = true;
		info.mem_lower = raw->mem_lower;
		info.mem_upper = raw->mem_upper;
	}
	if (raw->flags & MB1_INFO_MMAP) {
		uintptr_t p = raw->mmap_addr;
		uintptr_t end = p + raw->mmap_length;

		while (p < end && info.mmap_count < RT_MMAP_MAX) {
			const struct mb1_raw_mmap *e = (const void *)p;

			mmap[info.mmap_count].addr = e->addr;
			mmap[info.mmap_count].len = e->len;
			mmap[info.mmap_count].type = e->type;
			info.mmap_count++;
			p += e->size + sizeof(e->size);
		}
	}
}

__attribute__((noreturn)) void rt_start(uint32_t raw_info);

void rt_start(uint32_t raw_info)
{
	parse_info((const struct mb1_raw_info *)(uintptr_t)raw_info);
	exit(main(&info));
}

void putchar_serial(char c)
{
	while (!(inb(COM1_LSR) & LSR_THR_EMPTY))
		;
	outb(COM1, c);
}

void serial_setup(void)
{
	outb(COM1 + 1, 0x00);	/* no UART interrupts */
	outb(COM1 + 3, 0x80);	/* DLAB: the divisor follows */
	outb(COM1 + 0, 0x01);	/* 115200 baud */
	outb(COM1 + 1, 0x00);
	outb(COM1 + 3, 0x03);	/* 8N1, DLAB off */
	outb(COM1 + 2, 0x00);	/* no FIFOs */
}

static bool sprig_known, sprig_present, vendor_amd;

static void detect_hypervisor(void)
{
	uint32_t a, b, c, d;

	if (sprig_known)
		return;
	sprig_known = true;

	cpuid(0, 0, &a, &b, &c, &d);
	/* "AuthenticAMD" and Hygon's "HygonGenuine" use VMMCALL. */
	vendor_amd = (b == 0x68747541 && d == 0x69746e65 && c == 0x444d4163) ||
		     (b == 0x6f677948 && d == 0x6e65476e && c == 0x656e6975);

	/* "sprig-hv" and four NULs in EBX, ECX, EDX. */
	cpuid(0x40000000, 0, &a, &b, &c, &d);
	sprig_present = b == 0x69727073 && c == 0x76682d67 && d == 0;
}

bool under_sprig(void)
{
	detect_hypervisor();
	return sprig_present;
}

long hypercall(unsigned long nr, unsigned long a1, unsigned long a2,
	       unsigned long a3, unsigned long a4)
{
	long ret;

	detect_hypervisor();
	if (vendor_amd)
		asm volatile("vmmcall"
			     : "=a"(ret)
			     : "a"(nr), "b"(a1), "c"(a2), "d"(a3), "S"(a4)
			     : "memory");
	else
		asm volatile("vmcall"
			     : "=a"(ret)
			     : "a"(nr), "b"(a1), "c"(a2), "d"(a3), "S"(a4)
			     : "memory");
	return ret;
}

void exit(int status)
{
	if (under_sprig())
		hypercall(HC_EXIT, (unsigned int)status, 0, 0, 0);
	outb(DEBUG_EXIT_PORT, status);
	/* Still here: no isa-debug-exit (Bochs). Bochs ends on "Shutdown"
	 * written to port 0x8900; elsewhere the writes go nowhere. */
	for (int i = 0; i < 1000000 && !(inb(COM1_LSR) & LSR_TX_EMPTY); i++)
		;	/* the last character out of the UART first */
	for (const char *s = "Shutdown"; *s; s++)
		outb(BOCHS_SHUTDOWN_PORT, *s);
	for (;;)
		asm volatile("cli; hlt");
}

/* Parses a decimal or 0x-prefixed hexadecimal number that ends at a space or
 * the end of the string. */
static bool parse_ulong(const char *s, unsigned long *out)
{
	unsigned long v = 0, base = 10;
	const char *start;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	start = s;
	for (; *s && !is_space(*s); s++) {
		unsigned long digit;

		if (*s >= '0' && *s <= '9')
			digit = *s - '0';
		else if (base == 16 && *s >= 'a' && *s <= 'f')
			digit = *s - 'a' + 10;
		else if (base == 16 && *s >= 'A' && *s <= 'F')
			digit = *s - 'A' + 10;
		else
			return false;
		v = v * base + digit;
	}
	if (s == start)
		return false;
	*out = v;
	return true;
}

unsigned long arg_ulong(const struct mb1_info *mbi, const char *key,
			unsigned long fallback)
{
	const char *p = mbi->args;

	while (*p) {
		const char *k = key;
		const char *q = p;
		unsigned long v;

		while (*k && *q == *k) {
			k++;
			q++;
		}
		if (!*k && *q == '=' && parse_ulong(q + 1, &v))
			return v;
		while (*p && !is_space(*p))
			p++;
		while (is_space(*p))
			p++;
	}
	return fallback;
}

bool first_arg_is(const struct mb1_info *mbi, const char *word)
{
	const char *p = mbi->args;

	while (*word && *p == *word) {
		word++;
		p++;
	}
	return !*word && (!*p || is_space(*p));
}

bool playground_fits(const struct mb1_info *mbi, uint64_t len)
{
	uint64_t ram_end = MIB + (uint64_t)mbi->mem_upper * KIB;

	return mbi->has_mem && GUEST_PLAYGROUND + len <= ram_end;
}
