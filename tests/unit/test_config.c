/*
 * Configuration from OC_* variables, status strings, and the argument checks
 * of oc_init. Every test starts from an environment without OC_* variables,
 * so that the machine's own settings cannot leak in.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "offcoll.h"

/* Enums count as int: every oc_*_t enum has small values. */
typedef enum { F_INT, F_UNSIGNED, F_SIZE, F_DOUBLE } field_kind_t;

/* Each variable and the field it sets. */
static const struct {
    const char *var, *name;
    size_t off;
    field_kind_t kind;
} fields[] = {
#define FIELD(var, f, kind) {var, #f, offsetof(oc_config_t, f), kind}
    FIELD("OC_PROGRESS", progress, F_INT),
    FIELD("OC_BACKEND", backend, F_INT),
    FIELD("OC_LIST_MAX", list_max, F_UNSIGNED),
    FIELD("OC_RINGK", ringk, F_UNSIGNED),
    FIELD("OC_ALLTOALL_ALG", alltoall_alg, F_INT),
    FIELD("OC_ALLTOALLV_ALG", alltoallv_alg, F_INT),
    FIELD("OC_BRUCK_MAX", bruck_max, F_SIZE),
    FIELD("OC_RINGK_MIN", ringk_min, F_SIZE),
    FIELD("OC_SPIN_US", spin_us, F_UNSIGNED),
    FIELD("OC_WAIT_HELP_US", wait_help_us, F_UNSIGNED),
    FIELD("OC_TIMEOUT_S", timeout_s, F_DOUBLE),
    FIELD("OC_VERBOSE", verbose, F_INT),
    FIELD("OC_INTRANODE", intranode, F_INT),
    FIELD("OC_WARN_UNKNOWN", warn_unknown, F_INT),
    FIELD("OC_HUGE_BUFFERS", huge_buffers, F_INT),
#undef FIELD
};
enum { NFIELDS = sizeof(fields) / sizeof(fields[0]) };

static double field_value(const oc_config_t *c, size_t i)
{
    const char *p = (const char *)c + fields[i].off;
    switch (fields[i].kind) {
    case F_INT:      { int v; memcpy(&v, p, sizeof(v)); return (double)v; }
    case F_UNSIGNED: { unsigned v; memcpy(&v, p, sizeof(v)); return (double)v; }
    case F_SIZE:     { size_t v; memcpy(&v, p, sizeof(v)); return (double)v; }
    default:         { double v; memcpy(&v, p, sizeof(v)); return v; }
    }
}

static void field_set(oc_config_t *c, size_t i, double x)
{
    char *p = (char *)c + fields[i].off;
    switch (fields[i].kind) {
    case F_INT:      { int v = (int)x; memcpy(p, &v, sizeof(v)); break; }
    case F_UNSIGNED: { unsigned v = (unsigned)x; memcpy(p, &v, sizeof(v)); break; }
    case F_SIZE:     { size_t v = (size_t)x; memcpy(p, &v, sizeof(v)); break; }
    default:         memcpy(p, &x, sizeof(x));
    }
}

/* By variable or field name. */
static size_t field_index(const char *var)
{
    for (size_t i = 0; i < NFIELDS; i++)
        if (strcmp(fields[i].var, var) == 0 || strcmp(fields[i].name, var) == 0)
            return i;
    fail_msg("no field for %s", var);
    return 0;
}

/* The configuration of an environment without OC_* variables. */
static oc_config_t defaults;

static void clear_env(void)
{
    for (size_t i = 0; i < NFIELDS; i++)
        unsetenv(fields[i].var);
    unsetenv("OC_PROGRESS_CPUS"); /* a string: test_progress_cpus */
    unsetenv("GLIBC_TUNABLES");   /* huge_buffers' default: test_huge_buffers_glibc */
}

static int fresh_env(void **state)
{
    (void)state;
    clear_env();
    return oc_config_init(&defaults) == OC_OK ? 0 : -1;
}

