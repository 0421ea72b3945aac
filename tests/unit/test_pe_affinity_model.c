/*
 * OC_PROGRESS_CPUS=auto's bookkeeping over several contexts, on a modelled
 * machine of four CPUs whatever this one has: the affinity calls of
 * oc_pe_affinity.c are linked to the fakes below (-Wl,--wrap), which keep
 * each thread's CPU set and each progress thread's CPU in tables. What it
 * checks: a thread gets back every CPU auto took from it once the last
 * context holding one ends, in any order and from any thread; a thread left
 * with one CPU puts further progress threads beside earlier ones, never on
 * that CPU; a thread rebound by the application, or gone, is left alone.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <cmocka.h>

#include "oc_pe_affinity.h"

#define NCPU 4
#define MAX_THREADS 8

/* ---- the modelled machine ------------------------------------------------- */

static struct {
    pid_t tid;
    cpu_set_t set;
} threads[MAX_THREADS];
static int nthreads, setaffinity_calls;
static int pe_cpu[16]; /* progress thread k (pthread_t k) -> its CPU */
static pthread_mutex_t model_lock = PTHREAD_MUTEX_INITIALIZER;

static cpu_set_t cpus(const char *list) /* "013": CPUs 0, 1 and 3 */
{
    cpu_set_t s;
    CPU_ZERO(&s);
    for (; *list; list++)
        CPU_SET(*list - '0', &s);
    return s;
}

static cpu_set_t *thread_set(pid_t tid) /* a new thread has all CPUs */
{
    int i;
    for (i = 0; i < nthreads; i++)
        if (threads[i].tid == tid)
            return &threads[i].set;
    assert_true(nthreads < MAX_THREADS);
    threads[nthreads].tid = tid;
    threads[nthreads].set = cpus("0123");
    return &threads[nthreads++].set;
}

int __wrap_sched_getaffinity(pid_t pid, size_t size, cpu_set_t *set);
int __wrap_sched_setaffinity(pid_t pid, size_t size, const cpu_set_t *set);
int __wrap_pthread_setaffinity_np(pthread_t thread, size_t size, const cpu_set_t *set);

int __wrap_sched_getaffinity(pid_t pid, size_t size, cpu_set_t *set)
{
    (void)size;
    pthread_mutex_lock(&model_lock);
    *set = *thread_set(pid == 0 ? gettid() : pid);
    pthread_mutex_unlock(&model_lock);
    return 0;
}

int __wrap_sched_setaffinity(pid_t pid, size_t size, const cpu_set_t *set)
{
    (void)size;
    pthread_mutex_lock(&model_lock);
    *thread_set(pid == 0 ? gettid() : pid) = *set;
    setaffinity_calls++;
    pthread_mutex_unlock(&model_lock);
    return 0;
}

int __wrap_pthread_setaffinity_np(pthread_t thread, size_t size, const cpu_set_t *set)
{
    int c;
    (void)size;
    for (c = 0; c < NCPU && !CPU_ISSET(c, set); c++)
        ;
    if (c == NCPU || CPU_COUNT(set) != 1)
        return EINVAL;
    pe_cpu[(uintptr_t)thread] = c;
    return 0;
}

/* ---- contexts ----------------------------------------------------------------- */

typedef struct {
    oc_pe_caller_t caller;
    char info[256];
    int k;     /* its progress thread */
    int alone; /* oc_pe_bind: it shares the application's only CPU */
} ctx_t;

static ctx_t ctxs[8];

static ctx_t *open_ctx(int k)
{
    ctx_t *c = &ctxs[k];
    pe_cpu[k] = -1;
    static const oc_pe_host_t no_launcher; /* the rule of a crowded host is test_pe_affinity's */
    assert_int_equal(oc_pe_bind((pthread_t)(uintptr_t)k, "auto", &no_launcher, c->info,
                                sizeof(c->info), &c->caller, &c->alone), OC_OK);
    c->k = k;
    return c;
}

static void assert_on(pid_t tid, const char *list, const char *when)
{
    cpu_set_t want = cpus(list), now;
    __wrap_sched_getaffinity(tid, sizeof(now), &now);
    if (!CPU_EQUAL(&now, &want)) {
        char got[NCPU + 1] = "";
        int c, n = 0;
        for (c = 0; c < NCPU; c++)
            if (CPU_ISSET(c, &now))
                got[n++] = (char)('0' + c);
        fail_msg("%s: the thread is on CPUs %s, not %s", when, got, list);
    }
}

static void reset(void)
{
    nthreads = 0;
    setaffinity_calls = 0;
}

/* ---- cases ---------------------------------------------------------------------- */

/* Three contexts of one thread: two take CPUs 3 and 2, the third shares 2;
 * every order of finalizing gives the thread all four CPUs back at the end
 * and keeps it off the CPUs still in use before. */
