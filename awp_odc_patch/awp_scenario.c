#include "awp_scenario.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awp_error.h"
#include "awp_fp.h"
#include "awp_kernel.h"
#include "awp_text.h"

static const char *const mode_names[AWP_MODE_COUNT] = {
    [AWP_MODE_TWO_SIDED] = "two-sided",
    [AWP_MODE_OFFLOAD] = "offload",
    [AWP_MODE_RMA] = "rma",
    [AWP_MODE_EMPTY] = "empty",
};

static const char *const field_names[AWP_NFIELDS] = {
    "u1", "v1", "w1", "xx", "yy", "zz", "xy", "xz", "yz",
};

const char *awp_mode_name(awp_mode_t mode)
{
    return mode >= 0 && mode < AWP_MODE_COUNT ? mode_names[mode] : "?";
}

const char *awp_field_name(awp_field_t f)
{
    return f >= 0 && f < AWP_NFIELDS ? field_names[f] : "?";
}

/* ---- value parsers: each fails with a message about the value alone; the
 * loader prefixes where it was and the key. ---------------------------------- */

static int parse_ints(const char *v, int *out, int n)
{
    double d[AWP_MAX_SNAPSHOTS];
    int i;
    if (awp_parse_doubles(v, d, n) != 0)
        return awp_fail("expected %d integer%s, got '%s'", n, n > 1 ? "s" : "", v);
    /* digits only: "2.9999999999999999" and "7.0000000000000001" are
     * integers as doubles */
    if (strpbrk(v, ".eE") != NULL)
        return awp_fail("expected integers, got '%s'", v);
    for (i = 0; i < n; i++) {
        if (fabs(d[i]) > INT_MAX)
            return awp_fail("expected integers, got '%s'", v);
        out[i] = (int)d[i];
    }
    return 0;
}

/* Whether the first word of v is word: "homogeneous3000" is not "homogeneous". */
static int first_word_is(const char *v, const char *word)
{
    size_t len = strcspn(v, " \t");
    return len == strlen(word) && strncmp(v, word, len) == 0;
}

static int count_words(const char *v)
{
    int n = 0;
    const char *p = v;
    while (*(p += strspn(p, " \t")) != '\0') {
        n++;
        p += strcspn(p, " \t");
    }
    return n;
}

static int parse_positive(const char *v, double *out)
{
    if (awp_parse_doubles(v, out, 1) != 0)
        return -1;
    if (!(*out > 0))
        return awp_fail("must be positive, not %g", *out);
    return 0;
}

/* ---- the keys ------------------------------------------------------------- */

typedef struct {
    awp_scenario_t *sc;
    const char *dir; /* the scenario file's folder, for relative paths */
} ctx_t;

static int key_name(ctx_t *c, const char *v)
{
    if (v[0] == '\0' || strlen(v) >= sizeof(c->sc->name) || strcspn(v, " \t/") != strlen(v))
        return awp_fail("a word of at most %zu characters without '/', not '%s'",
                        sizeof(c->sc->name) - 1, v);
    strcpy(c->sc->name, v);
    return 0;
}

static int key_grid(ctx_t *c, const char *v)
{
    int d;
    if (parse_ints(v, c->sc->ng, 3) != 0)
        return awp_fail("expected 'nx ny nz', got '%s'", v);
    for (d = 0; d < 3; d++)
        if (c->sc->ng[d] < 1)
            return awp_fail("cell counts must be positive, got '%s'", v);
    return 0;
}

static int key_h(ctx_t *c, const char *v)
{
    return parse_positive(v, &c->sc->h);
}

static int key_dt(ctx_t *c, const char *v)
{
    return parse_positive(v, &c->sc->dt);
}

static int key_steps(ctx_t *c, const char *v)
{
    if (parse_ints(v, &c->sc->steps, 1) != 0)
        return -1;
    return c->sc->steps < 0 ? awp_fail("must be >= 0, not %d", c->sc->steps) : 0;
}

