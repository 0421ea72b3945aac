#include "oc_coll.h"

#include "oc_error.h"

/* Bruck: ceil(log2 n) stages. After a rotation by the own rank, stage k sends
 * every block whose index has bit k set to rank r + 2^k; at the end block i
 * holds the data of rank r - i, and an inverse rotation puts it in place.
 * Blocks with bit k set form runs of 2^k blocks every 2^(k+1): one strided
 * copy packs them, plus one for a partial last run. */

/* Adds the copies between the working buffer and a packed buffer for bit pow.
 * Returns the number of blocks moved. */
static size_t pack_copies(oc_sched_t *s, char *work, char *packed, size_t b, size_t n,
                          size_t pow, int unpack, oc_status_t *st)
{
    size_t full = 0, start, moved;
    oc_task_t t[2];
    size_t nt = 0;

    for (start = pow; start + pow <= n; start += 2 * pow)
        full++;
    moved = full * pow;
    if (full > 0)
        t[nt++] = unpack ? oc_task_copy_strided(work + pow * b, (ptrdiff_t)(2 * pow * b), packed,
                                                (ptrdiff_t)(pow * b), pow * b, full)
                         : oc_task_copy_strided(packed, (ptrdiff_t)(pow * b), work + pow * b,
                                                (ptrdiff_t)(2 * pow * b), pow * b, full);
    start = pow + full * 2 * pow;
    if (start < n) {
        size_t rest = n - start;
        t[nt++] = unpack ? oc_task_copy(work + start * b, packed + moved * b, rest * b)
                         : oc_task_copy(packed + moved * b, work + start * b, rest * b);
        moved += rest;
    }
    for (size_t i = 0; i < nt && *st == OC_OK; i++)
        *st = oc_sched_add(s, &t[i], 1);
    return moved;
}

oc_status_t oc_coll_alltoall_bruck(const oc_coll_args_t *a, oc_sched_t *s)
{
    size_t n = (size_t)a->size, r = (size_t)a->rank, b = a->block;
    size_t half = (n + 1) / 2, pow, last_pow = 0;
    char *work, *sendtmp, *recvtmp;
    oc_status_t st = OC_OK;
    oc_task_t t[2];

    if (a->scounts != NULL)
        return oc_error(OC_ERR_INVALID_ARG, "the Bruck algorithm needs equal blocks");
    if (b == 0)
        return OC_OK;
    work = oc_sched_scratch(s, (n + 2 * half) * b);
    if (work == NULL)
        return oc_error(OC_ERR_NO_MEMORY, "Bruck scratch of %zu bytes", (n + 2 * half) * b);
    sendtmp = work + n * b;
    recvtmp = sendtmp + half * b;

    /* Rotation: work block i = send block (r + i) mod n. */
    t[0] = oc_task_copy(work, a->sbuf + r * b, (n - r) * b);
    st = oc_sched_add(s, &t[0], 1);
    if (r > 0 && st == OC_OK) {
        t[0] = oc_task_copy(work + (n - r) * b, a->sbuf, r * b);
        st = oc_sched_add(s, &t[0], 1);
    }
    for (pow = 1; pow < n && st == OC_OK; pow *= 2) {
        size_t nb;
        if (last_pow)
            pack_copies(s, work, recvtmp, b, n, last_pow, 1, &st);
        nb = pack_copies(s, work, sendtmp, b, n, pow, 0, &st);
        t[0] = oc_task_send((int)((r + pow) % n), sendtmp, nb * b);
        t[1] = oc_task_recv((int)((r + n - pow) % n), recvtmp, nb * b);
        if (st == OC_OK)
            st = oc_sched_add(s, t, 2);
        oc_sched_end_list(s);
        last_pow = pow;
    }
    if (last_pow && st == OC_OK)
        pack_copies(s, work, recvtmp, b, n, last_pow, 1, &st);
    /* Inverse rotation: receive block (r - i) mod n = work block i. */
    if (st == OC_OK) {
        t[0] = oc_task_copy_strided(a->rbuf + r * b, -(ptrdiff_t)b, work, (ptrdiff_t)b, b, r + 1);
        st = oc_sched_add(s, &t[0], 1);
    }
    if (st == OC_OK && r + 1 < n) {
        t[0] = oc_task_copy_strided(a->rbuf + (n - 1) * b, -(ptrdiff_t)b, work + (r + 1) * b,
                                    (ptrdiff_t)b, b, n - 1 - r);
        st = oc_sched_add(s, &t[0], 1);
    }
    return st;
}
