/* console=auto tries the SPCR's port (when it names an I/O-port 16550), then
 * COM1, then COM2, and takes the first that passes the presence check; an
 * explicit port that fails it falls back to auto. The screen mirror is the
 * framebuffer GRUB describes (EGA text or RGB), else VGA text at 0xB8000 when
 * the boot was BIOS (GRUB gives no tag for the text mode it leaves). */
#include "arch/x86/console_select.h"
#include "arch/x86/acpi.h"
#include "arch/x86/console.h"
#include "arch/x86/fbcon.h"
#include "arch/x86/uart.h"
#include "arch/x86/vga.h"
#include "lib/parse.h"
#include "lib/print.h"
#include "lib/string.h"

#define DEFAULT_BAUD 115200
#define VGA_TEXT_PA 0xb8000
#define VGA_TEXT_COLS 80
#define VGA_TEXT_ROWS 25

enum console_kind { CONSOLE_AUTO, CONSOLE_NONE, CONSOLE_PORT };

struct console_request {
	enum console_kind kind;
	uint16_t port;
	uint32_t baud;
};

/* Why the UART was chosen, as it grows: "auto: no ACPI SPCR; com1: ...". */
struct reason {
	char text[192];
	size_t used;
};

static void note(struct reason *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct reason *r, const char *fmt, ...)
{
	va_list ap;

	if (r->used >= sizeof(r->text))
		return;
	if (r->used)
		r->used += ksnprintf(r->text + r->used, sizeof(r->text) - r->used, "; ");
	if (r->used >= sizeof(r->text))
		return;
	va_start(ap, fmt);
	r->used += kvsnprintf(r->text + r->used, sizeof(r->text) - r->used, fmt, ap);
	va_end(ap);
}

static const char *port_name(uint16_t port, char *buf, size_t len)
{
	if (port == COM1_PORT)
		return "com1";
	if (port == COM2_PORT)
		return "com2";
	ksnprintf(buf, len, "0x%x", port);
	return buf;
}

static bool parse_request(const char *value, struct console_request *req)
{
	char name[24];
	const char *comma = strchr(value, ',');
	size_t n = comma ? (size_t)(comma - value) : strlen(value);
	uint64_t v;

	if (n >= sizeof(name))
		return false;
	memcpy(name, value, n);
	name[n] = '\0';
	req->baud = DEFAULT_BAUD;
	if (strcmp(name, "auto") == 0 || strcmp(name, "none") == 0) {
		req->kind = name[0] == 'a' ? CONSOLE_AUTO : CONSOLE_NONE;
		return !comma;
	}
	req->kind = CONSOLE_PORT;
	if (strcmp(name, "com1") == 0)
		req->port = COM1_PORT;
	else if (strcmp(name, "com2") == 0)
		req->port = COM2_PORT;
	else if (strncmp(name, "0x", 2) == 0 && parse_u64_in(name, 1, 0xfff8, &v))
		req->port = (uint16_t)v;
	else
		return false;
	if (comma) {
		if (!parse_u64_in(comma + 1, 1, UINT32_MAX, &v) || !uart_baud_valid((uint32_t)v))
			return false;
		req->baud = (uint32_t)v;
	}
	return true;
}

/* Open the UART at port if it answers; else note why not. */
static bool try_port(uint16_t port, uint32_t baud, struct reason *r, const char *source)
{
	char buf[8];
	const char *failed = uart_probe(port);

	if (failed) {
		note(r, "%s %s: no UART (%s check)", source, port_name(port, buf, sizeof(buf)), failed);
		return false;
	}
	uart_open(port, baud);
	note(r, "%s %s answered", source, port_name(port, buf, sizeof(buf)));
	return true;
}

static bool select_auto(const struct acpi_info *tables, struct reason *r, uint16_t *port,
			uint32_t *baud)
{
	static const uint16_t legacy[] = { COM1_PORT, COM2_PORT };
	uint16_t spcr = tables ? acpi_spcr_io_16550(tables) : 0;

	if (spcr) {
		*port = spcr;
		*baud = tables->spcr_baud;
		if (try_port(spcr, tables->spcr_baud, r, "ACPI SPCR"))
			return true;
	} else if (tables && tables->has_spcr) {
		note(r, "ACPI SPCR names no I/O-port 16550 (interface 0x%x, space %u)",
		     tables->spcr_interface, tables->spcr_base.space_id);
	} else {
		note(r, "no ACPI SPCR");
	}
	for (size_t i = 0; i < sizeof(legacy) / sizeof(legacy[0]); i++) {
		*port = legacy[i];
		*baud = DEFAULT_BAUD;
		if (try_port(legacy[i], DEFAULT_BAUD, r, "legacy"))
			return true;
	}
	return false;
}

