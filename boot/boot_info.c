/* What the boot loader handed sprig (boot_info.h). */
#include "boot/boot_info.h"
#include "lib/string.h"

struct boot_info boot_info;

const struct boot_module *boot_module_find(const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; i < boot_info.n_modules; i++) {
		const char *s = boot_info.modules[i].cmdline;
		if (strncmp(s, name, n) == 0 && (s[n] == 0 || s[n] == ' '))
			return &boot_info.modules[i];
	}
	return NULL;
}
