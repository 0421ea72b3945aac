/*
 * OC_PROGRESS_CPUS: where the progress thread runs, read back from the
 * kernel (the affinity of the thread named offcoll-pe) and from
 * oc_context_progress_info. Needs two CPUs in the process's set for the
 * binding cases; with one they say SKIP.
 */
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "oc_pe.h"
#include "oc_pe_host.h"
#include "offcoll.h"
#include "pe_threads.h"

static cpu_set_t own; /* the process's CPUs when the test starts */
static int lo, hi;    /* its first and last */

/* How many of this process's progress threads run on exactly want (NULL:
 * all of them, whatever their CPUs); the CPUs of the last one found go to
 * last, where given. */
static int pe_threads_on(const cpu_set_t *want, cpu_set_t *last)
{
    int tids[64], n = pe_thread_ids(tids, 64), found = 0, i;
    assert_true(n >= 0 && n <= 64);
    for (i = 0; i < n; i++) {
        cpu_set_t set;
        assert_int_equal(sched_getaffinity(tids[i], sizeof(set), &set), 0);
        found += want == NULL || CPU_EQUAL(&set, want);
        if (last != NULL)
            *last = set;
    }
    return found;
}

/* The CPU set of this process's only progress thread. */
static void pe_thread_set(cpu_set_t *set)
{
    assert_int_equal(pe_threads_on(NULL, set), 1);
}

static oc_context_t *open_thread_ctx(const char *spec)
{
    oc_config_t c;
    oc_context_t *ctx = NULL;

    assert_int_equal(oc_config_init(&c), OC_OK);
    c.progress = OC_PROGRESS_THREAD;
    snprintf(c.progress_cpus, sizeof(c.progress_cpus), "%s", spec);
    if (oc_init(&c, &ctx) != OC_OK)
        fail_msg("oc_init with progress_cpus \"%s\": %s", spec, oc_last_error());
    return ctx;
}

static void assert_caller_on(const cpu_set_t *want, const char *when)
{
    cpu_set_t now;
    assert_int_equal(sched_getaffinity(0, sizeof(now), &now), 0);
    if (!CPU_EQUAL(&now, want))
        fail_msg("%s: the calling thread has %d CPUs, not the expected %d", when,
                 CPU_COUNT(&now), CPU_COUNT(want));
}

/* Opens a thread-mode context with spec, checks the thread's CPUs against
 * want (NULL: the process's set) and the info against needle. The calling
 * thread leaves the thread's CPU with auto where it has another, keeps its
 * CPUs otherwise, and has them all back after oc_finalize. */
static void check_binding(const char *spec, const cpu_set_t *want, const char *needle)
{
    oc_context_t *ctx;
    cpu_set_t got, before, caller;

    assert_int_equal(sched_getaffinity(0, sizeof(before), &before), 0);
    ctx = open_thread_ctx(spec);
    pe_thread_set(&got);
    if (!CPU_EQUAL(&got, want != NULL ? want : &own))
        fail_msg("progress_cpus \"%s\": the thread has %d CPUs, not the expected set", spec,
                 CPU_COUNT(&got));
    if (strstr(oc_context_progress_info(ctx), needle) == NULL)
        fail_msg("progress_cpus \"%s\": info \"%s\" lacks \"%s\"", spec,
                 oc_context_progress_info(ctx), needle);
    caller = before;
    if (strcmp(spec, "auto") == 0 && CPU_COUNT(&before) >= 2)
        CPU_XOR(&caller, &before, &got);
    assert_caller_on(&caller, "while the context lives");
    assert_int_equal(oc_finalize(ctx), OC_OK);
    assert_caller_on(&before, "after oc_finalize");
}

static int two_cpus(void)
{
    if (CPU_COUNT(&own) >= 2)
        return 1;
    printf("SKIP: the process has one CPU; binding cases need two\n");
    skip();
    return 0;
}

/* The engine says so where waiting threads run it (OC_WAIT_HELP_US). */
static int helps(oc_context_t *ctx)
{
    char want[96];
    snprintf(want, sizeof(want), "waiting threads run the engine (OC_WAIT_HELP_US=auto: %u us)",
             OC_WAIT_HELP_AUTO_US);
    return strstr(oc_context_progress_info(ctx), want) != NULL;
}

