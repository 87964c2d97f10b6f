/* What the boot sequence (virt/main.c) learned, for the console and later layers. */
#pragma once
#include "boot/multiboot2.h"

extern struct boot_info boot_info;
/* End of the identity-mapped physical range. */
extern uint64_t mapped_top;
