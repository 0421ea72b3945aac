/*
 * The task-list model: what a collective looks like to "the NIC".
 *
 * A task is one NIC-level action; a task list holds tasks that may all be in
 * flight together, never more than list_max of them (the modelled work-queue
 * limit); a schedule is an ordered sequence of lists, list k+1 being posted
 * only once list k has completed. Schedules are plain data built by the
 * algorithms in runtime/coll/ and executed by a backend through the progress
 * engine; nothing here talks to a network.
 */
#ifndef OC_SCHED_H
#define OC_SCHED_H

#include <stddef.h>
#include <stdint.h>
#include "offcoll.h"

typedef enum {
    OC_TASK_SEND = 0, /* len bytes from src to team rank peer */
    OC_TASK_RECV,     /* len bytes from team rank peer into dst */
    OC_TASK_COPY,     /* count2 x count chunks of len bytes, src/dst advancing by their
                         strides (stride within a row of count, stride2 between rows) */
    OC_TASK_PUT,      /* len bytes from src into peer's memory at raddr, through key obj */
    OC_TASK_NOTIFY,   /* control message src/len to peer, sent once every earlier put to
                         peer is remotely complete */
    OC_TASK_FLUSH,    /* done once every earlier put to peer is remotely complete */
    OC_TASK_WAIT      /* the engine's: until counter obj can give count; leads its list */
} oc_task_type_t;

typedef struct {
    oc_task_type_t type;
    int peer;
    size_t len;
    const void *src;
    void *dst;
    size_t count, count2;
    ptrdiff_t src_stride, dst_stride, src_stride2, dst_stride2;
    uint64_t raddr;
    void *obj;
} oc_task_t;

/* A list is a range of the schedule's task array. Within a list, copies come
 * before network tasks are needed: a backend executes the list's copies in
 * order before its sends and receives are posted. */
typedef struct {
    uint32_t first;
    uint32_t ntasks;
} oc_task_list_t;

typedef struct {
    oc_task_t *tasks;
    size_t ntasks, tasks_cap;
    oc_task_list_t *lists;
    size_t nlists, lists_cap;
    size_t list_max;
    int list_open;   /* 0: the next task starts a new list */
    struct oc_sched_scratch *scratch;      /* buffers owned by the schedule, freed by
                                              oc_sched_fini */
    struct oc_sched_scratch *scratch_free; /* the last build's, for oc_sched_scratch to
                                              hand out again */
} oc_sched_t;

void oc_sched_init(oc_sched_t *s, size_t list_max);
void oc_sched_fini(oc_sched_t *s);
/* Empties s (initialised, or zeroed) for a new build, keeping its arrays and
 * its scratch buffers for oc_sched_scratch to hand out again. */
void oc_sched_clear(oc_sched_t *s, size_t list_max);

/* Ends the current list: the next task goes into a new one (a stage boundary). */
void oc_sched_end_list(oc_sched_t *s);

/* Adds n tasks that must share one list (e.g. a send and the receive it is
 * paired with, so that a cut list never waits on a peer's later list).
 * Starts a new list when the current one has no room. */
oc_status_t oc_sched_add(oc_sched_t *s, const oc_task_t *tasks, size_t n);

/* Makes room for n more tasks at once: a builder that knows its count saves
 * the doublings and, for a small team's schedule, an allocation beyond the
 * allocator's per-thread cache, on every one-shot call. */
oc_status_t oc_sched_reserve(oc_sched_t *s, size_t n);

/* size bytes owned by the schedule until oc_sched_fini (NULL when out of
 * memory): a buffer of an earlier build large enough, or a new one; earlier
 * blocks of this build stay valid. */
void *oc_sched_scratch(oc_sched_t *s, size_t size);

static inline oc_task_t oc_task_send(int peer, const void *src, size_t len)
{
    oc_task_t t = {.type = OC_TASK_SEND, .peer = peer, .len = len, .src = src};
    return t;
}

static inline oc_task_t oc_task_recv(int peer, void *dst, size_t len)
{
    oc_task_t t = {.type = OC_TASK_RECV, .peer = peer, .len = len, .dst = dst};
    return t;
}

/* A 3D box copy: count2 rows of count chunks of len bytes. */
static inline oc_task_t oc_task_copy_box(void *dst, ptrdiff_t dst_stride,
                                         ptrdiff_t dst_stride2, const void *src,
                                         ptrdiff_t src_stride, ptrdiff_t src_stride2,
                                         size_t len, size_t count, size_t count2)
{
    oc_task_t t = {.type = OC_TASK_COPY, .peer = -1, .len = len, .src = src, .dst = dst,
                   .count = count, .count2 = count2, .src_stride = src_stride,
                   .dst_stride = dst_stride, .src_stride2 = src_stride2,
                   .dst_stride2 = dst_stride2};
    return t;
}

static inline oc_task_t oc_task_copy_strided(void *dst, ptrdiff_t dst_stride,
                                             const void *src, ptrdiff_t src_stride,
                                             size_t len, size_t count)
{
    return oc_task_copy_box(dst, dst_stride, 0, src, src_stride, 0, len, count, 1);
}

static inline oc_task_t oc_task_copy(void *dst, const void *src, size_t len)
{
    return oc_task_copy_strided(dst, 0, src, 0, len, 1);
}

static inline oc_task_t oc_task_put(int peer, const void *src, size_t len, uint64_t raddr,
                                    void *rkey)
{
    oc_task_t t = {.type = OC_TASK_PUT, .peer = peer, .len = len, .src = src,
                   .raddr = raddr, .obj = rkey};
    return t;
}

static inline oc_task_t oc_task_notify(int peer, const void *msg, size_t len)
{
    oc_task_t t = {.type = OC_TASK_NOTIFY, .peer = peer, .len = len, .src = msg};
    return t;
}

static inline oc_task_t oc_task_flush(int peer)
{
    oc_task_t t = {.type = OC_TASK_FLUSH, .peer = peer};
    return t;
}

static inline oc_task_t oc_task_wait(void *counter, size_t count)
{
    oc_task_t t = {.type = OC_TASK_WAIT, .peer = -1, .count = count, .obj = counter};
    return t;
}

/* Executes the copy tasks among tasks[0..n) on the calling CPU, in order
 * (every backend does a list's copies when it is posted). */
void oc_task_do_copies(const oc_task_t *tasks, size_t n);

/* What a network task does to its peer, for messages: "send to" (rank). */
static inline const char *oc_task_verb(oc_task_type_t type)
{
    switch (type) {
    case OC_TASK_SEND: return "send to";
    case OC_TASK_RECV: return "receive from";
    case OC_TASK_PUT: return "put to";
    case OC_TASK_NOTIFY: return "notification to";
    default: return "flush to";
    }
}

/* Payload bytes of a task (len * count * count2 for copies). */
static inline size_t oc_task_bytes(const oc_task_t *t)
{
    return t->type == OC_TASK_COPY ? t->len * t->count * t->count2 : t->len;
}

#endif
