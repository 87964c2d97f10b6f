/* Virtualization on an application processor, as virt_init left it on the
 * bootstrap CPU: the backend it chose, enabled on this CPU too, and the FPU's
 * control registers. */
#include "lib/print.h"
#include "virt/fpu.h"
#include "virt/vm.h"

bool virt_cpu_init(char *err, size_t len)
{
	/* Without a backend the BSP enabled nothing either: VMs cannot run. */
	if (!backend)
		return true;
	if (!backend->cpu_enable(err, len))
		return false;
	fpu_cpu_init();
	return true;
}
