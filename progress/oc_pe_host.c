/*
 * What the launcher and the host say about this rank's place: its rank
 * among the node's ranks, how many they are, and how many CPUs the host
 * gives the job. OC_WAIT_HELP_US=auto turns helping on where the ranks
 * outnumber half those CPUs (oc_pe_crowded): some progress thread then has
 * no CPU of its own. An idle wait yields the CPU only where they may
 * outnumber all of them (oc_pe_oversubscribed).
 */
#include "oc_pe_host.h"
#include "oc_pe.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The value of the first of n variables that a launcher set, and its name;
 * 0 where none is set, or the first set is not a number (atoi took
 * "2147483648" for a negative index). */
static unsigned long launcher_number(const char *const *vars, size_t n, const char **name)
{
    size_t i;
    for (i = 0; i < n; i++) {
        const char *v = getenv(vars[i]);
        char *end;
        unsigned long r;
        if (v == NULL || !isdigit((unsigned char)*v))
            continue;
        errno = 0;
        r = strtoul(v, &end, 10);
        *name = vars[i];
        return errno == 0 && *end == '\0' ? r : 0;
    }
    return 0;
}

unsigned long oc_pe_local_rank(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                                       "MV2_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID",
                                       "PALS_LOCAL_RANKID", "PMI_LOCAL_RANK"};
    const char *name;
    return launcher_number(vars, sizeof(vars) / sizeof(vars[0]), &name);
}

/* Slurm's count of this step's tasks on this node: SLURM_STEP_TASKS_PER_NODE
 * lists them node by node ("2(x3),1": 2 on each of the first three nodes,
 * then 1), SLURM_NODEID says which node this is; 0 where either is missing
 * or malformed. */
static unsigned long slurm_tasks_here(void)
{
    const char *s = getenv("SLURM_STEP_TASKS_PER_NODE");
    const char *id = getenv("SLURM_NODEID");
    unsigned long node, tasks, times;
    char *end;

    if (s == NULL || id == NULL || !isdigit((unsigned char)*id))
        return 0;
    errno = 0;
    node = strtoul(id, &end, 10);
    if (errno != 0 || *end != '\0')
        return 0;
    for (;;) {
        if (!isdigit((unsigned char)*s))
            return 0;
        tasks = strtoul(s, &end, 10);
        times = 1;
        if (strncmp(end, "(x", 2) == 0) {
            if (!isdigit((unsigned char)end[2]))
                return 0;
            times = strtoul(end + 2, &end, 10);
            if (*end++ != ')')
                return 0;
        }
        if (errno != 0 || (*end == ',' ? !isdigit((unsigned char)end[1]) : *end != '\0'))
            return 0;
        if (node < times)
            return tasks;
        if (*end == '\0')
            return 0;
        node -= times;
        s = end + 1;
    }
}

/* The first line of a kernel file, without its newline, into buf ("" where
 * it has none); -1 where the file cannot be opened. */
static int first_line(const char *file, char *buf, size_t size)
{
    FILE *f = fopen(file, "r");
    if (f == NULL)
        return -1;
    if (fgets(buf, (int)size, f) == NULL)
        buf[0] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    fclose(f);
    return 0;
}

/* The CPUs a cpuset file lists: -1 where there is no such file, 0 where it
 * cannot be read as a list. */
static int count_file(const char *file)
{
    int cpus[CPU_SETSIZE];
    char buf[4096];
    int n;
    if (first_line(file, buf, sizeof(buf)) != 0)
        return -1;
    n = oc_pe_cpulist_parse(buf, cpus, CPU_SETSIZE);
    return n > 0 ? n : 0;
}

/* The CPUs that file name of the cgroup at dir + path lists, or that of its
 * nearest ancestor with the file: a controller is not enabled below some
 * level, or a container sees its own cgroup as the root of a host path. 0
 * where none has it. path is cut in place. */
static int cpuset_count(const char *dir, char *path, const char *name)
{
    char file[PATH_MAX];
    for (;;) {
        char *slash;
        int n;
        snprintf(file, sizeof(file), "%s%s/%s", dir, path, name);
        if ((n = count_file(file)) >= 0)
            return n;
        if ((slash = strrchr(path, '/')) == NULL)
            return 0;
        *slash = '\0';
    }
}

/* Whether the comma-separated list has controller ctl. */
static int has_controller(const char *list, const char *ctl)
{
    size_t len = strlen(ctl);
    while (*list != '\0') {
        size_t n = strcspn(list, ",");
        if (n == len && strncmp(list, ctl, len) == 0)
            return 1;
        list += n + (list[n] == ',');
    }
    return 0;
}

/* This process's cgroup path in the hierarchy that has controller ctl ("":
 * the v2 one, line "0::path") into path; 0 where found. */