/* Every field equals the default except `except` (NFIELDS: none). */
static void assert_defaults_but(const oc_config_t *c, size_t except)
{
    for (size_t i = 0; i < NFIELDS; i++)
        if (i != except && field_value(c, i) != field_value(&defaults, i))
            fail_msg("%s changed: %g, default %g", fields[i].var, field_value(c, i),
                     field_value(&defaults, i));
}

static void test_defaults(void **state)
{
    oc_config_t c;
    (void)state;
    assert_int_equal(oc_config_init(&c), OC_OK);
    assert_int_equal(c.progress, OC_PROGRESS_THREAD);
    assert_int_equal(c.backend, OC_BACKEND_AUTO);
    assert_int_equal(c.list_max, 64);
    assert_int_equal(c.ringk, 4);
    assert_int_equal(c.alltoall_alg, OC_ALG_AUTO);
    assert_int_equal(c.alltoallv_alg, OC_ALG_AUTO);
    assert_int_equal(c.bruck_max, 128);
    assert_int_equal(c.ringk_min, 64 * 1024);
    assert_int_equal(c.spin_us, 0); /* an idle engine must sleep, not spin */
    /* decided per context: waiters help where the thread has no CPU of its own */
    assert_int_equal(c.wait_help_us, OC_WAIT_HELP_AUTO);
    assert_true(c.timeout_s == 300);
    assert_int_equal(c.verbose, 0);
    assert_int_equal(c.warn_unknown, 1);
    assert_int_equal(c.intranode, OC_INTRANODE_AUTO); /* decided per context */
    assert_int_equal(c.huge_buffers, 0);
    assert_int_equal(oc_config_init(NULL), OC_ERR_INVALID_ARG);
}

static void test_each_variable(void **state)
{
    static const struct {
        const char *var, *value;
        double expect;
    } cases[] = {
        {"OC_PROGRESS", "inline", OC_PROGRESS_INLINE},
        {"OC_PROGRESS", "thread", OC_PROGRESS_THREAD},
        {"OC_BACKEND", "ucx", OC_BACKEND_UCX},
        {"OC_BACKEND", "verbs", OC_BACKEND_VERBS},
        {"OC_LIST_MAX", "2", 2},
        {"OC_LIST_MAX", "1000", 1000},
        {"OC_RINGK", "3", 3},
        {"OC_ALLTOALL_ALG", "burst", OC_ALG_BURST},
        {"OC_ALLTOALL_ALG", "pairwise", OC_ALG_PAIRWISE},
        {"OC_ALLTOALL_ALG", "ringk", OC_ALG_RINGK},
        {"OC_ALLTOALL_ALG", "bruck", OC_ALG_BRUCK},
        {"OC_ALLTOALLV_ALG", "ringk", OC_ALG_RINGK},
        {"OC_ALLTOALLV_ALG", "auto", OC_ALG_AUTO},
        {"OC_BRUCK_MAX", "0", 0},
        {"OC_BRUCK_MAX", "4096", 4096},
        {"OC_RINGK_MIN", "12345", 12345},
        {"OC_SPIN_US", "50", 50},
        {"OC_WAIT_HELP_US", "0", 0},
        {"OC_WAIT_HELP_US", "75", 75},
        {"OC_WAIT_HELP_US", "auto", OC_WAIT_HELP_AUTO},
        {"OC_TIMEOUT_S", "2.5", 2.5},
        {"OC_TIMEOUT_S", "0", 0},
        {"OC_VERBOSE", "1", 1},
        {"OC_INTRANODE", "loopback", OC_INTRANODE_LOOPBACK},
        {"OC_INTRANODE", "shm", OC_INTRANODE_SHM},
        {"OC_INTRANODE", "cma", OC_INTRANODE_CMA},
        {"OC_INTRANODE", "auto", OC_INTRANODE_AUTO},
        {"OC_WARN_UNKNOWN", "0", 0},
        {"OC_HUGE_BUFFERS", "1", 1},
        {"OC_LIST_MAX", "", 64}, /* empty counts as unset */
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t f = field_index(cases[i].var);
        oc_config_t c;
        clear_env();
        setenv(cases[i].var, cases[i].value, 1);
        if (oc_config_init(&c) != OC_OK)
            fail_msg("%s=%s refused: %s", cases[i].var, cases[i].value, oc_last_error());
        if (field_value(&c, f) != cases[i].expect)
            fail_msg("%s=%s gave %g", cases[i].var, cases[i].value, field_value(&c, f));
        assert_defaults_but(&c, f);
    }
}

