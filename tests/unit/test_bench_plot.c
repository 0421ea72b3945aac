/*
 * bench_plot, with a stand-in gnuplot first on PATH that, like the real one,
 * opens its output before it plots and then succeeds or fails as its script
 * says: a good plot replaces the PNG, a failed one leaves the earlier PNG
 * as it was and no temporary file behind, and every refusal notes why.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "oc_bench_plot.h"

#define SCRIPT "test_bench_plot.gp"

static char dir[] = "/tmp/test_bench_plot_XXXXXX";
static char script[PATH_MAX + 32], png[PATH_MAX + 16], data[PATH_MAX + 16], note[PATH_MAX + 16];
static char *saved_path;

static void write_file(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(chmod(path, mode), 0);
}

static void read_file(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    size_t n;
    assert_non_null(f);
    n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    fclose(f);
}

/* Files in dir other than the stand-in's folder, the data and the PNG. */
static int strays(void)
{
    char cmd[PATH_MAX + 128];
    snprintf(cmd, sizeof(cmd), "test $(ls -A %s | grep -cv '^bin$\\|^data$\\|^out.png$') = 0", dir);
    return system(cmd) != 0;
}

/* bench_plot with stderr caught in note. */
static int plot(const char *name, const char *const *extra, int nextra)
{
    int saved, rc;
    fflush(stderr);
    saved = dup(2);
    assert_true(freopen(note, "w", stderr) != NULL);
    rc = bench_plot("test_bench_plot", name, data, png, extra, nextra);
    fflush(stderr);
    assert_int_equal(dup2(saved, 2), 2);
    close(saved);
    return rc;
}

static void assert_note(const char *needle)
{
    char text[4096];
    read_file(note, text, sizeof(text));
    if (strstr(text, needle) == NULL)
        fail_msg("the note '%s' does not say '%s'", text, needle);
}

static int setup(void **state)
{
    char exe[PATH_MAX], bin[PATH_MAX + 8], gnuplot[PATH_MAX + 16], path[8192];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    (void)state;
    assert_true(n > 0);
    exe[n] = '\0';
    *strrchr(exe, '/') = '\0';
    snprintf(script, sizeof(script), "%s/" SCRIPT, exe);
    assert_non_null(mkdtemp(dir));
    snprintf(bin, sizeof(bin), "%s/bin", dir);
    assert_int_equal(mkdir(bin, 0755), 0);
    snprintf(gnuplot, sizeof(gnuplot), "%s/gnuplot", bin);
    /* gnuplot -c SCRIPT DATA PNG TITLE */
    write_file(gnuplot, "#!/bin/sh\n"
                        "printf 'drawn from %s titled %s\\n' \"$3\" \"$5\" > \"$4\"\n"
                        "[ \"$(cat \"$2\")\" = ok ]\n", 0755);
    snprintf(data, sizeof(data), "%s/data", dir);
    snprintf(png, sizeof(png), "%s/out.png", dir);
    snprintf(note, sizeof(note), "%s.note", dir);
    write_file(data, "1 2\n", 0644);
    saved_path = strdup(getenv("PATH") != NULL ? getenv("PATH") : "/usr/bin:/bin");
    snprintf(path, sizeof(path), "%s:%s", bin, saved_path);
    setenv("PATH", path, 1);
    return 0;
}

static int teardown(void **state)
{
    char cmd[PATH_MAX + 32];
    (void)state;
    setenv("PATH", saved_path, 1);
    free(saved_path);
    unlink(script);
    unlink(note);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd);
}

static void test_success_replaces_png(void **state)
{
    const char *title[] = {"a title"};
    char got[PATH_MAX + 64], want[PATH_MAX + 64];
    (void)state;
    write_file(script, "ok", 0644);
    write_file(png, "old", 0644);
    assert_int_equal(plot(SCRIPT, title, 1), 0);
    read_file(png, got, sizeof(got));
    snprintf(want, sizeof(want), "drawn from %s titled a title\n", data);
    assert_string_equal(got, want);
    assert_false(strays());
}

static void test_failure_keeps_png(void **state)
{
    const char *title[] = {"a title"};
    char got[512];
    (void)state;
    write_file(script, "fail", 0644);
    write_file(png, "good", 0644);
    assert_int_equal(plot(SCRIPT, title, 1), 1);
    read_file(png, got, sizeof(got));
    assert_string_equal(got, "good");
    assert_false(strays());
    assert_note("test_bench_plot: note: no PNG: gnuplot failed on");
}

static void test_refusals(void **state)
{
    const char *many[9] = {"1", "2", "3", "4", "5", "6", "7", "8", "9"};
    char *path = strdup(getenv("PATH"));
    (void)state;
    write_file(script, "ok", 0644);
    assert_int_equal(plot("no_such_script.gp", NULL, 0), 1);
    assert_note("no_such_script.gp is neither next to the binary nor in");
    assert_int_equal(plot(SCRIPT, many, 9), 1);
    assert_note("9 arguments");
    setenv("PATH", "/nonexistent", 1);
    assert_int_equal(plot(SCRIPT, NULL, 0), 1);
    assert_note("cannot run gnuplot");
    setenv("PATH", path, 1);
    free(path);
    assert_false(strays());
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_success_replaces_png),
        cmocka_unit_test(test_failure_keeps_png),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
