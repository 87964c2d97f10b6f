/* Hypercalls (ABI in virt/hypercall.h). Guest-physical ranges are checked
 * against the VM's memory before sprig touches them. */
#include "arch/x86/cpu.h"
#include "arch/x86/tsc.h"
#include "lib/print.h"
#include "virt/emulate.h"
#include "virt/hypercall.h"

#define PUTS_MAX 4096

/* [gpa, gpa + len) lies in the guest's RAM, without wrapping. */
static bool guest_range_ok(struct vm *vm, uint64_t gpa, uint64_t len)
{
	return len && gpa < vm->mem_bytes && len <= vm->mem_bytes - gpa;
}

static uint64_t hc_balloon_release(struct vm *vm, uint64_t gpa, uint64_t len)
{
	if ((gpa | len) & (PAGE_SIZE - 1) || !guest_range_ok(vm, gpa, len))
		return (uint64_t)HC_EINVAL;
	mmu_discard(&vm->mmu, gpa, len);
	return 0;
}

static uint64_t hc_puts(struct vm *vm, uint64_t gpa, uint64_t len)
{
	static char buf[PUTS_MAX];

	if (len > PUTS_MAX || !guest_range_ok(vm, gpa, len) ||
	    mmu_read_guest(&vm->mmu, gpa, buf, len))
		return (uint64_t)HC_EINVAL;
	for (uint64_t i = 0; i < len; i++)
		uart_transmit(vm, (uint8_t)buf[i]);
	return 0;
}

bool emulate_hypercall(struct vm *vm)
{
	struct vcpu_regs *r = &vm->vcpu.regs;
	uint64_t ret;

	vm->stats.hypercalls++;
	switch (r->rax) {
	case HC_VERSION:
		ret = HC_ABI_VERSION;
		break;
	case HC_EXIT:
		vm_exit(vm, (int)r->rbx);
		return true;
	case HC_BALLOON_RELEASE:
		ret = hc_balloon_release(vm, r->rbx, r->rcx);
		break;
	case HC_TSC_KHZ:
		ret = tsc_khz();
		break;
	case HC_TIME_NS:
		ret = tsc_to_ns(rdtsc() - vm->created_tsc);
		break;
	case HC_PUTS:
		ret = hc_puts(vm, r->rbx, r->rcx);
		break;
	default:
		vm_fail(vm, "unknown hypercall 0x%llx", (unsigned long long)r->rax);
		return false;
	}
	r->rax = ret;
	return true;
}
