/* The multiboot 1 a.out kludge (mb1_internal.h): the kernel's header says where
 * its file range and bss go, for kernels that are not ELF. */
#include "lib/bytes.h"
#include "lib/refuse.h"
#include "loader/mb1_internal.h"

int plan_aout(const uint8_t *img, uint64_t size, uint64_t hoff, uint64_t guest_mem,
	      struct mb1_plan *p, char *err, size_t errlen)
{
	const uint8_t *h = img + hoff;
	uint32_t header_addr, load_addr, load_end, bss_end, entry;
	uint64_t header_in_load, load_size;

	if (hoff + HEADER_AOUT_BYTES > size || hoff + HEADER_AOUT_BYTES > HEADER_SEARCH_BYTES)
		return refuse(err, errlen, "a.out kludge: multiboot header truncated");
	header_addr = rd32(h + 12);
	load_addr = rd32(h + 16);
	load_end = rd32(h + 20);
	bss_end = rd32(h + 24);
	entry = rd32(h + 28);

	if (header_addr < load_addr)
		return refuse(err, errlen, "a.out kludge: header_addr 0x%x below load_addr 0x%x",
			      header_addr, load_addr);
	header_in_load = header_addr - load_addr;
	if (header_in_load > hoff)
		return refuse(err, errlen,
			      "a.out kludge: header_addr 0x%x - load_addr 0x%x puts the load "
			      "start before the file", header_addr, load_addr);
	p->aout_offset = hoff - header_in_load;
	if (load_end) {
		if (load_end < load_addr)
			return refuse(err, errlen,
				      "a.out kludge: load_end_addr 0x%x below load_addr 0x%x",
				      load_end, load_addr);
		load_size = load_end - load_addr;
		if (load_size > size - p->aout_offset)
			return refuse(err, errlen,
				      "a.out kludge: load range 0x%x-0x%x runs past the end of the "
				      "file", load_addr, load_end);
	} else {
		load_size = size - p->aout_offset;
	}
	p->aout_file_size = load_size;
	p->aout_mem_size = load_size;
	if (bss_end) {
		if (bss_end < load_addr + load_size)
			return refuse(err, errlen,
				      "a.out kludge: bss_end_addr 0x%x below the end of the loaded "
				      "image 0x%llx", bss_end,
				      (unsigned long long)(load_addr + load_size));
		p->aout_mem_size = bss_end - load_addr;
	}
	if (!load_size)
		return refuse(err, errlen, "a.out kludge: nothing to load");
	if (p->aout_mem_size > guest_mem || load_addr > guest_mem - p->aout_mem_size)
		return refuse(err, errlen,
			      "a.out kludge: image 0x%x-0x%llx lies outside guest memory (0x%llx)",
			      load_addr, (unsigned long long)(load_addr + p->aout_mem_size),
			      (unsigned long long)guest_mem);
	if (entry < load_addr || entry - load_addr >= load_size)
		return refuse(err, errlen,
			      "a.out kludge: entry 0x%x outside the loaded image 0x%x-0x%llx",
			      entry, load_addr, (unsigned long long)(load_addr + load_size));
	p->aout = true;
	p->entry = entry;
	p->kernel_start = load_addr;
	p->kernel_end = load_addr + p->aout_mem_size;
	return 0;
}
