/* The GDT (flat 64-bit code and data) and the TSS with IST stacks. */
#pragma once
#include <stdint.h>

#define SEL_KCODE 0x08
#define SEL_KDATA 0x10
#define SEL_TSS 0x18

/* IST slots: exceptions that may arrive on a broken stack get their own. */
#define IST_DOUBLE_FAULT 1
#define IST_NMI 2
#define IST_MACHINE_CHECK 3

void gdt_init(void);
