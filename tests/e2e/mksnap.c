/* mksnap: write a snapshot image (docs/snapshot.md) of a tiny guest, or of
 * the same guest with one field made hostile, for the restore tests. Built
 * for the host from sprig's own headers, so the layout is the real one.
 *
 *   mksnap OUT svm|vmx XSAVE_BYTES [FAULT [MEM_BYTES [VCPUS]]]
 *
 * The guest runs in 32-bit protected mode with paging off at 1 MiB and writes
 * 42 to the exit port; its APIC and chipset are at power-on (no pc-testdev). VCPUS (1 to 8, default 1)
 * adds APs that wait for a start-up IPI, which the guest never sends. FAULT
 * names the one field to break (see faults[]; the ap_ ones break vCPU 1, the
 * record_ ones the record stream, the device ones a device's record).
 * MEM_BYTES (whole pages, default 2 MiB) makes a smaller image, without the
 * program when it does not reach 1 MiB: the fuzz seeds
 * (tests/fuzz/make_corpus.py). */
#include "arch/x86/regs.h"
#include "tests/unit/flat_state.h"
#include "virt/snapshot.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MEM_BYTES (2u << 20)
#define ENTRY 0x100000u
#define STATE_OFFSET 4096u
#define STATE_ROOM (FLAT_VCPUS_MAX * 10240u + 16384u)
/* The memory follows the state, page-aligned. */
#define MEMORY_OFFSET(state_bytes) (STATE_OFFSET + (((state_bytes) + 4095) & ~4095u))

static const uint8_t program[] = { 0xb0, 42, 0xe6, 0xf4, 0xf4 }; /* mov al,42; out 0xf4,al; hlt */

static const char *const faults[] = {
	"none", "uart_len", "xcr0_zero", "xcr0_avx_no_sse", "xstate_bv", "xcomp_bv", "mxcsr",
	"rflags", "rip", "cr0_high", "efer", "fs_base", "pat", "backend", "state_bytes",
	"mem_size", "mem_offset", "magic", "truncated", "apic_base", "vcpus_zero", "vcpus_many",
	"vcpus_mismatch", "ap_apic_id", "ap_bsp", "ap_halt_waiting", "ap_xcr0", "record_unknown",
	"record_version", "pic_state", "pit_count", "ioapic_pins", "com1_rx", NULL,
};

