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
