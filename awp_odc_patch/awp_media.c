#include "awp_media.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awp_error.h"
#include "awp_text.h"

int awp_media_load_layers(awp_media_t *m, const char *path)
{
    char line[512];
    int lineno = 0, rc;
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return awp_fail("cannot read layers file %s: %s", path, strerror(errno));
    m->nlayers = 0;
    while ((rc = awp_read_line(f, line, sizeof(line), path, &lineno)) == 1) {
        double x[4];
        line[strcspn(line, "#")] = '\0';
        if (strspn(line, " \t") == strlen(line))
            continue;
        if (awp_parse_doubles(line, x, 4) != 0) {
            rc = awp_fail("%s:%d: expected 'top_depth vp vs rho', got '%s'", path, lineno, line);
            break;
        }
        if (m->nlayers == AWP_MAX_LAYERS) {
            rc = awp_fail("%s: more than %d layers", path, AWP_MAX_LAYERS);
            break;
        }
        if ((m->nlayers == 0 && x[0] != 0) ||
            (m->nlayers > 0 && !(x[0] > m->layer[m->nlayers - 1].top))) {
            rc = awp_fail("%s:%d: layer tops must start at 0 and increase", path, lineno);
            break;
        }
        m->layer[m->nlayers++] = (awp_layer_t){x[0], x[1], x[2], x[3]};
    }
    fclose(f);
    if (rc != 0)
        return -1;
    if (m->nlayers == 0)
        return awp_fail("%s holds no layer", path);
    return 0;
}

int awp_media_check(const awp_media_t *m)
{
    int i;
    for (i = 0; i < m->nlayers; i++) {
        const awp_layer_t *l = &m->layer[i];
        if (!(l->vs > 0) || !(l->rho > 0) || !(l->vp > 0))
            return awp_fail("layer %d: vp, vs and rho must be positive", i + 1);
        if (!(l->vp * l->vp > 2 * l->vs * l->vs))
            return awp_fail("layer %d: vp = %g must exceed sqrt(2) vs = %g (lambda > 0)",
                            i + 1, l->vp, sqrt(2.0) * l->vs);
    }
    return 0;
}

const awp_layer_t *awp_media_at(const awp_media_t *m, double z)
{
    int i = m->nlayers - 1;
    while (i > 0 && z < m->layer[i].top)
        i--;
    return &m->layer[i];
}

double awp_media_vp_max(const awp_media_t *m)
{
    double v = 0;
    int i;
    for (i = 0; i < m->nlayers; i++)
        v = fmax(v, m->layer[i].vp);
    return v;
}

/* Material at a global node, clamped into the grid: the nodes just outside
 * take the values of the edge, as the medium continues past it. */
typedef struct {
    double lam, mu, rho;
} node_t;

static node_t node(const awp_media_t *m, const awp_grid_t *g, double h, int gi, int gj, int gk)
{
    const awp_layer_t *l;
    node_t n;
    (void)gi, (void)gj; /* layers are horizontal: only the depth matters */
    gk = gk < 0 ? 0 : gk >= g->ng[2] ? g->ng[2] - 1 : gk;
    l = awp_media_at(m, gk * h);
    n.mu = l->rho * l->vs * l->vs;
    n.lam = l->rho * l->vp * l->vp - 2 * n.mu;
    n.rho = l->rho;
    return n;
}

/* Means over the nodes (gi + a, gj - b, gk + c), a, b, c in {0, 1} where
 * the mask (da, db, dc) allows it: the neighbours of a staggered position. */
typedef struct {
    double rho, inv_lam, inv_mu;
    int count;
} mean_t;

static mean_t mean_over(const awp_media_t *m, const awp_grid_t *g, double h, int gi, int gj,
                        int gk, int da, int db, int dc)
{
    mean_t s = {0, 0, 0, 0};
    int a, b, c;
    for (a = 0; a <= da; a++)
        for (b = 0; b <= db; b++)
            for (c = 0; c <= dc; c++) {
                node_t n = node(m, g, h, gi + a, gj - b, gk + c);
                s.rho += n.rho;
                s.inv_lam += 1 / n.lam;
                s.inv_mu += 1 / n.mu;
                s.count++;
            }
    return s;
}

int awp_coef_create(awp_coef_t *co, const awp_grid_t *g, const awp_media_t *m, double h,
                    double dt)
{
    int c, i, j, k;
    const double dth = dt / h;
    memset(co, 0, sizeof(*co));
    for (c = 0; c < AWP_NCOEF; c++)
        if ((co->c[c] = awp_grid_alloc(g)) == NULL) {
            awp_coef_free(co);
            return awp_fail("media: out of memory for the coefficients (%zu floats)", g->len);
        }
    /* Positions (z down, so DESIGN.md's k - 1/2 reads k + 1/2 here): u1 (i, j-1/2,
     * k+1/2), v1 (i+1/2, j, k+1/2), w1 (i+1/2, j-1/2, k), normal stresses
     * (i+1/2, j-1/2, k+1/2), xy (i, j, k+1/2), xz (i, j-1/2, k), yz (i+1/2, j, k). */
    for (i = 0; i < g->n[0]; i++)
        for (j = 0; j < g->n[1]; j++)
            for (k = 0; k < g->n[2]; k++) {
                int gi = g->off[0] + i, gj = g->off[1] + j, gk = g->off[2] + k;
                size_t p = awp_at(g, i, j, k);
                mean_t u = mean_over(m, g, h, gi, gj, gk, 0, 1, 1);
                mean_t v = mean_over(m, g, h, gi, gj, gk, 1, 0, 1);
                mean_t w = mean_over(m, g, h, gi, gj, gk, 1, 1, 0);
                mean_t s = mean_over(m, g, h, gi, gj, gk, 1, 1, 1);
                mean_t xy = mean_over(m, g, h, gi, gj, gk, 0, 0, 1);
                mean_t xz = mean_over(m, g, h, gi, gj, gk, 0, 1, 0);
                mean_t yz = mean_over(m, g, h, gi, gj, gk, 1, 0, 0);
                co->c[AWP_C_U1][p] = (float)(dth / (u.rho / u.count));
                co->c[AWP_C_V1][p] = (float)(dth / (v.rho / v.count));
                co->c[AWP_C_W1][p] = (float)(dth / (w.rho / w.count));
                co->c[AWP_C_LAM][p] = (float)(dth * s.count / s.inv_lam);
                co->c[AWP_C_MU][p] = (float)(dth * s.count / s.inv_mu);
                co->c[AWP_C_XY][p] = (float)(dth * xy.count / xy.inv_mu);
                co->c[AWP_C_XZ][p] = (float)(dth * xz.count / xz.inv_mu);
                co->c[AWP_C_YZ][p] = (float)(dth * yz.count / yz.inv_mu);
            }
    return 0;
}

void awp_coef_free(awp_coef_t *co)
{
    int c;
    for (c = 0; c < AWP_NCOEF; c++) {
        free(co->c[c]);
        co->c[c] = NULL;
    }
}
