/*
 * Test data shared by the unit tests: a byte pattern that tells where a byte
 * came from, and alltoall(v) buffer layouts with their count and displacement
 * arrays. Header-only.
 */
#ifndef UT_DATA_H
#define UT_DATA_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Byte i of the block that src sends to dst, in round `salt`. A hash, so that
 * a block landing at the wrong rank, offset or round is caught with
 * probability 255/256 per byte. */
static inline unsigned char ut_pattern(int src, int dst, size_t i, unsigned salt)
{
    uint32_t h = (uint32_t)src * 0x9E3779B1u ^ (uint32_t)dst * 0x85EBCA77u ^
                 (uint32_t)i * 0xC2B2AE3Du ^ salt * 0x27D4EB2Fu;
    h ^= h >> 15;
    h *= 0x2C1B3C6Du;
    h ^= h >> 12;
    h *= 0x297A2D39u;
    h ^= h >> 15;
    return (unsigned char)(h >> 24);
}

/* Bytes outside every block: writes there must never happen. */
#define UT_GAP_BYTE 0xA5

typedef enum {
    UT_EQUAL,  /* equal blocks, contiguous in rank order (the alltoall form) */
    UT_UNEVEN, /* different sizes, none zero */
    UT_ZEROS,  /* different sizes, about a third zero, self blocks included */
    UT_EMPTY   /* every count zero */
} ut_shape_t;

/* One rank's side of an alltoall(v): counts and displacements in bytes. */
typedef struct {
    int rank, size;
    size_t *sc, *sd, *rc, *rd;
    size_t sbytes, rbytes;
} ut_layout_t;

/* Bytes that rank a sends to rank b. */
static inline size_t ut_count(ut_shape_t shape, int a, int b, size_t scale)
{
    switch (shape) {
    case UT_EQUAL:
        return scale;
    case UT_ZEROS:
        if ((a + 2 * b + a * b) % 3 == 0)
            return 0;
        /* fall through */
    case UT_UNEVEN:
        return scale * (size_t)(1 + (a * 7 + b * 3) % 5);
    default:
        return 0;
    }
}

/* Places the blocks of `counts` in the order given by `order`, `gap` bytes
 * apart; returns the buffer size. */
static inline size_t ut_place(int n, const int *order, const size_t *counts, size_t gap,
                              size_t *displs)
{
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        displs[order[i]] = off;
        off += counts[order[i]] + gap;
    }
    return off;
}

/* The uneven shapes get non-monotonic displacements with gaps: send blocks in
 * reverse rank order, receive blocks even ranks up then odd ranks down. */
static inline int ut_layout_init(ut_layout_t *l, ut_shape_t shape, int rank, int n, size_t scale)
{
    int *order = malloc((size_t)n * sizeof(*order));
    size_t gap = shape == UT_EQUAL ? 0 : 2;
    int i, k = 0;

    memset(l, 0, sizeof(*l));
    l->rank = rank;
    l->size = n;
    l->sc = calloc((size_t)n, sizeof(size_t));
    l->sd = calloc((size_t)n, sizeof(size_t));
    l->rc = calloc((size_t)n, sizeof(size_t));
    l->rd = calloc((size_t)n, sizeof(size_t));
    if (order == NULL || !l->sc || !l->sd || !l->rc || !l->rd) {
        free(order);
        return -1;
    }
    for (i = 0; i < n; i++) {
        l->sc[i] = ut_count(shape, rank, i, scale);
        l->rc[i] = ut_count(shape, i, rank, scale);
    }
    for (i = 0; i < n; i++)
        order[i] = shape == UT_EQUAL ? i : n - 1 - i;
    l->sbytes = ut_place(n, order, l->sc, gap, l->sd);
    if (shape != UT_EQUAL) {
        for (i = 0; i < n; i += 2)
            order[k++] = i;
        for (i = n % 2 ? n - 2 : n - 1; i > 0; i -= 2)
            order[k++] = i;
    }
    l->rbytes = ut_place(n, order, l->rc, gap, l->rd);
    free(order);
    return 0;
}

static inline void ut_layout_fini(ut_layout_t *l)
{
    free(l->sc);
    free(l->sd);
    free(l->rc);
    free(l->rd);
    memset(l, 0, sizeof(*l));
}

/* Send blocks get the pattern, gaps and the whole receive buffer the gap byte. */
static inline void ut_fill(const ut_layout_t *l, unsigned char *sbuf, unsigned char *rbuf,
                           unsigned salt)
{
    memset(sbuf, UT_GAP_BYTE, l->sbytes);
    memset(rbuf, UT_GAP_BYTE, l->rbytes);
    for (int p = 0; p < l->size; p++)
        for (size_t i = 0; i < l->sc[p]; i++)
            sbuf[l->sd[p] + i] = ut_pattern(l->rank, p, i, salt);
}

/* Offset of the first wrong byte of rbuf (the blocks must hold the senders'
 * patterns, the gaps must be untouched), or -1 when all is right. */
static inline long ut_check(const ut_layout_t *l, const unsigned char *rbuf, unsigned salt)
{
    unsigned char *expect = malloc(l->rbytes ? l->rbytes : 1);
    long bad = -1;
    if (expect == NULL)
        return 0;
    memset(expect, UT_GAP_BYTE, l->rbytes);
    for (int p = 0; p < l->size; p++)
        for (size_t i = 0; i < l->rc[p]; i++)
            expect[l->rd[p] + i] = ut_pattern(p, l->rank, i, salt);
    for (size_t i = 0; i < l->rbytes && bad < 0; i++)
        if (rbuf[i] != expect[i])
            bad = (long)i;
    free(expect);
    return bad;
}

#endif
