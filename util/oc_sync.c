#include "oc_sync.h"

#include <linux/futex.h>
#include <limits.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

double oc_time_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double oc_deadline_left_at(oc_deadline_t *d, double now)
{
    if (d->timeout <= 0)
        return -1;
    if (d->at == 0)
        d->at = now + d->timeout;
    return d->at > now ? d->at - now : 0;
}

double oc_deadline_left(oc_deadline_t *d)
{
    return d->timeout > 0 ? oc_deadline_left_at(d, oc_time_now()) : -1;
}

void oc_futex_wait(_Atomic uint32_t *addr, uint32_t expected, double timeout_s)
{
    struct timespec ts, *tsp = NULL;
    if (timeout_s >= 0 && timeout_s < 1e9) { /* beyond, time_t's cast is not safe: no limit */
        ts.tv_sec = (time_t)timeout_s;
        ts.tv_nsec = (long)((timeout_s - (double)ts.tv_sec) * 1e9);
        tsp = &ts;
    }
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT_PRIVATE, expected, tsp, NULL, 0);
}

void oc_futex_wake_all(_Atomic uint32_t *addr)
{
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}
