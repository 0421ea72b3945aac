/*
 * Windows as the schedule builders (runtime/coll, runtime/halo) use them:
 * the tasks that move data into a peer's window and notify it there, the
 * WAIT on this rank's counters, and this rank's memory. The window itself is
 * runtime/oc_win.c's.
 */
#ifndef OC_WIN_H
#define OC_WIN_H

#include <stdint.h>

#include "oc_sched.h"
#include "offcoll.h"

/* A notification as it travels: a control message (oc_runtime.h). */
typedef struct {
    uint32_t type;     /* OC_MSG_NOTIFY */
    uint32_t win_id;   /* the target's id for the window */
    uint32_t counter;
    int32_t origin;    /* sender's rank in the team */
} oc_notify_msg_t;

/* Writes to t the tasks that move len bytes from src to offset off of peer's
 * window and then notify counter there, from origin (this rank): a copy
 * where the window is mapped here, else a put, nothing where len is 0 (the
 * data is in place already), then the notification, which *msg holds for
 * the schedule's life. Returns how many (1 or 2); they go into one list,
 * whose copies run before its transfers, and a notification leaves only
 * once the puts before it are remotely complete. */
size_t oc_win_put_tasks(const oc_win_t *win, int peer, size_t off, const void *src, size_t len,
                        unsigned counter, int origin, oc_notify_msg_t *msg, oc_task_t t[2]);

/* A WAIT task for n notifications at counter of this rank's window; it must
 * lead its list. */
oc_task_t oc_win_wait_task(oc_win_t *win, unsigned counter, size_t n);

/* This rank's window memory. */
char *oc_win_base(const oc_win_t *win);

/* peer's window mapped in this process (shared memory), or NULL. */
char *oc_win_mapped(const oc_win_t *win, int peer);

#endif
