/* Virtualization on an application processor, as virt_init left it on the
 * bootstrap CPU: the backend it chose, enabled on this CPU too, and the FPU's
 * control registers. virt_init registers it with CPU bring-up once it has
 * chosen a backend. */
#include "virt/virt_cpu.h"
#include "lib/print.h"
#include "virt/fpu.h"
#include "virt/vm.h"

bool virt_cpu_init(char *err, size_t len)
{
	if (!backend->cpu_enable(err, len))
		return false;
	fpu_cpu_init();
	return true;
}
