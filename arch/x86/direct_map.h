/* Physical memory is identity-mapped, in the kernel (boot/ maps all RAM and
 * the MMIO below 4 GiB 1:1) and in the host tests (the "physical" memory is
 * an mmap'd region whose addresses are used as physical addresses), so the
 * conversions are casts. */
#pragma once
#include <stdint.h>

typedef uint64_t paddr_t;

static inline void *pa_to_va(paddr_t pa) { return (void *)(uintptr_t)pa; }
static inline paddr_t va_to_pa(const void *va) { return (paddr_t)(uintptr_t)va; }
