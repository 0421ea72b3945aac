/*
 * The processor grid and its communicators, the block splits of every
 * dimension, and the work buffers, as DESIGN.md fixes them: world rank =
 * jpid * iproc + ipid; ROW = the iproc consecutive ranks (X-Y transpose), COL
 * = the jproc ranks of stride iproc (Y-Z transpose).
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "p3_internal.h"

static int split_init(p3_split_t *sp, int n, int p)
{
    int i, first_big = p - n % p; /* parts first_big.. get one more */
    sp->n = malloc(sizeof(int) * (size_t)p);
    sp->s = malloc(sizeof(int) * (size_t)p);
    if (sp->n == NULL || sp->s == NULL)
        return p3_fail(P3DFFT_ERR_NOMEM, "out of memory for the block split of %d points", n);
    for (i = 0; i < p; i++) {
        sp->n[i] = n / p + (i >= first_big);
        sp->s[i] = i * (n / p) + (i > first_big ? i - first_big : 0);
    }
    return P3DFFT_OK;
}

static void split_free(p3_split_t *sp)
{
    free(sp->n);
    free(sp->s);
    sp->n = sp->s = NULL;
}

/* The staging buffers are read and written by the kernel's single copy
 * (MPI's cma, and UCX's: p3_tr.c's context) and by the stages' runs. On
 * 4 KB pages each transpose pinned and walked every page: on huge pages
 * every mode took 0.90-0.95x its time at N = 256 on the 2-vCPU VM, and
 * blocking's MPI_Alltoallv about half (p3dfft_patch/README.md,
 * "Measured"). The kernel gives huge pages to the aligned 2 MB extents of a
 * region so advised where transparent huge pages are "always" or
 * "madvise"; elsewhere the advice is ignored. */
enum { P3_HUGE_PAGE = 2 << 20 };

fftw_complex *p3_buf(const p3_t *p, size_t n)
{
    size_t bytes = sizeof(fftw_complex) * (n > 0 ? n : 1);
    int huge = p->hugepages && bytes >= P3_HUGE_PAGE;
    void *b;
    if (posix_memalign(&b, huge ? P3_HUGE_PAGE : 64, bytes) != 0)
        return NULL;
    if (huge)
        (void)madvise(b, bytes, MADV_HUGEPAGE);
    return b;
}

void p3_buf_free(void *buf)
{
    free(buf);
}

/* The X-Y transpose's counts: forward, block i sent is X range i of every
 * line, (xn[i], jisize, kjsize); the block from i is its Y range of our X
 * range, (iisize, yn[i], kjsize). */
static int xy_counts_init(p3_t *p)
{
    int i, n = p->iproc;
    p->xy_scnt = malloc(sizeof(int) * 4 * (size_t)n);
    if (p->xy_scnt == NULL)
        return p3_fail(P3DFFT_ERR_NOMEM, "out of memory for the X-Y counts");
    p->xy_sdsp = p->xy_scnt + n;
    p->xy_rcnt = p->xy_sdsp + n;
    p->xy_rdsp = p->xy_rcnt + n;
    for (i = 0; i < n; i++) {
        p->xy_scnt[i] = p->jisize * p->kjsize * p->xc.n[i];
        p->xy_sdsp[i] = p->jisize * p->kjsize * p->xc.s[i];
        p->xy_rcnt[i] = p->yi.n[i] * p->kjsize * p->iisize;
        p->xy_rdsp[i] = p->yi.s[i] * p->kjsize * p->iisize;
    }
    return P3DFFT_OK;
}

/* Upstream's memsize: X-pencils (nx, jisize, kjsize + pad) of doubles, the
 * pad (whole XY planes) making room for twice the larger of the complex
 * Z-pencil and Y-pencil, so that one array holds the real input or the
 * complex output of an in-place transform (P3DFFT 2.7's setup.F90). */
