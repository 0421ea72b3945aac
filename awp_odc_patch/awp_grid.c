#include "awp_grid.h"

#include <stdint.h>
#include <stdlib.h>

#include "awp_error.h"

static const char axis_name[3] = {'x', 'y', 'z'};

int awp_dims_auto(int size, const int ng[3], int dims[3])
{
    double best = -1;
    int a, b;
    /* Of equal surfaces the first found wins, so every rank picks the same
     * grid: the most ranks along x, then y. Cuts across z are the last
     * choice, as their slabs have rows of 2 cells along k, the fastest
     * index, which the kernel runs slowest. */
    for (a = size; a >= 1; a--) {
        if (size % a != 0)
            continue;
        for (b = size / a; b >= 1; b--) {
            int c, d[3];
            double n0, n1, n2, surface;
            if ((size / a) % b != 0)
                continue;
            c = size / a / b;
            d[0] = a, d[1] = b, d[2] = c;
            if (ng[0] % a != 0 || ng[1] % b != 0 || ng[2] % c != 0 || ng[0] / a < AWP_GHOST ||
                ng[1] / b < AWP_GHOST || ng[2] / c < AWP_GHOST)
                continue;
            n0 = (double)ng[0] / a, n1 = (double)ng[1] / b, n2 = (double)ng[2] / c;
            surface = n0 * n1 + n1 * n2 + n0 * n2;
            if (best < 0 || surface < best) {
                best = surface;
                dims[0] = d[0], dims[1] = d[1], dims[2] = d[2];
            }
        }
    }
    if (best < 0)
        return awp_fail("proc = auto: no process grid of %d ranks divides the grid %dx%dx%d evenly "
                        "into at least %d cells per rank", size, ng[0], ng[1], ng[2], AWP_GHOST);
    return 0;
}

/* Whether size_t can count the bytes of an array of a block of n cells with
 * its ghosts: a product that wraps would allocate a small array and index
 * far past it. */
static int array_fits(const int n[3])
{
    size_t bytes = sizeof(float);
    int d;
    for (d = 0; d < 3; d++) {
        size_t cells = (size_t)n[d] + 2 * AWP_GHOST;
        if (bytes > SIZE_MAX / cells)
            return 0;
        bytes *= cells;
    }
    return 1;
}

int awp_dims_check(const int ng[3], const int dims[3], int size)
{
    long long ranks = 1; /* an int product could wrap to size */
    int n[3], d;
    for (d = 0; d < 3; d++) {
        if (dims[d] < 1 || dims[d] > size)
            return awp_fail("proc: %c has %d ranks; 1..%d allowed", axis_name[d], dims[d], size);
        ranks *= dims[d];
    }
    if (ranks != size)
        return awp_fail("proc: %d %d %d needs %lld ranks, but %d are running", dims[0], dims[1],
                        dims[2], ranks, size);
    for (d = 0; d < 3; d++) {
        if (ng[d] % dims[d] != 0)
            return awp_fail("proc: n%c = %d does not divide evenly over %d ranks along %c",
                            axis_name[d], ng[d], dims[d], axis_name[d]);
        /* The shell of AWP_GHOST layers must come from this rank alone. */
        if (ng[d] / dims[d] < AWP_GHOST)
            return awp_fail("proc: n%c = %d over %d ranks leaves %d cells per rank; at least %d "
                            "needed", axis_name[d], ng[d], dims[d], ng[d] / dims[d], AWP_GHOST);
        n[d] = ng[d] / dims[d];
    }
    if (!array_fits(n))
        return awp_fail("grid: %dx%dx%d cells over %dx%dx%d ranks: a block of %dx%dx%d cells "
                        "and its ghosts has more bytes per array than size_t counts; use fewer "
                        "cells or more ranks", ng[0], ng[1], ng[2], dims[0], dims[1], dims[2],
                        n[0], n[1], n[2]);
    return 0;
}

int awp_grid_init(awp_grid_t *g, MPI_Comm comm, const int ng[3], const int dims[3])
{
    int d, r;
    MPI_Comm_rank(comm, &g->rank);
    MPI_Comm_size(comm, &g->size);
    if (awp_dims_check(ng, dims, g->size) != 0)
        return -1;
    g->comm = comm;
    r = g->rank;
    g->coords[2] = r % dims[2];
    g->coords[1] = r / dims[2] % dims[1];
    g->coords[0] = r / dims[2] / dims[1];
    for (d = 0; d < 3; d++) {
        g->dims[d] = dims[d];
        g->ng[d] = ng[d];
        g->n[d] = ng[d] / dims[d];
        g->off[d] = g->coords[d] * g->n[d];
    }
    g->sj = (size_t)g->n[2] + 2 * AWP_GHOST;
    g->si = g->sj * ((size_t)g->n[1] + 2 * AWP_GHOST);
    g->len = g->si * ((size_t)g->n[0] + 2 * AWP_GHOST);
    return 0;
}

int awp_grid_neighbor(const awp_grid_t *g, int d, int dir)
{
    int c[3] = {g->coords[0], g->coords[1], g->coords[2]};
    c[d] += dir;
    if (c[d] < 0 || c[d] >= g->dims[d])
        return MPI_PROC_NULL;
    return (c[0] * g->dims[1] + c[1]) * g->dims[2] + c[2];
}

int awp_grid_owns(const awp_grid_t *g, const int gc[3], int lc[3])
{
    int d;
    for (d = 0; d < 3; d++) {
        lc[d] = gc[d] - g->off[d];
        if (lc[d] < 0 || lc[d] >= g->n[d])
            return 0;
    }
    return 1;
}

awp_box_t awp_grid_interior(const awp_grid_t *g)
{
    awp_box_t b = {{0, 0, 0}, {g->n[0], g->n[1], g->n[2]}};
    return b;
}

float *awp_grid_alloc(const awp_grid_t *g)
{
    return calloc(g->len, sizeof(float));
}
