/*
 * oc_bench_halo's parts (oc_bench_halo.c says what it measures): the options
 * (halo_opts.c), the geometry of a rank's block and the check of its ghosts
 * (halo_grid.c), the MPI implementations (halo_mpi.c) and the offcoll ones
 * (halo_oc.c). The timed phases and the report stay in oc_bench_halo.c. Not
 * part of the library; every call is for the benchmark's main thread.
 */
#ifndef OC_HALO_BENCH_H
#define OC_HALO_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "oc_bench_common.h"

#define HALO_PROG "oc_bench_halo"
#define HALO_MAX_FIELDS 64
#define HALO_MAX_CONFIGS 16

/* ---- options (halo_opts.c) ------------------------------------------------ */

enum { IMPL_MPI_2SIDED, IMPL_MPI_RMA, IMPL_OC_THREAD, IMPL_OC_LOOPBACK, IMPL_OC_INLINE,
       IMPL_COUNT };

typedef struct {
    size_t n[3];          /* interior extents per rank */
    unsigned width;       /* ghost width */
    int fields[HALO_MAX_CONFIGS], nconfigs;
    int corners, periodic;
    int dims[3];          /* 0: MPI_Dims_create chooses */
    bench_opts_t common;
    int use[IMPL_COUNT];
} halo_opts_t;

/* Parses the command line for a run of nranks ranks: 0 to run, 1 after
 * --help, 2 on a bad command line (rank 0 has said why). Collective. */
int halo_parse_opts(int argc, char **argv, halo_opts_t *o, int nranks);

/* ---- a rank's block (halo_grid.c) -------------------------------------------
 * A field is a C array of ext[0] x ext[1] x ext[2] doubles, ext = n + 2w,
 * dimension 0 (x) slowest, as oc_halo_create takes it. Side 0 of dimension d
 * is the low one. The layer this rank sends to its side-s neighbour lands in
 * that neighbour's ghost on side 1-s. With corners, dimension d's messages
 * span the ghosts of the dimensions before it (the sweep); otherwise only the
 * interior.
 */

typedef struct {
    size_t lo[3], hi[3];
} halo_box_t;

typedef struct {
    int rank, nranks;
    halo_opts_t o;
    MPI_Comm cart;                     /* MPI_Cart_create, not reordered: ranks as in world */
    int dims[3], coords[3];
    int nbr[3][2];                     /* MPI_Cart_shift: each side's neighbour, or PROC_NULL */
    size_t n[3], ext[3], w;
    size_t cells;                      /* per field, ghosts included */
    halo_box_t send[3][2], recv[3][2]; /* the boundary layer sent, the ghost layer received */
    size_t face[3];                    /* elements of one message of dimension d */
    size_t sent_per_field;             /* bytes this rank sends per field and exchange */
    int nfields_max;
    double *field[HALO_MAX_FIELDS];
    unsigned char *packed, *landed; /* the copy bound's faces: packed, and to unpack */
    uint64_t seq;                   /* fills so far, equal on all ranks: values never repeat */
    double fp_s_per_iter;           /* calibrated dummy compute */
    double t0;                      /* start of the run, for progress lines */
} halo_bench_t;

/* The Cartesian grid, the neighbours and the boxes of b, from b->o. Collective. */
void halo_geometry(halo_bench_t *b);

/* Copies box bx between field a and the packed buffer buf (pack: a to buf). */
void halo_box_copy(const halo_bench_t *b, double *a, const halo_box_t *bx, double *buf, int pack);

/* Fills field f's interior with values of fill b->seq, none seen before. */
void halo_fill_field(halo_bench_t *b, int f);

/* Poisons every ghost cell of field f (NaN), or checks each one that mirrors
 * a cell against fill b->seq: a mismatch ends the run, naming the cell. */
void halo_ghost_pass(const halo_bench_t *b, int f, int poison);

/* ---- implementations (halo_mpi.c, halo_oc.c) ------------------------------- */

typedef struct halo_impl halo_impl_t;
struct halo_impl {
    const char *name;
    int offcoll; /* mode and intranode below are meaningful */
    oc_progress_mode_t mode;
    oc_intranode_t intranode;
    void (*setup)(halo_impl_t *im, halo_bench_t *b, int nf);
    void (*start)(halo_impl_t *im, halo_bench_t *b, int f);
    void (*wait)(halo_impl_t *im, halo_bench_t *b, int f);
    void (*teardown)(halo_impl_t *im, halo_bench_t *b, int nf);
    int unavailable; /* its context could not be made (a note says why) */
    oc_context_t *ctx;
    oc_team_t *team;
    oc_halo_t *halo;
};

/* mpi_2sided and mpi_rma: set-up and tear-down for nf fields, start and wait
 * of field f. The two share all but the start. */
void halo_mpi_setup(halo_impl_t *im, halo_bench_t *b, int nf);
void halo_mpi_teardown(halo_impl_t *im, halo_bench_t *b, int nf);
void halo_two_sided_start(halo_impl_t *im, halo_bench_t *b, int f);
void halo_rma_start(halo_impl_t *im, halo_bench_t *b, int f);
void halo_mpi_wait(halo_impl_t *im, halo_bench_t *b, int f);

/* The offcoll implementations: a halo plan of nf fields on im's team. */
void halo_oc_setup(halo_impl_t *im, halo_bench_t *b, int nf);
void halo_oc_teardown(halo_impl_t *im, halo_bench_t *b, int nf);
void halo_oc_start(halo_impl_t *im, halo_bench_t *b, int f);
void halo_oc_wait(halo_impl_t *im, halo_bench_t *b, int f);

/* Makes an offcoll implementation's context and team on b's grid; one that
 * cannot be made on some rank is marked unavailable everywhere, with a note.
 * Nothing for an MPI one. Collective. */
void halo_impl_open(halo_bench_t *b, halo_impl_t *im);

#endif
