#include "oc_coll.h"
#include "oc_error.h"

/* Each block goes straight into its receiver's landing zone, followed by a
 * notification; the receiver's engine waits for one notification per peer,
 * then copies the zone out into rbuf. A receiver whose window is mapped here
 * (shared memory) gets the block by one copy of this rank's engine instead of
 * a put. No tags and no rendezvous: on shared memory a block costs two
 * memcpys, one on each side, where UCX's rendezvous costs a kernel copy of
 * about twice a memcpy on the receiver alone.
 *
 * An empty block is notified too, unless the pair exchanges nothing either
 * way. That keeps every pair that writes into the other's zones in step, so
 * a peer is at most one start ahead and two zones, alternating by start, are
 * enough: a peer that owed this rank nothing could otherwise run two starts
 * ahead and overwrite a zone not yet copied out. */
oc_status_t oc_coll_alltoall_put(const oc_coll_args_t *a, oc_sched_t *s)
{
    const oc_coll_put_t *z = a->put;
    oc_win_t *win;
    int n = a->size, r = a->rank, d;
    size_t self = oc_coll_scount(a, r), expected = 0;
    oc_notify_msg_t *msgs;
    oc_status_t st = OC_OK;
    oc_task_t t[2];

    if (z == NULL)
        return oc_error(OC_ERR_INVALID_ARG, "put: a persistent request's landing zones are "
                        "needed");
    win = z->win;
    msgs = oc_sched_scratch(s, (size_t)n * sizeof(*msgs));
    if (msgs == NULL)
        return oc_error(OC_ERR_NO_MEMORY, "put: %d notification messages", n);
    if (self > 0) {
        t[0] = oc_task_copy(a->rbuf + oc_coll_rdispl(a, r), a->sbuf + oc_coll_sdispl(a, r), self);
        st = oc_sched_add(s, t, 1);
    }
    for (d = 1; d < n && st == OC_OK; d++) {
        int q = (r + d) % n;
        size_t len = oc_coll_scount(a, q);
        const char *src = a->sbuf + oc_coll_sdispl(a, q);
        size_t k;

        if (!oc_coll_put_pair(a, q))
            continue;
        expected++;
        k = oc_win_put_tasks(win, q, z->remote[q], src, len, z->counter, r, &msgs[q], t);
        st = oc_sched_add(s, t, k);
    }
    /* A WAIT task leads its list. */
    oc_sched_end_list(s);
    if (st == OC_OK && expected > 0) {
        t[0] = oc_win_wait_task(win, z->counter, expected);
        st = oc_sched_add(s, t, 1);
    }
    for (d = 1; d < n && st == OC_OK; d++) {
        int q = (r - d + n) % n;
        size_t len = oc_coll_rcount(a, q);
        if (len == 0)
            continue;
        t[0] = oc_task_copy(a->rbuf + oc_coll_rdispl(a, q), oc_win_base(win) + z->local[q], len);
        st = oc_sched_add(s, t, 1);
    }
    return st;
}
