/*
 * What driver_sine and driver_rand share, as upstream's C drivers do it: the
 * problem from a file named "stdin" (nx ny nz ndim n), the processor grid
 * from a file named "dims" or MPI_Dims_create, the correctness verdict and
 * the timing report. Header-only; each driver is one file.
 */
#ifndef DRIVER_COMMON_H
#define DRIVER_COMMON_H

#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "p3dfft.h"

typedef struct {
    int nx, ny, nz, ndim, n;
} problem_t;

/* A library call that must succeed; the drivers stop all ranks otherwise. */
static inline void must(int rc, const char *call)
{
    if (rc != 0) {
        fprintf(stderr, "%s failed: %s\n", call, Cp3dfft_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* "nx ny nz ndim n" from the file stdin on rank 0 (defaults 128^3, 2, 1). */
static inline problem_t read_problem(int rank, const char *title)
{
    problem_t pb = {128, 128, 128, 2, 1};
    if (rank == 0) {
        FILE *fp = fopen("stdin", "r");
        if (fp == NULL)
            printf("Cannot open file. Setting to default nx=ny=nz=128, ndim=2, n=1.\n");
        else {
            if (fscanf(fp, "%d %d %d %d %d", &pb.nx, &pb.ny, &pb.nz, &pb.ndim, &pb.n) != 5)
                printf("Cannot read nx ny nz ndim n from stdin; using the defaults.\n");
            fclose(fp);
        }
        printf("%s\n", title);
        printf("Double precision\n (%d %d %d) grid\n %d proc. dimensions\n%d repetitions\n",
               pb.nx, pb.ny, pb.nz, pb.ndim, pb.n);
    }
    MPI_Bcast(&pb, 5, MPI_INT, 0, MPI_COMM_WORLD);
    if (pb.n < 1)
        pb.n = 1;
    return pb;
}

/* ndim 1: 1 x nproc; ndim 2: the file dims, else MPI_Dims_create with the
 * smaller factor first. */
static inline void choose_dims(const problem_t *pb, int rank, int nproc, int dims[2])
{
    FILE *fp;
    dims[0] = 1;
    dims[1] = nproc;
    if (pb->ndim == 2) {
        fp = fopen("dims", "r");
        if (fp != NULL) {
            if (rank == 0)
                printf("Reading proc. grid from file dims\n");
            if (fscanf(fp, "%d %d", dims, dims + 1) != 2 || dims[0] < 1)
                dims[0] = 1;
            fclose(fp);
            if (dims[0] * dims[1] != nproc)
                dims[1] = nproc / dims[0];
        } else {
            if (rank == 0)
                printf("Creating proc. grid with mpi_dims_create\n");
            dims[0] = dims[1] = 0;
            MPI_Dims_create(nproc, 2, dims);
            if (dims[0] > dims[1]) {
                dims[0] = dims[1];
                dims[1] = nproc / dims[0];
            }
        }
    }
    if (rank == 0)
        printf("Using processor grid %d x %d\n", dims[0], dims[1]);
}

/* The verdict (upstream's bound: 1e-14 * N * 0.25 in double), the time per
 * loop and the timers averaged, maxed and minned over ranks. */
static inline void report(double maxdiff_local, double Nglob, double rtime, int n, int rank,
                          int nproc)
{
    double diff, t, timers[P3DFFT_NTIMERS], avg[P3DFFT_NTIMERS], mx[P3DFFT_NTIMERS],
        mn[P3DFFT_NTIMERS];
    int i;

    MPI_Reduce(&maxdiff_local, &diff, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&rtime, &t, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    must(Cget_timers(timers), "Cget_timers");
    for (i = 0; i < P3DFFT_NTIMERS; i++)
        timers[i] /= n;
    MPI_Reduce(timers, avg, P3DFFT_NTIMERS, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(timers, mx, P3DFFT_NTIMERS, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(timers, mn, P3DFFT_NTIMERS, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    if (rank != 0)
        return;
    printf("%s\n", diff > 1.0e-14 * Nglob * 0.25 ? "Results are incorrect" : "Results are correct");
    printf("max diff =%g\n", diff);
    printf("Time per loop=%lg\n", t / n);
    for (i = 0; i < P3DFFT_NTIMERS; i++)
        printf("timer[%d] (avg/max/min): %lE %lE %lE\n", i + 1, avg[i] / nproc, mx[i], mn[i]);
}

/* One driver run, as upstream's drivers lay it out: the library set up for
 * the problem on MPI_COMM_WORLD, A the real input (X-pencil), B the complex
 * output (Z-pencil), C the real result of the round trip. */
typedef struct {
    problem_t pb;
    int rank, nproc;
    int is[3], isz[3]; /* the X-pencil: 1-based start, extents */
    long nr, nc;       /* real and complex elements on this rank */
    double *A, *B, *C, Nglob;
} driver_t;

/* MPI_Init, the problem, the grid, Cp3dfft_setup and the arrays; A is left
 * for the driver to fill. */
static inline driver_t driver_start(int *argc, char ***argv, const char *title)
{
    driver_t d;
    int dims[2], mem[3], ie[3], fs[3], fe[3], fsz[3];

    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &d.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &d.nproc);
    Cset_timers();
    d.pb = read_problem(d.rank, title);
    choose_dims(&d.pb, d.rank, d.nproc, dims);
    must(Cp3dfft_setup(dims, d.pb.nx, d.pb.ny, d.pb.nz, MPI_Comm_c2f(MPI_COMM_WORLD), d.pb.nx,
                       d.pb.ny, d.pb.nz, 0, mem), "Cp3dfft_setup");
    must(Cp3dfft_get_dims(d.is, ie, d.isz, 1), "Cp3dfft_get_dims");
    must(Cp3dfft_get_dims(fs, fe, fsz, 2), "Cp3dfft_get_dims");
    d.nr = (long)d.isz[0] * d.isz[1] * d.isz[2];
    d.nc = (long)fsz[0] * fsz[1] * fsz[2];
    d.A = malloc(sizeof(double) * (size_t)d.nr);
    d.C = malloc(sizeof(double) * (size_t)d.nr);
    d.B = malloc(sizeof(double) * 2 * (size_t)d.nc);
    if (d.A == NULL || d.B == NULL || d.C == NULL) {
        fprintf(stderr, "%d: cannot allocate the arrays\n", d.rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    d.Nglob = (double)d.pb.nx * d.pb.ny * d.pb.nz;
    return d;
}

/* n times: forward (timed), show (if any) the spectrum, normalise by 1/N,
 * backward (timed); then the verdict on C against A and the report, and
 * MPI_Finalize. */
static inline int driver_finish(driver_t *d, void (*show)(const driver_t *d))
{
    unsigned char op_f[] = "fft", op_b[] = "tff";
    double rtime = 0, cdiff = 0;
    long i;
    int m;

    for (m = 0; m < d->pb.n; m++) {
        if (d->rank == 0)
            printf("Iteration %d\n", m);
        MPI_Barrier(MPI_COMM_WORLD);
        rtime -= MPI_Wtime();
        must(Cp3dfft_ftran_r2c(d->A, d->B, op_f), "Cp3dfft_ftran_r2c");
        rtime += MPI_Wtime();
        if (show != NULL)
            show(d);
        for (i = 0; i < 2 * d->nc; i++)
            d->B[i] /= d->Nglob;
        MPI_Barrier(MPI_COMM_WORLD);
        rtime -= MPI_Wtime();
        must(Cp3dfft_btran_c2r(d->B, d->C, op_b), "Cp3dfft_btran_c2r");
        rtime += MPI_Wtime();
    }
    for (i = 0; i < d->nr; i++)
        cdiff = fmax(cdiff, fabs(d->C[i] - d->A[i]));
    must(Cp3dfft_clean(), "Cp3dfft_clean");
    report(cdiff, d->Nglob, rtime, d->pb.n, d->rank, d->nproc);
    free(d->A);
    free(d->B);
    free(d->C);
    MPI_Finalize();
    return 0;
}

#endif
