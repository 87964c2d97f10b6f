/* The kernel's console, registered with lib/print.c: kprintf's output goes
 * to the UART and the screen alike ("\n" becomes "\r\n" on the UART only).
 *
 * Every CPU prints: the console lock keeps a kprintf's output whole. A CPU
 * may take it again while it holds it (kprintf's writes, an interrupt
 * handler's report), and holds it with interrupts off.
 *
 * The choice of console needs the command line and the ACPI tables, which
 * come after the first lines are printed; those wait in a buffer. */
#include "arch/x86/console.h"
#include "arch/x86/console_select.h"
#include "arch/x86/cpu.h"
#include "arch/x86/fbcon.h"
#include "arch/x86/lock.h"
#include "arch/x86/percpu.h"
#include "arch/x86/regs.h"
#include "arch/x86/uart.h"
#include "arch/x86/vga.h"
#include "lib/print.h"
#include "lib/string.h"

/* How long an exception report waits for another CPU's line to end: longer
 * than a 128-byte line takes at 115200 baud (11 ms). */
#define REPORT_WAIT_SPINS 10000000u
#define NO_OWNER (-1)
/* Early output: a boot prints a few hundred bytes before the choice. */
#define EARLY_MAX 4096

static struct spinlock console;
static int console_owner = NO_OWNER; /* the CPU that holds the lock */
static bool started;
static char early[EARLY_MAX];
static size_t early_used, early_dropped;

static void write_out(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		uart_putc(s[i]);
	vga_write(s, n);
	fbcon_write(s, n);
}

static void con_lock(void)
{
	struct percpu *pc = this_cpu();
	uint64_t flags = read_rflags();

	cli();
	if (pc->console_depth++)
		return;
	pc->console_flags = flags;
	/* Checked by hand: a report may take the lock over (below). */
	lockcheck_acquire(&console, LOCK_CONSOLE, LOCK_EXCLUSIVE, false);
	spin_lock(&console);
	__atomic_store_n(&console_owner, (int)pc->id, __ATOMIC_RELAXED);
}

static void con_unlock(void)
{
	struct percpu *pc = this_cpu();

	if (--pc->console_depth)
		return;
	lockcheck_release(&console);
	/* A report may have taken the lock from this CPU: then it is not ours
	 * to release. */
	if (__atomic_load_n(&console_owner, __ATOMIC_RELAXED) == (int)pc->id) {
		__atomic_store_n(&console_owner, NO_OWNER, __ATOMIC_RELAXED);
		spin_unlock(&console);
	}
	if (pc->console_flags & RFLAGS_IF)
		sti();
}

static void con_write(const char *s, size_t n)
{
	con_lock();
	if (started) {
		write_out(s, n);
	} else {
		size_t k = n < EARLY_MAX - early_used ? n : EARLY_MAX - early_used;
		memcpy(early + early_used, s, k);
		early_used += k;
		early_dropped += n - k;
	}
	con_unlock();
}

static const struct console x86_console = { con_write, con_lock, con_unlock };

void console_init(void)
{
	register_console(&x86_console);
}

void console_start(void)
{
	con_lock();
	started = true;
	write_out(early, early_used);
	con_unlock();
	if (early_dropped)
		kprintf("console: %zu bytes of early output dropped\n", early_dropped);
}

bool console_started(void)
{
	return started;
}

void console_lock_for_report(void)
{
	struct percpu *pc = this_cpu();

	cli();
	if (__atomic_load_n(&console_owner, __ATOMIC_RELAXED) != (int)pc->id) {
		uint32_t spins = 0;

		while (!spin_trylock(&console) && ++spins < REPORT_WAIT_SPINS)
			cpu_relax();
		__atomic_store_n(&console_owner, (int)pc->id, __ATOMIC_RELAXED);
	}
	pc->console_depth = 1;
	pc->console_flags = 0;
	if (!started)
		console_select_fallback();
}

void console_unlock_after_report(void)
{
	this_cpu()->console_depth = 0;
	__atomic_store_n(&console_owner, NO_OWNER, __ATOMIC_RELAXED);
	spin_unlock(&console);
}
