/*
 * Upstream-compatible random test: uniform random input in [0, 1), forward,
 * normalised by 1/N, backward; the result must equal the input. Reads nx ny
 * nz ndim n from the file stdin and, optionally, the grid from the file dims.
 */
#include <math.h>

#include "driver_common.h"

int main(int argc, char **argv)
{
    int rank, nproc, dims[2], mem[3], is[3], ie[3], isz[3], fs[3], fe[3], fsz[3], m;
    long i, nr, nc;
    unsigned char op_f[] = "fft", op_b[] = "tff";
    double *A, *B, *C, Nglob, rtime = 0, cdiff = 0;
    unsigned short seed[3];
    problem_t pb;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nproc);
    Cset_timers();
    pb = read_problem(rank, "P3DFFT test, random input");
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
    seed[0] = (unsigned short)rank;
    seed[1] = 0x1234;
    seed[2] = 0x5678;
    for (i = 0; i < nr; i++)
        A[i] = erand48(seed);
    Nglob = (double)pb.nx * pb.ny * pb.nz;

    for (m = 0; m < pb.n; m++) {
        if (rank == 0)
            printf("Iteration %d\n", m);
        MPI_Barrier(MPI_COMM_WORLD);
        rtime -= MPI_Wtime();
        must(Cp3dfft_ftran_r2c(A, B, op_f), "Cp3dfft_ftran_r2c");
        rtime += MPI_Wtime();
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
