/* What the boot sequence (init/main.c) learned, for the console and later layers. */
#pragma once
#include "boot/multiboot2.h"

extern struct boot_info boot_info;
/* The GRUB module whose string starts with the word `name`, or NULL. */
const struct boot_module *boot_module_find(const char *name);
/* End of the identity-mapped physical range. */
extern uint64_t mapped_top;
/* The boot sequence, called by boot/entry.S in long mode. */
void __attribute__((noreturn)) kmain(uint32_t magic, uint32_t info_pa);