static void test_malformed(void **state)
{
    static const struct {
        const char *var, *value;
    } cases[] = {
        {"OC_LIST_MAX", "1"},      {"OC_LIST_MAX", "abc"},   {"OC_LIST_MAX", "8x"},
        {"OC_LIST_MAX", "-4"},     {"OC_LIST_MAX", "99999999999999999999999"},
        {"OC_PROGRESS", "fast"},   {"OC_PROGRESS", "THREAD"}, {"OC_BACKEND", "ib"},
        {"OC_TIMEOUT_S", "-1"},    {"OC_TIMEOUT_S", "nan"},  {"OC_TIMEOUT_S", "1s"},
        /* strtod takes these too; an infinite timeout made waits spin */
        {"OC_TIMEOUT_S", "inf"},   {"OC_TIMEOUT_S", "1e300"}, {"OC_TIMEOUT_S", "0x10"},
        {"OC_TIMEOUT_S", " 5"},    {"OC_TIMEOUT_S", "+5"},
        {"OC_ALLTOALLV_ALG", "bruck"}, {"OC_ALLTOALL_ALG", "linear"},
        {"OC_RINGK", "0"},         {"OC_SPIN_US", "-5"},     {"OC_VERBOSE", "10"},
        {"OC_WAIT_HELP_US", "-1"}, {"OC_WAIT_HELP_US", "20000000"},
        {"OC_WAIT_HELP_US", "AUTO"}, {"OC_WAIT_HELP_US", "auto1"},
        {"OC_BRUCK_MAX", "-1"},    {"OC_RINGK_MIN", "1e3"},  {"OC_INTRANODE", "tcp"},
        /* strtoull skips leading blanks and then accepts a minus sign */
        {"OC_BRUCK_MAX", " -1"},
        {"OC_WARN_UNKNOWN", "2"}, {"OC_WARN_UNKNOWN", "yes"},
        {"OC_HUGE_BUFFERS", "2"}, {"OC_HUGE_BUFFERS", "yes"},
        {"OC_PROGRESS_CPUS", "x"}, {"OC_PROGRESS_CPUS", "3-1"}, {"OC_PROGRESS_CPUS", "1,"},
        {"OC_PROGRESS_CPUS", "1024"}, {"OC_PROGRESS_CPUS", "-1"}, {"OC_PROGRESS_CPUS", " 1"},
        {"OC_PROGRESS_CPUS", "0-1023,5"}, {"OC_PROGRESS_CPUS", "auto,1"},
    };
    int failures = 0;
    (void)state;
    /* all cases, then one verdict: a failure names every value let through */
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        oc_config_t c;
        oc_status_t st;
        clear_env();
        setenv(cases[i].var, cases[i].value, 1);
        memset(&c, 0x5A, sizeof(c));
        st = oc_config_init(&c);
        if (st != OC_ERR_INVALID_ARG) {
            print_error("%s=\"%s\" gave %s, not OC_ERR_INVALID_ARG\n", cases[i].var,
                        cases[i].value, oc_status_string(st));
            failures++;
        } else if (strstr(oc_last_error(), cases[i].var) == NULL) {
            print_error("%s=\"%s\": the detail \"%s\" does not name the variable\n",
                        cases[i].var, cases[i].value, oc_last_error());
            failures++;
        } else {
            assert_defaults_but(&c, NFIELDS); /* the header promises defaults on failure */
        }
    }
    assert_int_equal(failures, 0);
}

