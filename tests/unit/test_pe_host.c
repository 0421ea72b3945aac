/*
 * oc_pe_cgroup_cpus: the CPUs of this process's cgroup cpuset, read from a
 * made-up /proc and /sys under a temporary folder (cgroup v2, v1, and the
 * hybrid layout of systemd hosts), then from the real ones; whether
 * transparent huge pages are "always", from a made-up /sys. The rule that
 * uses the count (oc_pe_crowded) is tested through contexts in
 * test_pe_affinity.
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

#include "oc_pe_host.h"

static char root[64];

/* Writes text to root/rel, making the folders on the way. */
static void put(const char *rel, const char *text)
{
    char path[512], cmd[600];
    FILE *f;
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", path);
    assert_int_equal(system(cmd), 0);
    assert_non_null(f = fopen(path, "w"));
    fputs(text, f);
    fclose(f);
}

static int setup(void **state)
{
    (void)state;
    snprintf(root, sizeof(root), "/tmp/oc_pe_host.XXXXXX");
    return mkdtemp(root) == NULL ? -1 : 0;
}

static int teardown(void **state)
{
    char cmd[128];
    (void)state;
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    return system(cmd) == 0 ? 0 : -1;
}

static int cpus(const char **source)
{
    *source = NULL;
    return oc_pe_cgroup_cpus(root, source);
}

/* cgroup v2: the process's own cgroup, else its nearest ancestor with the
 * file (a container sees its cgroup as the root; a controller may be
 * enabled only higher up). */
static void v2(void **state)
{
    const char *source;
    (void)state;
    assert_int_equal(cpus(&source), 0); /* no /proc at all */
    put("proc/self/cgroup", "0::/\n");
    assert_int_equal(cpus(&source), 0); /* no cpuset file */
    assert_null(source);
    put("sys/fs/cgroup/cpuset.cpus.effective", "0-3,8\n");
    assert_int_equal(cpus(&source), 5);
    assert_string_equal(source, "cgroup cpuset.cpus.effective");
    put("proc/self/cgroup", "0::/job/step\n");
    assert_int_equal(cpus(&source), 5); /* the root's */
    put("sys/fs/cgroup/job/cpuset.cpus.effective", "2-3\n");
    assert_int_equal(cpus(&source), 2); /* the parent's */
    put("sys/fs/cgroup/job/step/cpuset.cpus.effective", "3\n");
    assert_int_equal(cpus(&source), 1); /* its own */
    put("sys/fs/cgroup/job/step/cpuset.cpus.effective", "three\n");
    assert_int_equal(cpus(&source), 0); /* unreadable: no count, not the parent's */
}

/* cgroup v1, alone or beside a v2 hierarchy without cpusets (hybrid). */
static void v1(void **state)
{
    const char *source;
    (void)state;
    put("proc/self/cgroup", "4:cpu,cpuacct:/\n3:cpuset:/slurm/job7\n0::/\n");
    assert_int_equal(cpus(&source), 0);
    put("sys/fs/cgroup/cpuset/slurm/job7/cpuset.effective_cpus", "0,2,4\n");
    assert_int_equal(cpus(&source), 3);
    assert_string_equal(source, "cgroup cpuset.effective_cpus");
    /* a controller among others on one line; a name that only starts alike */
    put("proc/self/cgroup", "5:cpu,cpuset:/slurm/job7\n");
    assert_int_equal(cpus(&source), 3);
    put("proc/self/cgroup", "5:cpusetx:/slurm/job7\n");
    assert_int_equal(cpus(&source), 0);
    /* v2's file first where both say */
    put("proc/self/cgroup", "3:cpuset:/slurm/job7\n0::/\n");
    put("sys/fs/cgroup/cpuset.cpus.effective", "0-1\n");
    assert_int_equal(cpus(&source), 2);
}

/* oc_pe_host_thp: the bracketed word of the kernel's file. */
static void thp(void **state)
{
    static const char *const file = "sys/kernel/mm/transparent_hugepage/enabled";
    (void)state;
    assert_int_equal(oc_pe_host_thp(root), OC_PE_THP_NEVER); /* no file: ordinary pages */
    put(file, "[always] madvise never\n");
    assert_int_equal(oc_pe_host_thp(root), OC_PE_THP_ALWAYS);
    put(file, "always [madvise] never\n");
    assert_int_equal(oc_pe_host_thp(root), OC_PE_THP_MADVISE);
    put(file, "always madvise [never]\n");
    assert_int_equal(oc_pe_host_thp(root), OC_PE_THP_NEVER);
    put(file, "");
    assert_int_equal(oc_pe_host_thp(root), OC_PE_THP_NEVER);
}

/* The real host: where a cpuset says, it holds at least this process's CPUs. */
static void real(void **state)
{
    cpu_set_t own;
    const char *source = NULL;
    int n = oc_pe_cgroup_cpus("", &source);
    (void)state;
    assert_int_equal(sched_getaffinity(0, sizeof(own), &own), 0);
    if (n == 0) {
        printf("SKIP real: no cgroup cpuset found on this host\n");
        return;
    }
    assert_non_null(source);
    if (n < CPU_COUNT(&own) || n > CPU_SETSIZE)
        fail_msg("%s: %d CPUs, this process may use %d", source, n, CPU_COUNT(&own));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(v2, setup, teardown),
        cmocka_unit_test_setup_teardown(v1, setup, teardown),
        cmocka_unit_test_setup_teardown(thp, setup, teardown),
        cmocka_unit_test(real),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
