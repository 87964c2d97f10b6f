/* The test guests' IDT (idt.h). */
#include "guests/rt/idt.h"

struct idt_gate {
	uint16_t offset_low, selector;
	uint8_t ist, type;
	uint16_t offset_mid;
	uint32_t offset_high, reserved;
} __attribute__((packed));

#define GATE_INTERRUPT 0x8e /* present, DPL 0, 64-bit interrupt gate */

extern const uint64_t isr_stubs[256];
void rt_interrupt(struct frame *f);

static struct idt_gate idt[256] __attribute__((aligned(16)));
static void (*dispatcher)(struct frame *f);

/* Called by every entry stub (isr.S). */
void rt_interrupt(struct frame *f)
{
	dispatcher(f);
}

void idt_load(void)
{
	struct table_pointer p = { sizeof(idt) - 1, (uint64_t)idt };

	asm volatile("lidt %0" : : "m"(p));
}

void idt_install(void (*dispatch)(struct frame *f))
{
	uint16_t cs;

	dispatcher = dispatch;
	asm volatile("mov %%cs, %0" : "=r"(cs));
	for (int i = 0; i < 256; i++) {
		uint64_t a = isr_stubs[i];

		idt[i] = (struct idt_gate){ .offset_low = (uint16_t)a, .selector = cs,
					    .type = GATE_INTERRUPT, .offset_mid = (uint16_t)(a >> 16),
					    .offset_high = (uint32_t)(a >> 32) };
	}
	idt_load();
}
