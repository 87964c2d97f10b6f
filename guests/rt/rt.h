/* The test guests' runtime: boot (entry.S), serial output, printf, exit,
 * hypercalls and the parsed multiboot information. Guests are separate
 * kernels: nothing here comes from sprig's lib/. */
#pragma once

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KIB 1024ul
#define MIB (1024ul * KIB)
#define PAGE_SIZE 4096ul

/* Where guests put their test patterns: above the image, which ends below. */
#define GUEST_PLAYGROUND (4 * MIB)

/* Exit status when the loader broke the multiboot contract or the CPU has no
 * long mode (entry.S, before anything can be printed). */
#define RT_EXIT_BAD_BOOT 0x7f

#define RT_MMAP_MAX 32

struct mb1_mmap_entry {
	uint64_t addr;
	uint64_t len;
	uint32_t type;		/* 1 = available RAM */
};

/* What main() gets: a copy of the loader's information, parsed. */
struct mb1_info {
	const char *cmdline;	/* the whole command line, "" if none */
	const char *args;	/* the command line after its first word, trimmed */
	bool has_mem;		/* mem_lower and mem_upper are valid */
	uint32_t mem_lower;	/* KiB below 1 MiB */
	uint32_t mem_upper;	/* KiB from 1 MiB up to the first hole */
	unsigned int mmap_count;
	const struct mb1_mmap_entry *mmap;
};

int main(const struct mb1_info *mbi);

int printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int vprintf(const char *fmt, va_list ap);
void putchar_serial(char c);

/* Programs COM1 for 115200 8N1. Not called by the runtime: firmware (SeaBIOS,
 * QEMU's -kernel) leaves it so, but GRUB without `terminal_output serial`
 * leaves the UART in its reset state (5 data bits), which Bochs honours.
 * Only bare: sprig's UART emulates transmission only. */
void serial_setup(void);

/* Ends the guest with status: HC_EXIT under sprig, the isa-debug-exit port
 * bare (QEMU then exits with (status << 1) | 1). */
__attribute__((noreturn)) void exit(int status);

/* True when CPUID leaf 0x40000000 carries sprig's signature. */
bool under_sprig(void);
/* VMMCALL or VMCALL as the CPU vendor requires; only meaningful under sprig. */
long hypercall(unsigned long nr, unsigned long a1, unsigned long a2,
	       unsigned long a3, unsigned long a4);

/* The value of "key=N" among the arguments (decimal, or hex with 0x), or
 * fallback when the key is absent or its value is not a number. */
unsigned long arg_ulong(const struct mb1_info *mbi, const char *key,
			unsigned long fallback);
/* True when the first argument is exactly word. */
bool first_arg_is(const struct mb1_info *mbi, const char *word);
/* True when [GUEST_PLAYGROUND, GUEST_PLAYGROUND + len) lies in the RAM that
 * mem_upper reports. */
bool playground_fits(const struct mb1_info *mbi, uint64_t len);

static inline void cpuid(uint32_t leaf, uint32_t sub, uint32_t *a, uint32_t *b,
			 uint32_t *c, uint32_t *d)
{
	asm volatile("cpuid" : "=a"(*a), "=b"(*b), "=c"(*c), "=d"(*d)
		     : "a"(leaf), "c"(sub));
}

static inline uint8_t inb(uint16_t port)
{
	uint8_t v;

	asm volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static inline void outb(uint16_t port, uint8_t v)
{
	asm volatile("outb %0, %1" : : "a"(v), "Nd"(port));
}

static inline uint16_t inw(uint16_t port)
{
	uint16_t v;

	asm volatile("inw %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static inline void outw(uint16_t port, uint16_t v)
{
	asm volatile("outw %0, %1" : : "a"(v), "Nd"(port));
}

static inline uint32_t inl(uint16_t port)
{
	uint32_t v;

	asm volatile("inl %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static inline void outl(uint16_t port, uint32_t v)
{
	asm volatile("outl %0, %1" : : "a"(v), "Nd"(port));
}
