/* sprig's own page tables: all of physical memory identity-mapped, NX on
 * everything but the image's text, the image write-xor-execute. */
#pragma once
#include <stdint.h>

struct boot_info;

/* Build and load the final tables. Covers [0, max(4 GiB, end of the highest
 * memory-map entry)); returns the end of the mapped range. */
uint64_t paging_init(const struct boot_info *bi);
/* The end of the identity-mapped range, once paging_init has run. */
extern uint64_t paging_mapped_top;

extern char __image_start[], __image_end[], __text_start[], __text_end[];
extern char __rodata_start[], __rodata_end[], __data_start[], __bss_end[];
