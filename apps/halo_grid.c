/* A rank's block in oc_bench_halo: the grid and the boxes exchanged, the
 * strided copies, and the values that let every ghost cell be checked. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "halo_bench.h"

static size_t box_elems(const halo_box_t *bx)
{
    return (bx->hi[0] - bx->lo[0]) * (bx->hi[1] - bx->lo[1]) * (bx->hi[2] - bx->lo[2]);
}

static size_t idx(const halo_bench_t *b, size_t i0, size_t i1, size_t i2)
{
    return (i0 * b->ext[1] + i1) * b->ext[2] + i2;
}

/* A box between the array and a packed buffer, in contiguous runs along
 * dimension 2. Runs of a few values (a face across dimension 2: one per
 * ghost layer) get a length known when compiling, as offcoll's copy tasks
 * do, so that the MPI baselines pack as fast as offcoll. */
void halo_box_copy(const halo_bench_t *b, double *a, const halo_box_t *bx, double *buf,
                   int pack)
{
    size_t i0, i1, len = bx->hi[2] - bx->lo[2];
    for (i0 = bx->lo[0]; i0 < bx->hi[0]; i0++)
        for (i1 = bx->lo[1]; i1 < bx->hi[1]; i1++, buf += len) {
            double *cell = a + idx(b, i0, i1, bx->lo[2]);
            double *dst = pack ? buf : cell;
            const double *src = pack ? cell : buf;
            switch (len) {
            case 1: memcpy(dst, src, sizeof(double)); break;
            case 2: memcpy(dst, src, 2 * sizeof(double)); break;
            case 3: memcpy(dst, src, 3 * sizeof(double)); break;
            case 4: memcpy(dst, src, 4 * sizeof(double)); break;
            default: memcpy(dst, src, len * sizeof(double)); break;
            }
        }
}

void halo_geometry(halo_bench_t *b)
{
    int periods[3], d, e, s;
    size_t w = b->o.width;

    memcpy(b->dims, b->o.dims, sizeof(b->dims));
    if (MPI_Dims_create(b->nranks, 3, b->dims) != MPI_SUCCESS)
        bench_die("MPI_Dims_create cannot make a grid of %d ranks from --dims %dx%dx%d", b->nranks,
                  b->o.dims[0], b->o.dims[1], b->o.dims[2]);
    for (d = 0; d < 3; d++)
        periods[d] = b->o.periodic;
    MPI_Cart_create(MPI_COMM_WORLD, 3, b->dims, periods, 0, &b->cart);
    MPI_Cart_coords(b->cart, b->rank, 3, b->coords);
    b->w = w;
    for (d = 0; d < 3; d++) {
        MPI_Cart_shift(b->cart, d, 1, &b->nbr[d][0], &b->nbr[d][1]);
        b->n[d] = b->o.n[d];
        b->ext[d] = b->n[d] + 2 * w;
    }
    b->cells = b->ext[0] * b->ext[1] * b->ext[2];
    b->sent_per_field = 0;
    for (d = 0; d < 3; d++)
        for (s = 0; s < 2; s++) {
            halo_box_t *snd = &b->send[d][s], *rcv = &b->recv[d][s];
            for (e = 0; e < 3; e++) {
                int full = b->o.corners && e < d;
                snd->lo[e] = rcv->lo[e] = full ? 0 : w;
                snd->hi[e] = rcv->hi[e] = full ? b->ext[e] : w + b->n[e];
            }
            snd->lo[d] = s == 0 ? w : b->n[d];
            snd->hi[d] = snd->lo[d] + w;
            rcv->lo[d] = s == 0 ? 0 : b->n[d] + w;
            rcv->hi[d] = rcv->lo[d] + w;
            b->face[d] = box_elems(snd);
            if (b->nbr[d][s] != MPI_PROC_NULL)
                b->sent_per_field += b->face[d] * sizeof(double);
        }
}

/* ---- data and check ----------------------------------------------------------------
 * Interior cell (g0, g1, g2) of field f, in global coordinates, holds
 * base(seq, f) + its global linear index: exact in a double, different for
 * every cell, field and fill. A ghost cell must hold the value of the global
 * cell it mirrors (wrapped around where periodic); ghosts that mirror no cell
 * (a non-periodic edge) and, without corners, edge and corner ghosts are not
 * checked. Before the first exchange of an implementation every ghost cell is
 * poisoned (NaN), so a ghost never written fails.
 */

