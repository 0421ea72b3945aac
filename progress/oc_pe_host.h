/* What the launcher and the host say about this rank's place: oc_pe_host.c,
 * for oc_pe_affinity.c (and oc_context.c: the pages). Read from the
 * environment and /proc, /sys when a context starts. */
#ifndef OC_PE_HOST_H
#define OC_PE_HOST_H

#include <stddef.h>

/* The launcher's rank on this node (Open MPI, MPICH's Hydra, MVAPICH2,
 * Slurm, PALS), for picking an entry of an explicit CPU list; 0 where none
 * says. */
unsigned long oc_pe_local_rank(void);

/* This node's ranks as a launcher counts them, and the CPUs the host gives
 * the job: the online ones, or fewer where Slurm's allocation or the
 * process's cgroup cpuset says. Read once a context, when it starts. */
typedef struct {
    unsigned long ranks;    /* 0: no launcher counts them (nothing else is read) */
    long cpus;              /* <= 0: unknown */
    const char *ranks_from; /* the variable that gave ranks (static) */
    const char *cpus_from;  /* the variable or file that gave cpus; NULL: the online count */
} oc_pe_host_t;
void oc_pe_host_read(oc_pe_host_t *h);
/* Whether the ranks are more than half the CPUs: then some rank's progress
 * thread has no CPU of its own, however the ranks are bound. Where a
 * launcher counts them, appends both counts and their sources to info (a
 * string of size bytes), crowded or not. */
int oc_pe_crowded(const oc_pe_host_t *h, char *info, size_t size);
/* Whether the ranks may be more than the CPUs: they are, or no launcher
 * says. A rank that polls while it waits should then yield the CPU after
 * each idle pass: the peer it waits for may need it. */
int oc_pe_oversubscribed(const oc_pe_host_t *h);
/* How many CPUs the cpuset of this process's cgroup allows (cgroup v2
 * cpuset.cpus.effective, or v1 cpuset.effective_cpus), with /proc and /sys
 * read under root ("" for the real ones; a test passes a folder of its
 * own); 0 where no cpuset says. Names the file read in *source (a static
 * string) where it says. */
int oc_pe_cgroup_cpus(const char *root, const char **source);
/* The host's transparent huge pages (sys/kernel/mm/transparent_hugepage/
 * enabled under root, "" for the real one): ALWAYS, large buffers lie on
 * them without asking; MADVISE, buffers advised with MADV_HUGEPAGE do;
 * NEVER, none do (also where the file is unreadable). */
typedef enum { OC_PE_THP_NEVER = 0, OC_PE_THP_MADVISE, OC_PE_THP_ALWAYS } oc_pe_thp_t;
oc_pe_thp_t oc_pe_host_thp(const char *root);

#endif
