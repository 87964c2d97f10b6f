/* CPU instructions the test guests share. */
#pragma once
#include <stdint.h>

static inline uint64_t rdtsc(void)
{
	uint32_t lo, hi;

	asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

static inline uint64_t rdmsr(uint32_t msr)
{
	uint32_t lo, hi;

	asm volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
	return (uint64_t)hi << 32 | lo;
}

static inline void wrmsr(uint32_t msr, uint64_t val)
{
	asm volatile("wrmsr" : : "c"(msr), "a"((uint32_t)val), "d"((uint32_t)(val >> 32))
		     : "memory");
}

static inline uint64_t read_cr3(void)
{
	uint64_t v;

	asm volatile("mov %%cr3, %0" : "=r"(v));
	return v;
}

#define PTE_PWT 0x08ul
#define PTE_PCD 0x10ul

/* Marks pa's 2 MiB page uncached in the runtime's tables, which map the low
 * 4 GiB by 2 MiB pages (pa < 4 GiB): device registers must not be cached. */
static inline void set_uncached(uint64_t pa)
{
	uint64_t *pml4 = (uint64_t *)(read_cr3() & ~0xfffull);
	uint64_t *pdpt = (uint64_t *)(pml4[0] & 0xffffffffff000ull);
	uint64_t *pd = (uint64_t *)(pdpt[pa >> 30] & 0xffffffffff000ull);

	pd[(pa >> 21) & 511] |= PTE_PCD | PTE_PWT;
	asm volatile("invlpg (%0)" : : "r"(pa) : "memory");
}

static inline void sti(void)
{
	asm volatile("sti" ::: "memory");
}

static inline void cli(void)
{
	asm volatile("cli" ::: "memory");
}

static inline void cpu_relax(void)
{
	asm volatile("pause" ::: "memory");
}
