/* Freestanding string and memory functions for the kernel. gcc recognises
 * byte loops as memset/memcpy patterns and would turn these very functions
 * into calls to themselves, hence the optimize attribute on the file. */
#pragma GCC optimize("no-tree-loop-distribute-patterns")
#include "lib/string.h"
#include <stdint.h>

/* The bulk as rep stosq/movsq, the tail bytewise: as fast as rep stosb
 * on CPUs with ERMS and faster on the others, and under an emulator, which
 * runs a rep-prefixed string instruction one iteration at a time, an
 * eighth of the iterations (a page cleared for a fault: 512, not 4096).
 * The direction flag is clear per the ABI. */
void *memset(void *dst, int c, size_t n)
{
	uint64_t pattern = 0x0101010101010101ull * (uint8_t)c;
	size_t words = n / 8, bytes = n % 8;
	void *d = dst;

	asm volatile("rep stosq" : "+D"(d), "+c"(words) : "a"(pattern) : "memory");
	asm volatile("rep stosb" : "+D"(d), "+c"(bytes) : "a"(pattern) : "memory");
	return dst;
}

void *memcpy(void *restrict dst, const void *restrict src, size_t n)
{
	size_t words = n / 8, bytes = n % 8;
	void *d = dst;

	asm volatile("rep movsq" : "+D"(d), "+S"(src), "+c"(words) : : "memory");
	asm volatile("rep movsb" : "+D"(d), "+S"(src), "+c"(bytes) : : "memory");
	return dst;
}

void *memmove(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;

	/* Copying forwards is safe unless dst starts inside [src, src + n). */
	if ((uintptr_t)d - (uintptr_t)s >= n)
		return memcpy(dst, src, n);
	while (n) {
		n--;
		d[n] = s[n];
	}
	return dst;
}

int memcmp(const void *a, const void *b, size_t n)
{
	const unsigned char *p = a, *q = b;

	for (size_t i = 0; i < n; i++)
		if (p[i] != q[i])
			return p[i] - q[i];
	return 0;
}

size_t strlen(const char *s)
{
	const char *p = s;

	while (*p)
		p++;
	return p - s;
}

size_t strnlen(const char *s, size_t max)
{
	size_t n = 0;

	while (n < max && s[n])
		n++;
	return n;
}

int strcmp(const char *a, const char *b)
{
	const unsigned char *p = (const unsigned char *)a;
	const unsigned char *q = (const unsigned char *)b;

	while (*p && *p == *q) {
		p++;
		q++;
	}
	return *p - *q;
}

int strncmp(const char *a, const char *b, size_t n)
{
	const unsigned char *p = (const unsigned char *)a;
	const unsigned char *q = (const unsigned char *)b;

	for (size_t i = 0; i < n; i++) {
		if (p[i] != q[i])
			return p[i] - q[i];
		if (!p[i])
			break;
	}
	return 0;
}

char *strchr(const char *s, int c)
{
	for (;; s++) {
		if (*s == (char)c)
			return (char *)(uintptr_t)s;
		if (!*s)
			return NULL;
	}
}

char *strrchr(const char *s, int c)
{
	const char *last = NULL;

	for (;; s++) {
		if (*s == (char)c)
			last = s;
		if (!*s)
			return (char *)(uintptr_t)last;
	}
}
