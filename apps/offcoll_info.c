/*
 * offcoll_info: version, the backend in use (and why verbs is not, or which
 * trigger variant it runs), the path the backend picks between two contexts
 * on this host, and every configuration value in force.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "oc_local_oob.h"
#include "offcoll.h"

typedef struct {
    oc_local_member_t member;
    oc_status_t status;
    char error[512];
} peer_t;

/* Member 0 prints its paths to member 1: the intranode path a job would use. */
static void *peer_main(void *arg)
{
    peer_t *p = arg;
    oc_context_t *ctx = NULL;
    oc_team_t *team = NULL;
    oc_team_params_t tp = oc_local_team_params(&p->member);

    p->status = oc_init(NULL, &ctx);
    if (p->status == OC_OK)
        p->status = oc_team_create(ctx, &tp, &team);
    if (p->status == OC_OK && p->member.rank == 0) {
        printf("\nIntranode path (between two contexts on this host):\n");
        oc_team_print_paths(team, stdout);
    }
    if (p->status != OC_OK)
        snprintf(p->error, sizeof(p->error), "%s", oc_last_error());
    /* Keep both members alive until the report is out. */
    if (team != NULL) {
        char b = 0, all[2];
        oc_local_oob_allgather(&b, all, 1, &p->member);
        oc_team_free(team);
    }
    if (ctx != NULL)
        oc_finalize(ctx);
    return NULL;
}

int main(int argc, char **argv)
{
    oc_config_t cfg;
    oc_context_t *ctx;
    oc_status_t st;
    char buf[2048];
    oc_local_oob_t oob;
    peer_t peers[2];
    pthread_t th[2];
    int i;

    if (argc > 1) { /* it takes no options: the OC_* variables configure what it reports */
        int help = strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0;
        fprintf(help ? stdout : stderr,
                "%susage: offcoll_info\n"
                "Prints offcoll's version, the backend in use (or why one is unavailable),\n"
                "the intranode path between two contexts on this host and every\n"
                "configuration value in force; the OC_* variables set them (README).\n",
                help ? "" : "offcoll_info: takes no options\n");
        return help ? 0 : 2;
    }
    printf("offcoll %d.%d.%d\n", OC_VERSION_MAJOR, OC_VERSION_MINOR, OC_VERSION_PATCH);
    st = oc_config_init(&cfg);
    if (st != OC_OK) {
        fprintf(stderr, "offcoll_info: %s\n", oc_last_error());
        return 1;
    }
    st = oc_init(&cfg, &ctx);
    if (st != OC_OK) {
        fprintf(stderr, "offcoll_info: oc_init: %s\n", oc_last_error());
        return 1;
    }
    printf("Backend in use: %s\n", oc_context_backend_info(ctx));
    printf("Progress engine: %s\n", oc_context_progress_info(ctx));
    oc_finalize(ctx);

    printf("\nConfiguration in force:\n");
    oc_config_print(&cfg, buf, sizeof(buf));
    fputs(buf, stdout);

    if (oc_local_oob_init(&oob, 2) != 0)
        return 1;
    for (i = 0; i < 2; i++) {
        memset(&peers[i], 0, sizeof(peers[i]));
        peers[i].member.oob = &oob;
        peers[i].member.rank = i;
        pthread_create(&th[i], NULL, peer_main, &peers[i]);
    }
    for (i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    oc_local_oob_fini(&oob);
    for (i = 0; i < 2; i++)
        if (peers[i].status != OC_OK) {
            fprintf(stderr, "offcoll_info: member %d: %s\n", i, peers[i].error);
            return 1;
        }
    return 0;
}
