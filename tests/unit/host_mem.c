#include "tests/unit/host_mem.h"
#include "mm/rmap.h"
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#define HOST_MEM_ALIGN (1ull << 30)
#define HOST_MEM_MAX_RANGES 64

static void *region;
static size_t region_len;
static paddr_t base;

static void map_region(size_t span)
{
	if (region)
		munmap(region, region_len);
	region_len = span + HOST_MEM_ALIGN;
	region = mmap(NULL, region_len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (region == MAP_FAILED) {
		perror("host_mem: mmap");
		abort();
	}
	base = (va_to_pa(region) + HOST_MEM_ALIGN - 1) & ~(HOST_MEM_ALIGN - 1);
}

bool host_mem_init_ranges(size_t span, const struct mem_range *usable, size_t n_usable,
			  const struct mem_range *reserved, size_t n_reserved)
{
	struct mem_range u[HOST_MEM_MAX_RANGES], r[HOST_MEM_MAX_RANGES];

	if (n_usable > HOST_MEM_MAX_RANGES || n_reserved > HOST_MEM_MAX_RANGES) {
		fprintf(stderr, "host_mem: too many ranges\n");
		abort();
	}
	map_region(span);
	for (size_t i = 0; i < n_usable; i++)
		u[i] = (struct mem_range){ base + usable[i].start, base + usable[i].end };
	for (size_t i = 0; i < n_reserved; i++)
		r[i] = (struct mem_range){ base + reserved[i].start, base + reserved[i].end };
	if (!frame_init(u, n_usable, r, n_reserved))
		return false;
	/* The rmap's descriptor caches lived in the previous region. */
	rmap_init();
	return true;
}

void host_mem_init(size_t bytes)
{
	struct mem_range all = { 0, bytes };

	if (!host_mem_init_ranges(bytes, &all, 1, NULL, 0)) {
		fprintf(stderr, "host_mem: frame_init refused %zu bytes\n", bytes);
		abort();
	}
}

paddr_t host_mem_base(void)
{
	return base;
}