/* The value oc_config_print wrote for var ("NAME = value" lines). */
static const char *printed(const char *buf, const char *var, char *val, size_t size)
{
    const char *line = strstr(buf, var), *eq, *end;
    if (line == NULL || (eq = strchr(line, '=')) == NULL)
        return "";
    for (eq++; *eq == ' '; eq++)
        ;
    end = strchr(eq, '\n');
    snprintf(val, size, "%.*s", (int)(end ? end - eq : (ptrdiff_t)strlen(eq)), eq);
    return val;
}

/* OC_PROGRESS_CPUS is kept as written; oc_init vets a filled-in one too. */
static void test_progress_cpus(void **state)
{
    static const char *const good[] = {"auto", "0", "3,7,12-15", "1023", "0-1023"};
    oc_config_t c;
    oc_context_t *ctx = NULL;
    char buf[2048], val[64];
    (void)state;
    assert_int_equal(oc_config_init(&c), OC_OK);
    assert_string_equal(c.progress_cpus, "");
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        setenv("OC_PROGRESS_CPUS", good[i], 1);
        assert_int_equal(oc_config_init(&c), OC_OK);
        assert_string_equal(c.progress_cpus, good[i]);
    }
    assert_int_equal(oc_config_print(&c, buf, sizeof(buf)), OC_OK);
    assert_string_equal(printed(buf, "OC_PROGRESS_CPUS", val, sizeof(val)), "0-1023");
    unsetenv("OC_PROGRESS_CPUS");
    assert_int_equal(oc_config_init(&c), OC_OK);
    c.wait_help_us = 200;
    assert_int_equal(oc_config_print(&c, buf, sizeof(buf)), OC_OK);
    assert_string_equal(printed(buf, "OC_WAIT_HELP_US", val, sizeof(val)), "200");
    c.progress = OC_PROGRESS_INLINE; /* the waiters run the engine anyway: 0 in force */
    assert_int_equal(oc_config_print(&c, buf, sizeof(buf)), OC_OK);
    assert_string_equal(printed(buf, "OC_WAIT_HELP_US", val, sizeof(val)), "0");
    c.progress = OC_PROGRESS_THREAD;
    c.wait_help_us = OC_WAIT_HELP_AUTO;
    assert_int_equal(oc_config_print(&c, buf, sizeof(buf)), OC_OK);
    assert_string_equal(printed(buf, "OC_WAIT_HELP_US", val, sizeof(val)), "auto");
    c.wait_help_us = 0;
    strcpy(c.progress_cpus, "2-");
    assert_int_equal(oc_init(&c, &ctx), OC_ERR_INVALID_ARG);
    assert_non_null(strstr(oc_last_error(), "cfg->progress_cpus=2-"));
    memset(c.progress_cpus, '7', sizeof(c.progress_cpus));
    assert_int_equal(oc_init(&c, &ctx), OC_ERR_INVALID_ARG);
    assert_non_null(strstr(oc_last_error(), "cfg->progress_cpus"));
    assert_null(ctx);
}

/* huge_buffers follows glibc's advice to every large malloc unless
 * OC_HUGE_BUFFERS says. */
static void test_huge_buffers_glibc(void **state)
{
    static const struct {
        const char *tunables, *var;
        int expect;
    } cases[] = {
        {"glibc.malloc.hugetlb=1", NULL, 1},
        {"glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1", NULL, 1},
        {"glibc.malloc.hugetlb=2", NULL, 0}, /* hugetlbfs: not THP's advice */
        {"glibc.malloc.hugetlb=1:glibc.malloc.arena_max=2", NULL, 1},
        {"glibc.malloc.hugetlb=0", NULL, 0},
        {"glibc.malloc.hugetlb=10", NULL, 0},
        {"xglibc.malloc.hugetlb=1", NULL, 0},
        {"glibc.malloc.arena_max=2", NULL, 0},
        {"", NULL, 0},
        {"glibc.malloc.hugetlb=1", "0", 0},
        {"glibc.malloc.hugetlb=0", "1", 1},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        oc_config_t c;
        clear_env();
        setenv("GLIBC_TUNABLES", cases[i].tunables, 1);
        if (cases[i].var != NULL)
            setenv("OC_HUGE_BUFFERS", cases[i].var, 1);
        assert_int_equal(oc_config_init(&c), OC_OK);
        if (c.huge_buffers != cases[i].expect)
            fail_msg("GLIBC_TUNABLES=%s OC_HUGE_BUFFERS=%s: huge_buffers %d", cases[i].tunables,
                     cases[i].var != NULL ? cases[i].var : "(unset)", c.huge_buffers);
    }
    clear_env();
}

