/* The CMOS RTC (Motorola MC146818A; ports 0x70/0x71) as a pure model: no
 * knowledge of VMs or backends, ports are function calls, time comes in as
 * `now`, the guest's TSC, whose rate is given at init. The clock is the wall
 * clock at TSC 0 plus the guest TSC elapsed, plus an offset the guest sets.
 * Also built for the host (tests/unit/test_rtc.c).
 *
 * Choices:
 *   - Port 0x70: bits 6:0 select the CMOS byte, bit 7 (NMI mask) is kept in
 *     nmi_masked and has no effect; reading port 0x70 gives 0xff (as QEMU).
 *   - Seconds tick at TSC multiples of tsc_khz * 1000 (the phase of the
 *     update cycle is tied to TSC 0; a guest's time set changes only whole
 *     seconds). Register A's UIP bit reads 1 in the last 8/32768 s (244.1 us)
 *     of each second while SET is 0 (as QEMU); the registers read the old
 *     time during it (no 1984 us update window in which they are invalid).
 *   - Register A: bits 6:0 are stored (default 0x26) and only RS (3:0) is
 *     used, for the periodic flag; the divider bits (6:4) do not stop the clock.
 *   - Register B: default 0x02 (24-hour, BCD). SET=1 freezes the time registers
 *     (0, 2, 4, 6-9 and the century 0x32) at the time it was set; the guest may
 *     write them; clearing SET makes the clock run from the written time (the
 *     written day of week is ignored: it is computed from the date). A write to
 *     a time register while SET is 0 sets the clock at once the same way.
 *     Changing DM or 24/12 reinterprets the registers (they are encoded on read).
 *   - Register C reads the flags raised since its last read and clears them:
 *     UF when a second boundary passed (SET 0), PF when a period of the rate
 *     RS selects passed, AF when UF and the current time matches the alarm
 *     registers (0xc0-0xff is "don't care"; alarms missed by polling less than
 *     once a second are lost); IRQF when a flag is set whose enable bit in B is.
 *     No IRQ 8 is raised: the flags work by polling only.
 *   - Register D reads 0x80 (VRT); C and D ignore writes.
 *   - Memory size bytes as QEMU's pc machine, with its i440fx split of RAM
 *     around the PCI hole: below 4 GiB is all RAM when ram_bytes < 0xe0000000,
 *     else 3 GiB with the rest above 4 GiB. 0x15/0x16 = 640 (KiB), 0x17/0x18 =
 *     0x30/0x31 = KiB above 1 MiB below 4 GiB (max 65535), 0x34/0x35 = 64 KiB
 *     units above 16 MiB below 4 GiB (max 0xffff), 0x5b-0x5d = 64 KiB units
 *     above 4 GiB. Other bytes (equipment, disks, boot order) are 0.
 *   - The other CMOS bytes are plain storage.
 */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include "virt/state_record.h"

#define RTC_PORT_INDEX 0x70
#define RTC_PORT_DATA 0x71

enum {
	RTC_SEC = 0x00, RTC_SEC_ALARM = 0x01, RTC_MIN = 0x02, RTC_MIN_ALARM = 0x03,
	RTC_HOUR = 0x04, RTC_HOUR_ALARM = 0x05, RTC_WDAY = 0x06, RTC_MDAY = 0x07,
	RTC_MONTH = 0x08, RTC_YEAR = 0x09, RTC_REG_A = 0x0a, RTC_REG_B = 0x0b,
	RTC_REG_C = 0x0c, RTC_REG_D = 0x0d, RTC_CENTURY = 0x32,
};

#define RTC_A_UIP 0x80
#define RTC_B_SET 0x80
#define RTC_B_PIE 0x40
#define RTC_B_AIE 0x20
#define RTC_B_UIE 0x10
#define RTC_B_DM_BINARY 0x04
#define RTC_B_24H 0x02
#define RTC_C_IRQF 0x80
#define RTC_C_PF 0x40
#define RTC_C_AF 0x20
#define RTC_C_UF 0x10
#define RTC_D_VRT 0x80

struct rtc {
	uint8_t cmos[128];
	uint8_t index;    /* port 0x70 bits 6:0 */
	bool nmi_masked;  /* port 0x70 bit 7, ignored */
	uint64_t tsc_khz;
	uint64_t unix_at_tsc0;
	int64_t offset;   /* seconds the guest moved the clock by */
	uint64_t c_second; /* second (now / TSC Hz) at the last register C read */
	uint64_t c_period; /* periodic-rate period index at the last register C read */
};


void rtc_init(struct rtc *r, uint64_t tsc_khz, uint64_t unix_seconds_at_tsc0 /* wall clock when the guest TSC was 0 */,
	      uint64_t ram_bytes);
uint8_t rtc_port_read(struct rtc *r, uint16_t port, uint64_t now);
void rtc_port_write(struct rtc *r, uint16_t port, uint8_t val, uint64_t now);
/* The RTC's state record (REC_RTC). */
extern const struct record_type rtc_record;