static int key_media(ctx_t *c, const char *v)
{
    awp_media_t *m = &c->sc->media;
    if (first_word_is(v, "homogeneous")) {
        double x[3];
        if (awp_parse_doubles(v + 11, x, 3) != 0)
            return awp_fail("expected 'homogeneous vp vs rho', got '%s'", v);
        m->nlayers = 1;
        m->layer[0] = (awp_layer_t){0, x[0], x[1], x[2]};
    } else if (first_word_is(v, "layers") && count_words(v) == 2) {
        char path[AWP_PATH_MAX * 2];
        const char *file = v + 6 + strspn(v + 6, " \t");
        if (file[0] == '/')
            snprintf(path, sizeof(path), "%s", file);
        else
            snprintf(path, sizeof(path), "%s/%s", c->dir, file);
        if (awp_media_load_layers(m, path) != 0)
            return -1;
    } else
        return awp_fail("expected 'homogeneous vp vs rho' or 'layers FILE', got '%s'", v);
    return awp_media_check(m);
}

static int key_freesurface(ctx_t *c, const char *v)
{
    if (strcmp(v, "0") != 0 && strcmp(v, "1") != 0)
        return awp_fail("expected 0 or 1, got '%s'", v);
    c->sc->freesurface = v[0] == '1';
    return 0;
}

int awp_denormals_parse(const char *v, int *flush)
{
    if (strcmp(v, "flush") != 0 && strcmp(v, "keep") != 0)
        return awp_fail("expected flush or keep, got '%s'", v);
    *flush = v[0] == 'f';
    if (*flush && !awp_fp_flush_available())
        return awp_fail("this CPU cannot flush subnormals (x86-64 and AArch64 can): use keep");
    return 0;
}

static int key_denormals(ctx_t *c, const char *v)
{
    return awp_denormals_parse(v, &c->sc->flush_denormals);
}

static int key_sponge(ctx_t *c, const char *v)
{
    double x[2];
    if (awp_parse_doubles(v, x, 2) != 0 || x[0] != floor(x[0]) || x[0] < 0 || x[0] > 1e6)
        return awp_fail("expected 'nd arbc' (nd cells >= 0), got '%s'", v);
    if (!(x[1] > 0 && x[1] < 1))
        return awp_fail("arbc must lie in (0, 1), not %g", x[1]);
    c->sc->sponge_nd = (int)x[0];
    c->sc->sponge_arbc = x[1];
    return 0;
}

static int key_source(ctx_t *c, const char *v)
{
    return parse_ints(v, c->sc->source.pos, 3) != 0
               ? awp_fail("expected the source cell 'i j k', got '%s'", v)
               : 0;
}

static int key_moment(ctx_t *c, const char *v)
{
    return awp_parse_doubles(v, c->sc->source.moment, 6) != 0
               ? awp_fail("expected 'mxx myy mzz mxy mxz myz', got '%s'", v)
               : 0;
}

static int key_stf(ctx_t *c, const char *v)
{
    static const struct {
        const char *name;
        awp_stf_kind_t kind;
    } kinds[] = {{"gaussian_derivative", AWP_STF_GAUSSIAN_DERIVATIVE},
                 {"gaussian", AWP_STF_GAUSSIAN},
                 {"brune", AWP_STF_BRUNE}};
    size_t i;
    for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (first_word_is(v, kinds[i].name)) {
            c->sc->source.kind = kinds[i].kind;
            return parse_positive(v + strlen(kinds[i].name), &c->sc->source.param);
        }
    return awp_fail("expected 'gaussian F0', 'gaussian_derivative F0' or 'brune RISE_TIME', "
                    "got '%s'", v);
}

static int key_m0(ctx_t *c, const char *v)
{
    return parse_positive(v, &c->sc->source.m0);
}

/* "i j k; i j k; ..." */
static int key_receivers(ctx_t *c, const char *v)
{
    char buf[4096], *save = NULL, *tok;
    if (strlen(v) >= sizeof(buf))
        return awp_fail("list too long");
    strcpy(buf, v);
    c->sc->nrec = 0;
    for (tok = strtok_r(buf, ";", &save); tok != NULL; tok = strtok_r(NULL, ";", &save)) {
        if (c->sc->nrec == AWP_MAX_RECEIVERS)
            return awp_fail("more than %d receivers", AWP_MAX_RECEIVERS);
        if (parse_ints(tok, c->sc->rec[c->sc->nrec], 3) != 0)
            return awp_fail("expected cells 'i j k' separated by ';', got '%s'", tok);
        c->sc->nrec++;
    }
    return 0;
}

