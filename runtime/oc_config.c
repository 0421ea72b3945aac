/* Configuration: defaults, OC_* environment variables, printing. */
#include "oc_env.h"
#include "oc_error.h"
#include "oc_pe.h"
#include "oc_pe_host.h"
#include "oc_runtime.h"
#include "offcoll.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const alg_names[OC_ALG_COUNT_] = {"auto", "burst", "pairwise", "ringk",
                                                     "bruck", "put"};
static const char *const progress_names[] = {"thread", "inline"};
static const char *const backend_names[] = {"auto", "ucx", "verbs"};
static const char *const intranode_names[] = {"shm", "loopback", "cma", "auto"};

/* Every variable offcoll reads, the verbs backend's two included: any other
 * OC_* name is one offcoll ignores, most likely a misspelt one. */
static const char *const known_vars[] = {
    "OC_PROGRESS",  "OC_BACKEND",       "OC_VERBS_TRIGGER", "OC_VERBS_MAX_PEERS",
    "OC_LIST_MAX",  "OC_ALLTOALL_ALG",  "OC_ALLTOALLV_ALG", "OC_RINGK",
    "OC_BRUCK_MAX", "OC_RINGK_MIN",     "OC_SPIN_US",       "OC_WAIT_HELP_US",
    "OC_TIMEOUT_S", "OC_VERBOSE",       "OC_INTRANODE",     "OC_PROGRESS_CPUS",
    "OC_WARN_UNKNOWN", "OC_HUGE_BUFFERS"};

#define NAME_OF(names, v) \
    ((int)(v) >= 0 && (size_t)(v) < sizeof(names) / sizeof((names)[0]) ? (names)[v] : "invalid")

const char *oc_alg_name(oc_alg_t alg)
{
    return NAME_OF(alg_names, alg);
}

const char *oc_intranode_name(oc_intranode_t mode)
{
    return NAME_OF(intranode_names, mode);
}

static oc_status_t parse_double(const char *var, double *out)
{
    const char *v = getenv(var);
    char *end;
    double x;
    if (v == NULL || *v == '\0')
        return OC_OK;
    errno = 0;
    x = strtod(v, &end);
    /* a decimal number: strtod also takes blanks, signs, hex, inf and nan */
    if (strchr("0123456789.", v[0]) == NULL || v[strspn(v, "0123456789.eE+-")] != '\0' ||
        errno != 0 || *end != '\0' ||
        !(x >= 0 && x <= OC_CFG_TIMEOUT_MAX_S))
        return oc_error(OC_ERR_INVALID_ARG,
                        "%s=%s: expected a number of seconds from 0 (no limit) to %g", var, v,
                        OC_CFG_TIMEOUT_MAX_S);
    *out = x;
    return OC_OK;
}

oc_status_t oc_config_check_cpus(const char *name, const char *v)
{
    int cpus[CPU_SETSIZE];
    if (v[0] == '\0' || strcmp(v, "auto") == 0 || oc_pe_cpulist_parse(v, cpus, CPU_SETSIZE) > 0)
        return OC_OK;
    return oc_error(OC_ERR_INVALID_ARG,
                    "%s=%s: expected auto or a list of CPUs below %d such as 3,7,12-15", name, v,
                    CPU_SETSIZE);
}

static oc_status_t parse_cpus(const char *var, char *out, size_t size)
{
    const char *v = getenv(var);
    if (v == NULL)
        return OC_OK;
    if (strlen(v) >= size)
        return oc_error(OC_ERR_INVALID_ARG, "%s: %zu characters, at most %zu", var, strlen(v),
                        size - 1);
    strcpy(out, v);
    return oc_config_check_cpus(var, out);
}

static int env_is(const char *var, const char *value)
{
    const char *v = getenv(var);
    return v != NULL && strcmp(v, value) == 0;
}

/* Whether glibc advises every large malloc for transparent huge pages: its
 * tunable glibc.malloc.hugetlb set to 1 in GLIBC_TUNABLES, a colon-separated
 * list of name=value (2 takes hugetlbfs pages instead, which the host's
 * transparent huge pages setting does not govern: not counted). */
static int glibc_hugetlb(void)
{
    static const char key[] = "glibc.malloc.hugetlb=";
    const char *t = getenv("GLIBC_TUNABLES"), *p;
    for (p = t; p != NULL && (p = strstr(p, key)) != NULL; p++)
        if (p == t || p[-1] == ':') {
            const char *v = p + sizeof(key) - 1;
            return v[0] == '1' && (v[1] == '\0' || v[1] == ':');
        }
    return 0;
}