static int cgroup_path(const char *root, const char *ctl, char *path, size_t size)
{
    char file[PATH_MAX], line[4096];
    FILE *f;
    int found = 0;
    snprintf(file, sizeof(file), "%s/proc/self/cgroup", root);
    if ((f = fopen(file, "r")) == NULL)
        return -1;
    while (!found && fgets(line, sizeof(line), f) != NULL) {
        char *ctls = strchr(line, ':'), *p;
        if (ctls == NULL || (p = strchr(++ctls, ':')) == NULL)
            continue;
        *p++ = '\0';
        p[strcspn(p, "\n")] = '\0';
        if (ctl[0] == '\0' ? (ctls[0] == '\0' && strncmp(line, "0:", 2) == 0)
                           : has_controller(ctls, ctl))
            found = snprintf(path, size, "%s", p) < (int)size;
    }
    fclose(f);
    return found ? 0 : -1;
}

int oc_pe_cgroup_cpus(const char *root, const char **source)
{
    char path[PATH_MAX], dir[PATH_MAX];
    int n = 0;
    if (cgroup_path(root, "", path, sizeof(path)) == 0) {
        snprintf(dir, sizeof(dir), "%s/sys/fs/cgroup", root);
        if ((n = cpuset_count(dir, path, "cpuset.cpus.effective")) > 0)
            *source = "cgroup cpuset.cpus.effective";
    }
    if (n == 0 && cgroup_path(root, "cpuset", path, sizeof(path)) == 0) {
        snprintf(dir, sizeof(dir), "%s/sys/fs/cgroup/cpuset", root);
        if ((n = cpuset_count(dir, path, "cpuset.effective_cpus")) > 0)
            *source = "cgroup cpuset.effective_cpus";
    }
    return n;
}

/* The launchers' own counts come before Slurm's, which a job started by
 * mpirun inside an allocation also inherits (one task a node: mpirun's
 * daemons). The CPUs are the online ones, or fewer where Slurm allocated
 * the job fewer on this node or the process's cgroup has fewer in its
 * cpuset (a container, a Slurm job confined by cgroups): the job may use
 * only those. */
void oc_pe_host_read(oc_pe_host_t *h)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
                                       "MV2_COMM_WORLD_LOCAL_SIZE", "PALS_LOCAL_SIZE",
                                       "PMI_LOCAL_SIZE"};
    static const char *const slurm_cpus[] = {"SLURM_CPUS_ON_NODE"};
    const char *source = NULL;
    unsigned long allocated;
    long in_cgroup;

    memset(h, 0, sizeof(*h));
    h->ranks = launcher_number(vars, sizeof(vars) / sizeof(vars[0]), &h->ranks_from);
    if (h->ranks == 0 && (h->ranks = slurm_tasks_here()) != 0)
        h->ranks_from = "SLURM_STEP_TASKS_PER_NODE";
    if (h->ranks == 0)
        return; /* no launcher counts: the host's CPUs need not be read */
    allocated = launcher_number(slurm_cpus, 1, &source);
    h->cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (allocated > 0 && (h->cpus <= 0 || allocated < (unsigned long)h->cpus)) {
        h->cpus = (long)allocated;
        h->cpus_from = source;
    }
    in_cgroup = oc_pe_cgroup_cpus("", &source);
    if (in_cgroup > 0 && (h->cpus <= 0 || in_cgroup < h->cpus)) {
        h->cpus = in_cgroup;
        h->cpus_from = source;
    }
}

/* 4 ranks on 2 CPUs, or 16 unbound on 16 as MPICH leaves them, are crowded. */
int oc_pe_crowded(const oc_pe_host_t *h, char *info, size_t size)
{
    size_t len = strlen(info);
    int crowded;

    if (h->ranks == 0 || h->cpus <= 0)
        return 0;
    crowded = h->ranks > (unsigned long)h->cpus / 2;
    snprintf(info + len, size - len, "; %lu rank%s on this host's %ld CPU%s (%s%s%s): %s",
             h->ranks, h->ranks == 1 ? "" : "s", h->cpus, h->cpus == 1 ? "" : "s",
             h->ranks_from, h->cpus_from != NULL ? ", " : "",
             h->cpus_from != NULL ? h->cpus_from : "",
             crowded ? "not one to spare for each progress thread"
                     : "enough to spare one for each progress thread");
    return crowded;
}

int oc_pe_oversubscribed(const oc_pe_host_t *h)
{
    return h->ranks == 0 || h->cpus <= 0 || h->ranks > (unsigned long)h->cpus;
}

oc_pe_thp_t oc_pe_host_thp(const char *root)
{
    char file[PATH_MAX], buf[128];
    snprintf(file, sizeof(file), "%s/sys/kernel/mm/transparent_hugepage/enabled", root);
    if (first_line(file, buf, sizeof(buf)) != 0)
        return OC_PE_THP_NEVER;
    return strstr(buf, "[always]") != NULL    ? OC_PE_THP_ALWAYS
           : strstr(buf, "[madvise]") != NULL ? OC_PE_THP_MADVISE
                                              : OC_PE_THP_NEVER;
}
