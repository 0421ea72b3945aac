/*
 * Upstream-compatible sine test: the input sin(2 pi x/nx) sin(2 pi y/ny)
 * sin(2 pi z/nz) is transformed forward (the non-zero entries of the spectrum
 * are printed: four, of magnitude N/8), normalised by 1/N and transformed
 * back; the result must equal the input. Reads nx ny nz ndim n from the file
 * stdin and, optionally, the processor grid from the file dims.
 */
#include "driver_common.h"

/* The spectral entries above N * 1.25e-4, with their 1-based global indices. */
static void print_all(const driver_t *d)
{
    int s[3], e[3], n[3];
    long i;
    if (d->rank == 0)
        printf("Result of forward transform\n");
    must(Cp3dfft_get_dims(s, e, n, 2), "Cp3dfft_get_dims");
    for (i = 0; i < d->nc; i++)
        if (fabs(d->B[2 * i]) + fabs(d->B[2 * i + 1]) > d->Nglob * 1.25e-4) {
            long z = i / ((long)n[0] * n[1]), y = i / n[0] - z * n[1], x = i % n[0];
            printf("(%ld,%ld,%ld) %.16lg %.16lg\n", x + s[0], y + s[1], z + s[2], d->B[2 * i],
                   d->B[2 * i + 1]);
        }
}

int main(int argc, char **argv)
{
    const double twopi = 8.0 * atan(1.0);
    driver_t d = driver_start(&argc, &argv, "P3DFFT test, 3D wave input");
    long x, y, z, i = 0;

    for (z = 0; z < d.isz[2]; z++)
        for (y = 0; y < d.isz[1]; y++)
            for (x = 0; x < d.isz[0]; x++)
                d.A[i++] = sin((x + d.is[0] - 1) * twopi / d.pb.nx) *
                           sin((y + d.is[1] - 1) * twopi / d.pb.ny) *
                           sin((z + d.is[2] - 1) * twopi / d.pb.nz);
    return driver_finish(&d, print_all);
}