static void defaults(oc_config_t *c)
{
    memset(c, 0, sizeof(*c));
    c->progress = OC_PROGRESS_THREAD;
    c->backend = OC_BACKEND_AUTO;
    c->list_max = 64;
    c->ringk = 4;
    c->alltoall_alg = OC_ALG_AUTO;
    c->alltoallv_alg = OC_ALG_AUTO;
    c->bruck_max = 128;
    c->ringk_min = 64 * 1024;
    c->spin_us = 0;
    c->wait_help_us = OC_WAIT_HELP_AUTO;
    c->timeout_s = 300;
    c->verbose = 0;
    c->warn_unknown = 1;
    c->intranode = OC_INTRANODE_AUTO;
    c->huge_buffers = glibc_hugetlb();
}

oc_status_t oc_config_init(oc_config_t *cfg)
{
    oc_config_t c;
    unsigned long long u;
    int e;
    oc_status_t st;

    if (cfg == NULL)
        return oc_error(OC_ERR_INVALID_ARG, "oc_config_init: cfg is NULL");
    defaults(&c);
    *cfg = c; /* what a malformed variable leaves */

#define ENUM(var, names, field, type)                                            \
    e = (int)c.field;                                                            \
    if ((st = oc_env_enum(var, names, (int)(sizeof(names) / sizeof((names)[0])), &e)) != OC_OK) \
        return st;                                                               \
    c.field = (type)e;
#define UINT(var, min, max, field)                                               \
    u = c.field;                                                                 \
    if ((st = oc_env_uint(var, min, max, &u)) != OC_OK)                           \
        return st;                                                               \
    c.field = u;

    ENUM("OC_PROGRESS", progress_names, progress, oc_progress_mode_t)
    ENUM("OC_BACKEND", backend_names, backend, oc_backend_kind_t)
    ENUM("OC_ALLTOALL_ALG", alg_names, alltoall_alg, oc_alg_t)
    ENUM("OC_ALLTOALLV_ALG", alg_names, alltoallv_alg, oc_alg_t)
    ENUM("OC_INTRANODE", intranode_names, intranode, oc_intranode_t)
    UINT("OC_LIST_MAX", 2, OC_CFG_LIST_MAX_MAX, list_max)
    UINT("OC_RINGK", 1, OC_CFG_RINGK_MAX, ringk)
    UINT("OC_BRUCK_MAX", 0, SIZE_MAX, bruck_max)
    UINT("OC_RINGK_MIN", 0, SIZE_MAX, ringk_min)
    UINT("OC_SPIN_US", 0, OC_CFG_SPIN_US_MAX, spin_us)
    UINT("OC_VERBOSE", 0, OC_CFG_VERBOSE_MAX, verbose)
    UINT("OC_WARN_UNKNOWN", 0, 1, warn_unknown)
    UINT("OC_HUGE_BUFFERS", 0, 1, huge_buffers)
    u = c.wait_help_us;
    if (!env_is("OC_WAIT_HELP_US", "auto") &&
        oc_env_uint("OC_WAIT_HELP_US", 0, OC_CFG_SPIN_US_MAX, &u) != OC_OK)
        return oc_error(OC_ERR_INVALID_ARG, "OC_WAIT_HELP_US=%s: expected auto or an integer "
                        "from 0 to %u", getenv("OC_WAIT_HELP_US"), OC_CFG_SPIN_US_MAX);
    c.wait_help_us = (unsigned)u;
#undef ENUM
#undef UINT
    if ((st = parse_double("OC_TIMEOUT_S", &c.timeout_s)) != OC_OK)
        return st;
    if ((st = parse_cpus("OC_PROGRESS_CPUS", c.progress_cpus, sizeof(c.progress_cpus))) != OC_OK)
        return st;
    if (c.alltoallv_alg == OC_ALG_BRUCK)
        return oc_error(OC_ERR_INVALID_ARG,
                        "OC_ALLTOALLV_ALG=bruck: Bruck needs equal blocks; use auto, burst, "
                        "pairwise, ringk or put");
    *cfg = c;
    return OC_OK;
}

unsigned oc_config_wait_help_us(const oc_config_t *c)
{
    return c->progress == OC_PROGRESS_THREAD ? c->wait_help_us : 0;
}

static const char *wait_help_str(const oc_config_t *c, char *buf, size_t size)
{
    unsigned us = oc_config_wait_help_us(c);
    if (us == OC_WAIT_HELP_AUTO)
        return "auto";
    snprintf(buf, size, "%u", us);
    return buf;
}

