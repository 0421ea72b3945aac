/*
 * Where the progress thread runs (OC_PROGRESS_CPUS). Overlap needs a CPU for
 * the thread besides the application's: a launcher that binds each rank to
 * one core (Open MPI does for 2 ranks) leaves none, and the thread then
 * takes its time from the computation it should overlap. Binding is by the
 * launcher's rules (a CPU set per rank); this only picks within or beside it,
 * with auto moves the thread calling oc_init off the CPU it picked, and says
 * what it found.
 */
#include "oc_pe_affinity.h"
#include "oc_pe_host.h"
#include "oc_pe.h"
#include "oc_error.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The live contexts whose progress thread auto placed on a CPU. */
static pthread_mutex_t callers_lock = PTHREAD_MUTEX_INITIALIZER;
static oc_pe_caller_t *callers;

int oc_pe_cpulist_parse(const char *s, int *cpus, int max)
{
    int n = 0;
    while (*s != '\0') {
        long lo, hi, c;
        char *end;
        if (!isdigit((unsigned char)*s))
            return -1;
        lo = hi = strtol(s, &end, 10);
        if (*end == '-') {
            if (!isdigit((unsigned char)end[1]))
                return -1;
            hi = strtol(end + 1, &end, 10);
        }
        if (lo > hi || hi >= CPU_SETSIZE || (*end != ',' && *end != '\0'))
            return -1;
        for (c = lo; c <= hi; c++) {
            if (n == max)
                return -1;
            cpus[n++] = (int)c;
        }
        s = *end == ',' ? end + 1 : end;
        if (*end == ',' && *s == '\0')
            return -1;
    }
    return n;
}

/* "0-3,6" of a CPU set, truncated to size. */
static void set_str(const cpu_set_t *set, char *buf, size_t size)
{
    size_t len = 0;
    int c = 0;
    buf[0] = '\0';
    while (c < CPU_SETSIZE && len < size) {
        int hi;
        if (!CPU_ISSET(c, set)) {
            c++;
            continue;
        }
        for (hi = c; hi + 1 < CPU_SETSIZE && CPU_ISSET(hi + 1, set); hi++)
            ;
        len += (size_t)snprintf(buf + len, size - len, hi > c ? "%s%d-%d" : "%s%d",
                                len ? "," : "", c, hi);
        c = hi + 1;
    }
}

/* The calling thread's CPUs, and as a string for the messages. */
static void own_cpus(cpu_set_t *own, char *str, size_t size)
{
    if (sched_getaffinity(0, sizeof(*own), own) != 0)
        CPU_ZERO(own);
    set_str(own, str, size);
}

/* Binds thread to cpu alone; 0 or the error number. */
static int pin(pthread_t thread, int cpu)
{
    cpu_set_t want;
    CPU_ZERO(&want);
    CPU_SET(cpu, &want);
    return pthread_setaffinity_np(thread, sizeof(want), &want);
}

/* What pin(thread, cpu) returned as spec's outcome: the error, or info. */
static oc_status_t pinned(int rc, int cpu, const char *spec, const char *own_str, char *info,
                          size_t size)
{
    if (rc != 0)
        return oc_error(OC_ERR_INVALID_ARG,
                        "progress CPUs %s (OC_PROGRESS_CPUS, cfg->progress_cpus): cannot bind "
                        "the progress thread to CPU %d: %s (the process may use CPUs %s)", spec,
                        cpu, strerror(rc), own_str);
    snprintf(info, size, "thread, on CPU %d (OC_PROGRESS_CPUS=%s; process CPUs %s)", cpu, spec,
             own_str);
    return OC_OK;
}

/* auto: otherwise the application thread may run on the thread's CPU while
 * its own sits idle, and the scheduler moves a running thread only after its
 * balancing has failed several times; meanwhile each woken list would wait
 * for the computation's time slice. */
static void move_caller(const cpu_set_t *own, int cpu, oc_pe_caller_t *caller, char *info,
                        size_t size)
{
    size_t len = strlen(info);
    char rest[96];

    caller->saved = *own;
    caller->set = *own;
    CPU_CLR(cpu, &caller->set);
    set_str(&caller->set, rest, sizeof(rest));
    if (sched_setaffinity(0, sizeof(caller->set), &caller->set) == 0) {
        caller->moved = 1;
        snprintf(info + len, size - len, ", the calling thread moved to %s", rest);
    } else {
        snprintf(info + len, size - len, ", the calling thread could not leave it: %s",
                 strerror(errno));
    }
}

/* Whether tid is still a thread of this process: a restore must not rebind
 * a stranger that was given the number of a thread that has exited. */
static int alive(pid_t tid)
{
    return syscall(SYS_tgkill, getpid(), tid, 0) == 0;
}

/* A CPU that auto gave a live context's progress thread and took from this
 * thread, which now runs on own: sharing it keeps a further progress thread
 * off the computing CPU (-1: none). Called locked. */
static int taken_from(pid_t tid, const cpu_set_t *own)
{
    const oc_pe_caller_t *c;
    for (c = callers; c != NULL; c = c->next)
        if (c->moved && c->tid == tid && !CPU_ISSET(c->cpu, own))
            return c->cpu;
    return -1;
}

