#include "oc_coll.h"

/* Ring-k is the general form of the direct exchange: burst (k = n-1) and
 * pairwise (k = 1) are its two ends. Each send is grouped with the receive at
 * the same distance and lists follow increasing distance, so partners meet at
 * the same distance however their stages are cut into lists (the cuts differ
 * where counts, k or self copies do), and a cut schedule cannot deadlock. */
oc_status_t oc_coll_alltoall_ringk(const oc_coll_args_t *a, unsigned k, oc_sched_t *s)
{
    int n = a->size, r = a->rank, d;
    size_t self = oc_coll_scount(a, r);
    oc_status_t st = oc_sched_reserve(s, 2 * (size_t)(n - 1) + 1);

    if (k < 1)
        k = 1;
    if (self > 0 && st == OC_OK) {
        oc_task_t t = oc_task_copy(a->rbuf + oc_coll_rdispl(a, r), a->sbuf + oc_coll_sdispl(a, r),
                                   self);
        st = oc_sched_add(s, &t, 1);
    }
    for (d = 1; d < n && st == OC_OK; d++) {
        int to = (r + d) % n, from = (r - d + n) % n;
        size_t sc = oc_coll_scount(a, to), rc = oc_coll_rcount(a, from), np = 0;
        oc_task_t pair[2];

        if ((unsigned)(d - 1) % k == 0 && d > 1)
            oc_sched_end_list(s);
        /* a zero-byte block's displacement may be anything, its buffer NULL */
        if (sc > 0 || a->unagreed)
            pair[np++] = oc_task_send(to, sc > 0 ? a->sbuf + oc_coll_sdispl(a, to) : a->sbuf, sc);
        if (rc > 0 || a->unagreed)
            pair[np++] =
                oc_task_recv(from, rc > 0 ? a->rbuf + oc_coll_rdispl(a, from) : a->rbuf, rc);
        st = oc_sched_add(s, pair, np);
    }
    return st;
}
