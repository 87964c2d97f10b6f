/* The IDT, one per CPU with the same gates. Exceptions are fatal: the report
 * gives the CPU, the vector, error code, RIP, CR2 and every register (and the
 * machine-check banks for #MC), then says what panic= does next. An NMI is
 * counted and survived, unless the CPUs are being stopped for a reset or a
 * power-off. Interrupt vectors go to the handlers registered for them,
 * shared by every CPU; one without a handler is acknowledged. */
#include "arch/x86/trap.h"
#include "arch/x86/apic.h"
#include "arch/x86/cpu.h"
#include "arch/x86/gdt.h"
#include "arch/x86/mce.h"
#include "arch/x86/percpu.h"
#include "arch/x86/console.h"
#include "arch/x86/power.h"
#include "arch/x86/regs.h"
#include "lib/print.h"

extern const uint64_t trap_stub_table[IDT_GATES];
static irq_handler_fn irq_handlers[IDT_GATES];

static const char *const exception_names[32] = {
	"divide error", "debug", "NMI", "breakpoint", "overflow", "bound range",
	"invalid opcode", "device not available", "double fault", "coprocessor overrun",
	"invalid TSS", "segment not present", "stack fault", "general protection",
	"page fault", "reserved", "x87 FPU error", "alignment check", "machine check",
	"SIMD exception", "virtualization exception", "control protection",
	"reserved", "reserved", "reserved", "reserved", "reserved", "reserved",
	"hypervisor injection", "VMM communication", "security exception", "reserved",
};

static void set_gate(struct idt_gate *idt, int vector, uint64_t handler, uint8_t ist)
{
	idt[vector] = (struct idt_gate){
		.offset_lo = handler & 0xffff,
		.selector = SEL_KCODE,
		.ist = ist,
		.type_attr = 0x8e, /* present, DPL 0, 64-bit interrupt gate */
		.offset_mid = (handler >> 16) & 0xffff,
		.offset_hi = handler >> 32,
	};
}

void idt_init(void)
{
	struct idt_gate *idt = this_cpu()->idt;

	for (int v = 0; v < IDT_GATES; v++)
		set_gate(idt, v, trap_stub_table[v], 0);
	set_gate(idt, 2, trap_stub_table[2], IST_NMI);
	set_gate(idt, 8, trap_stub_table[8], IST_DOUBLE_FAULT);
	set_gate(idt, 18, trap_stub_table[18], IST_MACHINE_CHECK);
	struct {
		uint16_t limit;
		uint64_t base;
	} __attribute__((packed)) ptr = { sizeof(this_cpu()->idt) - 1, (uint64_t)idt };
	__asm__ volatile("lidt %0" ::"m"(ptr));
}

void irq_register(uint8_t vector, irq_handler_fn fn)
{
	irq_handlers[vector] = fn;
}

static void __attribute__((noreturn)) exception_report(struct trap_frame *tf)
{
	struct percpu *pc = this_cpu();

	console_lock_for_report();
	kprintf("\n*** sprig: CPU exception %llu (%s), error code 0x%llx, cpu %u apic %u\n",
		(unsigned long long)tf->vector, exception_names[tf->vector],
		(unsigned long long)tf->error_code, pc->id, pc->apic_id);
	kprintf("RIP=%016llx CS=%04llx RFLAGS=%016llx\n", (unsigned long long)tf->rip,
		(unsigned long long)tf->cs, (unsigned long long)tf->rflags);
	kprintf("RSP=%016llx SS=%04llx CR2=%016llx CR3=%016llx\n",
		(unsigned long long)tf->rsp, (unsigned long long)tf->ss,
		(unsigned long long)read_cr2(), (unsigned long long)read_cr3());
	kprintf("RAX=%016llx RBX=%016llx RCX=%016llx RDX=%016llx\n",
		(unsigned long long)tf->rax, (unsigned long long)tf->rbx,
		(unsigned long long)tf->rcx, (unsigned long long)tf->rdx);
	kprintf("RSI=%016llx RDI=%016llx RBP=%016llx\n", (unsigned long long)tf->rsi,
		(unsigned long long)tf->rdi, (unsigned long long)tf->rbp);
	kprintf("R8 =%016llx R9 =%016llx R10=%016llx R11=%016llx\n",
		(unsigned long long)tf->r8, (unsigned long long)tf->r9,
		(unsigned long long)tf->r10, (unsigned long long)tf->r11);
	kprintf("R12=%016llx R13=%016llx R14=%016llx R15=%016llx\n",
		(unsigned long long)tf->r12, (unsigned long long)tf->r13,
		(unsigned long long)tf->r14, (unsigned long long)tf->r15);
	if (tf->vector == VEC_MACHINE_CHECK)
		mce_report();
	console_unlock_after_report();
	power_panic();
}

static void nmi(void)
{
	__atomic_fetch_add(&this_cpu()->host_nmis, 1, __ATOMIC_RELAXED);
	if (power_stop_requested())
		power_stop_this_cpu();
}

void trap_dispatch(struct trap_frame *tf)
{
	if (tf->vector == X86_VEC_NMI) {
		nmi();
		return;
	}
	if (tf->vector < 32)
		exception_report(tf);
	irq_handler_fn fn = irq_handlers[tf->vector];
	if (fn)
		fn(tf);
	else if (tf->vector != VEC_SPURIOUS)
		/* A stray interrupt left in service would block every vector of
		 * its priority class and below, the timer's among them. The
		 * spurious vector sets no ISR bit and takes no EOI. */
		apic_eoi();
}