/* Passes caller's duty to give its thread back the CPU it took to a live
 * context that stands in its way: one whose progress thread shares that CPU
 * (it restores in caller's place), or one that moved the thread further
 * since (its restore then includes the CPU). Returns whether one took it.
 * Called locked. */
static int hand_over(const oc_pe_caller_t *caller)
{
    oc_pe_caller_t *c;
    for (c = callers; c != NULL; c = c->next)
        if (c->tid == caller->tid && c->cpu == caller->cpu && !c->moved) {
            c->moved = 1;
            c->saved = caller->saved;
            c->set = caller->set;
            return 1;
        }
    for (c = callers; c != NULL; c = c->next)
        if (c->tid == caller->tid && c->moved && CPU_EQUAL(&c->saved, &caller->set)) {
            c->saved = caller->saved;
            return 1;
        }
    return 0;
}

void oc_pe_unbind_caller(oc_pe_caller_t *caller)
{
    oc_pe_caller_t **p;
    cpu_set_t now;

    if (!caller->listed)
        return;
    pthread_mutex_lock(&callers_lock);
    for (p = &callers; *p != caller; p = &(*p)->next)
        ;
    *p = caller->next;
    if (caller->moved && !hand_over(caller) && alive(caller->tid) &&
        sched_getaffinity(caller->tid, sizeof(now), &now) == 0 &&
        CPU_EQUAL(&now, &caller->set))
        sched_setaffinity(caller->tid, sizeof(caller->saved), &caller->saved);
    pthread_mutex_unlock(&callers_lock);
    caller->listed = 0;
}

/* auto: the last of the calling thread's CPUs while it keeps another, and
 * with one left the CPU it gave a live context's progress thread. Locked
 * from reading the thread's CPUs to listing caller, so that a context of
 * this thread finalized meanwhile on another thread cannot give CPUs back
 * between the read and the move. */
static oc_status_t bind_auto(pthread_t thread, char *info, size_t size, oc_pe_caller_t *caller,
                             int *alone)
{
    cpu_set_t own;
    char own_str[96];
    int cpu, rc = 0, shared = 0;
    oc_status_t st;

    pthread_mutex_lock(&callers_lock);
    own_cpus(&own, own_str, sizeof(own_str));
    if (CPU_COUNT(&own) >= 2) {
        for (cpu = CPU_SETSIZE - 1; !CPU_ISSET(cpu, &own); cpu--)
            ;
    } else {
        cpu = taken_from(caller->tid, &own);
        shared = 1;
    }
    if (cpu >= 0)
        rc = pin(thread, cpu);
    if (cpu < 0 || (shared && rc != 0)) {
        pthread_mutex_unlock(&callers_lock);
        *alone = 1;
        snprintf(info, size, "thread, on the process's only CPU %s, shared with the "
                 "application (OC_PROGRESS_CPUS=auto found none to spare: give each rank "
                 "two CPUs for overlap)", own_str);
        return OC_OK;
    }
    if ((st = pinned(rc, cpu, "auto", own_str, info, size)) != OC_OK) {
        pthread_mutex_unlock(&callers_lock);
        return st;
    }
    if (shared) {
        size_t len = strlen(info);
        snprintf(info + len, size - len, ", shared with another context's progress thread: "
                 "the calling thread has no other CPU to give");
    } else {
        move_caller(&own, cpu, caller, info, size);
    }
    caller->listed = 1;
    caller->cpu = cpu;
    caller->next = callers;
    callers = caller;
    pthread_mutex_unlock(&callers_lock);
    return OC_OK;
}

/* oc_pe_bind, before it looks at the host as a whole (oc_pe_crowded). */
static oc_status_t bind_thread(pthread_t thread, const char *spec, char *info, size_t size,
                               oc_pe_caller_t *caller, int *alone)
{
    cpu_set_t own;
    char own_str[96];
    int cpus[CPU_SETSIZE], n, cpu;

    memset(caller, 0, sizeof(*caller));
    caller->tid = gettid();
    *alone = 0;
    if (spec != NULL && strcmp(spec, "auto") == 0)
        return bind_auto(thread, info, size, caller, alone);
    own_cpus(&own, own_str, sizeof(own_str));
    if (spec == NULL || spec[0] == '\0') {
        if ((*alone = CPU_COUNT(&own) == 1))
            snprintf(info, size, "thread, on the process's only CPU %s, shared with the "
                     "application (give each rank two CPUs for overlap)", own_str);
        else
            snprintf(info, size, "thread, on the process's CPUs %s", own_str);
        return OC_OK;
    }
    n = oc_pe_cpulist_parse(spec, cpus, CPU_SETSIZE);
    assert(n > 0); /* the configuration was checked (oc_config_check_cpus) */
    cpu = cpus[oc_pe_local_rank() % (unsigned long)n];
    *alone = CPU_COUNT(&own) == 1 && CPU_ISSET(cpu, &own);
    return pinned(pin(thread, cpu), cpu, spec, own_str, info, size);
}

oc_status_t oc_pe_bind(pthread_t thread, const char *spec, const oc_pe_host_t *host,
                       char *info, size_t size, oc_pe_caller_t *caller, int *alone)
{
    oc_status_t st = bind_thread(thread, spec, info, size, caller, alone);
    if (st == OC_OK && !*alone)
        *alone = oc_pe_crowded(host, info, size);
    return st;
}