static void parse(void **state)
{
    int cpus[8];
    (void)state;
    assert_int_equal(oc_pe_cpulist_parse("3,7,12-14", cpus, 8), 5);
    assert_int_equal(cpus[0], 3);
    assert_int_equal(cpus[1], 7);
    assert_int_equal(cpus[4], 14);
    assert_int_equal(oc_pe_cpulist_parse("9,2", cpus, 8), 2);
    assert_int_equal(cpus[0], 9); /* in the order written: entry k is local rank k's */
    assert_int_equal(oc_pe_cpulist_parse("0-8", cpus, 8), -1); /* longer than max */
    assert_int_equal(oc_pe_cpulist_parse("", cpus, 8), 0);
    assert_int_equal(oc_pe_cpulist_parse("1,,2", cpus, 8), -1);
    assert_int_equal(oc_pe_cpulist_parse("1-", cpus, 8), -1);
    assert_int_equal(oc_pe_cpulist_parse("5-4", cpus, 8), -1);
    assert_int_equal(oc_pe_cpulist_parse("1024", cpus, 8), -1);
}

static void unbound(void **state)
{
    (void)state;
    check_binding("", NULL, "on the process's");
}

static void automatic(void **state)
{
    cpu_set_t want, one;
    char needle[32];
    (void)state;
    if (!two_cpus())
        return;
    CPU_ZERO(&want);
    CPU_SET(hi, &want);
    snprintf(needle, sizeof(needle), "on CPU %d (", hi);
    check_binding("auto", &want, needle);
    /* a process held to one CPU: nothing to spare, said plainly */
    CPU_ZERO(&one);
    CPU_SET(lo, &one);
    assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
    check_binding("auto", &one, "only CPU");
    check_binding("", &one, "only CPU");
    assert_int_equal(sched_setaffinity(0, sizeof(own), &own), 0);
}

/* Contexts opened one inside the other each take a CPU while one is left
 * (then share the last one taken: shared_cpu); each oc_finalize gives back
 * what its oc_init took, unless the application has bound the thread
 * elsewhere meanwhile. */
static void caller_nested(void **state)
{
    oc_context_t *a, *b;
    cpu_set_t rest, inner, one;
    (void)state;
    if (!two_cpus())
        return;
    rest = own;
    CPU_CLR(hi, &rest);
    a = open_thread_ctx("auto");
    assert_non_null(strstr(oc_context_progress_info(a), "the calling thread moved to"));
    assert_caller_on(&rest, "first context");
    b = open_thread_ctx("auto");
    inner = rest;
    if (CPU_COUNT(&rest) >= 2) {
        int second = hi - 1;
        while (!CPU_ISSET(second, &rest))
            second--;
        CPU_CLR(second, &inner);
    } else {
        assert_non_null(strstr(oc_context_progress_info(b), "shared with another context"));
    }
    assert_caller_on(&inner, "second context");
    assert_int_equal(oc_finalize(b), OC_OK);
    assert_caller_on(&rest, "second context finalized");
    assert_int_equal(oc_finalize(a), OC_OK);
    assert_caller_on(&own, "first context finalized");

    a = open_thread_ctx("auto");
    CPU_ZERO(&one); /* another set than the one oc_init left it */
    CPU_SET(hi, &one);
    assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
    assert_int_equal(oc_finalize(a), OC_OK);
    assert_caller_on(&one, "bound by the application meanwhile");
    assert_int_equal(sched_setaffinity(0, sizeof(own), &own), 0);
}

/* A thread with two CPUs that creates a second context while the first
 * lives: the second progress thread joins the first on the CPU the thread
 * gave up, not the computation on the one it kept. The CPU comes back when
 * the last context on it ends, in whatever order they end. */
