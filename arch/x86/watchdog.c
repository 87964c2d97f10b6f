#include "arch/x86/watchdog.h"
#include "arch/x86/cpu.h"
#include "arch/x86/power.h"
#include "arch/x86/tsc.h"
#include "lib/print.h"
#include "lib/string.h"

#define WHAT_MAX 80

static uint64_t deadline; /* TSC; 0 when disarmed */
static unsigned armed_seconds;
static char armed_what[WHAT_MAX];

void watchdog_arm(const char *what, unsigned seconds)
{
	/* The tick reads the three together: disarmed while they change. */
	__atomic_store_n(&deadline, 0, __ATOMIC_RELEASE);
	if (!seconds)
		return;
	ksnprintf(armed_what, sizeof(armed_what), "%s", what);
	armed_seconds = seconds;
	__atomic_store_n(&deadline, rdtsc() + tsc_from_us((uint64_t)seconds * 1000000),
			 __ATOMIC_RELEASE);
}

void watchdog_tick(void)
{
	uint64_t due = __atomic_load_n(&deadline, __ATOMIC_ACQUIRE);

	if (!due || rdtsc() < due)
		return;
	deadline = 0;
	kprintf("\nwatchdog: %s ran over %u s\n", armed_what, armed_seconds);
	power_reboot();
}
