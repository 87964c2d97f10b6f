/* Fails on purpose, for sprig's failure-path tests; the first argument says
 * how. Each mode prints one line first, so a test can tell that the guest ran.
 *   triple   load an empty IDT and execute int3: triple fault (shutdown)
 *   ud       the same with ud2
 *   outside  write to guest-physical 0xc0000000, beyond the guest's memory;
 *            bare QEMU drops the write, and the guest exits with 2
 *   badcall  hypercall HC_BASE + 0x7777, in sprig's range but none of its
 *            calls, under sprig (exit 4 if it returns); bare, exit 3
 *   spin     cli; jmp . for ever
 *   hlt      cli; hlt: halted for good (bare QEMU never wakes it either)
 *   io       read port 0x1234, write port 0x5678, print the value read, exit 0
 *   idt      an NMI to itself with the IDT at 0xc0000000: the NMI cannot be
 *            delivered (exit 7 if the guest goes on)
 * A guest still running after a triple fault exits with 5. Anything else:
 * print the modes and exit 1. */
#include "guests/rt/lapic.h"
#include "guests/rt/rt.h"
#include "virt/hypercall.h"

#define OUTSIDE_GPA 0xc0000000ul
#define BAD_HYPERCALL (HC_BASE + 0x7777)
#define UNBACKED_IN_PORT 0x1234
#define UNBACKED_OUT_PORT 0x5678
#define EXIT_SURVIVED_TRIPLE_FAULT 5
#define EXIT_SURVIVED_DELIVERY 7

struct idt_pointer {
	uint16_t limit;
	uint64_t base;
} __attribute__((packed));

/* With no IDT entry to deliver the exception through, the CPU escalates to
 * a double fault, which has no entry either: shutdown. */
static void drop_idt(void)
{
	static const struct idt_pointer empty = { 0, 0 };

	asm volatile("lidt %0" : : "m"(empty));
}

int main(const struct mb1_info *mbi)
{
	if (first_arg_is(mbi, "triple")) {
		printf("misbehave: int3 without an IDT\n");
		drop_idt();
		asm volatile("int3");
		printf("misbehave: survived a triple fault\n");
		return EXIT_SURVIVED_TRIPLE_FAULT;
	} else if (first_arg_is(mbi, "ud")) {
		printf("misbehave: ud2 without an IDT\n");
		drop_idt();
		asm volatile("ud2");
		printf("misbehave: survived a triple fault\n");
		return EXIT_SURVIVED_TRIPLE_FAULT;
	} else if (first_arg_is(mbi, "outside")) {
		printf("misbehave: writing guest-physical 0x%lx\n", OUTSIDE_GPA);
		*(volatile uint32_t *)OUTSIDE_GPA = 0xdeadbeef;
		printf("misbehave: survived the write\n");
		return 2;
	} else if (first_arg_is(mbi, "badcall")) {
		long ret;

		printf("misbehave: hypercall 0x%x\n", BAD_HYPERCALL);
		if (!under_sprig())
			return 3;
		ret = hypercall(BAD_HYPERCALL, 0, 0, 0, 0);
		printf("misbehave: hypercall 0x%x returned %ld\n", BAD_HYPERCALL, ret);
		return 4;
	} else if (first_arg_is(mbi, "spin")) {
		printf("misbehave: spinning\n");
		asm volatile("cli; 1: jmp 1b");
		__builtin_unreachable();
	} else if (first_arg_is(mbi, "hlt")) {
		printf("misbehave: halting with interrupts off\n");
		asm volatile("cli; hlt");
		return 6;
	} else if (first_arg_is(mbi, "io")) {
		uint8_t v;

		printf("misbehave: port 0x%x in, port 0x%x out\n",
		       UNBACKED_IN_PORT, UNBACKED_OUT_PORT);
		v = inb(UNBACKED_IN_PORT);
		outb(UNBACKED_OUT_PORT, v);
		printf("misbehave: port 0x%x reads 0x%02x\n", UNBACKED_IN_PORT, v);
		return 0;
	} else if (first_arg_is(mbi, "idt")) {
		static const struct idt_pointer unbacked = { 0xfff, OUTSIDE_GPA };

		printf("misbehave: an NMI through an IDT at 0x%lx\n", OUTSIDE_GPA);
		apic_write(APIC_SVR, SVR_ENABLE | SPURIOUS_VEC);
		asm volatile("lidt %0" : : "m"(unbacked));
		apic_icr(apic_id(), ICR_ASSERT | ICR_NMI);
		printf("misbehave: survived the NMI\n");
		return EXIT_SURVIVED_DELIVERY;
	}
	printf("misbehave: unknown mode \"%s\" (triple ud outside badcall spin hlt io idt)\n",
	       mbi->args);
	return 1;
}
