/*
 * Upstream-compatible random test: uniform random input in [0, 1), forward,
 * normalised by 1/N, backward; the result must equal the input. Reads nx ny
 * nz ndim n from the file stdin and, optionally, the grid from the file dims.
 */
#include "driver_common.h"

int main(int argc, char **argv)
{
    driver_t d = driver_start(&argc, &argv, "P3DFFT test, random input");
    unsigned short seed[3] = {0, 0x1234, 0x5678};
    long i;

    seed[0] = (unsigned short)d.rank;
    for (i = 0; i < d.nr; i++)
        d.A[i] = erand48(seed);
    return driver_finish(&d, NULL);
}