static void test_print(void **state)
{
    oc_config_t c;
    char buf[2048], small[16], val[64];
    (void)state;
    assert_int_equal(oc_config_init(&c), OC_OK);
    assert_int_equal(oc_config_print(&c, buf, sizeof(buf)), OC_OK);
    for (size_t i = 0; i < NFIELDS; i++)
        if (strstr(buf, fields[i].var) == NULL)
            fail_msg("oc_config_print lacks %s:\n%s", fields[i].var, buf);
    assert_string_equal(printed(buf, "OC_PROGRESS", val, sizeof(val)), "thread");
    assert_string_equal(printed(buf, "OC_LIST_MAX", val, sizeof(val)), "64");
    /* truncated, still a string */
    memset(small, 'x', sizeof(small));
    assert_int_equal(oc_config_print(&c, small, sizeof(small)), OC_OK);
    assert_true(memchr(small, '\0', sizeof(small)) != NULL);
    assert_int_equal(oc_config_print(NULL, buf, sizeof(buf)), OC_ERR_INVALID_ARG);
    assert_int_equal(oc_config_print(&c, NULL, 0), OC_ERR_INVALID_ARG);
}

/* A configuration may be printed before oc_init has vetted it (offcoll_info,
 * benchmark headers): an out-of-range enum must print as "invalid", as
 * oc_alg_name does, not index past its table of names. */
static void test_print_out_of_range(void **state)
{
    oc_config_t c;
    char buf[2048], val[64];
    (void)state;
    assert_int_equal(oc_config_init(&c), OC_OK);
    c.progress = (oc_progress_mode_t)7;
    c.backend = (oc_backend_kind_t)9;
    c.alltoall_alg = (oc_alg_t)42;
    c.intranode = (oc_intranode_t)5;
    assert_int_equal(oc_config_print(&c, buf, sizeof(buf)), OC_OK);
    assert_string_equal(printed(buf, "OC_ALLTOALL_ALG", val, sizeof(val)), "invalid");
    assert_string_equal(printed(buf, "OC_PROGRESS", val, sizeof(val)), "invalid");
    assert_string_equal(printed(buf, "OC_BACKEND", val, sizeof(val)), "invalid");
    assert_string_equal(printed(buf, "OC_INTRANODE", val, sizeof(val)), "invalid");
}

static void test_names(void **state)
{
    (void)state;
    for (int a = OC_ALG_AUTO; a < OC_ALG_COUNT_; a++) {
        assert_non_null(oc_alg_name((oc_alg_t)a));
        for (int b = OC_ALG_AUTO; b < a; b++)
            assert_string_not_equal(oc_alg_name((oc_alg_t)a), oc_alg_name((oc_alg_t)b));
    }
    assert_string_equal(oc_alg_name(OC_ALG_RINGK), "ringk");
    assert_string_equal(oc_alg_name(OC_ALG_COUNT_), "invalid");
    assert_string_equal(oc_alg_name((oc_alg_t)-1), "invalid");
}