/* The first record of that id in the state. */
static struct record_header *find_record(uint8_t *state, uint32_t len, uint32_t id)
{
	for (uint32_t pos = 0; pos < len;) {
		struct record_header *r = (void *)(state + pos);

		if (r->id == id)
			return r;
		pos += (uint32_t)sizeof(*r) + record_padded(r->length);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	static struct flat_vm f;
	static uint8_t blob[STATE_OFFSET + STATE_ROOM + MEM_BYTES];
	struct snapshot_header *h = (void *)blob;
	struct vcpu_state *st = &f.cpu[0], *ap = &f.cpu[1];
	uint8_t *state = blob + STATE_OFFSET;
	const char *fault = argc > 4 ? argv[4] : "none";
	uint64_t mem_bytes = argc > 5 ? strtoull(argv[5], NULL, 0) : MEM_BYTES;
	unsigned vcpus = argc > 6 ? (unsigned)atoi(argv[6]) : 1;
	uint32_t state_bytes;
	size_t size;
	int known = 0;

	if (argc < 4 || argc > 7 || (strcmp(argv[2], "svm") && strcmp(argv[2], "vmx"))) {
		fprintf(stderr, "usage: mksnap OUT svm|vmx XSAVE_BYTES [FAULT [MEM_BYTES [VCPUS]]]\n");
		return 2;
	}
	if (!mem_bytes || mem_bytes % 4096 || mem_bytes > MEM_BYTES) {
		fprintf(stderr, "mksnap: MEM_BYTES must be whole pages up to %u\n", MEM_BYTES);
		return 2;
	}
	if (vcpus < 1 || vcpus > FLAT_VCPUS_MAX) {
		fprintf(stderr, "mksnap: VCPUS must be 1 to %d\n", FLAT_VCPUS_MAX);
		return 2;
	}
	for (int i = 0; faults[i]; i++)
		known |= strcmp(faults[i], fault) == 0;
	if (!known) {
		fprintf(stderr, "mksnap: unknown fault '%s'\n", fault);
		return 2;
	}
	if (!strncmp(fault, "ap_", 3) && vcpus < 2) {
		fprintf(stderr, "mksnap: fault '%s' needs VCPUS of 2 or more\n", fault);
		return 2;
	}
	flat_vm(&f, vcpus, argv[2], (uint32_t)atoi(argv[3]), ENTRY, mem_bytes);

	/* Faults in a model: its record carries them. */
	if (!strcmp(fault, "uart_len"))
		f.vm.uart.len = 100000; /* would index far past the line buffer */
	else if (!strcmp(fault, "xcr0_zero"))
		st->xcr0 = 0;
	else if (!strcmp(fault, "xcr0_avx_no_sse"))
		st->xcr0 = XCR0_X87 | XCR0_AVX;
	else if (!strcmp(fault, "xstate_bv"))
		*(uint64_t *)(st->xsave + 512) = 1ull << 62;
	else if (!strcmp(fault, "xcomp_bv"))
		*(uint64_t *)(st->xsave + 520) = (1ull << 63) | 3;
	else if (!strcmp(fault, "mxcsr"))
		*(uint32_t *)(st->xsave + 24) = 0xffffffff;
	else if (!strcmp(fault, "rflags"))
		st->regs.rflags = 0xffffffffffffffffull;
	else if (!strcmp(fault, "rip"))
		st->regs.rip = 0x8000000000000000ull;
	else if (!strcmp(fault, "cr0_high") && !strcmp(argv[2], "svm"))
		((struct vmcb_save *)st->arch)->cr0 |= 1ull << 40;
	else if (!strcmp(fault, "cr0_high"))
		((struct vmx_saved_state *)st->arch)->cr0 |= 1ull << 40;
	else if (!strcmp(fault, "efer") && !strcmp(argv[2], "svm"))
		((struct vmcb_save *)st->arch)->efer |= 1ull << 40;
	else if (!strcmp(fault, "efer"))
		((struct vmx_saved_state *)st->arch)->efer |= 1ull << 40;
	else if (!strcmp(fault, "fs_base") && !strcmp(argv[2], "svm"))
		((struct vmcb_save *)st->arch)->fs.base = 0x0100000000000000ull;
	else if (!strcmp(fault, "fs_base"))
		((struct vmx_saved_state *)st->arch)->base[VMX_FS] = 0x0100000000000000ull;
	else if (!strcmp(fault, "pat") && !strcmp(argv[2], "svm"))
		((struct vmcb_save *)st->arch)->g_pat = ~0ull;
	else if (!strcmp(fault, "pat"))
		((struct vmx_saved_state *)st->arch)->pat = ~0ull;
	else if (!strcmp(fault, "backend"))
		memset(st->backend, 'x', sizeof(st->backend));
	else if (!strcmp(fault, "apic_base"))
		f.apic[0].apic_base |= 1u << 9; /* reserved */
	else if (!strcmp(fault, "vcpus_mismatch"))
		f.vm.nr_vcpus = vcpus; /* the header below says one fewer */
	else if (!strcmp(fault, "ap_apic_id"))
		f.apic[1].initial_id = f.apic[1].id = 0; /* the BSP's */
	else if (!strcmp(fault, "ap_bsp"))
		f.apic[1].apic_base |= LAPIC_BASE_BSP;
	else if (!strcmp(fault, "ap_halt_waiting"))
		ap->halted = 1;
	else if (!strcmp(fault, "ap_xcr0"))
		ap->xcr0 = 0;
	else if (!strcmp(fault, "pic_state"))
		f.pic.chip[1].init_state = 7; /* past ICW4 */
	else if (!strcmp(fault, "pit_count"))
		f.pit.ch[2].count = 0; /* a divisor of zero */
	else if (!strcmp(fault, "ioapic_pins"))
		f.ioapic.line = 1u << 30; /* a pin past the 24 */
	else if (!strcmp(fault, "com1_rx"))
		f.uart.rx_count = 200; /* past the receiver */

	if (!(state_bytes = flat_vm_records(&f, state, STATE_ROOM))) {
		fprintf(stderr, "mksnap: the state outgrew %u bytes\n", STATE_ROOM);
		return 1;
	}
	size = MEMORY_OFFSET(state_bytes) + mem_bytes;
	memcpy(h->magic, SNAPSHOT_MAGIC, 8);
	h->version = SNAPSHOT_VERSION;
	h->vcpus = !strcmp(fault, "vcpus_mismatch") ? vcpus - 1 : vcpus;
	h->state_bytes = state_bytes;
	h->mem_bytes = mem_bytes;
	h->state_offset = STATE_OFFSET;
	h->memory_offset = MEMORY_OFFSET(state_bytes);
	if (ENTRY + sizeof(program) <= mem_bytes)
		memcpy(blob + h->memory_offset + ENTRY, program, sizeof(program));

	/* Faults in the header and the record stream. */
	if (!strcmp(fault, "state_bytes"))
		h->state_bytes = 8;
	else if (!strcmp(fault, "mem_size"))
		h->mem_bytes = 1ull << 62;
	else if (!strcmp(fault, "mem_offset"))
		h->memory_offset = ~0ull - 4095;
	else if (!strcmp(fault, "magic"))
		h->magic[0] = 'X';
	else if (!strcmp(fault, "truncated"))
		size = h->memory_offset + (mem_bytes > 4096 ? 4096 : 2048); /* short of its memory */
	else if (!strcmp(fault, "vcpus_zero"))
		h->vcpus = 0;
	else if (!strcmp(fault, "vcpus_many"))
		h->vcpus = 1000;
	else if (!strcmp(fault, "record_unknown"))
		find_record(state, state_bytes, REC_PIT)->id = 999;
	else if (!strcmp(fault, "record_version"))
		find_record(state, state_bytes, REC_PIC)->version = 9;

	FILE *out = fopen(argv[1], "wb");
	if (!out || fwrite(blob, 1, size, out) != size || fclose(out)) {
		perror(argv[1]);
		return 1;
	}
	return 0;
}
