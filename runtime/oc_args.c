/* The argument checks of the all-to-all calls: every refusal names the
 * argument and the call (fn), and leaves *req NULL. */
#include "oc_args.h"
#include "oc_error.h"

#include <stdint.h>
#include <stdlib.h>

static oc_status_t check_common(const char *fn, const oc_team_t *team, oc_request_t **req)
{
    if (req != NULL)
        *req = NULL;
    if (team == NULL)
        return oc_error(OC_ERR_INVALID_ARG, "%s: team is NULL", fn);
    if (req == NULL)
        return oc_error(OC_ERR_INVALID_ARG, "%s: req is NULL", fn);
    return OC_OK;
}

static int ranges_overlap(const void *a, size_t alen, const void *b, size_t blen)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return alen > 0 && blen > 0 && x < y + blen && y < x + alen;
}

oc_status_t oc_args_check_alltoall(const char *fn, const oc_team_t *team, const void *sbuf,
                                   void *rbuf, size_t block, oc_request_t **req)
{
    oc_status_t st = check_common(fn, team, req);
    if (st != OC_OK)
        return st;
    if (block > SIZE_MAX / (size_t)team->size)
        return oc_error(OC_ERR_INVALID_ARG,
                        "%s: block_bytes=%zu times the team size %d overflows size_t", fn, block,
                        team->size);
    if (block > 0 && sbuf == NULL)
        return oc_error(OC_ERR_INVALID_ARG, "%s: sbuf is NULL with block_bytes=%zu", fn, block);
    if (block > 0 && rbuf == NULL)
        return oc_error(OC_ERR_INVALID_ARG, "%s: rbuf is NULL with block_bytes=%zu", fn, block);
    if (sbuf != OC_IN_PLACE &&
        ranges_overlap(sbuf, block * (size_t)team->size, rbuf, block * (size_t)team->size))
        return oc_error(OC_ERR_INVALID_ARG, "%s: sbuf and rbuf overlap (use OC_IN_PLACE)", fn);
    return OC_OK;
}

typedef struct {
    size_t displ, count;
    int rank;
} block_t;

static int block_cmp(const void *a, const void *b)
{
    const block_t *x = a, *y = b;
    return x->displ < y->displ ? -1 : x->displ > y->displ;
}

/* No two blocks share a byte. Blocks in rank order one after another (the
 * usual prefix sums) need no sort; others are sorted by displacement, on the
 * stack up to STACK_BLOCKS ranks, so that a call allocates nothing there. */
static oc_status_t check_disjoint(const char *fn, char side, int n, const size_t *counts,
                                  const size_t *displs)
{
    enum { STACK_BLOCKS = 64 };
    block_t stack[STACK_BLOCKS], *bl = stack;
    size_t end = 0;
    int i, nb = 0;
    oc_status_t st = OC_OK;

    for (i = 0; i < n && (counts[i] == 0 || displs[i] >= end); i++)
        if (counts[i] > 0)
            end = displs[i] + counts[i];
    if (i == n)
        return OC_OK;
    if (n > STACK_BLOCKS && (bl = malloc((size_t)n * sizeof(*bl))) == NULL)
        return oc_error(OC_ERR_NO_MEMORY, "%s: %d blocks", fn, n);
    for (i = 0; i < n; i++)
        if (counts[i] > 0) {
            bl[nb].displ = displs[i];
            bl[nb].count = counts[i];
            bl[nb].rank = i;
            nb++;
        }
    qsort(bl, (size_t)nb, sizeof(*bl), block_cmp);
    for (i = 1; i < nb && st == OC_OK; i++)
        if (bl[i - 1].displ + bl[i - 1].count > bl[i].displ)
            st = oc_error(OC_ERR_INVALID_ARG,
                          "%s: %cdispls: the blocks of ranks %d and %d overlap in %cbuf", fn,
                          side, bl[i - 1].rank, bl[i].rank, side);
    if (bl != stack)
        free(bl);
    return st;
}

/* Every block inside its buffer; with no_overlap, no two blocks share a byte. */
static oc_status_t check_blocks(const char *fn, char side, int n, const void *buf,
                                size_t buf_bytes, const size_t *counts, const size_t *displs,
                                int no_overlap)
{
    if (counts == NULL)
        return oc_error(OC_ERR_INVALID_ARG, "%s: %ccounts is NULL", fn, side);
    if (displs == NULL)
        return oc_error(OC_ERR_INVALID_ARG, "%s: %cdispls is NULL", fn, side);
    for (int i = 0; i < n; i++) {
        if (counts[i] == 0)
            continue;
        if (buf == NULL)
            return oc_error(OC_ERR_INVALID_ARG, "%s: %cbuf is NULL with %ccounts[%d]=%zu", fn,
                            side, side, i, counts[i]);
        if (displs[i] > buf_bytes || counts[i] > buf_bytes - displs[i])
            return oc_error(OC_ERR_INVALID_ARG,
                            "%s: %cdispls[%d]=%zu + %ccounts[%d]=%zu lies outside %cbuf_bytes=%zu",
                            fn, side, i, displs[i], side, i, counts[i], side, buf_bytes);
    }
    return no_overlap ? check_disjoint(fn, side, n, counts, displs) : OC_OK;
}

oc_status_t oc_args_check_alltoallv(const char *fn, const oc_team_t *team, const void *sbuf,
                                    size_t sbuf_bytes, const size_t *scounts,
                                    const size_t *sdispls, void *rbuf, size_t rbuf_bytes,
                                    const size_t *rcounts, const size_t *rdispls,
                                    oc_request_t **req)
{
    oc_status_t st = check_common(fn, team, req);
    int inplace = sbuf == OC_IN_PLACE;
    if (st == OC_OK && !inplace)
        st = check_blocks(fn, 's', team->size, sbuf, sbuf_bytes, scounts, sdispls, 0);
    if (st == OC_OK)
        st = check_blocks(fn, 'r', team->size, rbuf, rbuf_bytes, rcounts, rdispls, 1);
    if (st == OC_OK && !inplace && ranges_overlap(sbuf, sbuf_bytes, rbuf, rbuf_bytes))
        st = oc_error(OC_ERR_INVALID_ARG, "%s: sbuf and rbuf overlap (use OC_IN_PLACE)", fn);
    /* The block a rank sends itself is a local copy: no receiver compares its
     * length, as one does for every message, and a longer one would be
     * written past its receive block. */
    if (st == OC_OK && !inplace && scounts[team->rank] != rcounts[team->rank])
        st = oc_error(OC_ERR_MISMATCH, "%s: this rank (%d) sends itself scounts[%d]=%zu bytes, "
                      "but rcounts[%d]=%zu", fn, team->rank, team->rank, scounts[team->rank],
                      team->rank, rcounts[team->rank]);
    return st;
}
