/*
 * For tests: the kernel's thread ids of this process's offcoll progress
 * threads (named "offcoll-pe"), read from /proc, so that a test sees where
 * they run, or that none runs, independently of the library's own account.
 */
#ifndef OC_TEST_PE_THREADS_H
#define OC_TEST_PE_THREADS_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Stores up to max of their ids in tids (NULL with max 0: only count);
 * returns how many there are, or -1 if /proc/self/task cannot be read. */
static inline int pe_thread_ids(int *tids, int max)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    int n = 0;
    if (d == NULL)
        return -1;
    while ((e = readdir(d)) != NULL) {
        char path[300], comm[32] = "";
        FILE *f;
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
        if ((f = fopen(path, "r")) == NULL)
            continue; /* the thread has exited */
        if (fgets(comm, sizeof(comm), f) != NULL && strcmp(comm, "offcoll-pe\n") == 0) {
            if (n < max)
                tids[n] = atoi(e->d_name);
            n++;
        }
        fclose(f);
    }
    closedir(d);
    return n;
}

#endif