static void any_order(void **state)
{
    static const int orders[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                     {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    int o, i;
    (void)state;
    for (o = 0; o < 6; o++) {
        pid_t me = gettid();
        reset();
        open_ctx(0);
        assert_int_equal(pe_cpu[0], 3);
        open_ctx(1);
        assert_int_equal(pe_cpu[1], 2);
        assert_on(me, "01", "two contexts");
        open_ctx(2); /* 0 and 1 left: takes 1 */
        assert_int_equal(pe_cpu[2], 1);
        assert_on(me, "0", "three contexts");
        open_ctx(3); /* one CPU left: beside an earlier thread */
        assert_true(pe_cpu[3] >= 1 && pe_cpu[3] <= 3);
        assert_non_null(strstr(ctxs[3].info, "shared with another context"));
        /* not the application's CPU: OC_WAIT_HELP_US=auto leaves waiters asleep */
        for (i = 0; i < 4; i++)
            assert_false(ctxs[i].alone);
        for (i = 0; i < 3; i++) {
            oc_pe_unbind_caller(&ctxs[orders[o][i]].caller);
            /* the CPU of the sharing context (3) stays taken while it lives */
            assert_false(CPU_ISSET(pe_cpu[3], thread_set(me)));
        }
        oc_pe_unbind_caller(&ctxs[3].caller);
        assert_on(me, "0123", "all finalized");
    }
}

/* The application rebinds the thread onto the CPU auto gave a progress
 * thread: a further context then finds none to spare rather than sharing
 * that CPU, which the computation now uses; and the first context's end
 * leaves the application's binding alone. */
static void rebound(void **state)
{
    pid_t me = gettid();
    cpu_set_t three = cpus("3");
    (void)state;
    reset();
    open_ctx(0);
    assert_int_equal(pe_cpu[0], 3);
    __wrap_sched_setaffinity(0, sizeof(three), &three);
    open_ctx(1);
    assert_int_equal(pe_cpu[1], -1);
    assert_non_null(strstr(ctxs[1].info, "found none to spare"));
    assert_true(ctxs[1].alone); /* on the application's CPU: waiters help */
    assert_false(ctxs[0].alone);
    oc_pe_unbind_caller(&ctxs[1].caller);
    oc_pe_unbind_caller(&ctxs[0].caller);
    assert_on(me, "3", "rebound by the application");
}

typedef struct {
    pid_t tid;
    int exit_after_open;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int opened, release;
} creator_t;

static void *creator(void *arg)
{
    creator_t *c = arg;
    c->tid = gettid();
    open_ctx(4);
    open_ctx(5);
    pthread_mutex_lock(&c->lock);
    c->opened = 1;
    pthread_cond_broadcast(&c->cond);
    while (!c->exit_after_open && !c->release)
        pthread_cond_wait(&c->cond, &c->lock);
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

static void start_creator(creator_t *c, pthread_t *t, int exit_after_open)
{
    memset(c, 0, sizeof(*c));
    c->exit_after_open = exit_after_open;
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->cond, NULL);
    assert_int_equal(pthread_create(t, NULL, creator, c), 0);
    pthread_mutex_lock(&c->lock);
    while (!c->opened)
        pthread_cond_wait(&c->cond, &c->lock);
    pthread_mutex_unlock(&c->lock);
}

/* Contexts created on one thread and finalized on another: the creator, not
 * the finalizing thread, gets its CPUs back. The creator is released before
 * any check, so that a failed one leaves no thread behind. */
static void finalized_elsewhere(void **state)
{
    static creator_t c;
    cpu_set_t creator_before, creator_after, main_after, two = cpus("01");
    pthread_t t;
    (void)state;
    reset();
    start_creator(&c, &t, 0);
    __wrap_sched_getaffinity(c.tid, sizeof(creator_before), &creator_before);
    oc_pe_unbind_caller(&ctxs[4].caller);
    oc_pe_unbind_caller(&ctxs[5].caller);
    __wrap_sched_getaffinity(c.tid, sizeof(creator_after), &creator_after);
    __wrap_sched_getaffinity(0, sizeof(main_after), &main_after);
    pthread_mutex_lock(&c.lock);
    c.release = 1;
    pthread_cond_broadcast(&c.cond);
    pthread_mutex_unlock(&c.lock);
    pthread_join(t, NULL);
    assert_true(CPU_EQUAL(&creator_before, &two)); /* two contexts took 3 and 2 */
    assert_int_equal(CPU_COUNT(&creator_after), NCPU); /* the creator has them back */
    assert_int_equal(CPU_COUNT(&main_after), NCPU);    /* main was never moved */
}

/* A creator that has exited is not rebound: its number may be another
 * thread's by then. */
static void creator_gone(void **state)
{
    static creator_t c;
    pthread_t t;
    int calls, i;
    (void)state;
    reset();
    start_creator(&c, &t, 1);
    pthread_join(t, NULL);
    /* The kernel lets a joined thread's number go a moment after the join. */
    for (i = 0; i < 1000 && syscall(SYS_tgkill, getpid(), c.tid, 0) == 0; i++)
        usleep(1000);
    calls = setaffinity_calls;
    oc_pe_unbind_caller(&ctxs[4].caller);
    oc_pe_unbind_caller(&ctxs[5].caller);
    assert_int_equal(setaffinity_calls, calls);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(any_order),
        cmocka_unit_test(rebound),
        cmocka_unit_test(finalized_elsewhere),
        cmocka_unit_test(creator_gone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
