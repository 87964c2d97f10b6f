/* The backends that the image holds (their probes, in the .backends section)
 * and the one that registered (virt/backend.h). */
#include "virt/backend.h"

extern const backend_probe_fn __backends_start[], __backends_end[];

static struct virt_backend registered;
const struct virt_backend *backend;

void backend_register(const struct virt_backend *ops)
{
	registered = *ops;
	backend = &registered;
}

bool backend_probe(void)
{
	char err[96];

	for (const backend_probe_fn *p = __backends_start; p < __backends_end && !backend; p++)
		(*p)(err, sizeof(err));
	return backend != NULL;
}