static void shared_cpu(void **state)
{
    oc_context_t *a, *b, *c;
    cpu_set_t pair, low, high;
    (void)state;
    if (!two_cpus())
        return;
    CPU_ZERO(&pair);
    CPU_SET(lo, &pair);
    CPU_SET(hi, &pair);
    CPU_ZERO(&low);
    CPU_SET(lo, &low);
    CPU_ZERO(&high);
    CPU_SET(hi, &high);
    assert_int_equal(sched_setaffinity(0, sizeof(pair), &pair), 0);

    a = open_thread_ctx("auto");
    b = open_thread_ctx("auto");
    if (strstr(oc_context_progress_info(b), "shared with another context") == NULL)
        fail_msg("second context: \"%s\"", oc_context_progress_info(b));
    assert_false(helps(b)); /* the thread is not on the computation's CPU */
    assert_int_equal(pe_threads_on(&high, NULL), 2);
    assert_caller_on(&low, "two contexts");
    assert_int_equal(oc_finalize(a), OC_OK); /* the first ends first */
    assert_caller_on(&low, "the first finalized, the second on its CPU");
    c = open_thread_ctx("auto"); /* b now holds the CPU: c joins it */
    assert_non_null(strstr(oc_context_progress_info(c), "shared with another context"));
    assert_int_equal(pe_threads_on(&high, NULL), 2);
    assert_int_equal(oc_finalize(c), OC_OK);
    assert_caller_on(&low, "the third finalized");
    assert_int_equal(oc_finalize(b), OC_OK);
    assert_caller_on(&pair, "all finalized");
    assert_int_equal(pe_threads_on(NULL, NULL), 0);
    assert_int_equal(sched_setaffinity(0, sizeof(own), &own), 0);
}

/* The launchers' local ranks, as oc_pe_local_rank() reads them, and their
 * counts of ranks on the host, as oc_pe_host_read() does. */
static const char *const rank_vars[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                                        "MV2_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID",
                                        "PALS_LOCAL_RANKID", "PMI_LOCAL_RANK"};
static const char *const size_vars[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
                                        "MV2_COMM_WORLD_LOCAL_SIZE", "PALS_LOCAL_SIZE",
                                        "PMI_LOCAL_SIZE"};

/* Entry k of a list goes to the launcher's local rank k, whichever launcher
 * says it. */
static void listed(void **state)
{
    cpu_set_t want;
    char list[32], needle[32];
    size_t v;
    (void)state;
    if (!two_cpus())
        return;
    snprintf(list, sizeof(list), "%d,%d", lo, hi);
    CPU_ZERO(&want);
    CPU_SET(lo, &want);
    snprintf(needle, sizeof(needle), "on CPU %d (", lo);
    check_binding(list, &want, needle);
    CPU_ZERO(&want);
    CPU_SET(hi, &want);
    snprintf(needle, sizeof(needle), "on CPU %d (", hi);
    for (v = 0; v < sizeof(rank_vars) / sizeof(rank_vars[0]); v++) {
        setenv(rank_vars[v], "3", 1); /* 3 mod 2 */
        check_binding(list, &want, needle);
        unsetenv(rank_vars[v]);
    }
}

/* OC_WAIT_HELP_US=auto (the default): waiters run the engine where the
 * progress thread shares the application's only CPU, and nowhere else. */
static void help_auto(void **state)
{
    static const char *const specs[] = {"", "auto"};
    oc_config_t c;
    oc_context_t *ctx;
    cpu_set_t one;
    char list[16];
    size_t i;
    (void)state;
    CPU_ZERO(&one);
    CPU_SET(lo, &one);
    assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
    for (i = 0; i < 2; i++) {
        ctx = open_thread_ctx(specs[i]);
        if (!helps(ctx))
            fail_msg("one CPU, progress_cpus \"%s\": \"%s\"", specs[i],
                     oc_context_progress_info(ctx));
        assert_int_equal(oc_finalize(ctx), OC_OK);
    }
    /* a CPU list that names the application's only CPU shares it too */
    snprintf(list, sizeof(list), "%d", lo);
    ctx = open_thread_ctx(list);
    assert_true(helps(ctx));
    assert_int_equal(oc_finalize(ctx), OC_OK);
    /* a value given is kept */
    assert_int_equal(oc_config_init(&c), OC_OK);
    c.progress = OC_PROGRESS_THREAD;
    c.wait_help_us = 0;
    assert_int_equal(oc_init(&c, &ctx), OC_OK);
    assert_false(helps(ctx));
    assert_int_equal(oc_finalize(ctx), OC_OK);
    assert_int_equal(sched_setaffinity(0, sizeof(own), &own), 0);
    if (!two_cpus())
        return;
    for (i = 0; i < 2; i++) {
        ctx = open_thread_ctx(specs[i]);
        if (helps(ctx))
            fail_msg("%d CPUs, progress_cpus \"%s\": \"%s\"", CPU_COUNT(&own), specs[i],
                     oc_context_progress_info(ctx));
        assert_int_equal(oc_finalize(ctx), OC_OK);
    }
    snprintf(list, sizeof(list), "%d", lo); /* the application keeps the others */
    ctx = open_thread_ctx(list);
    assert_false(helps(ctx));
    assert_int_equal(oc_finalize(ctx), OC_OK);
}

