/* Where the progress thread runs: oc_pe_affinity.c, for oc_pe.c. */
#ifndef OC_PE_AFFINITY_H
#define OC_PE_AFFINITY_H

#include <pthread.h>
#include <sched.h>
#include <sys/types.h>

#include "offcoll.h"
#include "oc_pe_host.h"

/* What OC_PROGRESS_CPUS=auto did to the thread that created a context: the
 * CPU it gave the progress thread, whether it moved the thread (tid) off it,
 * and that thread's CPUs before and after. Those of live contexts are listed
 * process-wide, so that a context sharing a CPU another one took can inherit
 * the duty to give it back. All zero: auto did nothing. */
typedef struct oc_pe_caller {
    int listed, cpu, moved;
    pid_t tid;
    cpu_set_t saved, set;
    struct oc_pe_caller *next;
} oc_pe_caller_t;

/* Binds thread as spec asks ("", "auto" or a CPU list that
 * oc_config_check_cpus accepted: the launcher's local rank picks its entry)
 * and describes the outcome in info. With auto the calling thread leaves the
 * CPU it gives the thread (caller says how); where it has one CPU left, the
 * thread joins the progress thread of a live context that took a CPU from
 * the calling thread, if any. caller must stay in place until
 * oc_pe_unbind_caller. *alone: 1 where the thread has no CPU of its own: it
 * shares the process's only CPU with the application, or host is crowded
 * (oc_pe_crowded); else 0. */
oc_status_t oc_pe_bind(pthread_t thread, const char *spec, const oc_pe_host_t *host,
                       char *info, size_t size, oc_pe_caller_t *caller, int *alone);

/* Gives the thread that called oc_pe_bind back the CPU it took from it,
 * unless the thread has been bound elsewhere since or has exited. Where a
 * live context of that thread stands in the way (its progress thread shares
 * the CPU, or it moved the thread further since), that context gives the
 * CPU back when it ends. */
void oc_pe_unbind_caller(oc_pe_caller_t *caller);

#endif
