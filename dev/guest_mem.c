/* A device's checked window on guest memory (guest_mem.h). */
#include "dev/guest_mem.h"
#include "loader/e820.h"

void guest_mem_init_pc(struct guest_mem *m, uint64_t mem_bytes)
{
	struct e820_entry map[PC_E820_MAX];
	unsigned n = pc_e820(mem_bytes, map);

	m->nr_ram = 0;
	for (unsigned i = 0; i < n && m->nr_ram < GUEST_RAM_RANGES; i++)
		if (map[i].type == E820_RAM) {
			m->ram[m->nr_ram].base = map[i].addr;
			m->ram[m->nr_ram].len = map[i].len;
			m->nr_ram++;
		}
}

bool guest_mem_ok(const struct guest_mem *m, uint64_t gpa, uint64_t len)
{
	for (unsigned i = 0; i < m->nr_ram; i++) {
		uint64_t base = m->ram[i].base, end = base + m->ram[i].len;

		/* gpa - base and end - gpa: no sum that could wrap */
		if (gpa >= base && gpa < end && len <= end - gpa)
			return true;
	}
	return false;
}

bool guest_mem_read(const struct guest_mem *m, uint64_t gpa, void *buf, uint32_t len)
{
	return guest_mem_ok(m, gpa, len) && (!len || m->copy_from(m->ctx, gpa, buf, len));
}

bool guest_mem_write(const struct guest_mem *m, uint64_t gpa, const void *buf, uint32_t len)
{
	return guest_mem_ok(m, gpa, len) && (!len || m->copy_to(m->ctx, gpa, buf, len));
}
