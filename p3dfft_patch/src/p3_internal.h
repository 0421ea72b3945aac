/*
 * Internal state of the P3DFFT-compatible library, shared by its parts:
 * p3_api.c (entry points, argument checks, errors, timers), p3_decomp.c
 * (processor grid, block splits, buffers), p3_fft.c (chunked FFTW stages with
 * a plan cache), p3_tr.c (the X-Y and Y-Z transposes in their three modes)
 * and p3_pipeline.c (the forward and backward transforms).
 */
#ifndef P3_INTERNAL_H
#define P3_INTERNAL_H

#include <complex.h>
#include <mpi.h>
#include <stddef.h>
#include <string.h>
#include <fftw3.h>

#include "offcoll.h"
#include "p3dfft.h"

typedef enum { P3_BLOCKING = 0, P3_MPI_NB, P3_OFFLOAD, P3_NMODES } p3_mode_t;
enum { P3_FWD = 0, P3_BWD = 1 };
/* The two transposes: X-Y over ROW, one unit per variable; Y-Z over COL, one
 * unit per X-slab of a variable. */
enum { P3_XY = 0, P3_YZ = 1, P3_NTR = 2 };
/* Buffers of a transpose per variable in flight: variable j's units use
 * Y-Z slot j % 2 (each slab its own part) and X-Y slot j % xslots, so that
 * a variable's transposes can be in flight while the one before it is
 * consumed. */
#define P3_SLOTS 2
#define P3_MAX_SLABS 64

/* The block split of n points over p parts as upstream's MapDataToProc: the
 * last n % p parts get one more, so that Cp3dfft_get_dims gives upstream's
 * ranges. */
typedef struct {
    int *n, *s; /* sizes and 0-based starts, p of each */
} p3_split_t;

/* What an op letter asks for along its dimension: a Fourier transform
 * ('f', 't'), nothing ('n', '0'), or, along Z only, a cosine ('c') or sine
 * ('s') transform of the real and of the imaginary parts. */
typedef enum { P3_OP_FFT = 0, P3_OP_NONE, P3_OP_COS, P3_OP_SIN } p3_op_t;

/* One FFTW stage: a 1D transform (or, skipped, a copy) along dim, repeated
 * over how[0] x how[1] lines; executed in chunks of how[0], with the
 * transposes in flight progressed between chunks. Strides in elements of each
 * side.
 * P3_R2R_COS and P3_R2R_SIN read and write complex arrays (strides in complex
 * elements, as c2c) and apply FFTW's REDFT00 or RODFT00 of dim.n points to
 * the real parts and to the imaginary parts separately. */
typedef enum { P3_C2C_FWD = 0, P3_C2C_BWD, P3_R2C, P3_C2R, P3_R2R_COS, P3_R2R_SIN } p3_kind_t;
typedef struct {
    p3_kind_t kind;
    int skip;           /* 1: copy instead of transform (op letter 'n') */
    fftw_iodim dim;     /* the transform: length and strides */
    fftw_iodim how[2];  /* the repetitions; how[0] is cut into chunks */
} p3_stage_t;

typedef struct p3_plan_entry p3_plan_entry_t;

/* The state of one unit's transpose in a slot: every slab of a variable
 * can be in flight at once. */
typedef struct {
    MPI_Request mreq;                  /* mpi_nb */
    int *scnt, *sdsp, *rcnt, *rdsp;    /* mpi_nb: must live until completion */
    int active;
    int dir;
} p3_slot_t;

/* One of the two transposes in p->mode. Side 0 is what the forward transpose
 * sends (the FFT-x side of X-Y, the Y side of Y-Z), side 1 what it receives;
 * with one rank in its communicator they are one buffer and nothing moves. */
typedef struct {
    const char *name[2];  /* per direction, for messages: "X-Y", "Y-X" */
    MPI_Comm comm;        /* ROW or COL */
    int np;               /* its size */
    p3_slot_t slot[P3_SLOTS][P3_MAX_SLABS]; /* [slot][unit] */
    oc_team_t *team;      /* offload */
    oc_request_t *req[2][P3_SLOTS][P3_MAX_SLABS]; /* offload: [dir][slot][unit] */
} p3_tr_t;

