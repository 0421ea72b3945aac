/*
 * A waiting engine sleeps: rank 0's request waits one second for a late
 * rank 1; over that second rank 0's progress thread and its waiting
 * application thread together may not use 2% of a core. An idle context
 * costs nothing either. (CPU time, not wall time: this is not a timing test.)
 * The same for a target waiting in oc_notify_wait: rank 1 waits one second
 * for a notified put that rank 0 sends late. Both again with OC_SPIN_US =
 * 2 ms, for which both threads poll before they sleep: they must stop.
 */
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "mpi_check.h"
#include "offcoll_mpi.h"

static double thread_cpu(void)
{
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
           (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

static double pe_cpu(oc_context_t *ctx)
{
    oc_stats_t st;
    oc_context_stats(ctx, &st);
    return st.progress_cpu_s;
}

/* A wait of wall seconds that cost the waiting thread app and the progress
 * thread pe seconds of CPU: it did wait, and the two together spent under 2%
 * of a core on it. */
static void check_slept(const char *what, unsigned spin_us, double wall, double app, double pe)
{
    printf("spin %u us: %s: waited %.3f s: progress thread %.3f%%, waiting thread %.3f%% of a "
           "core\n", spin_us, what, wall, 100 * pe / wall, 100 * app / wall);
    CHECK(wall > 0.9, "%s: did wait (%.3f s)", what, wall);
    CHECK(pe + app < 0.02 * wall,
          "spin %u us: %s: the progress and waiting threads used %.2f%% of a core", spin_us, what,
          100 * (pe + app) / wall);
}

/* The three phases on a context whose waits poll spin_us before they
 * sleep (progress thread and waiting thread alike): the polling must end. */
static void phases(int rank, int nprocs, unsigned spin_us, char *s, char *r, size_t block)
{
    oc_config_t cfg;
    oc_context_t *ctx = NULL;
    oc_team_t *team = NULL;
    oc_request_t *req = NULL;
    oc_win_t *win = NULL;
    unsigned char *wbase = NULL;
    double w0, c0, p0, wall, app, pe;

    CHECK_OC(oc_config_init(&cfg));
    cfg.progress = OC_PROGRESS_THREAD;
    cfg.spin_us = spin_us;
    CHECK_OC(oc_init(&cfg, &ctx));
    CHECK_OC(oc_team_create_mpi(ctx, MPI_COMM_WORLD, &team));

    /* idle: one second with nothing to do */
    p0 = pe_cpu(ctx);
    w0 = MPI_Wtime();
    sleep(1);
    pe = pe_cpu(ctx) - p0;
    wall = MPI_Wtime() - w0;
    CHECK(pe < 0.02 * wall, "spin %u us: idle progress thread used %.1f%% of a core", spin_us,
          100 * pe / wall);

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1)
        sleep(1); /* the late peer */
    w0 = MPI_Wtime();
    c0 = thread_cpu();
    p0 = pe_cpu(ctx);
    CHECK_OC(oc_ialltoall(team, s, r, block, &req));
    CHECK_OC(oc_wait(req));
    wall = MPI_Wtime() - w0;
    app = thread_cpu() - c0;
    pe = pe_cpu(ctx) - p0;
    if (rank == 0)
        check_slept("rank 0, oc_wait for the late rank 1", spin_us, wall, app, pe);
    CHECK_OC(oc_request_free(req));

    /* a target waiting for a notification: rank 0 puts one second late */
    CHECK_OC(oc_win_create(team, 4096, 1, (void **)&wbase, &win));
    memset(s, 0x3C, 4096);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0 && nprocs > 1) {
        sleep(1);
        CHECK_OC(oc_put_notify(win, 1, 0, s, 4096, 0));
        CHECK_OC(oc_win_flush(win));
    } else if (rank == 1) {
        w0 = MPI_Wtime();
        c0 = thread_cpu();
        p0 = pe_cpu(ctx);
        CHECK_OC(oc_notify_wait(win, 0, 1));
        wall = MPI_Wtime() - w0;
        app = thread_cpu() - c0;
        pe = pe_cpu(ctx) - p0;
        check_slept("rank 1, oc_notify_wait for rank 0's late put", spin_us, wall, app, pe);
        CHECK(wbase != NULL && memcmp(wbase, s, 4096) == 0, "the notified data is not there");
    }
    CHECK_OC(oc_win_free(win));
    CHECK_OC(oc_team_free(team));
    CHECK_OC(oc_finalize(ctx));
}

int main(int argc, char **argv)
{
    int rank, nprocs;
    const size_t block = 256 * 1024; /* rendezvous: the sender waits for the receiver too */
    char *s, *r;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    s = calloc((size_t)nprocs, block);
    r = calloc((size_t)nprocs, block);
    phases(rank, nprocs, 0, s, r, block);
    phases(rank, nprocs, 2000, s, r, block); /* 2 ms a poll: each wake-up polls again */
    free(s);
    free(r);
    return check_finish("test_sleep");
}
