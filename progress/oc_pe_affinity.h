/* Where the progress thread runs: oc_pe_affinity.c, for oc_pe.c. */
#ifndef OC_PE_AFFINITY_H
#define OC_PE_AFFINITY_H

#include <pthread.h>
#include <sched.h>

#include "offcoll.h"

/* The calling thread's CPUs before OC_PROGRESS_CPUS=auto took one of them
 * for the progress thread (moved: 0 where it did not), and after. */
typedef struct {
    int moved;
    cpu_set_t saved, set;
} oc_pe_caller_t;

/* Binds thread as spec asks ("", "auto" or a CPU list that
 * oc_config_check_cpus accepted: the launcher's local rank picks its entry)
 * and describes the outcome in info. With auto the calling thread leaves the
 * CPU it gives the thread (caller says how). */
oc_status_t oc_pe_bind(pthread_t thread, const char *spec, char *info, size_t size,
                       oc_pe_caller_t *caller);

/* Gives the calling thread back the CPUs oc_pe_bind took from it, unless it
 * has been bound elsewhere since. */
void oc_pe_unbind_caller(const oc_pe_caller_t *caller);

#endif