static int key_proc(ctx_t *c, const char *v)
{
    if (strcmp(v, "auto") == 0) {
        memset(c->sc->proc, 0, sizeof(c->sc->proc));
        return 0;
    }
    if (parse_ints(v, c->sc->proc, 3) != 0 || c->sc->proc[0] < 1 || c->sc->proc[1] < 1 ||
        c->sc->proc[2] < 1)
        return awp_fail("expected 'auto' or 'px py pz' (each >= 1), got '%s'", v);
    return 0;
}

static int key_mode(ctx_t *c, const char *v)
{
    int m;
    for (m = 0; m < AWP_MODE_EMPTY; m++)
        if (strcmp(v, mode_names[m]) == 0) {
            c->sc->mode = (awp_mode_t)m;
            return 0;
        }
    if (strcmp(v, mode_names[AWP_MODE_EMPTY]) == 0)
        return awp_fail("'empty' is awp_bench's timing reference, which moves no data "
                        "(known: two-sided, offload, rma)");
    return awp_fail("unknown mode '%s' (known: two-sided, offload, rma)", v);
}

static int key_snapshots(ctx_t *c, const char *v)
{
    int n = count_words(v), i;
    if (n > AWP_MAX_SNAPSHOTS)
        return awp_fail("more than %d steps", AWP_MAX_SNAPSHOTS);
    if (parse_ints(v, c->sc->snap_step, n) != 0)
        return -1;
    for (i = 0; i < n; i++)
        if (c->sc->snap_step[i] < 1)
            return awp_fail("steps count from 1, got %d", c->sc->snap_step[i]);
    c->sc->nsnap = n;
    return 0;
}

static int key_snapshot_plane(ctx_t *c, const char *v)
{
    const char *axes = "xyz", *a = strchr(axes, v[0]);
    /* the axis is a word of its own: "y6" is no plane */
    if (v[0] == '\0' || a == NULL || strcspn(v, " \t") != 1 ||
        parse_ints(v + 1, &c->sc->snap_index, 1) != 0)
        return awp_fail("expected 'x|y|z index', got '%s'", v);
    c->sc->snap_axis = (int)(a - axes);
    return 0;
}

static int key_snapshot_field(ctx_t *c, const char *v)
{
    int f;
    for (f = 0; f < AWP_NFIELDS; f++)
        if (strcmp(v, field_names[f]) == 0) {
            c->sc->snap_field = (awp_field_t)f;
            return 0;
        }
    return awp_fail("unknown field '%s' (u1 v1 w1 xx yy zz xy xz yz)", v);
}

static int key_output(ctx_t *c, const char *v)
{
    if (v[0] == '\0' || strlen(v) >= sizeof(c->sc->output))
        return awp_fail("expected a folder name of at most %zu characters",
                        sizeof(c->sc->output) - 1);
    strcpy(c->sc->output, v);
    return 0;
}

static int key_progress(ctx_t *c, const char *v)
{
    if (strcmp(v, "auto") == 0) {
        c->sc->progress = -1;
        return 0;
    }
    if (parse_ints(v, &c->sc->progress, 1) != 0)
        return awp_fail("expected 'auto' or a number of steps, got '%s'", v);
    return c->sc->progress < 0 ? awp_fail("must be >= 0, not %d", c->sc->progress) : 0;
}

typedef struct {
    const char *key;
    int (*parse)(ctx_t *c, const char *v);
    int required;
} key_def_t;

static const key_def_t keys[] = {
    {"name", key_name, 0},
    {"grid", key_grid, 1},
    {"h", key_h, 1},
    {"dt", key_dt, 1},
    {"steps", key_steps, 1},
    {"media", key_media, 1},
    {"freesurface", key_freesurface, 0},
    {"denormals", key_denormals, 0},
    {"sponge", key_sponge, 0},
    {"source", key_source, 1},
    {"moment", key_moment, 1},
    {"stf", key_stf, 1},
    {"m0", key_m0, 0},
    {"receivers", key_receivers, 0},
    {"proc", key_proc, 0},
    {"mode", key_mode, 0},
    {"snapshots", key_snapshots, 0},
    {"snapshot_plane", key_snapshot_plane, 0},
    {"snapshot_field", key_snapshot_field, 0},
    {"output", key_output, 0},
    {"progress", key_progress, 0},
};
#define NKEYS ((int)(sizeof(keys) / sizeof(keys[0])))

static char *trim(char *s)
{
    char *e;
    s += strspn(s, " \t\r\n");
    e = s + strlen(s);
    while (e > s && strchr(" \t\r\n", e[-1]) != NULL)
        *--e = '\0';
    return s;
}

