/* kmain: the boot sequence on the bootstrap CPU (init/main.c). */
#pragma once
#include <stdint.h>

/* Called by boot/entry.S in long mode with the multiboot2 magic and the
 * physical address of the boot information. */
void __attribute__((noreturn)) kmain(uint32_t magic, uint32_t info_pa);
