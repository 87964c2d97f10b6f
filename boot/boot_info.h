/* What the boot loader handed sprig (boot/multiboot2.h's parse of it), kept
 * for the layers above: the console, the loaders of guest images, snapshots
 * shipped as modules. */
#pragma once
#include "boot/multiboot2.h"

extern struct boot_info boot_info;
/* The GRUB module whose string starts with the word `name`, or NULL. */
const struct boot_module *boot_module_find(const char *name);