static double cell_base(uint64_t seq, int f)
{
    return (double)((seq * HALO_MAX_FIELDS + (uint64_t)f) % 65536) * 68719476736.0; /* 2^36 */
}

void halo_fill_field(halo_bench_t *b, int f)
{
    double *a = b->field[f], base = cell_base(b->seq, f);
    size_t i0, i1, i2, G1 = (size_t)b->dims[1] * b->n[1], G2 = (size_t)b->dims[2] * b->n[2];
    size_t o0 = (size_t)b->coords[0] * b->n[0], o1 = (size_t)b->coords[1] * b->n[1],
           o2 = (size_t)b->coords[2] * b->n[2];
    for (i0 = 0; i0 < b->n[0]; i0++)
        for (i1 = 0; i1 < b->n[1]; i1++) {
            double row = base + (double)(((o0 + i0) * G1 + o1 + i1) * G2 + o2);
            double *p = a + idx(b, i0 + b->w, i1 + b->w, b->w);
            for (i2 = 0; i2 < b->n[2]; i2++)
                p[i2] = row + (double)i2;
        }
}

/* Global coordinate of local index i in dimension d, wrapped; -1 if none. */
static long global_of(const halo_bench_t *b, int d, size_t i)
{
    long G = (long)b->dims[d] * (long)b->n[d];
    long g = (long)b->coords[d] * (long)b->n[d] + (long)i - (long)b->w;
    if (b->o.periodic)
        return (g % G + G) % G;
    return g >= 0 && g < G ? g : -1;
}

static void mismatch(const halo_bench_t *b, int f, const size_t i[3], double got, double want)
{
    const char *side[3];
    int d;
    for (d = 0; d < 3; d++)
        side[d] = i[d] < b->w ? "low ghost" : i[d] >= b->n[d] + b->w ? "high ghost" : "interior";
    bench_die("GHOST MISMATCH in field %d at local (%zu, %zu, %zu) (x %s, y %s, z %s; "
              "grid %dx%dx%d, this rank at (%d, %d, %d)): expected %.17g, got %.17g%s", f, i[0],
              i[1], i[2], side[0], side[1], side[2], b->dims[0], b->dims[1], b->dims[2],
              b->coords[0], b->coords[1], b->coords[2], want, got,
              isnan(got) ? " (the poison: never written)" : "");
}

/* Visits every ghost cell: poisons it, or checks it where it is defined. */
void halo_ghost_pass(const halo_bench_t *b, int f, int poison)
{
    double *a = b->field[f], base = cell_base(b->seq, f);
    size_t i[3], w = b->w;
    long G1 = (long)b->dims[1] * (long)b->n[1], G2 = (long)b->dims[2] * (long)b->n[2];

    for (i[0] = 0; i[0] < b->ext[0]; i[0]++)
        for (i[1] = 0; i[1] < b->ext[1]; i[1]++) {
            int in0 = i[0] >= w && i[0] < w + b->n[0], in1 = i[1] >= w && i[1] < w + b->n[1];
            size_t step = in0 && in1 ? b->n[2] + 1 : 1; /* jump over the interior */
            for (i[2] = 0; i[2] < b->ext[2]; i[2] += (i[2] == w - 1 ? step : 1)) {
                int in2 = i[2] >= w && i[2] < w + b->n[2], d, outside = 3 - in0 - in1 - in2;
                long g[3];
                double *p = a + idx(b, i[0], i[1], i[2]);
                if (poison) {
                    *p = NAN;
                    continue;
                }
                if (outside > 1 && !b->o.corners)
                    continue;
                for (d = 0; d < 3; d++)
                    if ((g[d] = global_of(b, d, i[d])) < 0)
                        break;
                if (d == 3 && *p != base + (double)((g[0] * G1 + g[1]) * G2 + g[2]))
                    mismatch(b, f, i, *p, base + (double)((g[0] * G1 + g[1]) * G2 + g[2]));
            }
        }
}
