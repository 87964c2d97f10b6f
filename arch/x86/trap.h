/* Exceptions and interrupts: the IDT, the saved register frame, and handler
 * registration for interrupt vectors. */
#pragma once
#include <stdint.h>

/* Pushed by the entry stubs (arch/x86/trap_entry.S), lowest address first. */
struct trap_frame {
	uint64_t r15, r14, r13, r12, r11, r10, r9, r8;
	uint64_t rbp, rdi, rsi, rdx, rcx, rbx, rax;
	uint64_t vector, error_code;
	uint64_t rip, cs, rflags, rsp, ss; /* pushed by the CPU */
};

#define VEC_APIC_TIMER 0x20
#define VEC_KICK 0xf0 /* smp_kick: acknowledged, nothing else */
#define VEC_SPURIOUS 0xff

struct idt_gate {
	uint16_t offset_lo;
	uint16_t selector;
	uint8_t ist;
	uint8_t type_attr;
	uint16_t offset_mid;
	uint32_t offset_hi;
	uint32_t reserved;
} __attribute__((packed));

#define IDT_GATES 256

typedef void (*irq_handler_fn)(struct trap_frame *tf);

/* Fill this CPU's IDT (in its struct percpu) and load it. */
void idt_init(void);
/* Every exception and interrupt, from trap_entry.S with the frame it built. */
void trap_dispatch(struct trap_frame *tf);
/* Route interrupt vector (32..255) to fn; the handler must send EOI itself. */
void irq_register(uint8_t vector, irq_handler_fn fn);
