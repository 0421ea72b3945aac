/*
 * The domain decomposition: a px x py x pz process grid over a communicator
 * (rank = (cx * py + cy) * pz + cz, as MPI_Cart_create without reordering and
 * as offcoll's halo plans), the local block of each rank and its arrays.
 *
 * Axes: i = x, j = y, k = z with z pointing down; the free surface is the top
 * plane k = 0. Arrays are C order [i][j][k], k fastest, with AWP_GHOST ghost
 * cells on every side; local interior indices run 0..n-1, ghosts -2..-1 and
 * n..n+1.
 */
#ifndef AWP_GRID_H
#define AWP_GRID_H

#include <mpi.h>
#include <stddef.h>

#define AWP_GHOST 2

typedef struct {
    MPI_Comm comm;
    int rank, size;
    int dims[3];   /* process grid */
    int coords[3]; /* this rank's place in it */
    int ng[3];     /* global cells */
    int n[3];      /* local interior cells */
    int off[3];    /* global index of the local interior cell (0, 0, 0) */
    size_t si, sj; /* strides of i and j in elements (k: 1) */
    size_t len;    /* elements of one array, ghosts included */
} awp_grid_t;

/* A box of local interior indices, lo inclusive, hi exclusive. */
typedef struct {
    int lo[3], hi[3];
} awp_box_t;

/* The process grid for size ranks over ng cells: the factorisation whose
 * blocks have the smallest surface among those that divide ng evenly into
 * at least AWP_GHOST cells (the role MPI_Dims_create plays, restricted to
 * even splits). -1 if none does. */
int awp_dims_auto(int size, const int ng[3], int dims[3]);

/* 0 if dims is a process grid of size ranks that divides ng evenly into at
 * least AWP_GHOST cells per rank along each axis, into blocks whose arrays
 * (ghosts included) have a byte count size_t holds; else -1, naming the
 * axis or the grid. */
int awp_dims_check(const int ng[3], const int dims[3], int size);

/* Sets up the decomposition of ng cells over comm on a dims process grid
 * (refused as awp_dims_check refuses it). Not collective. */
int awp_grid_init(awp_grid_t *g, MPI_Comm comm, const int ng[3], const int dims[3]);

/* Rank of the neighbour one step along axis d in direction dir (-1 or +1),
 * or MPI_PROC_NULL at the edge of the domain. */
int awp_grid_neighbor(const awp_grid_t *g, int d, int dir);

/* Offset of local cell (i, j, k) (ghosts included: -2 .. n+1). */
static inline size_t awp_at(const awp_grid_t *g, int i, int j, int k)
{
    return (size_t)(i + AWP_GHOST) * g->si + (size_t)(j + AWP_GHOST) * g->sj +
           (size_t)(k + AWP_GHOST);
}

/* Whether global cell gc lies in this rank's interior; *lc gets its local index. */
int awp_grid_owns(const awp_grid_t *g, const int gc[3], int lc[3]);

/* The local interior as a box. */
awp_box_t awp_grid_interior(const awp_grid_t *g);

/* A zero-filled float array of g->len elements (NULL when out of memory). */
float *awp_grid_alloc(const awp_grid_t *g);

#endif
