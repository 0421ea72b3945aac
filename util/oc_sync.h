/* Sleeping waits on a 32-bit word (Linux futex) and monotonic time. */
#ifndef OC_SYNC_H
#define OC_SYNC_H

#include <stdatomic.h>
#include <stdint.h>

/* Seconds on the monotonic clock. */
double oc_time_now(void);

/* Sleeps while *addr == expected, at most timeout_s seconds (< 0: no limit).
 * May return early (spurious wake-ups): callers re-check their condition. */
void oc_futex_wait(_Atomic uint32_t *addr, uint32_t expected, double timeout_s);

/* Wakes every thread sleeping on addr. */
void oc_futex_wake_all(_Atomic uint32_t *addr);

#endif