static void report_uart(uint16_t port, uint32_t baud, const struct reason *r)
{
	char buf[8];

	if (!uart_in_use()) {
		kprintf("console: serial none (%s): run= is run, then sprig powers off\n", r->text);
		return;
	}
	if (baud)
		kprintf("console: serial %s at 0x%x, %u baud (%s)\n", port_name(port, buf, sizeof(buf)),
			port, baud, r->text);
	else
		kprintf("console: serial %s at 0x%x, the firmware's baud rate (%s)\n",
			port_name(port, buf, sizeof(buf)), port, r->text);
}

/* Set the screen mirror up; the line that says what it is, in line. */
static void select_screen(const struct boot_framebuffer *fb, bool bios, uint64_t mapped_top,
			  char *line, size_t len)
{
	const char *why;

	if (!fb->present) {
		if (!bios) {
			ksnprintf(line, len, "none (a UEFI boot without a framebuffer)");
			return;
		}
		vga_init(VGA_TEXT_PA, VGA_TEXT_COLS, VGA_TEXT_ROWS);
		ksnprintf(line, len, "VGA text %ux%u at 0x%x (a BIOS boot)", VGA_TEXT_COLS,
			  VGA_TEXT_ROWS, VGA_TEXT_PA);
		return;
	}
	if (fb->addr + (uint64_t)fb->pitch * fb->height > mapped_top) {
		ksnprintf(line, len, "none (the framebuffer at 0x%llx lies outside the direct map)",
			  (unsigned long long)fb->addr);
		return;
	}
	switch (fb->type) {
	case BOOT_FB_EGA_TEXT:
		vga_init(fb->addr, fb->width, fb->height);
		ksnprintf(line, len, "VGA text %ux%u at 0x%llx (GRUB's EGA text framebuffer)",
			  fb->width, fb->height, (unsigned long long)fb->addr);
		return;
	case BOOT_FB_RGB:
		if (!fbcon_init(fb, &why)) {
			ksnprintf(line, len, "none (framebuffer %ux%u, %u bpp: %s)", fb->width,
				  fb->height, fb->bpp, why);
			return;
		}
		ksnprintf(line, len, "framebuffer %ux%u, %u bpp at 0x%llx, %ux%u characters",
			  fb->width, fb->height, fb->bpp, (unsigned long long)fb->addr, fbcon_cols(),
			  fbcon_rows());
		return;
	default:
		ksnprintf(line, len, "none (an indexed-colour framebuffer)");
		return;
	}
}

void console_select(const char *value, const struct boot_framebuffer *fb, bool bios,
		    const struct acpi_info *tables, uint64_t mapped_top)
{
	struct console_request req;
	struct reason r = { .used = 0 };
	bool bad = !parse_request(value, &req);
	uint16_t port = 0;
	uint32_t baud = 0;
	char screen[128];

	r.text[0] = '\0';
	if (bad) {
		req.kind = CONSOLE_AUTO;
		note(&r, "console=%s is not %s, so auto", value, CONSOLE_VALUES);
	}
	if (req.kind == CONSOLE_NONE) {
		note(&r, "console=none");
	} else if (req.kind == CONSOLE_PORT) {
		port = req.port;
		baud = req.baud;
		if (!try_port(port, baud, &r, "requested")) {
			note(&r, "so auto");
			select_auto(tables, &r, &port, &baud);
		}
	} else {
		if (!bad)
			note(&r, "auto");
		select_auto(tables, &r, &port, &baud);
	}
	select_screen(fb, bios, mapped_top, screen, sizeof(screen));
	console_start();
	if (bad)
		kprintf("console: console=%s is not %s; using auto\n", value, CONSOLE_VALUES);
	report_uart(port, baud, &r);
	kprintf("console: screen %s\n", screen);
}

void console_select_fallback(void)
{
	struct reason r = { .used = 0 };
	uint16_t port = 0;
	uint32_t baud = 0;

	r.text[0] = '\0';
	note(&r, "fallback before the console was chosen");
	select_auto(NULL, &r, &port, &baud);
	console_start();
	report_uart(port, baud, &r);
}