/* Applies "key = value" (line already split at '='); where names the place. */
static int apply(ctx_t *c, char *key, char *value, const char *where, int *seen)
{
    char msg[512];
    int k;
    key = trim(key);
    value = trim(value);
    for (k = 0; k < NKEYS && strcmp(keys[k].key, key) != 0; k++)
        ;
    if (k == NKEYS)
        return awp_fail("%s: unknown key '%s'", where, key);
    if (seen[k] == 1)
        return awp_fail("%s: key '%s' given twice", where, key);
    seen[k]++;
    if (keys[k].parse(c, value) == 0)
        return 0;
    snprintf(msg, sizeof(msg), "%s", awp_last_error());
    return awp_fail("%s: %s: %s", where, key, msg);
}

void awp_scenario_defaults(awp_scenario_t *sc, const char *name)
{
    memset(sc, 0, sizeof(*sc));
    snprintf(sc->name, sizeof(sc->name), "%s", name);
    sc->freesurface = 1;
    sc->flush_denormals = awp_fp_flush_available();
    sc->sponge_nd = 20;
    sc->sponge_arbc = 0.92;
    sc->source.m0 = 1e16;
    sc->mode = AWP_MODE_TWO_SIDED;
    sc->snap_axis = -1; /* resolved by the check: the middle y plane */
    sc->snap_field = AWP_W1;
    sc->progress = -1;
    snprintf(sc->output, sizeof(sc->output), "awp_out");
}

int awp_scenario_load(awp_scenario_t *sc, const char *path, int noverrides,
                      char *const *overrides)
{
    char line[4096], dir[AWP_PATH_MAX], where[AWP_PATH_MAX + 32];
    int seen[NKEYS] = {0}, overridden[NKEYS] = {0}, lineno = 0, i, rc;
    const char *slash = strrchr(path, '/'), *base = slash != NULL ? slash + 1 : path;
    ctx_t c = {sc, dir};
    FILE *f;

    /* named after the file unless it says otherwise ('.x' names nothing) */
    snprintf(dir, sizeof(dir), "%.*s", (int)strcspn(base, "."), base);
    awp_scenario_defaults(sc, dir[0] != '\0' ? dir : "scenario");
    snprintf(dir, sizeof(dir), "%.*s", slash != NULL ? (int)(slash - path) : 1,
             slash != NULL ? path : ".");
    if ((f = fopen(path, "r")) == NULL)
        return awp_fail("scenario: cannot read %s: %s", path, strerror(errno));
    while ((rc = awp_read_line(f, line, sizeof(line), path, &lineno)) == 1) {
        char *hash = strchr(line, '#'), *eq;
        if (hash != NULL)
            *hash = '\0';
        if (*trim(line) == '\0')
            continue;
        snprintf(where, sizeof(where), "%s:%d", path, lineno);
        if ((eq = strchr(line, '=')) == NULL)
            rc = awp_fail("%s: expected 'key = value'", where);
        else {
            *eq = '\0';
            rc = apply(&c, line, eq + 1, where, seen);
        }
        if (rc != 0)
            break;
    }
    fclose(f);
    /* Overrides replace what the file says, so each key may come once more;
     * twice among them, one would silently undo the other. */
    for (i = 0; i < noverrides && rc == 0; i++) {
        char buf[4096], *eq;
        int k;
        snprintf(where, sizeof(where), "override '%s'", overrides[i]);
        if (snprintf(buf, sizeof(buf), "%s", overrides[i]) >= (int)sizeof(buf))
            return awp_fail("%.60s...': longer than %zu characters", where, sizeof(buf) - 1);
        if ((eq = strchr(buf, '=')) == NULL)
            return awp_fail("%s: expected key=value", where);
        *eq = '\0';
        for (k = 0; k < NKEYS; k++)
            if (strcmp(keys[k].key, trim(buf)) == 0) {
                if (overridden[k]++)
                    return awp_fail("%s: key '%s' overridden twice", where, keys[k].key);
                seen[k] = 0;
            }
        rc = apply(&c, buf, eq + 1, where, seen);
    }
    for (i = 0; i < NKEYS && rc == 0; i++)
        if (keys[i].required && !seen[i])
            rc = awp_fail("%s: missing key '%s'", path, keys[i].key);
    return rc;
}

