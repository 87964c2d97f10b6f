/* Multiboot 1 kernels in ELF (mb1_internal.h): the program headers validated
 * against the image and the guest's memory, as QEMU's load_elf takes them. */
#include "lib/bytes.h"
#include "lib/refuse.h"
#include "loader/mb1_internal.h"

/* ELF32, the subset a loader needs. */
#define EI_NIDENT 16
#define EI_CLASS 4
#define EI_DATA 5
#define EI_VERSION 6
#define ELFCLASS32 1
#define ELFCLASS64 2
#define ELFDATA2LSB 1
#define EV_CURRENT 1
#define ET_EXEC 2
#define EM_386 3
#define EM_X86_64 62
#define PT_LOAD 1
#define PF_X 1
#define EHDR_SIZE 52
#define PHDR_SIZE 32
#define MAX_PHDRS 64

void elf_segment_read(const uint8_t *img, const struct mb1_plan *p, uint32_t i,
		      struct elf_segment *s)
{
	const uint8_t *ph = img + p->phoff + (uint64_t)i * p->phentsize;

	s->type = rd32(ph + 0);
	s->offset = rd32(ph + 4);
	s->vaddr = rd32(ph + 8);
	s->paddr = rd32(ph + 12);
	s->file_size = rd32(ph + 16);
	s->mem_size = rd32(ph + 20);
	s->flags = rd32(ph + 24);
}

bool elf_segment_loaded(const struct elf_segment *s)
{
	return s->type == PT_LOAD && s->mem_size;
}

/* The entry point: e_entry, translated to a physical address when it lies in
 * an executable segment whose virtual and physical addresses differ (QEMU's
 * load_elf does so for higher-half kernels); it must then be in the file part
 * of a loaded segment. */
static int plan_elf_entry(const uint8_t *img, struct mb1_plan *p, uint32_t e_entry,
			  char *err, size_t errlen)
{
	struct elf_segment s;
	uint64_t entry = e_entry;

	for (uint32_t i = 0; i < p->phnum; i++) {
		elf_segment_read(img, p, i, &s);
		if (s.type == PT_LOAD && (s.flags & PF_X) && s.vaddr != s.paddr &&
		    e_entry >= s.vaddr && e_entry - s.vaddr < s.file_size)
			entry = s.paddr + (e_entry - s.vaddr);
	}
	for (uint32_t i = 0; i < p->phnum; i++) {
		elf_segment_read(img, p, i, &s);
		if (elf_segment_loaded(&s) && entry >= s.paddr && entry - s.paddr < s.file_size) {
			p->entry = (uint32_t)entry;
			return 0;
		}
	}
	return refuse(err, errlen, "entry point 0x%x is not in any loaded segment", e_entry);
}

int plan_elf(const uint8_t *img, uint64_t size, uint64_t guest_mem, struct mb1_plan *p,
	     char *err, size_t errlen)
{
	struct elf_segment s, t;
	uint64_t table_size;
	bool any = false;

	if (size < EI_NIDENT || rd32(img) != 0x464c457fu) /* "\177ELF" */
		return refuse(err, errlen,
			      "not an ELF file, and no a.out kludge (multiboot flag 16)");
	if (img[EI_CLASS] == ELFCLASS64 || (size >= 20 && rd16(img + 18) == EM_X86_64))
		return refuse(err, errlen,
			      "ELF64 images are not supported: give a 32-bit multiboot kernel");
	if (img[EI_CLASS] != ELFCLASS32 || img[EI_DATA] != ELFDATA2LSB ||
	    img[EI_VERSION] != EV_CURRENT)
		return refuse(err, errlen, "not a little-endian version-1 ELF32 file");
	if (size < EHDR_SIZE)
		return refuse(err, errlen, "image too small for an ELF header (%llu bytes)",
			      (unsigned long long)size);
	if (rd16(img + 18) != EM_386)
		return refuse(err, errlen, "ELF machine %u is not i386", rd16(img + 18));
	if (rd16(img + 16) != ET_EXEC)
		return refuse(err, errlen, "ELF type %u is not an executable", rd16(img + 16));

	p->phoff = rd32(img + 28);
	p->phentsize = rd16(img + 42);
	p->phnum = rd16(img + 44);
	if (p->phentsize < PHDR_SIZE)
		return refuse(err, errlen, "ELF program header size %u is below %u",
			      p->phentsize, PHDR_SIZE);
	if (!p->phnum || p->phnum > MAX_PHDRS)
		return refuse(err, errlen, "ELF has %u program headers (1 to %u supported)",
			      p->phnum, MAX_PHDRS);
	table_size = (uint64_t)p->phnum * p->phentsize;
	if (p->phoff > size || table_size > size - p->phoff)
		return refuse(err, errlen, "ELF program headers lie past the end of the file");

	p->kernel_start = UINT64_MAX;
	p->kernel_end = 0;
	for (uint32_t i = 0; i < p->phnum; i++) {
		elf_segment_read(img, p, i, &s);
		if (s.type != PT_LOAD)
			continue;
		if (s.file_size > s.mem_size)
			return refuse(err, errlen,
				      "segment %u: file size 0x%llx exceeds its memory size 0x%llx", i,
				      (unsigned long long)s.file_size, (unsigned long long)s.mem_size);
		if (!s.mem_size)
			continue;
		if (s.offset > size || s.file_size > size - s.offset)
			return refuse(err, errlen,
				      "segment %u: file range 0x%llx+0x%llx runs past the end of the "
				      "file (0x%llx)", i, (unsigned long long)s.offset,
				      (unsigned long long)s.file_size, (unsigned long long)size);
		if (s.mem_size > guest_mem || s.paddr > guest_mem - s.mem_size)
			return refuse(err, errlen,
				      "segment %u lies outside guest memory (0x%llx-0x%llx of 0x%llx)",
				      i, (unsigned long long)s.paddr,
				      (unsigned long long)(s.paddr + s.mem_size),
				      (unsigned long long)guest_mem);
		for (uint32_t j = 0; j < i; j++) {
			elf_segment_read(img, p, j, &t);
			if (elf_segment_loaded(&t) && s.paddr < t.paddr + t.mem_size &&
			    t.paddr < s.paddr + s.mem_size)
				return refuse(err, errlen, "segments %u and %u overlap", j, i);
		}
		any = true;
		if (s.paddr < p->kernel_start)
			p->kernel_start = s.paddr;
		if (s.paddr + s.mem_size > p->kernel_end)
			p->kernel_end = s.paddr + s.mem_size;
	}
	if (!any)
		return refuse(err, errlen, "ELF has no loadable segment");
	return plan_elf_entry(img, p, rd32(img + 24), err, errlen);
}
