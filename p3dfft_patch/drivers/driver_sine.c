/*
 * Upstream-compatible sine test: the input sin(2 pi x/nx) sin(2 pi y/ny)
 * sin(2 pi z/nz) is transformed forward (the non-zero entries of the spectrum
 * are printed: four, of magnitude N/8), normalised by 1/N and transformed
 * back; the result must equal the input. Reads nx ny nz ndim n from the file
 * stdin and, optionally, the processor grid from the file dims.
 */
#include <math.h>

#include "driver_common.h"

/* Spectral entries above N * 1.25e-4, with their 1-based global indices. */
static void print_all(const double *B, long ncomplex, double Nglob)
{
    int s[3], e[3], n[3];
    long i;
    must(Cp3dfft_get_dims(s, e, n, 2), "Cp3dfft_get_dims");
    for (i = 0; i < ncomplex; i++)
        if (fabs(B[2 * i]) + fabs(B[2 * i + 1]) > Nglob * 1.25e-4) {
            long z = i / ((long)n[0] * n[1]), y = i / n[0] - z * n[1], x = i % n[0];
            printf("(%ld,%ld,%ld) %.16lg %.16lg\n", x + s[0], y + s[1], z + s[2], B[2 * i],
                   B[2 * i + 1]);
        }
}

int main(int argc, char **argv)
{
    const double twopi = 8.0 * atan(1.0);
    int rank, nproc, dims[2], mem[3], is[3], ie[3], isz[3], fs[3], fe[3], fsz[3], m;
    long x, y, z, i, nr, nc;
    unsigned char op_f[] = "fft", op_b[] = "tff";
    double *A, *B, *C, Nglob, rtime = 0, cdiff = 0;
    problem_t pb;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nproc);
    Cset_timers();
    pb = read_problem(rank, "P3DFFT test, 3D wave input");
    choose_dims(&pb, rank, nproc, dims);

    must(Cp3dfft_setup(dims, pb.nx, pb.ny, pb.nz, MPI_Comm_c2f(MPI_COMM_WORLD), pb.nx, pb.ny,
                       pb.nz, 0, mem), "Cp3dfft_setup");
    must(Cp3dfft_get_dims(is, ie, isz, 1), "Cp3dfft_get_dims");
    must(Cp3dfft_get_dims(fs, fe, fsz, 2), "Cp3dfft_get_dims");
    nr = (long)isz[0] * isz[1] * isz[2];
    nc = (long)fsz[0] * fsz[1] * fsz[2];
    A = malloc(sizeof(double) * (size_t)nr);
    C = malloc(sizeof(double) * (size_t)nr);
    B = malloc(sizeof(double) * 2 * (size_t)nc);
    if (A == NULL || B == NULL || C == NULL) {
        fprintf(stderr, "%d: cannot allocate the arrays\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    i = 0;
    for (z = 0; z < isz[2]; z++)
        for (y = 0; y < isz[1]; y++)
            for (x = 0; x < isz[0]; x++)
                A[i++] = sin((x + is[0] - 1) * twopi / pb.nx) * sin((y + is[1] - 1) * twopi / pb.ny) *
                         sin((z + is[2] - 1) * twopi / pb.nz);
    Nglob = (double)pb.nx * pb.ny * pb.nz;

    for (m = 0; m < pb.n; m++) {
        if (rank == 0)
            printf("Iteration %d\n", m);
        MPI_Barrier(MPI_COMM_WORLD);
        rtime -= MPI_Wtime();
        must(Cp3dfft_ftran_r2c(A, B, op_f), "Cp3dfft_ftran_r2c");
        rtime += MPI_Wtime();
        if (rank == 0)
            printf("Result of forward transform\n");
        print_all(B, nc, Nglob);
        for (i = 0; i < 2 * nc; i++)
            B[i] /= Nglob;
        MPI_Barrier(MPI_COMM_WORLD);
        rtime -= MPI_Wtime();
        must(Cp3dfft_btran_c2r(B, C, op_b), "Cp3dfft_btran_c2r");
        rtime += MPI_Wtime();
    }
    for (i = 0; i < nr; i++)
        cdiff = fmax(cdiff, fabs(C[i] - A[i]));
    must(Cp3dfft_clean(), "Cp3dfft_clean");
    report(cdiff, Nglob, rtime, pb.n, rank, nproc);
    free(A);
    free(B);
    free(C);
    MPI_Finalize();
    return 0;
}