/* Whether global cell c lies inside the grid. */
static int inside(const awp_scenario_t *sc, const int c[3])
{
    int d;
    for (d = 0; d < 3; d++)
        if (c[d] < 0 || c[d] >= sc->ng[d])
            return 0;
    return 1;
}

/* x rounded down to digits significant digits, so that a bound printed
 * with them is itself within the bound. */
static double round_down(double x, int digits)
{
    double scale = pow(10, digits - 1 - floor(log10(x)));
    return floor(x * scale) / scale;
}

/* Against the scheme's exact limit, not DESIGN.md's rounded 0.5: a run at
 * 0.497 turns to NaN within a few hundred steps. */
static int check_stability(const awp_scenario_t *sc)
{
    const double vp = awp_media_vp_max(&sc->media), courant = vp * sc->dt / sc->h;
    const double limit = awp_courant_limit();
    if (courant < limit)
        return 0;
    return awp_fail("unstable: vp_max * dt / h = %g * %g / %g = %.4f (the Courant number) must "
                    "be below %.4f = 1 / (sqrt(3) (|c1| + |c2|)), the limit of the 4th-order "
                    "staggered scheme in 3D; dt must be below %.5g",
                    vp, sc->dt, sc->h, courant, limit, round_down(limit * sc->h / vp, 5));
}

/* The free surface sets xz = yz = 0 on the surface after each stress update,
 * the source's included: at k = 0 mxz and myz would be lost without a word. */
static int check_source(const awp_scenario_t *sc)
{
    const awp_source_t *src = &sc->source;
    if (!inside(sc, src->pos))
        return awp_fail("source: cell %d %d %d lies outside the grid %dx%dx%d", src->pos[0],
                        src->pos[1], src->pos[2], sc->ng[0], sc->ng[1], sc->ng[2]);
    if (sc->freesurface && src->pos[2] == 0 && (src->moment[4] != 0 || src->moment[5] != 0))
        return awp_fail("source: at k = 0 under the free surface, mxz = %g and myz = %g would "
                        "be lost (the surface holds xz = yz = 0); put the source at k >= 1",
                        src->moment[4], src->moment[5]);
    return 0;
}

int awp_scenario_check(awp_scenario_t *sc, int nranks)
{
    int i;
    if (check_stability(sc) != 0 || check_source(sc) != 0)
        return -1;
    for (i = 0; i < sc->nrec; i++)
        if (!inside(sc, sc->rec[i]))
            return awp_fail("receivers: receiver %d at cell %d %d %d lies outside the grid "
                            "%dx%dx%d", i + 1, sc->rec[i][0], sc->rec[i][1], sc->rec[i][2],
                            sc->ng[0], sc->ng[1], sc->ng[2]);
    for (i = 0; i < sc->nsnap; i++)
        if (sc->snap_step[i] > sc->steps)
            return awp_fail("snapshots: step %d lies after the last step %d", sc->snap_step[i],
                            sc->steps);
    if (sc->snap_axis < 0) {
        sc->snap_axis = 1;
        sc->snap_index = sc->ng[1] / 2;
    }
    if (sc->snap_index < 0 || sc->snap_index >= sc->ng[sc->snap_axis])
        return awp_fail("snapshot_plane: index %d lies outside 0..%d", sc->snap_index,
                        sc->ng[sc->snap_axis] - 1);
    for (i = 0; i < 3; i++) {
        /* nd cells on each absorbing side: the bottom and the four sides,
         * and the top too without a free surface */
        int sides = i == 2 && sc->freesurface ? 1 : 2;
        if (sc->sponge_nd > 0 && (long)sides * sc->sponge_nd >= sc->ng[i])
            return awp_fail("sponge: %d cells on %s leave no undamped cell in the %d along "
                            "%c; at most %d", sc->sponge_nd,
                            sides == 2 ? "both sides" : "the bottom", sc->ng[i], "xyz"[i],
                            (sc->ng[i] - 1) / sides);
    }
    /* the automatic grid too must pass the check of the block's size */
    if (sc->proc[0] == 0 && awp_dims_auto(nranks, sc->ng, sc->proc) != 0)
        return -1;
    return awp_dims_check(sc->ng, sc->proc, nranks);
}

double awp_field_time(const awp_scenario_t *sc, awp_field_t f, int step)
{
    /* leapfrog: the velocities of a step come half a step before its stresses */
    return (f <= AWP_W1 ? step - 0.5 : step) * sc->dt;
}
