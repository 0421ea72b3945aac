#include "awp_boundary.h"

#include <math.h>
#include <stdlib.h>

#include "awp_error.h"

int awp_sponge_create(awp_sponge_t *sp, const awp_grid_t *g, int nd, double arbc,
                      int freesurface)
{
    const double alpha = nd > 0 ? sqrt(-log(arbc)) / nd : 0;
    int d, i;
    for (d = 0; d < 3; d++) {
        sp->d[d] = malloc((size_t)g->n[d] * sizeof(float));
        if (sp->d[d] == NULL) {
            awp_sponge_free(sp);
            return awp_fail("sponge: out of memory");
        }
        for (i = 0; i < g->n[d]; i++) {
            int gi = g->off[d] + i;
            /* distance to the nearest absorbing edge; the top is not one
             * under a free surface */
            int lo = d == 2 && freesurface ? nd : gi, hi = g->ng[d] - 1 - gi;
            int dist = lo < hi ? lo : hi;
            sp->d[d][i] = dist < nd ? (float)exp(-pow(alpha * (nd - dist), 2)) : 1.0f;
        }
    }
    return 0;
}

void awp_sponge_free(awp_sponge_t *sp)
{
    int d;
    for (d = 0; d < 3; d++) {
        free(sp->d[d]);
        sp->d[d] = NULL;
    }
}

static int at_surface(const awp_grid_t *g)
{
    return g->coords[2] == 0;
}

void awp_fs_zero_shear(const awp_grid_t *g, awp_wave_t *w, awp_field_t f, const awp_box_t *b)
{
    int i, j;
    if (!at_surface(g) || b->lo[2] > 0 || b->hi[2] <= 0)
        return;
    for (i = b->lo[0]; i < b->hi[0]; i++)
        for (j = b->lo[1]; j < b->hi[1]; j++)
            w->f[f][awp_at(g, i, j, 0)] = 0;
}

/* f[-m] = sign * f[m + shift] along k at every interior (i, j): shift 0
 * mirrors about the plane k = 0, shift -1 about k = -1/2. Only the layers a
 * stencil reads: the differences at k = 0 reach k = -1 in a field at integer
 * k (shift 0) and k = -2 in one at k + 1/2 (shift -1). So no image reads
 * above k = 1: with a local nz of 2, k = 2 is a z ghost that the stress
 * exchange may be filling while the stresses are imaged. */
static void image(const awp_grid_t *g, float *f, float sign, int shift)
{
    const int layers = shift == 0 ? 1 : 2;
    int i, j, m;
    for (i = 0; i < g->n[0]; i++)
        for (j = 0; j < g->n[1]; j++) {
            size_t p = awp_at(g, i, j, 0);
            for (m = 1; m <= layers; m++)
                f[p - (size_t)m] = sign * f[p + (size_t)(m + shift)];
        }
}

void awp_fs_image_stress(const awp_grid_t *g, awp_wave_t *w)
{
    if (!at_surface(g))
        return;
    /* zz sits at k + 1/2: zz[-1] = -zz[0], zz[-2] = -zz[1]; xz, yz sit on
     * the surface: xz[-m] = -xz[m]. */
    image(g, w->f[AWP_ZZ], -1.0f, -1);
    image(g, w->f[AWP_XZ], -1.0f, 0);
    image(g, w->f[AWP_YZ], -1.0f, 0);
}

void awp_fs_image_velocity(const awp_grid_t *g, awp_wave_t *w, awp_field_t c)
{
    if (!at_surface(g))
        return;
    image(g, w->f[c], 1.0f, c == AWP_W1 ? 0 : -1);
}
