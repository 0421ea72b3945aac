#include "awp_source.h"

#include <math.h>

double awp_stf_delay(const awp_source_t *src)
{
    return src->kind == AWP_STF_BRUNE ? 0 : 1.2 / src->param;
}

double awp_stf(const awp_source_t *src, double t)
{
    const double f0 = src->param;
    double x;
    switch (src->kind) {
    case AWP_STF_BRUNE: /* t / tau^2 exp(-t / tau), tau the rise time */
        return t < 0 ? 0 : t / (f0 * f0) * exp(-t / f0);
    case AWP_STF_GAUSSIAN: /* unit area, width ~ 1 / f0 */
        x = M_PI * f0 * (t - awp_stf_delay(src));
        return sqrt(M_PI) * f0 * exp(-x * x);
    default: /* its time derivative, scaled by 1 / f0 to keep the unit of a rate */
        x = M_PI * f0 * (t - awp_stf_delay(src));
        return -2 * M_PI * sqrt(M_PI) * x * exp(-x * x) * f0;
    }
}

static int in_box(const int c[3], const awp_box_t *b)
{
    int d;
    for (d = 0; d < 3; d++)
        if (c[d] < b->lo[d] || c[d] >= b->hi[d])
            return 0;
    return 1;
}

void awp_source_add(const awp_grid_t *g, awp_wave_t *w, const awp_source_t *src, double h,
                    double dt, int n, awp_sgroup_t s, const awp_box_t *b)
{
    /* moment[] is ordered xx yy zz xy xz yz, as the fields from AWP_XX on */
    awp_field_t f[3];
    int lc[3], nf, i;
    double rate;
    if (!awp_grid_owns(g, src->pos, lc) || !in_box(lc, b))
        return;
    rate = dt / (h * h * h) * src->m0 * awp_stf(src, (n + 0.5) * dt);
    nf = awp_sgroup_fields(s, f);
    for (i = 0; i < nf; i++)
        w->f[f[i]][awp_at(g, lc[0], lc[1], lc[2])] -= (float)(rate * src->moment[f[i] - AWP_XX]);
}