typedef struct {
    int nx, ny, nz, nxh;
    int iproc, jproc, ipid, jpid;
    MPI_Comm comm, row, col;

    p3_split_t xc;  /* nxh complex X over iproc */
    p3_split_t yi;  /* ny over iproc (X-pencil Y) */
    p3_split_t yj;  /* ny over jproc (Z-pencil Y) */
    p3_split_t zj;  /* nz over jproc */
    int iisize, jisize, jjsize, kjsize; /* this rank's extents */
    int mem[3];     /* upstream's memsize, in doubles: nx, jisize, kjsize + padding
                       (Cp3dfft_setup, Cp3dfft_get_dims conf 3) */

    int nslab;      /* X-slabs of the Y-Z stage */
    int slabs_asked;/* 0: auto; what the ranks agree on (nslab is clamped per rank) */
    p3_split_t slab;/* iisize over nslab */

    /* X-Y blocks in complex elements: forward send (side 0) and receive (side 1) */
    int *xy_scnt, *xy_sdsp, *xy_rcnt, *xy_rdsp;
    int xslots;          /* X-Y slots: 2 where X-Y data moves, else 1 */
    fftw_complex *xs[P3_SLOTS]; /* X-Y side 0, (nxh, jisize, kjsize) in X ranges;
                                   one rank in ROW: NULL until p3_xs_need */
    fftw_complex *xr[P3_SLOTS]; /* X-Y side 1, (iisize, yn_i, kjsize) blocks; one rank in ROW: none */
    fftw_complex *ya[P3_SLOTS]; /* Y-Z side 0 per slot, slab after slab (xs, kjsize, ny) */
    fftw_complex *zb[P3_SLOTS]; /* Y-Z side 1 per slot, slab after slab, blocks (xs, kj_r,
                                   jjsize); one rank in COL: none */
    fftw_complex *line;  /* a slab's Y- or Z-pencil line, or an FFT-x plane (nxh, jisize) */
    fftw_complex *plane; /* one plane of a stage, (xs, n) packed, or the complex
                            side (nxh, ny), stride p3_ld(nxh), of p3_xy_run's
                            2D plane: p3_fft.c */
    size_t plane_len;    /* its complex values */

    p3_mode_t mode;
    unsigned fftw_flags;
    int hugepages;       /* P3DFFT_HUGEPAGES: work buffers of a huge page or more
                            ask for transparent huge pages (p3_buf) */
    p3_tr_t tr[P3_NTR];
    oc_context_t *oc_ctx;

    p3_plan_entry_t *plans;
    double timers[P3DFFT_NTIMERS];
    int broken; /* a re-configuration failed: only Cp3dfft_clean is left */
    int oc_failed; /* an offloaded transpose failed: its late transfers may
                      still touch the transposes' buffers (p3_tr_keep) */
} p3_t;

/* p3_api.c: records the detail of a failure and returns code. */
int p3_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Collective over comm: all ranks succeed or all fail (the first failure's
 * code; "failed on another rank" where it did not fail). */
int p3_agree(int rc, MPI_Comm comm);

/* p3_decomp.c */
/* A work buffer of n complex values (FFTW's alignment, or a huge page's
 * with p->hugepages where n fills one), freed by p3_buf_free. */
fftw_complex *p3_buf(const p3_t *p, size_t n);
void p3_buf_free(void *buf);
int p3_decomp_init(p3_t *p, const int dims[2], int nx, int ny, int nz, MPI_Comm comm);
int p3_slabs_init(p3_t *p, int nslab);
/* Before a transform (yskip: 'n' along Y): makes the X-pencil buffer that
 * FFT-x and FFT-y apart need where ROW has one rank (p3_xy_fused: not
 * needed, not made). */
int p3_xs_need(p3_t *p, int yskip);
void p3_decomp_free(p3_t *p);
int p3_auto_slabs(const p3_t *p);

/* p3_fft.c */
/* The stride, in complex values, of a packed line or plane of xs-value runs
 * in the library's own buffers (p->line, p->plane): xs made odd. An even
 * one can be a multiple of 512 bytes (xs = 32, 64: each rank's X extent on
 * 2 x n grids at N = 128, 256), which puts all the values a transform reads
 * in a few cache sets: the rank with xs = 64 took 2.3-4.2x the time of the
 * one with 65 in the Y and Z stages (README, "Measured"). */
