/*
 * Halo exchange of 3D Cartesian decompositions: the geometry (grid
 * coordinates, neighbours, face regions, the layout of the landing zones in
 * each rank's window) and the builder that turns one field's exchange into a
 * schedule. Nothing here communicates; runtime/oc_halo.c owns the plan.
 *
 * Exchanges alternate between two parities, each with its own landing zones
 * and counters: a neighbour can be at most one exchange ahead (it cannot
 * finish exchange k+1 without this rank's data of k+1, sent only after this
 * rank has unpacked k), so two sets never overwrite unread data.
 */
#ifndef OC_HALO_SCHED_H
#define OC_HALO_SCHED_H

#include "oc_win.h"

typedef struct {
    int dims[3], periodic[3];
    size_t w;
    int corners;
    int nfields;
    int size;
} oc_halo_sched_geom_t;

/* One field's extents on one rank. */
typedef struct {
    size_t n[3];
    size_t es;
    unsigned dims;   /* dimensions the field is exchanged across, a bit each (1 to 7) */
} oc_halo_sched_ext_t;

/* A box of a field array: cells lo[d] .. lo[d]+len[d]-1, ghosts included. */
typedef struct {
    size_t lo[3], len[3];
} oc_halo_sched_box_t;

/* Rank at offset (dx, dy, dz) from rank, or -1 past a non-periodic edge. */
int oc_halo_sched_rank_at(const oc_halo_sched_geom_t *g, int rank, int dx, int dy, int dz);

/* The neighbour across side s (0 low, 1 high) of dimension d, or -1. */
int oc_halo_sched_side_peer(const oc_halo_sched_geom_t *g, int rank, int d, int s);

/* What rank sends across side s of dimension d (send), or the ghost layers
 * that side fills (!send). */
oc_halo_sched_box_t oc_halo_sched_region(const oc_halo_sched_geom_t *g, int rank,
                                         const oc_halo_sched_ext_t *e, int d, int s, int send);

/* Offset of the landing zone of (field f, parity p, dimension d, side s) in
 * rank's window, given rank's extents of every field (ext[f]); the window's
 * size when f == nfields. */
size_t oc_halo_sched_landing(const oc_halo_sched_geom_t *g, int rank,
                             const oc_halo_sched_ext_t *ext, int f, int p, int d, int s);

/* Bytes of field f's pack buffer (every face it sends, one after another). */
size_t oc_halo_sched_pack_bytes(const oc_halo_sched_geom_t *g, int rank,
                                const oc_halo_sched_ext_t *e);

/* The sides (dimension, side) of stage st across which rank exchanges field
 * e, in order; how many. One stage per dimension with corners, all three at
 * once without. */
int oc_halo_sched_stage_sides(const oc_halo_sched_geom_t *g, int rank, const oc_halo_sched_ext_t *e,
                              int st, int d_s[6][2]);

/* Counter of (field f, parity p, stage d); stage 0 alone without corners. */
static inline unsigned oc_halo_sched_counter(const oc_halo_sched_geom_t *g, int f, int p, int d)
{
    return (unsigned)((f * 2 + p) * 3 + (g->corners ? d : 0));
}

/* What the builder needs of this rank's plan. */
typedef struct {
    const oc_halo_sched_geom_t *g;
    int rank;
    const oc_halo_sched_ext_t *ext; /* every rank's extents: ext[rank * nfields + f] */
    char *data;                     /* this rank's array of the field */
    char *pack;                     /* this rank's pack buffer of the field */
    oc_win_t *win;                  /* the plan's window */
} oc_halo_sched_args_t;

/* Builds the exchange of field f at parity p into s. */
oc_status_t oc_halo_sched_build(const oc_halo_sched_args_t *h, int f, int p, oc_sched_t *s);

#endif
