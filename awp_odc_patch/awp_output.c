#include "awp_output.h"

#include <errno.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "awp_error.h"

/* Where meson installs the plot scripts; a default here once hid that the
 * define did not reach this file, and installed binaries looked elsewhere. */
#ifndef AWP_PLOT_DIR
#error "AWP_PLOT_DIR (the installed plot scripts' folder) is set by meson"
#endif

extern char **environ;

int awp_mkdir_p(const char *path)
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

int awp_write_seismograms(const awp_scenario_t *sc, const float *traces, int steps, char *path,
                          size_t len)
{
    const size_t stride = (size_t)sc->steps * 3;
    FILE *f;
    int n, r;
    snprintf(path, len, "%s/%s_seismograms.csv", sc->output, sc->name);
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
    snprintf(path, len, "%s/%s_%s_%c%d_step%06d.dat", sc->output, sc->name,
             awp_field_name(sc->snap_field), "xyz"[sc->snap_axis], sc->snap_index, step);
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

/* The script next to the binary (build tree), else in the installed folder. */
static int find_script(const char *name, char *out, size_t len)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        char *slash;
        exe[n] = '\0';
        if ((slash = strrchr(exe, '/')) != NULL) {
            *slash = '\0';
            snprintf(out, len, "%s/%s", exe, name);
            if (access(out, R_OK) == 0)
                return 1;
        }
    }
    snprintf(out, len, "%s/%s", AWP_PLOT_DIR, name);
    return access(out, R_OK) == 0;
}

int awp_plot(const char *prog, const char *script, const char *const *args, int nargs)
{
    char path[PATH_MAX + 64];
    char *argv[16] = {"gnuplot", "-c", path};
    pid_t pid;
    int i, rc, status;
    if (!find_script(script, path, sizeof(path))) {
        fprintf(stderr, "%s: note: no PNG: %s is neither next to the binary nor in %s\n", prog,
                script, AWP_PLOT_DIR);
        return -1;
    }
    for (i = 0; i < nargs && i < 12; i++)
        argv[3 + i] = (char *)args[i];
    argv[3 + i] = NULL;
    rc = posix_spawnp(&pid, "gnuplot", NULL, NULL, argv, environ);
    if (rc != 0) {
        fprintf(stderr, "%s: note: no PNG (the data files are kept): cannot run gnuplot: %s\n",
                prog, strerror(rc));
        return -1;
    }
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "%s: note: gnuplot failed on %s; no PNG\n", prog, path);
        return -1;
    }
    return 0;
}
