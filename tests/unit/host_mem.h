/* Host "physical memory" for tests and benchmarks: an mmap'd, 1 GiB-aligned
 * region whose virtual addresses serve as physical addresses (pa_to_va is a
 * cast), handed to frame_init. Untouched pages cost nothing (MAP_NORESERVE),
 * so tests can manage gigabytes. Each call unmaps the previous region. */
#pragma once
#include "mm/frame.h"
#include <stdbool.h>
#include <stddef.h>

/* One usable range of `bytes` at a 1 GiB-aligned base, nothing reserved.
 * Aborts if frame_init refuses it. */
void host_mem_init(size_t bytes);

/* A region of `span` bytes; the ranges are offsets from its base (rounded as
 * frame_init rounds them). Returns frame_init's verdict. */
bool host_mem_init_ranges(size_t span, const struct mem_range *usable, size_t n_usable,
			  const struct mem_range *reserved, size_t n_reserved);

/* Base of the current region (1 GiB aligned). */
paddr_t host_mem_base(void);
