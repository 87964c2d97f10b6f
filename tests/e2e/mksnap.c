/* mksnap: write a snapshot image (docs/snapshot.md) of a tiny guest, or of
 * the same guest with one field made hostile, for the restore tests. Built
 * for the host from sprig's own headers, so the layout is the real one.
 *
 *   mksnap OUT svm|vmx XSAVE_BYTES [FAULT [MEM_BYTES [VCPUS]]]
 *
 * The guest runs in 32-bit protected mode with paging off at 1 MiB and writes
 * 42 to the exit port; its APIC is at power-on. VCPUS (1 to 8, default 1)
 * adds APs that wait for a start-up IPI, which the guest never sends. FAULT
 * names the one field to break (see faults[]; the ap_ ones break vCPU 1).
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
#define VCPUS_MAX 8
#define STATE_OFFSET 4096u
/* The memory follows the state of n vCPUs, page-aligned. */
#define MEMORY_OFFSET(n) (STATE_OFFSET + ((vm_saved_state_bytes(n) + 4095) & ~4095ul))

static const uint8_t program[] = { 0xb0, 42, 0xe6, 0xf4, 0xf4 }; /* mov al,42; out 0xf4,al; hlt */

static const char *const faults[] = {
	"none", "uart_len", "xcr0_zero", "xcr0_avx_no_sse", "xstate_bv", "xcomp_bv", "mxcsr",
	"rflags", "rip", "cr0_high", "efer", "fs_base", "pat", "backend", "state_bytes",
	"mem_size", "mem_offset", "magic", "truncated", "apic_base", "vcpus_zero", "vcpus_many",
	"vcpus_mismatch", "ap_apic_id", "ap_bsp", "ap_halt_waiting", "ap_xcr0", NULL,
};

int main(int argc, char **argv)
{
	static uint8_t blob[STATE_OFFSET + sizeof(struct vm_saved_state) +
			    VCPUS_MAX * sizeof(struct vcpu_state) + 4096 + MEM_BYTES];
	struct snapshot_header *h = (void *)blob;
	struct vm_saved_state *vm = (void *)(blob + STATE_OFFSET);
	struct vcpu_state *st = &vm->vcpu[0], *ap = &vm->vcpu[1];
	const char *fault = argc > 4 ? argv[4] : "none";
	uint64_t mem_bytes = argc > 5 ? strtoull(argv[5], NULL, 0) : MEM_BYTES;
	unsigned vcpus = argc > 6 ? (unsigned)atoi(argv[6]) : 1;
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
	if (vcpus < 1 || vcpus > VCPUS_MAX) {
		fprintf(stderr, "mksnap: VCPUS must be 1 to %d\n", VCPUS_MAX);
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
	flat_vm_state(vm, vcpus, argv[2], (uint32_t)atoi(argv[3]), ENTRY);
	size = MEMORY_OFFSET(vcpus) + mem_bytes;

	memcpy(h->magic, SNAPSHOT_MAGIC, 8);
	h->version = SNAPSHOT_VERSION;
	h->vcpus = vcpus;
	h->vcpu_bytes = sizeof(struct vcpu_state);
	h->state_bytes = (uint32_t)vm_saved_state_bytes(vcpus);
	h->mem_bytes = mem_bytes;
	h->state_offset = STATE_OFFSET;
	h->memory_offset = MEMORY_OFFSET(vcpus);
	if (ENTRY + sizeof(program) <= mem_bytes)
		memcpy(blob + MEMORY_OFFSET(vcpus) + ENTRY, program, sizeof(program));

	if (!strcmp(fault, "uart_len"))
		vm->uart.len = 100000; /* would index far past the line buffer */
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
	else if (!strcmp(fault, "state_bytes"))
		h->vcpu_bytes = 8;
	else if (!strcmp(fault, "mem_size"))
		h->mem_bytes = 1ull << 62;
	else if (!strcmp(fault, "mem_offset"))
		h->memory_offset = ~0ull - 4095;
	else if (!strcmp(fault, "magic"))
		h->magic[0] = 'X';
	else if (!strcmp(fault, "truncated"))
		size = MEMORY_OFFSET(vcpus) + (mem_bytes > 4096 ? 4096 : 2048); /* short of its memory */
	else if (!strcmp(fault, "apic_base"))
		st->apic.apic_base |= 1u << 9; /* reserved */
	else if (!strcmp(fault, "vcpus_zero"))
		h->vcpus = 0;
	else if (!strcmp(fault, "vcpus_many"))
		h->vcpus = 1000;
	else if (!strcmp(fault, "vcpus_mismatch"))
		vm->nr_vcpus = vcpus + 1; /* the header says one fewer */
	else if (!strcmp(fault, "ap_apic_id"))
		ap->apic.initial_id = ap->apic.id = 0; /* the BSP's */
	else if (!strcmp(fault, "ap_bsp"))
		ap->apic.apic_base |= LAPIC_BASE_BSP;
	else if (!strcmp(fault, "ap_halt_waiting"))
		ap->halted = 1;
	else if (!strcmp(fault, "ap_xcr0"))
		ap->xcr0 = 0;

	FILE *f = fopen(argv[1], "wb");
	if (!f || fwrite(blob, 1, size, f) != size || fclose(f)) {
		perror(argv[1]);
		return 1;
	}
	return 0;
}