oc_status_t oc_config_print(const oc_config_t *c, char *buf, size_t size)
{
    char help[16];
    if (c == NULL || buf == NULL)
        return oc_error(OC_ERR_INVALID_ARG, "oc_config_print: %s is NULL", c ? "buf" : "cfg");
    snprintf(buf, size,
             "OC_PROGRESS      = %s\n"
             "OC_BACKEND       = %s\n"
             "OC_LIST_MAX      = %u\n"
             "OC_ALLTOALL_ALG  = %s\n"
             "OC_ALLTOALLV_ALG = %s\n"
             "OC_RINGK         = %u\n"
             "OC_BRUCK_MAX     = %zu\n"
             "OC_RINGK_MIN     = %zu\n"
             "OC_SPIN_US       = %u\n"
             "OC_WAIT_HELP_US  = %s\n"
             "OC_TIMEOUT_S     = %g\n"
             "OC_VERBOSE       = %d\n"
             "OC_WARN_UNKNOWN  = %d\n"
             "OC_INTRANODE     = %s\n"
             "OC_HUGE_BUFFERS  = %d\n"
             "OC_PROGRESS_CPUS = %.*s\n",
             NAME_OF(progress_names, c->progress), NAME_OF(backend_names, c->backend), c->list_max,
             oc_alg_name(c->alltoall_alg), oc_alg_name(c->alltoallv_alg), c->ringk, c->bruck_max,
             c->ringk_min, c->spin_us, wait_help_str(c, help, sizeof(help)), c->timeout_s, c->verbose,
             c->warn_unknown, oc_intranode_name(c->intranode), c->huge_buffers,
             c->progress_cpus[0] ? (int)strnlen(c->progress_cpus, sizeof(c->progress_cpus)) : 20,
             c->progress_cpus[0] ? c->progress_cpus : "(the process's CPUs)");
    return OC_OK;
}

/* Edit distance between a[0..la) and b, or UINT_MAX where either is too long
 * for a row (no name offcoll reads is). */
static unsigned edit_distance(const char *a, size_t la, const char *b)
{
    enum { MAX = 32 };
    unsigned row[MAX + 1], lb = (unsigned)strlen(b);
    if (la > MAX || lb > MAX)
        return UINT_MAX;
    for (unsigned j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        unsigned diag = row[0]; /* row[i-1][j-1] */
        row[0] = (unsigned)i;
        for (unsigned j = 1; j <= lb; j++) {
            unsigned up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            diag = up;
            row[j] = best;
        }
    }
    return row[lb];
}

/* Writes into buf (truncated to size) the OC_* names of env that offcoll does
 * not read, ", " between them, each with the name it is a slip of where one is
 * close; returns how many there are. */
static size_t unknown_vars(char *const *env, char *buf, size_t size)
{
    size_t n = 0, used = 0;
    if (size > 0)
        buf[0] = '\0';
    for (; env != NULL && *env != NULL; env++) {
        const char *e = *env, *eq = strchr(e, '=');
        size_t len = eq != NULL ? (size_t)(eq - e) : strlen(e), k, near = 0;
        unsigned best = UINT_MAX;
        if (strncmp(e, "OC_", 3) != 0)
            continue;
        for (k = 0; k < sizeof(known_vars) / sizeof(known_vars[0]); k++) {
            unsigned d = edit_distance(e, len, known_vars[k]);
            if (d < best) {
                best = d;
                near = k;
            }
        }
        if (best == 0)
            continue;
        if (used < size) /* a suggestion only where the name is a slip of a known one */
            used += (size_t)snprintf(buf + used, size - used, best <= 3 ? "%s%.*s (did you "
                                     "mean %s?)" : "%s%.*s", n > 0 ? ", " : "", (int)len, e,
                                     known_vars[near]);
        n++;
    }
    return n;
}

void oc_config_warn_unknown(const oc_config_t *c)
{
    static atomic_flag warned = ATOMIC_FLAG_INIT;
    extern char **environ;
    char names[512];
    /* one line a node, not one a rank: a job's ranks share their variables */
    if (c->warn_unknown && oc_pe_local_rank() == 0 &&
        unknown_vars(environ, names, sizeof(names)) > 0 &&
        !atomic_flag_test_and_set(&warned))
        oc_warn("OC_* variables offcoll does not read, ignored: %s (offcoll_info lists those "
                "it reads; OC_WARN_UNKNOWN=0 silences this)", names);
}