/* The CPUs the crowded rule counts on this host, SLURM_CPUS_ON_NODE aside:
 * the online ones, or the cgroup cpuset's where fewer (then named in
 * *source, else ""). */
static long host_cpus(const char **source)
{
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    const char *src = NULL;
    long n = oc_pe_cgroup_cpus("", &src);
    *source = "";
    if (n > 0 && n < online) {
        *source = src;
        return n;
    }
    return online;
}

/* Whether a context made with spec has waiters help. counts: what its info
 * must say of the host ("4 ranks on this host's 2 CPUs (VAR)"), followed by
 * the verdict that matches; NULL: where no launcher counts, nothing. */
static int helps_saying(const char *spec, const char *counts)
{
    oc_context_t *ctx = open_thread_ctx(spec);
    const char *info = oc_context_progress_info(ctx);
    int h = helps(ctx);
    char want[256];
    if (counts == NULL) {
        if (strstr(info, "ranks on this host") != NULL)
            fail_msg("\"%s\" counts ranks where no launcher does", info);
    } else {
        snprintf(want, sizeof(want), "%s: %s", counts,
                 h ? "not one to spare for each progress thread"
                   : "enough to spare one for each progress thread");
        if (strstr(info, want) == NULL)
            fail_msg("\"%s\" does not say \"%s\"", info, want);
    }
    assert_int_equal(oc_finalize(ctx), OC_OK);
    return h;
}

/* "N ranks on this host's M CPUs (var...)" into buf, with the host's CPUs
 * as the rule counts them (cpus > 0: that many, as var names them too). */
static const char *counts_of(char *buf, size_t size, long ranks, const char *var, long cpus)
{
    const char *src = "";
    if (cpus <= 0)
        cpus = host_cpus(&src);
    snprintf(buf, size, "%ld rank%s on this host's %ld CPU%s (%s%s%s)", ranks,
             ranks == 1 ? "" : "s", cpus, cpus == 1 ? "" : "s", var, *src ? ", " : "", src);
    return buf;
}

/* The same with launcher variable var set to value (0: not a count). */
static int helps_with(const char *spec, const char *var, long value)
{
    char v[32], counts[160];
    int h;
    snprintf(v, sizeof(v), "%ld", value);
    setenv(var, v, 1);
    h = helps_saying(spec, value > 0 ? counts_of(counts, sizeof(counts), value, var, 0) : NULL);
    unsetenv(var);
    return h;
}

/* OC_WAIT_HELP_US=auto also where the launcher puts more ranks on the host
 * than half its CPUs, whatever this process's CPUs: some progress thread
 * then has no CPU of its own (4 ranks on 2 CPUs). Up to half, the CPUs
 * decide as above. Either way the info says how many of each it counted. */
static void help_crowded(void **state)
{
    static const char *const specs[] = {"", "auto"};
    const char *src;
    const long cpus = host_cpus(&src), half = cpus / 2;
    size_t i, v;
    (void)state;
    if (!two_cpus())
        return;
    for (i = 0; i < 2; i++)
        for (v = 0; v < sizeof(size_vars) / sizeof(size_vars[0]); v++) {
            if (!helps_with(specs[i], size_vars[v], half + 1))
                fail_msg("%s=%ld, %ld CPUs: waiters do not help", size_vars[v], half + 1, cpus);
            if (helps_with(specs[i], size_vars[v], half))
                fail_msg("%s=%ld, %d of %ld CPUs: waiters help", size_vars[v], half,
                         CPU_COUNT(&own), cpus);
        }
    /* not a number, or 0: as if no launcher said */
    setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "many", 1);
    assert_false(helps_saying("", NULL));
    unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    assert_false(helps_with("", "MPI_LOCALNRANKS", 0));
}

/* Whether waiters help under srun with this step's SLURM_STEP_TASKS_PER_NODE
 * list on node SLURM_NODEID; the info must count want ranks from the list
 * (0: none, the list gives no count). */