static void memsize_init(p3_t *p)
{
    long long plane = (long long)p->nx * p->jisize;
    long long zc = (long long)p->nz * p->jjsize * p->iisize;
    long long yc = (long long)p->ny * p->kjsize * p->iisize;
    long long pad = 2 * (zc > yc ? zc : yc) - plane * p->kjsize;

    p->mem[0] = p->nx;
    p->mem[1] = p->jisize;
    p->mem[2] = p->kjsize + (pad > 0 ? (int)((pad + plane - 1) / plane) : 0);
}

/* The library checks its MPI calls' results: on its own communicators MPI
 * returns errors instead of aborting (the caller's communicator keeps its
 * handler). */
static int own_comms(p3_t *p, MPI_Comm comm)
{
    if (MPI_Comm_dup(comm, &p->comm) != MPI_SUCCESS ||
        MPI_Comm_set_errhandler(p->comm, MPI_ERRORS_RETURN) != MPI_SUCCESS ||
        MPI_Comm_split(p->comm, p->jpid, p->ipid, &p->row) != MPI_SUCCESS ||
        MPI_Comm_split(p->comm, p->ipid, p->jpid, &p->col) != MPI_SUCCESS ||
        MPI_Comm_set_errhandler(p->row, MPI_ERRORS_RETURN) != MPI_SUCCESS ||
        MPI_Comm_set_errhandler(p->col, MPI_ERRORS_RETURN) != MPI_SUCCESS)
        return p3_fail(P3DFFT_ERR_MPI, "cannot create the ROW and COL communicators");
    return P3DFFT_OK;
}

int p3_decomp_init(p3_t *p, const int dims[2], int nx, int ny, int nz, MPI_Comm comm)
{
    int rank, rc, s;
    double local;

    p->nx = nx;
    p->ny = ny;
    p->nz = nz;
    p->nxh = nx / 2 + 1;
    p->iproc = dims[0];
    p->jproc = dims[1];
    MPI_Comm_rank(comm, &rank);
    p->ipid = rank % p->iproc;
    p->jpid = rank / p->iproc;

    if ((rc = own_comms(p, comm)))
        return rc;
    p3_tr_init(p);

    if ((rc = split_init(&p->xc, p->nxh, p->iproc)) || (rc = split_init(&p->yi, ny, p->iproc)) ||
        (rc = split_init(&p->yj, ny, p->jproc)) || (rc = split_init(&p->zj, nz, p->jproc)))
        return rc;
    p->iisize = p->xc.n[p->ipid];
    p->jisize = p->yi.n[p->ipid];
    p->jjsize = p->yj.n[p->jpid];
    p->kjsize = p->zj.n[p->jpid];

    /* MPI counts are ints: every local array must fit. */
    local = (double)p->nxh * p->jisize * p->kjsize;
    if (local < (double)p->iisize * ny * p->kjsize)
        local = (double)p->iisize * ny * p->kjsize;
    if (local < (double)p->iisize * p->jjsize * nz)
        local = (double)p->iisize * p->jjsize * nz;
    if (local * 2 > INT_MAX)
        return p3_fail(P3DFFT_ERR_ARG, "nx, ny, nz: a local array of %.0f complex values is too "
                       "large for MPI's int counts; use more processes", local);
    memsize_init(p);

    if ((rc = xy_counts_init(p)))
        return rc;
    /* Where X-Y data moves, variable j+1's FFT-x fills a second slot while
       variable j's transpose is in flight (p3_pipeline.c). */
    p->xslots = p->iproc > 1 ? P3_SLOTS : 1;
    for (s = 0; s < p->xslots && p->iproc > 1; s++) {
        p->xs[s] = p3_buf(p, (size_t)p->nxh * p->jisize * p->kjsize);
        p->xr[s] = p3_buf(p, (size_t)p->iisize * ny * p->kjsize);
        if (p->xs[s] == NULL || p->xr[s] == NULL)
            return p3_fail(P3DFFT_ERR_NOMEM, "out of memory for the X-Y work buffers");
    }
    for (s = 0; s < P3_SLOTS; s++) {
        p->ya[s] = p3_buf(p, (size_t)p->iisize * p->kjsize * ny);
        if (p->jproc > 1)
            p->zb[s] = p3_buf(p, (size_t)p->iisize * p->jjsize * nz);
        if (p->ya[s] == NULL || (p->jproc > 1 && p->zb[s] == NULL))
            return p3_fail(P3DFFT_ERR_NOMEM, "out of memory for the Y-Z work buffers");
    }
    return P3DFFT_OK;
}