static inline int p3_ld(int xs)
{
    return xs % 2 == 0 ? xs + 1 : xs;
}
/* n runs of len complex values, run i at a + i * astep and at b + i * bstep,
 * copied from b to a (to_a) or from a to b: between the library's packed
 * buffers (stride p3_ld) and the blocks or arrays they are spread over. Runs
 * that follow each other on both sides go as one copy. */
static inline void p3_runs_copy(fftw_complex *a, size_t astep, fftw_complex *b, size_t bstep,
                                size_t n, size_t len, int to_a)
{
    size_t i;
    if (astep == len && bstep == len) {
        len *= n;
        n = 1;
    }
    for (i = 0; i < n; i++, a += astep, b += bstep)
        memcpy(to_a ? (void *)a : (void *)b, to_a ? (void *)b : (void *)a,
               sizeof(fftw_complex) * len);
}
int p3_stage_run(p3_t *p, const p3_stage_t *st, void *in, void *out);
/* FFT-x and FFT-y of one variable together, one 2D transform per Z plane,
 * where X and Y are both local (one rank in ROW): forward from the real
 * X-pencil (nx, ny, kjsize) to the Y side of the Y-Z transpose, its runs cut
 * into the slabs' blocks (xs_s, kjsize, ny), slab after slab, from y, the
 * slot's first; backward (dir P3_BWD) from there to the real X-pencil. */
int p3_xy_run(p3_t *p, int dir, double *real, fftw_complex *y);
void p3_plans_free(p3_t *p);

/* p3_tr.c: transpose t (P3_XY, P3_YZ) of unit `unit` in `slot`. */
void p3_tr_init(p3_t *p);     /* names, communicators; before p3_tr_setup */
int p3_tr_setup(p3_t *p);     /* collective: what p->mode needs */
int p3_tr_teardown(p3_t *p);  /* collective */
int p3_tr_start(p3_t *p, int t, int dir, int slot, int unit);
int p3_tr_wait(p3_t *p, int t, int slot, int unit);
/* After a failed transform (the callers of p3_forward/p3_backward): completes
 * the transposes still in flight (the peers, in step so far, started theirs),
 * so that none is left active or writing into buffers freed later;
 * p3_fail's detail is kept. */
void p3_tr_drain(p3_t *p);
/* Frees buf (an fftw_malloc'd transpose buffer of a failed transpose) once
 * the offcoll context is finalized, not before: the network layer cannot
 * cancel every transfer. */
void p3_tr_keep(void *buf);
void p3_tr_progress(p3_t *p); /* lets MPI move the mpi_nb transposes */
/* The offcoll context's progress-thread CPU time and wake-ups; 0 without one. */
int p3_tr_stats(double *cpu_s, unsigned long long *wakeups);
/* Block r of the side that transpose t receives forward (X-Y: Y range r of
 * our X range; Y-Z: Z range r of the unit's slab): our own block lies on the
 * other side, as the transposes do not move it. */
fftw_complex *p3_tr_block(const p3_t *p, int t, int slot, int unit, int r);
/* Where the unit's data lies before (send) and after (receive) transpose t
 * in direction dir, but for our own block, which stays on side 0
 * (p3_tr_block). */
fftw_complex *p3_tr_sbuf(const p3_t *p, int t, int dir, int slot, int unit);
fftw_complex *p3_tr_rbuf(const p3_t *p, int t, int dir, int slot, int unit);

/* p3_pipeline.c */
/* 1 where a transform with (yskip) or without an 'n' along Y runs FFT-x and
 * FFT-y together (p3_xy_run): one rank in ROW, Y transformed. */
int p3_xy_fused(const p3_t *p, int yskip);
/* op: what to do along X, Y, Z (X is always r2c / c2r). */
int p3_forward(p3_t *p, const double *in, size_t in_stride, fftw_complex *out,
               size_t out_stride, int nv, const p3_op_t op[3]);
int p3_backward(p3_t *p, const fftw_complex *in, size_t in_stride, double *out,
                size_t out_stride, int nv, const p3_op_t op[3]);
/* Collective: one forward and backward Fourier transform on zeros, so that
 * its plans are made (FFTW_MEASURE takes a while) before the application
 * times it, as upstream plans in its set-up; the cosine and sine plans are
 * left to their first use. Zeroes the timers. */
int p3_warmup(p3_t *p);

#endif
