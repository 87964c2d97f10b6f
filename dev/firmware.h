/* What a PC's firmware leaves for the kernel it boots. QEMU's -kernel starts
 * a multiboot or Linux kernel from an option ROM after SeaBIOS has run, so a
 * kernel written against QEMU finds the chipset as SeaBIOS programs it, not
 * at power-on (docs/platform.md, "Start state"). These set the models through
 * their register interfaces as SeaBIOS does; platform_firmware_start applies
 * them to a VM that boots a kernel. Also built for the host
 * (tests/unit/test_firmware.c, test_pic.c, test_pit.c).
 *
 * Sources: SeaBIOS's src/hw/pic.c pic_setup, src/clock.c pit_setup,
 * src/fw/smp.c smp_scan and src/post.c init_ivt; the values measured bare
 * under QEMU's pc machine here with a multiboot probe. */
#pragma once
#include <stdint.h>
#include "dev/lapic.h"
#include "dev/pic.h"
#include "dev/pit.h"

/* pic_setup: ICW1-4 with the real-mode vector bases, then the IRQs SeaBIOS
 * has handlers for unmasked (the timer, PS/2, floppy, FPU, ATA); its PCI
 * set-up routes the interrupt links to IRQ 10 and 11, level in the ELCR. */
#define FW_PIC_MASTER_BASE 0x08
#define FW_PIC_SLAVE_BASE 0x70
#define FW_PIC_MASTER_IMR 0xb8 /* IRQ 0, 1, 2 (cascade), 6 unmasked */
#define FW_PIC_SLAVE_IMR 0x8e  /* IRQ 8, 12, 13, 14 unmasked */
#define FW_PIC_ELCR_MASTER 0x00
#define FW_PIC_ELCR_SLAVE 0x0c /* IRQ 10 and 11: level (PCI) */

/* The real-mode interrupt vector table at 0 and the handlers it points at,
 * at F000:FF00 in the BIOS area the memory map reserves. */
#define FW_IVT_GPA 0x0ull
#define FW_IVT_VECTORS 256
#define FW_STUBS_SEG 0xf000
#define FW_STUBS_OFF 0xff00
#define FW_STUBS_GPA ((uint64_t)FW_STUBS_SEG * 16 + FW_STUBS_OFF)

/* The pair after pic_init, programmed as pic_setup leaves it. */
void firmware_pic(struct pic *p);
/* Channel 0 in mode 2, lo/hi, binary, count 0 (65536: 18.2 Hz) loaded at
 * `now` (pit_setup); channels 1 and 2 untouched. */
void firmware_pit(struct pit *p, uint64_t now);
/* The BSP's APIC after smp_scan: software-enabled, LINT0 ExtINT and LINT1
 * NMI, both level, so the PIC reaches the CPU. */
void firmware_bsp_apic(struct lapic *a, uint64_t now);
/* The handlers, real-mode code to be copied to FW_STUBS_GPA: an IRET for
 * every vector, and for the PIC's vectors one that ends the interrupt first
 * (init_ivt's entry_iret_official, entry_hwpic1 and entry_hwpic2; sprig
 * offers none of the BIOS services behind the other vectors). */
extern const uint8_t firmware_stubs[];
extern const unsigned firmware_stubs_len;
/* The IVT, far pointers (segment in the high half) to those handlers. */
void firmware_ivt(uint32_t ivt[FW_IVT_VECTORS]);
