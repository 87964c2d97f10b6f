/* kmain: the boot sequence on the bootstrap CPU, from the 32-bit entry's call to
 * the console prompt. */
#include "arch/x86/acpi.h"
#include "arch/x86/apic.h"
#include "arch/x86/console.h"
#include "arch/x86/console_select.h"
#include "arch/x86/cpu.h"
#include "arch/x86/cpuinfo.h"
#include "arch/x86/gdt.h"
#include "arch/x86/percpu.h"
#include "arch/x86/smp.h"
#include "arch/x86/trampoline.h"
#include "arch/x86/trap.h"
#include "arch/x86/tsc.h"
#include "arch/x86/uart.h"
#include "boot/paging.h"
#include "lib/parse.h"
#include "lib/print.h"
#include "lib/string.h"
#include "mm/frame.h"
#include "mm/rmap.h"
#include "boot/boot_info.h"
#include "init/main.h"
#include "shell/cmd_console.h"
#include "shell/options.h"
#include "shell/shell.h"
#include "virt/sched.h"
#include "virt/vm.h"


/* Largest boot information we accept: GRUB's, with an EFI memory map, is a few KiB. */
#define MB2_INFO_MAX (1u << 20)
/* The shell sleeps between polls of the UART: at 1 kHz a 16-byte receive FIFO
 * at 115200 baud (11.5 bytes a millisecond) cannot overflow. */
#define SHELL_TICK_HZ 1000

/* A boot that stops before the console is chosen still says why. */
static void __attribute__((noreturn)) halt_forever(void)
{
	if (!console_started())
		console_select_fallback();
	for (;;) {
		cli();
		hlt();
	}
}

static bool overlaps(uint64_t start, uint64_t end, const struct mem_range *r, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (start < r[i].end && end > r[i].start)
			return true;
	return false;
}

#define TRAMPOLINE_BELOW 0xa0000ull

/* The AP trampoline's page: the highest 4 KiB page of usable memory between
 * 4 KiB and 640 KiB (above, a STARTUP vector is reserved or the memory is
 * the BIOS's) that holds nothing the boot left; 0 if there is none. */
static uint64_t trampoline_page_find(const struct mem_range *usable, size_t nu,
				     const struct mem_range *reserved, size_t nr)
{
	uint64_t best = 0;

	for (size_t i = 0; i < nu; i++) {
		uint64_t lo = (usable[i].start + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1);
		uint64_t hi = (usable[i].end < TRAMPOLINE_BELOW ? usable[i].end : TRAMPOLINE_BELOW) &
			      ~(PAGE_SIZE - 1);

		if (lo < PAGE_SIZE)
			lo = PAGE_SIZE;
		for (uint64_t p = hi; p > lo && p - PAGE_SIZE > best; p -= PAGE_SIZE)
			if (!overlaps(p - PAGE_SIZE, p, reserved, nr)) {
				best = p - PAGE_SIZE;
				break;
			}
	}
	return best;
}

/* Hand the allocator every usable range below paging_mapped_top, minus the first MiB
 * (real-mode structures, the AP trampoline's page picked from it), the image,
 * the boot information and the modules. */
static void memory_init(uint64_t info_pa)
{
	static struct mem_range usable[BOOT_MAX_MMAP];
	struct mem_range reserved[BOOT_MAX_MODULES + 3];
	size_t nu = 0, nr = 0;

	for (size_t i = 0; i < boot_info.n_mmap; i++) {
		const struct boot_mmap_entry *e = &boot_info.mmap[i];
		if (e->type != MEM_USABLE || e->start >= paging_mapped_top)
			continue;
		uint64_t end = e->start + e->len;
		usable[nu++] = (struct mem_range){ e->start, end < paging_mapped_top ? end : paging_mapped_top };
	}
	reserved[nr++] = (struct mem_range){ (uint64_t)__image_start, (uint64_t)__image_end };
	reserved[nr++] = (struct mem_range){ info_pa, info_pa + boot_info.total_size };
	for (size_t i = 0; i < boot_info.n_modules; i++)
		reserved[nr++] = (struct mem_range){ boot_info.modules[i].start,
						     boot_info.modules[i].end };
	trampoline_set_page(trampoline_page_find(usable, nu, reserved, nr));
	reserved[nr++] = (struct mem_range){ 0, 1ull << 20 };
	if (!frame_init(usable, nu, reserved, nr)) {
		kprintf("sprig: no usable memory; stopping.\n");
		halt_forever();
	}
	rmap_init();
}

/* The APs' stacks and per-CPU areas come from the frame allocator. */
static const struct smp_memory ap_memory = { frame_alloc_zeroed, frame_free };

void __attribute__((noreturn)) kmain(uint32_t magic, uint32_t info_pa)
{
	static char err[128];
	static char run[BOOT_CMDLINE_MAX];

	static char console_value[64];

	percpu_init_bsp();
	console_init();
	kprintf("\nsprig %s: a small hypervisor for studying second-level page tables\n",
		SPRIG_VERSION);
	gdt_init();
	idt_init();

	if (magic != MB2_BOOTLOADER_MAGIC) {
		kprintf("sprig: not started by a multiboot2 loader (magic 0x%x); stopping.\n", magic);
		halt_forever();
	}
	uint32_t info_size = *(const uint32_t *)(uintptr_t)info_pa;
	if (!mb2_parse((const void *)(uintptr_t)info_pa,
		       info_size < MB2_INFO_MAX ? info_size : MB2_INFO_MAX, &boot_info, err,
		       sizeof(err))) {
		kprintf("sprig: boot information refused: %s; stopping.\n", err);
		halt_forever();
	}
	for (size_t i = 0; i < boot_info.n_warnings; i++)
		kprintf("boot: %s\n", boot_info.warnings[i]);

	kprintf("memory map: %zu entries (%s)\n", boot_info.n_mmap,
		boot_info.mmap_from_efi ? "EFI memory map" : "BIOS memory map");
	paging_init(&boot_info);
	cpuinfo_init();
	memory_init(info_pa);
	acpi_init(boot_info.rsdp);
	options_console(boot_info.cmdline, console_value, sizeof(console_value));
	/* A BIOS boot (neither EFI's system table nor its memory map) may leave VGA text. */
	bool bios = !boot_info.efi_system_table && !boot_info.mmap_from_efi;
	console_select(console_value, &boot_info.fb, bios, &acpi, paging_mapped_top);
	tsc_init();
	apic_init(true);
	apic_timer_start(SHELL_TICK_HZ);
	sti();
	virt_init();
	sched_set_console_poll(vm_run_console_poll);
	smp_init(options_maxcpus(boot_info.cmdline), &ap_memory);

	struct frame_stats st;
	frame_get_stats(&st);
	kprintf("memory: %llu MiB managed, %llu MiB free\n",
		(unsigned long long)(st.total_bytes >> 20), (unsigned long long)(st.free_bytes >> 20));

	options_from_cmdline(boot_info.cmdline);
	/* A cut command line may end inside run=: none of it runs then. */
	if (boot_info.cmdline_cut)
		kprintf("run: the kernel command line is longer than %d bytes; run= ignored\n",
			BOOT_CMDLINE_MAX - 1);
	else if (cmdline_get(boot_info.cmdline, "run", run, sizeof(run)) == CMDLINE_TOO_LONG)
		kprintf("run: the value is longer than %zu characters; ignored\n", sizeof(run) - 1);
	shell_run(run);
	/* Nobody can type at a prompt without a UART: end instead of waiting. */
	if (!uart_in_use()) {
		kprintf("console: no serial console to read commands from; powering off\n");
		shell_execute("poweroff");
	}
	shell_main();
}