static int helps_slurm(const char *list, const char *node, long want)
{
    char counts[160];
    int h;
    setenv("SLURM_STEP_TASKS_PER_NODE", list, 1);
    setenv("SLURM_NODEID", node, 1);
    h = helps_saying("", want > 0 ? counts_of(counts, sizeof(counts), want,
                                              "SLURM_STEP_TASKS_PER_NODE", 0)
                                  : NULL);
    unsetenv("SLURM_STEP_TASKS_PER_NODE");
    unsetenv("SLURM_NODEID");
    return h;
}

/* Under srun the count of ranks on this node comes from Slurm's list of the
 * step's tasks per node, after the MPI launchers' counts (which a job
 * started by mpirun in an allocation has besides Slurm's); SLURM_CPUS_ON_NODE,
 * where below the host's CPUs, is the CPUs for the rule. */
static void help_slurm(void **state)
{
    static const char *const malformed[] = {"", "x", "9(x2", "9(x)", "9(2)", "9,", "9,,9",
                                            "9 ", "-9"};
    const char *src;
    const long cpus = host_cpus(&src), half = cpus / 2;
    char list[96], counts[160];
    size_t i;
    (void)state;
    if (!two_cpus())
        return;
    /* node 2 is the first after a run of two; node 3 the one after it */
    snprintf(list, sizeof(list), "1(x2),%ld,1", half + 1);
    assert_true(helps_slurm(list, "2", half + 1));
    assert_false(helps_slurm(list, "3", 1));
    assert_false(helps_slurm(list, "4", 0)); /* beyond the list */
    assert_false(helps_slurm(list, "node2", 0));
    snprintf(list, sizeof(list), "%ld(x3)", half + 1);
    assert_true(helps_slurm(list, "0", half + 1));
    assert_true(helps_slurm(list, "2", half + 1));
    snprintf(list, sizeof(list), "%ld", half);
    assert_false(helps_slurm(list, "0", half));
    for (i = 0; i < sizeof(malformed) / sizeof(malformed[0]); i++)
        if (helps_slurm(malformed[i], "0", 0))
            fail_msg("SLURM_STEP_TASKS_PER_NODE=\"%s\" taken for a count", malformed[i]);
    /* mpirun's own count first */
    snprintf(list, sizeof(list), "%ld", half + 1);
    setenv("SLURM_STEP_TASKS_PER_NODE", list, 1);
    setenv("SLURM_NODEID", "0", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "1", 1);
    assert_false(helps_saying("", counts_of(counts, sizeof(counts), 1,
                                            "OMPI_COMM_WORLD_LOCAL_SIZE", 0)));
    unsetenv("SLURM_STEP_TASKS_PER_NODE");
    unsetenv("SLURM_NODEID");
    /* the CPUs Slurm gave this node, where fewer than the host's */
    setenv("SLURM_CPUS_ON_NODE", "1", 1);
    assert_true(helps_saying("", counts_of(counts, sizeof(counts), 1,
                                           "OMPI_COMM_WORLD_LOCAL_SIZE, SLURM_CPUS_ON_NODE",
                                           1)));
    snprintf(list, sizeof(list), "%ld", 4 * cpus);
    setenv("SLURM_CPUS_ON_NODE", list, 1);
    snprintf(list, sizeof(list), "%ld", half);
    setenv("OMPI_COMM_WORLD_LOCAL_SIZE", list, 1);
    assert_false(helps_saying("", counts_of(counts, sizeof(counts), half,
                                            "OMPI_COMM_WORLD_LOCAL_SIZE", 0)));
    unsetenv("SLURM_CPUS_ON_NODE");
    unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
}

/* The info of a context in mode (thread: with waiters helping, or not) with
 * OMPI_COMM_WORLD_LOCAL_SIZE at ranks (0: unset) must say want about idle
 * waits, or nothing where want is NULL. */
static void idle_info(oc_progress_mode_t mode, unsigned help_us, long ranks, const char *want)
{
    oc_config_t c;
    oc_context_t *ctx = NULL;
    const char *info;
    char v[32];
    if (ranks > 0) {
        snprintf(v, sizeof(v), "%ld", ranks);
        setenv("OMPI_COMM_WORLD_LOCAL_SIZE", v, 1);
    }
    assert_int_equal(oc_config_init(&c), OC_OK);
    c.progress = mode;
    c.wait_help_us = help_us;
    assert_int_equal(oc_init(&c, &ctx), OC_OK);
    info = oc_context_progress_info(ctx);
    if (want == NULL ? strstr(info, "idle waits") != NULL : strstr(info, want) == NULL)
        fail_msg("%ld ranks: \"%s\" does not say \"%s\"", ranks, info,
                 want != NULL ? want : "(nothing of idle waits)");
    assert_int_equal(oc_finalize(ctx), OC_OK);
    unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
}

