#include "oc_bench_plot.h"

#include <errno.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef OC_BENCH_PLOT_DIR
#error "OC_BENCH_PLOT_DIR (where the gnuplot scripts are installed) comes from meson"
#endif

extern char **environ;

enum { MAX_EXTRA = 8 };

/* The script next to the binary, else in OC_BENCH_PLOT_DIR. */
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
    snprintf(out, len, "%s/%s", OC_BENCH_PLOT_DIR, name);
    return access(out, R_OK) == 0;
}

int bench_plot(const char *prog, const char *script, const char *data, const char *png,
               const char *const *extra, int nextra)
{
    char path[PATH_MAX + 64], tmp[PATH_MAX + 32];
    char *argv[4 + 1 + MAX_EXTRA + 1] = {"gnuplot", "-c", path, (char *)data, tmp};
    pid_t pid;
    int i, rc, status;

    if (nextra < 0 || nextra > MAX_EXTRA) {
        fprintf(stderr, "%s: note: no PNG: %d arguments for %s (at most %d)\n", prog, nextra,
                script, MAX_EXTRA);
        return 1;
    }
    if (!find_script(script, path, sizeof(path))) {
        fprintf(stderr, "%s: note: no PNG: %s is neither next to the binary nor in %s\n", prog,
                script, OC_BENCH_PLOT_DIR);
        return 1;
    }
    if (snprintf(tmp, sizeof(tmp), "%s.tmp%ld", png, (long)getpid()) >= (int)sizeof(tmp)) {
        fprintf(stderr, "%s: note: no PNG: the path %s is too long\n", prog, png);
        return 1;
    }
    for (i = 0; i < nextra; i++)
        argv[5 + i] = (char *)extra[i];
    argv[5 + nextra] = NULL;
    rc = posix_spawnp(&pid, "gnuplot", NULL, NULL, argv, environ);
    if (rc != 0) {
        fprintf(stderr, "%s: note: no PNG: cannot run gnuplot (%s)%s\n", prog, strerror(rc),
                rc == ENOENT ? "; install gnuplot-nox (ci/setup does)" : "");
        return 1;
    }
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        unlink(tmp);
        fprintf(stderr, "%s: note: no PNG: gnuplot failed on %s (%s untouched)\n", prog, path,
                png);
        return 1;
    }
    if (rename(tmp, png) != 0) {
        fprintf(stderr, "%s: note: no PNG: cannot rename %s to %s: %s\n", prog, tmp, png,
                strerror(errno));
        unlink(tmp);
        return 1;
    }
    return 0;
}
