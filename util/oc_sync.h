/* Sleeping waits on a 32-bit word (Linux futex) and monotonic time. */
#ifndef OC_SYNC_H
#define OC_SYNC_H

#include <stdatomic.h>
#include <stdint.h>

/* Seconds on the monotonic clock. */
double oc_time_now(void);

/* A wait's deadline: timeout seconds from the wait's first look at the
 * clock, not from its start, so that a wait over within its first passes
 * (a small operation's) reads no clock for it; the slack, those passes, is
 * microseconds against a timeout of seconds. */
typedef struct {
    double timeout; /* 0: none */
    double at;      /* oc_time_now() scale; 0 until the first look */
} oc_deadline_t;

static inline oc_deadline_t oc_deadline(double timeout_s)
{
    oc_deadline_t d = {timeout_s > 0 ? timeout_s : 0, 0};
    return d;
}

/* Seconds left at now, a clock read of the caller's (0 once passed); -1
 * where there is no deadline. */
double oc_deadline_left_at(oc_deadline_t *d, double now);

/* The same, reading the clock only where there is a deadline. */
double oc_deadline_left(oc_deadline_t *d);

/* Sleeps while *addr == expected, at most timeout_s seconds (< 0: no limit).
 * May return early (spurious wake-ups): callers re-check their condition. */
void oc_futex_wait(_Atomic uint32_t *addr, uint32_t expected, double timeout_s);

/* Wakes every thread sleeping on addr. */
void oc_futex_wake_all(_Atomic uint32_t *addr);

#endif