static void test_status_strings(void **state)
{
    const char *unknown = oc_status_string((oc_status_t)1000);
    (void)state;
    assert_non_null(unknown);
    for (int s = OC_ERR_INTERNAL; s <= OC_INPROGRESS; s++) {
        const char *str = oc_status_string((oc_status_t)s);
        assert_non_null(str);
        if (strcmp(str, unknown) == 0)
            fail_msg("status %d has no string of its own", s);
        for (int t = OC_ERR_INTERNAL; t < s; t++)
            assert_string_not_equal(str, oc_status_string((oc_status_t)t));
    }
    assert_non_null(strstr(oc_status_string(OC_ERR_TIMEOUT), "OC_ERR_TIMEOUT"));
}

static void test_init_arguments(void **state)
{
    static const struct {
        const char *field;
        double value;
    } bad[] = {
        {"progress", 7}, {"progress", -1}, {"backend", 3}, {"alltoall_alg", OC_ALG_COUNT_},
        {"alltoallv_alg", OC_ALG_BRUCK}, {"list_max", 1}, {"list_max", 0}, {"ringk", 0},
        {"timeout_s", -1}, {"intranode", 4}, {"timeout_s", 1e300}, {"list_max", 1u << 21},
        {"ringk", 1u << 21}, {"spin_us", 4e9}, {"verbose", -7}, {"verbose", 10},
        {"wait_help_us", 2e7}, {"warn_unknown", 2}, {"warn_unknown", -1},
        {"huge_buffers", 2}, {"huge_buffers", -1},
    };
    static char sentinel; /* a non-NULL *ctx that a failed oc_init must clear */
    oc_config_t good;
    oc_context_t *ctx;
    (void)state;
    assert_int_equal(oc_config_init(&good), OC_OK);
    assert_int_equal(oc_init(&good, NULL), OC_ERR_INVALID_ARG);
    assert_non_null(strstr(oc_last_error(), "ctx"));
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        oc_config_t c = good;
        field_set(&c, field_index(bad[i].field), bad[i].value);
        ctx = (oc_context_t *)&sentinel;
        if (oc_init(&c, &ctx) != OC_ERR_INVALID_ARG)
            fail_msg("oc_init accepted a bad cfg->%s", bad[i].field);
        if (strstr(oc_last_error(), bad[i].field) == NULL)
            fail_msg("cfg->%s: the detail \"%s\" does not name the field", bad[i].field,
                     oc_last_error());
        assert_null(ctx);
    }
    /* cfg NULL reads the environment, and says which variable is wrong. */
    setenv("OC_RINGK", "zero", 1);
    ctx = (oc_context_t *)&sentinel;
    assert_int_equal(oc_init(NULL, &ctx), OC_ERR_INVALID_ARG);
    assert_non_null(strstr(oc_last_error(), "OC_RINGK"));
    assert_null(ctx);
}

/* A valid configuration opens UCX (shared memory here) in both modes and
 * keeps the configuration it was given. */
static void test_init_valid(void **state)
{
    static const oc_progress_mode_t modes[] = {OC_PROGRESS_THREAD, OC_PROGRESS_INLINE};
    (void)state;
    for (size_t i = 0; i < 2; i++) {
        oc_config_t c, got;
        oc_context_t *ctx = NULL;
        oc_stats_t st;
        assert_int_equal(oc_config_init(&c), OC_OK);
        c.progress = modes[i];
        c.list_max = 5;
        c.ringk = 2;
        if (oc_init(&c, &ctx) != OC_OK)
            fail_msg("oc_init: %s", oc_last_error());
        assert_int_equal(oc_context_config(ctx, &got), OC_OK);
        assert_int_equal(got.progress, modes[i]);
        assert_int_equal(got.list_max, 5);
        assert_int_equal(got.ringk, 2);
        assert_true(strlen(oc_context_backend_info(ctx)) > 0);
        assert_int_equal(oc_context_stats(ctx, &st), OC_OK);
        assert_int_equal(st.requests_started, 0);
        assert_int_equal(oc_finalize(ctx), OC_OK);
    }
    assert_int_equal(oc_finalize(NULL), OC_ERR_INVALID_ARG);
}

