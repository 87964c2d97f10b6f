/* The console's output: one stream to the UART and the screen (VGA text or a
 * framebuffer), under one lock. Until the console is chosen, output waits in
 * a buffer and is shown once it is. */
#pragma once
#include <stdbool.h>

/* Register the console with kprintf (lib/print.h); its output waits in the
 * buffer from then until console_start. Call once per-CPU data is set up. */
void console_init(void);
/* The console is chosen: show what waited and write through from now on. */
void console_start(void);
bool console_started(void);
/* An exception report takes the console whoever holds it: this CPU's
 * interrupted code, or another CPU that does not let go within a moment; and
 * gives it up whole afterwards, since the interrupted holder never resumes.
 * Before the console is chosen it chooses the fallback first. */
void console_lock_for_report(void);
void console_unlock_after_report(void);