/* A waiter that polls (inline, or helping) yields the CPU after an idle pass
 * only where the launcher counts more ranks than CPUs on the host, or counts
 * none: then the peer it waits for may need that CPU. */
static void idle_yield(void **state)
{
    const char *src;
    const long cpus = host_cpus(&src);
    char want[96];
    unsigned i;
    (void)state;
    for (i = 0; i < 2; i++) {
        oc_progress_mode_t mode = i == 0 ? OC_PROGRESS_INLINE : OC_PROGRESS_THREAD;
        idle_info(mode, 1000, 0, "; idle waits yield the CPU (no launcher counts the ranks "
                                 "on this host)");
        snprintf(want, sizeof(want), "; idle waits keep the CPU (%ld rank%s on %ld CPU%s)", cpus,
                 cpus == 1 ? "" : "s", cpus, cpus == 1 ? "" : "s");
        idle_info(mode, 1000, cpus, want);
        snprintf(want, sizeof(want), "; idle waits yield the CPU (%ld ranks on %ld CPU%s)",
                 cpus + 1, cpus, cpus == 1 ? "" : "s");
        idle_info(mode, 1000, cpus + 1, want);
    }
    /* waiters that only sleep never poll */
    idle_info(OC_PROGRESS_THREAD, 0, cpus + 1, NULL);
}

static void refused(void **state)
{
    oc_config_t c;
    oc_context_t *ctx = NULL;
    (void)state;
    assert_int_equal(oc_config_init(&c), OC_OK);
    c.progress = OC_PROGRESS_THREAD;
    snprintf(c.progress_cpus, sizeof(c.progress_cpus), "%d", CPU_SETSIZE - 1);
    assert_int_equal(oc_init(&c, &ctx), OC_ERR_INVALID_ARG);
    assert_null(ctx);
    assert_non_null(strstr(oc_last_error(), "cannot bind the progress thread to CPU"));
    /* set in the field, not the variable: the message names both */
    assert_non_null(strstr(oc_last_error(), "(OC_PROGRESS_CPUS, cfg->progress_cpus)"));
}

static void inline_mode(void **state)
{
    oc_config_t c;
    oc_context_t *ctx = NULL;
    (void)state;
    assert_int_equal(oc_config_init(&c), OC_OK);
    c.progress = OC_PROGRESS_INLINE;
    strcpy(c.progress_cpus, "auto"); /* no thread: nothing to bind */
    assert_int_equal(oc_init(&c, &ctx), OC_OK);
    assert_non_null(strstr(oc_context_progress_info(ctx), "inline"));
    assert_int_equal(oc_finalize(ctx), OC_OK);
    assert_string_equal(oc_context_progress_info(NULL), "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parse),     cmocka_unit_test(unbound), cmocka_unit_test(automatic),
        cmocka_unit_test(caller_nested), cmocka_unit_test(shared_cpu), cmocka_unit_test(listed),
        cmocka_unit_test(help_auto), cmocka_unit_test(help_crowded), cmocka_unit_test(help_slurm),
        cmocka_unit_test(idle_yield), cmocka_unit_test(refused),
        cmocka_unit_test(inline_mode),
    };
    size_t i;
    unsetenv("OC_PROGRESS_CPUS");
    unsetenv("OC_WAIT_HELP_US");
    for (i = 0; i < sizeof(rank_vars) / sizeof(rank_vars[0]); i++)
        unsetenv(rank_vars[i]);
    /* the host as a whole (crowded): no launcher's count unless a case sets it */
    for (i = 0; i < sizeof(size_vars) / sizeof(size_vars[0]); i++)
        unsetenv(size_vars[i]);
    unsetenv("SLURM_STEP_TASKS_PER_NODE");
    unsetenv("SLURM_CPUS_ON_NODE");
    if (sched_getaffinity(0, sizeof(own), &own) != 0)
        return 1;
    for (lo = 0; !CPU_ISSET(lo, &own); lo++)
        ;
    for (hi = CPU_SETSIZE - 1; !CPU_ISSET(hi, &own); hi--)
        ;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
