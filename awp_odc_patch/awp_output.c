#include "awp_output.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "awp_error.h"

static int mkdir_p(const char *path)
{
    char buf[AWP_PATH_MAX];
    char *p;
    if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
        return awp_fail("output: path too long: %s", path);
    for (p = buf + 1; ; p++)
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(buf, 0777) != 0 && errno != EEXIST)
                return awp_fail("output: cannot create %s: %s", buf, strerror(errno));
            if ((*p = c) == '\0')
                return 0;
        }
}

/* The paths of the files: the length they need (the same for a slice's
 * .dat and its .png), written to path where it fits len. */
static int seismograms_path(const awp_scenario_t *sc, char *path, size_t len)
{
    return snprintf(path, len, "%s/%s_seismograms.csv", sc->output, sc->name);
}

static int slice_path(const awp_scenario_t *sc, int step, char *path, size_t len)
{
    return snprintf(path, len, "%s/%s_%s_%c%d_step%06d.dat", sc->output, sc->name,
                    awp_field_name(sc->snap_field), "xyz"[sc->snap_axis], sc->snap_index, step);
}

int awp_output_prepare(const awp_scenario_t *sc)
{
    struct stat st;
    int i, rc, len, need = seismograms_path(sc, NULL, 0);
    for (i = 0; i < sc->nsnap; i++)
        if ((len = slice_path(sc, sc->snap_step[i], NULL, 0)) > need)
            need = len;
    if (need >= AWP_OUT_PATH_MAX)
        return awp_fail("output and name: the files' paths would take %d characters, more than "
                        "%d", need, AWP_OUT_PATH_MAX - 1);
    if ((rc = mkdir_p(sc->output)) != 0)
        return rc;
    if (stat(sc->output, &st) != 0 || !S_ISDIR(st.st_mode))
        return awp_fail("output: %s is not a folder", sc->output);
    if (access(sc->output, W_OK | X_OK) != 0)
        return awp_fail("output: cannot write into %s: %s", sc->output, strerror(errno));
    return 0;
}

int awp_write_seismograms(const awp_scenario_t *sc, const float *traces, int steps, char *path,
                          size_t len)
{
    const size_t stride = (size_t)sc->steps * 3;
    FILE *f;
    int n, r;
    if (seismograms_path(sc, path, len) >= (int)len)
        return awp_fail("output: path too long: %s...", path);
    if ((f = fopen(path, "w")) == NULL)
        return awp_fail("output: cannot write %s: %s", path, strerror(errno));
    fprintf(f, "step,time_s");
    for (r = 0; r < sc->nrec; r++)
        fprintf(f, ",r%d_vx,r%d_vy,r%d_vz", r + 1, r + 1, r + 1);
    fprintf(f, "\n");
    for (n = 0; n < steps; n++) {
        fprintf(f, "%d,%.9g", n + 1, awp_field_time(sc, AWP_U1, n + 1));
        for (r = 0; r < sc->nrec; r++) {
            const float *v = traces + (size_t)r * stride + (size_t)n * 3;
            fprintf(f, ",%.9g,%.9g,%.9g", v[0], v[1], v[2]);
        }
        fprintf(f, "\n");
    }
    return fclose(f) == 0 ? 0 : awp_fail("output: writing %s failed", path);
}

awp_box_t awp_slice_box(const awp_scenario_t *sc, int *rows, int *cols)
{
    awp_box_t b;
    int d, a = sc->snap_axis;
    for (d = 0; d < 3; d++) {
        b.lo[d] = d == a ? sc->snap_index : 0;
        b.hi[d] = d == a ? sc->snap_index + 1 : sc->ng[d];
    }
    *rows = sc->ng[a == 0 ? 1 : 0];
    *cols = sc->ng[a == 2 ? 1 : 2];
    return b;
}

int awp_write_slice(const awp_scenario_t *sc, int step, const float *v, int rows, int cols,
                    char *path, size_t len)
{
    FILE *f;
    int r, c;
    if (slice_path(sc, step, path, len) >= (int)len)
        return awp_fail("output: path too long: %s...", path);
    if ((f = fopen(path, "w")) == NULL)
        return awp_fail("output: cannot write %s: %s", path, strerror(errno));
    for (r = 0; r < rows; r++)
        for (c = 0; c < cols; c++)
            fprintf(f, "%.7g%c", v[(size_t)r * (size_t)cols + (size_t)c], c + 1 < cols ? ' ' : '\n');
    return fclose(f) == 0 ? 0 : awp_fail("output: writing %s failed", path);
}

void awp_slice_title(const awp_scenario_t *sc, int step, char *title, size_t len)
{
    snprintf(title, len, "%s: %s on %c = %d, step %d (t = %.3f s)", sc->name,
             awp_field_name(sc->snap_field), "xyz"[sc->snap_axis], sc->snap_index, step,
             awp_field_time(sc, sc->snap_field, step));
}