/* What oc_init and oc_finalize write on stderr (fd 2), into out. */
static void init_stderr(char *out, size_t size)
{
    FILE *f = tmpfile();
    int saved = dup(2);
    oc_context_t *ctx;
    size_t n;
    assert_non_null(f);
    assert_true(saved >= 0);
    fflush(stderr);
    assert_true(dup2(fileno(f), 2) == 2);
    if (oc_init(NULL, &ctx) != OC_OK || oc_finalize(ctx) != OC_OK) {
        dup2(saved, 2);
        fail_msg("oc_init: %s", oc_last_error());
    }
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(f);
    n = fread(out, 1, size - 1, f);
    out[n] = '\0';
    fclose(f);
}

static size_t count(const char *s, const char *sub)
{
    size_t n = 0;
    for (; (s = strstr(s, sub)) != NULL; s++)
        n++;
    return n;
}

/* A misspelt variable would be ignored without a word: oc_init names every
 * OC_* variable offcoll does not read, with the one meant where it is a slip,
 * once per process, on a node's first rank, unless OC_WARN_UNKNOWN=0. */
static void test_unknown_vars(void **state)
{
    extern char **environ;
    static const char *const local_ranks[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                                              "MV2_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID",
                                              "PALS_LOCAL_RANKID", "PMI_LOCAL_RANK"};
    char out[4096], names[64][64];
    size_t n = 0;
    (void)state;
    for (char **e = environ; *e != NULL && n < 64; e++) /* the machine's, and ours */
        if (strncmp(*e, "OC_", 3) == 0)
            snprintf(names[n++], sizeof(names[0]), "%.*s", (int)strcspn(*e, "="), *e);
    while (n > 0)
        unsetenv(names[--n]);
    for (size_t i = 0; i < sizeof(local_ranks) / sizeof(local_ranks[0]); i++)
        unsetenv(local_ranks[i]); /* a launcher's: this process is a node's first rank */
    setenv("OC_RINGKK", "2", 1);
    setenv("OC_FOO", "1", 1);
    setenv("OC_RINGK", "3", 1);
    setenv("OC_WARN_UNKNOWN", "0", 1);
    init_stderr(out, sizeof(out));
    if (strstr(out, "OC_RINGKK") != NULL)
        fail_msg("OC_WARN_UNKNOWN=0, yet: %s", out);
    unsetenv("OC_WARN_UNKNOWN");
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1); /* not the node's first rank */
    init_stderr(out, sizeof(out));
    if (strstr(out, "OC_RINGKK") != NULL)
        fail_msg("local rank 1, yet: %s", out);
    unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
    init_stderr(out, sizeof(out));
    if (strstr(out, "OC_RINGKK (did you mean OC_RINGK?)") == NULL ||
        strstr(out, "OC_FOO") == NULL || strstr(out, "OC_FOO (did") != NULL ||
        count(out, "OC_RINGK") != 2 /* OC_RINGKK and the one meant, not the known one */)
        fail_msg("the warning: \"%s\"", out);
    init_stderr(out, sizeof(out));
    if (strstr(out, "OC_RINGKK") != NULL)
        fail_msg("a second warning: %s", out);
    unsetenv("OC_RINGKK");
    unsetenv("OC_FOO");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_defaults, fresh_env),
        cmocka_unit_test_setup(test_each_variable, fresh_env),
        cmocka_unit_test_setup(test_malformed, fresh_env),
        cmocka_unit_test_setup(test_huge_buffers_glibc, fresh_env),
        cmocka_unit_test_setup(test_print, fresh_env),
        cmocka_unit_test_setup(test_progress_cpus, fresh_env),
        cmocka_unit_test_setup(test_names, fresh_env),
        cmocka_unit_test_setup(test_status_strings, fresh_env),
        cmocka_unit_test_setup(test_init_arguments, fresh_env),
        cmocka_unit_test_setup(test_init_valid, fresh_env),
        cmocka_unit_test_setup(test_unknown_vars, fresh_env),
        /* last: without the fix it reads past a table (an ASan abort ends the run) */
        cmocka_unit_test_setup(test_print_out_of_range, fresh_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
