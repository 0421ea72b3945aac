/*
 * Internal state of the P3DFFT-compatible library, shared by its parts:
 * p3_api.c (entry points, argument checks, errors, timers), p3_decomp.c
 * (processor grid, block splits, buffers), p3_fft.c (chunked FFTW stages with
 * a plan cache), p3_yz.c (the Y-Z transpose in its three modes) and
 * p3_pipeline.c (the forward and backward transforms).
 */
#ifndef P3_INTERNAL_H
#define P3_INTERNAL_H

#include <complex.h>
#include <mpi.h>
#include <stddef.h>
#include <fftw3.h>

#include "offcoll.h"
#include "p3dfft.h"

typedef enum { P3_BLOCKING = 0, P3_MPI_NB, P3_OFFLOAD, P3_NMODES } p3_mode_t;
enum { P3_FWD = 0, P3_BWD = 1 };
/* Buffers of the Y-Z stage per in-flight unit: unit u uses slot u % 2, so
 * unit u can be in flight while unit u-1 is consumed. */
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
 * over how[0] x how[1] lines; executed in chunks of how[0], with the Y-Z
 * transport progressed between chunks. Strides in elements of each side.
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

/* The Y-Z transport's per-slot state. */
typedef struct {
    MPI_Request mreq;                  /* mpi_nb */
    int *scnt, *sdsp, *rcnt, *rdsp;    /* mpi_nb: must live until completion */
    int active;
    int dir, slab;
} p3_slot_t;

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

    /* X-Y transpose (ROW, blocking MPI), in complex elements */
    int *xy_scnt, *xy_sdsp, *xy_rcnt, *xy_rdsp;
    fftw_complex *xbuf;  /* (nxh, jisize, kjsize): FFT-x output, c2r input; one rank in ROW */
    fftw_complex *xsbuf; /* X-Y blocks of the FFT-x side: fwd send / bwd receive */
    fftw_complex *xrbuf; /* X-Y blocks of the Y side: fwd receive / bwd send */
    fftw_complex *ya[P3_SLOTS]; /* per slot, slab after slab (xs, kjsize, ny) */
    fftw_complex *zb[P3_SLOTS]; /* per slot, slab after slab, blocks (xs, kj_r, jjsize) */
    fftw_complex *line;  /* a slab's Y- or Z-pencil line, or an FFT-x plane (nxh, jisize) */
    fftw_complex *plane; /* one plane of a stage, (xs, n) packed: p3_fft.c */
    size_t plane_len;    /* its complex values */

    p3_mode_t mode;
    unsigned fftw_flags;
    p3_slot_t slot[P3_SLOTS];
    oc_context_t *oc_ctx;
    oc_team_t *oc_team;
    oc_request_t *oc_req[2][P3_SLOTS][P3_MAX_SLABS]; /* [dir][slot][slab] */

    p3_plan_entry_t *plans;
    double timers[P3DFFT_NTIMERS];
    int broken; /* a re-configuration failed: only Cp3dfft_clean is left */
    int oc_failed; /* an offloaded transpose failed: its late transfers may
                      still touch ya and zb (p3_yz_keep) */
} p3_t;

/* p3_api.c: records the detail of a failure and returns code. */
int p3_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Collective over comm: all ranks succeed or all fail (the first failure's
 * code; "failed on another rank" where it did not fail). */
int p3_agree(int rc, MPI_Comm comm);

/* p3_decomp.c */
int p3_decomp_init(p3_t *p, const int dims[2], int nx, int ny, int nz, MPI_Comm comm);
int p3_slabs_init(p3_t *p, int nslab);
void p3_decomp_free(p3_t *p);
int p3_auto_slabs(const p3_t *p);

/* p3_fft.c */
int p3_stage_run(p3_t *p, const p3_stage_t *st, void *in, void *out);
void p3_plans_free(p3_t *p);

/* p3_yz.c: the Y-Z transpose of slab `slab` of the unit in `slot`. */
int p3_yz_setup(p3_t *p);     /* collective: what p->mode needs */
int p3_yz_teardown(p3_t *p);  /* collective */
int p3_yz_start(p3_t *p, int dir, int slot, int slab);
int p3_yz_wait(p3_t *p, int slot);
/* After a failed transform (the callers of p3_forward/p3_backward): completes
 * the transposes still in flight (the peers, in step so far, started theirs),
 * so that none is left active or writing into buffers freed later;
 * p3_fail's detail is kept. */
void p3_yz_drain(p3_t *p);
/* Frees buf (an fftw_malloc'd transpose buffer of a failed transpose) once
 * the offcoll context is finalized, not before: the network layer cannot
 * cancel every transfer. */
void p3_yz_keep(void *buf);
void p3_yz_progress(p3_t *p); /* lets MPI move an mpi_nb transpose */
/* Where the unit's Y-Z data lies before (send) and after (receive) the
 * transpose, for direction dir. */
fftw_complex *p3_yz_sbuf(const p3_t *p, int dir, int slot, int slab);
fftw_complex *p3_yz_rbuf(const p3_t *p, int dir, int slot, int slab);

/* p3_pipeline.c */
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