/* One variable's Y-Z stage in nslab X-slabs (clamped to the X extent). */
int p3_slabs_init(p3_t *p, int nslab)
{
    /* p3_xy_run's plane (nxh, ny) of stride p3_ld(nxh), whatever the slabs:
     * one rank in ROW */
    size_t xy_plane = p->iproc == 1 ? (size_t)p3_ld(p->nxh) * (size_t)p->ny : 0;
    int rc;
    if (nslab > p->iisize)
        nslab = p->iisize > 0 ? p->iisize : 1;
    split_free(&p->slab);
    p3_buf_free(p->line);
    p3_buf_free(p->plane);
    p->line = p->plane = NULL; /* split_init may fail: Cp3dfft_clean frees them again */
    p->nslab = nslab;
    if ((rc = split_init(&p->slab, p->iisize, nslab)))
        return rc;
    /* the last slab is the widest, and no narrower one pads past it */
    p->plane_len = (size_t)p3_ld(p->slab.n[nslab - 1]) * (size_t)(p->ny > p->nz ? p->ny : p->nz);
    p->line = p3_buf(p, p->plane_len > (size_t)p->nxh * p->jisize ? p->plane_len
                                                                 : (size_t)p->nxh * p->jisize);
    p->plane = p3_buf(p, p->plane_len > xy_plane ? p->plane_len : xy_plane);
    if (p->line == NULL || p->plane == NULL)
        return p3_fail(P3DFFT_ERR_NOMEM, "out of memory for the Y-Z slab buffers");
    return P3DFFT_OK;
}

/* With one rank in ROW the X-pencil buffer is a whole array that the
 * default transform (FFT-x and FFT-y together) never touches: made at the
 * first transform that does, and kept. */
int p3_xs_need(p3_t *p, int yskip)
{
    if (p->xs[0] != NULL || p3_xy_fused(p, yskip))
        return P3DFFT_OK;
    if ((p->xs[0] = p3_buf(p, (size_t)p->nxh * p->jisize * p->kjsize)) == NULL)
        return p3_fail(P3DFFT_ERR_NOMEM, "out of memory for the X-pencil work buffer");
    return P3DFFT_OK;
}

/* Slabs trade smaller FFT batches and more, smaller messages for overlap
 * within one variable. On the 2-core development VMs 2 and 4 slabs were 5-20%
 * slower than one in every mode; since they keep the fused X-Y stage and
 * the packed strides are odd, 2 slabs on 1x2 cost 1.05x at N = 256
 * (README; p3dfft_bench --slabs measures it). Whether they pay where a core
 * runs the transposes is for the 16-core machine to say: no split until then. */
int p3_auto_slabs(const p3_t *p)
{
    (void)p;
    return 1;
}

void p3_decomp_free(p3_t *p)
{
    int s;
    split_free(&p->xc);
    split_free(&p->yi);
    split_free(&p->yj);
    split_free(&p->zj);
    split_free(&p->slab);
    free(p->xy_scnt);
    p3_buf_free(p->line);
    p3_buf_free(p->plane);
    for (s = 0; s < P3_SLOTS; s++) {
        fftw_complex *bufs[4] = {p->xs[s], p->xr[s], p->ya[s], p->zb[s]};
        int b;
        for (b = 0; b < 4; b++) {
            if (p->oc_failed)
                p3_tr_keep(bufs[b]);
            else
                p3_buf_free(bufs[b]);
        }
    }
    if (p->row != MPI_COMM_NULL)
        MPI_Comm_free(&p->row);
    if (p->col != MPI_COMM_NULL)
        MPI_Comm_free(&p->col);
    if (p->comm != MPI_COMM_NULL)
        MPI_Comm_free(&p->comm);
}
