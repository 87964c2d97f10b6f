/* Interrupts and exceptions in the test guests: an IDT whose 256 vectors all
 * reach one dispatcher with the same frame (rt/isr.S, rt/idt.c). */
#pragma once
#include <stdint.h>

/* What the entry stubs leave on the stack, from the stack pointer up. */
struct frame {
	uint64_t r15, r14, r13, r12, r11, r10, r9, r8, rbp, rdi, rsi, rdx, rcx, rbx, rax;
	uint64_t vector, error, rip, cs, rflags, rsp, ss;
};

/* The operand of LGDT and LIDT. */
struct table_pointer {
	uint16_t limit;
	uint64_t base;
} __attribute__((packed));

/* Load an IDT that sends every vector to dispatch (interrupt gates: IF is
 * clear in the dispatcher); changes to *frame are what IRET returns to. */
void idt_install(void (*dispatch)(struct frame *f));
/* Loads that IDT on this CPU (the APs, smp.c). */
void idt_load(void);
