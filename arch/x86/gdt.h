/* The GDT (flat 64-bit code and data) and the TSS with IST stacks, one of each
 * per CPU, in its struct percpu (arch/x86/percpu.h). */
#pragma once
#include <stdint.h>

#define SEL_KCODE 0x08
#define SEL_KDATA 0x10
#define SEL_TSS 0x18

/* IST slots: exceptions that may arrive on a broken stack get their own. */
#define IST_DOUBLE_FAULT 1
#define IST_NMI 2
#define IST_MACHINE_CHECK 3
#define IST_STACKS 3
#define IST_STACK_SIZE 8192

#define GDT_ENTRIES 5 /* null, code, data, and the 16-byte TSS descriptor */

struct tss {
	uint32_t reserved0;
	uint64_t rsp[3];
	uint64_t reserved1;
	uint64_t ist[7];
	uint64_t reserved2;
	uint16_t reserved3;
	uint16_t iomap_base;
} __attribute__((packed));

/* Fill this CPU's GDT and TSS and load them (GS must point at its percpu). */
void gdt_init(void);
