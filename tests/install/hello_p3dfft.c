/* A program written as for P3DFFT 2.7's C interface (the results of the calls
 * ignored, as upstream's are void), built against an installed libp3dfft with
 * mpicc and `pkg-config --cflags --libs p3dfft`: a forward and a backward
 * transform of a random field on a 1 x size grid must give it back N = nx ny
 * nz times (P3DFFT does not normalise). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <mpi.h>
#include <p3dfft.h>

int main(int argc, char **argv)
{
    int dims[2] = {1, 1}, mem[3], s[3], e[3], n[3], rank, size, nx = 16, ny = 12, nz = 10;
    unsigned char op[] = "fft";
    double *in, *out, *back, err = 0, gerr;
    long i, len;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    dims[1] = size;
    Cp3dfft_setup(dims, nx, ny, nz, MPI_Comm_c2f(MPI_COMM_WORLD), nx, ny, nz, 0, mem);
    Cp3dfft_get_dims(s, e, n, 1);
    len = (long)mem[0] * mem[1] * mem[2];
    in = calloc((size_t)len, sizeof(double));
    out = calloc((size_t)len, sizeof(double));
    back = calloc((size_t)len, sizeof(double));
    if (in == NULL || out == NULL || back == NULL)
        MPI_Abort(MPI_COMM_WORLD, 1);
    srand(rank + 1);
    for (i = 0; i < (long)n[0] * n[1] * n[2]; i++)
        in[i] = rand() / (double)RAND_MAX - 0.5;
    Cset_timers();
    Cp3dfft_ftran_r2c(in, out, op);
    Cp3dfft_btran_c2r(out, back, op);
    for (i = 0; i < (long)n[0] * n[1] * n[2]; i++)
        err = fmax(err, fabs(back[i] / ((double)nx * ny * nz) - in[i]));
    MPI_Allreduce(&err, &gerr, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("p3dfft.h: backward(forward(x)) = N x on 1x%d ranks, %dx%dx%d: max error %.1e: %s\n",
               size, nx, ny, nz, gerr, gerr < 1e-12 ? "ok" : "WRONG");
    Cp3dfft_clean();
    free(in);
    free(out);
    free(back);
    MPI_Finalize();
    return gerr < 1e-12 ? 0 : 1;
}
