/*
 * Error paths of the public calls that need no peers: every NULL or
 * out-of-range argument is refused with OC_ERR_INVALID_ARG and a message that
 * names it; the accessors answer a NULL object with a harmless value. Team
 * creation with a stand-in for the other member: a member refused locally
 * still votes once, so that its peer is not left waiting, a peer's failure
 * fails this member too, and so does what the hello reveals; an allgather
 * that fails in any round fails the creation.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "offcoll.h"
#include "oc_error.h"

#define assert_refused(call, needle)                                     \
    do {                                                                 \
        assert_int_equal((call), OC_ERR_INVALID_ARG);                    \
        if (strstr(oc_last_error(), (needle)) == NULL)                   \
            fail_msg("%s: \"%s\" does not name \"%s\"", #call,           \
                     oc_last_error(), (needle));                         \
    } while (0)

static int never_called(const void *src, void *dst, size_t len, void *arg)
{
    (void)src, (void)dst, (void)len, (void)arg;
    fail_msg("the allgather ran although the parameters were refused");
    return -1;
}

/* The other member of a two-member team, voting other_ok; counts the rounds. */
static int other_ok, rounds;

static int stand_in(const void *src, void *dst, size_t len, void *arg)
{
    int32_t vote = other_ok;
    (void)arg;
    rounds++;
    assert_int_equal(len, sizeof(vote));
    memcpy(dst, src, len);
    memcpy((char *)dst + len, &vote, len);
    return 0;
}

/* A stand-in that gets through the first vote and the hello: it echoes the
 * member's hello with its address length replaced by peer_addr_len, votes
 * peer_vote2 in the vote that follows, and counts the rounds. */
static uint32_t peer_addr_len, peer_rank = 1;
static int peer_vote2;

static int scripted(const void *src, void *dst, size_t len, void *arg)
{
    int32_t vote = rounds == 0 ? 1 : peer_vote2;
    (void)arg;
    rounds++;
    memcpy(dst, src, len);
    if (rounds == 2) { /* the hello: team id, address length, rank and size */
        uint32_t hello[4];
        assert_int_equal(len, sizeof(hello));
        memcpy(hello, src, len);
        hello[1] = peer_addr_len;
        hello[2] = peer_rank;
        memcpy((char *)dst + len, hello, len);
    } else {
        assert_int_equal(len, sizeof(vote));
        memcpy((char *)dst + len, &vote, len);
    }
    return 0;
}

/* A stand-in that echoes every round as member 1's answer (the hello with
 * rank 1), until round fail_at, where the out-of-band allgather fails. */
static int fail_at;

static int failing(const void *src, void *dst, size_t len, void *arg)
{
    (void)arg;
    if (++rounds == fail_at)
        return -1;
    memcpy(dst, src, len);
    memcpy((char *)dst + len, src, len);
    if (rounds == 2) {
        uint32_t hello[4];
        assert_int_equal(len, sizeof(hello));
        memcpy(hello, src, len);
        hello[2] = 1;
        memcpy((char *)dst + len, hello, len);
    }
    return 0;
}

static int setup(void **state)
{
    oc_config_t cfg;
    oc_context_t *ctx = NULL;
    if (oc_config_init(&cfg) != OC_OK)
        return -1;
    cfg.progress = OC_PROGRESS_INLINE;
    if (oc_init(&cfg, &ctx) != OC_OK)
        return -1;
    *state = ctx;
    return 0;
}

static int teardown(void **state)
{
    return oc_finalize(*state) == OC_OK ? 0 : -1;
}

static void test_team_create_args(void **state)
{
    oc_context_t *ctx = *state;
    oc_team_t *team = NULL;
    oc_team_params_t p = {0, 2, stand_in, NULL};

    other_ok = 1;
    rounds = 0;
    assert_refused(oc_team_create(NULL, &p, &team), "ctx is NULL");
    assert_refused(oc_team_create(ctx, &p, NULL), "team is NULL");
    assert_int_equal(rounds, 2);
    p.allgather = never_called;
    assert_refused(oc_team_create(ctx, NULL, &team), "params is NULL");
    p.size = 0;
    assert_refused(oc_team_create(ctx, &p, &team), "params->size=0");
    p.size = 2;
    p.rank = 2;
    assert_refused(oc_team_create(ctx, &p, &team), "params->rank=2");
    p.rank = -1;
    assert_refused(oc_team_create(ctx, &p, &team), "params->rank=-1");
    p.rank = 0;
    p.allgather = NULL;
    assert_refused(oc_team_create(ctx, &p, &team), "params->allgather is NULL");
    assert_null(team);
}

static void test_team_create_peer_failed(void **state)
{
    oc_team_t *team = NULL;
    oc_team_params_t p = {0, 2, stand_in, NULL};

    other_ok = 0;
    rounds = 0;
    assert_int_equal(oc_team_create(*state, &p, &team), OC_ERR_MISMATCH);
    assert_non_null(strstr(oc_last_error(), "failed before connecting on rank 1"));
    assert_int_equal(rounds, 1);
    assert_null(team);
}

/* What the members learn from the hello is voted on before the addresses
 * are exchanged, so a member that cannot go on leaves no peer waiting. */
static void test_team_create_after_hello(void **state)
{
    oc_team_t *team = NULL;
    oc_team_params_t p = {0, 2, scripted, NULL};

    rounds = 0;
    peer_addr_len = 1u << 31;
    peer_vote2 = 0; /* it sees the same length and refuses too */
    assert_int_equal(oc_team_create(*state, &p, &team), OC_ERR_MISMATCH);
    assert_non_null(strstr(oc_last_error(), "rank 1 announced a 2147483648-byte address"));
    assert_int_equal(rounds, 3);
    assert_null(team);

    rounds = 0;
    peer_addr_len = 64;
    peer_vote2 = 0; /* it could not take the addresses in */
    assert_int_equal(oc_team_create(*state, &p, &team), OC_ERR_MISMATCH);
    assert_non_null(strstr(oc_last_error(), "failed before exchanging addresses on rank 1"));
    assert_int_equal(rounds, 3);
    assert_null(team);

    rounds = 0;
    peer_rank = 0; /* both say rank 0: it sees the same table and refuses too */
    assert_int_equal(oc_team_create(*state, &p, &team), OC_ERR_MISMATCH);
    assert_non_null(strstr(oc_last_error(), "block 1 comes from a member whose params say rank 0"));
    assert_int_equal(rounds, 3);
    assert_null(team);
    peer_rank = 1;
}

/* The application's allgather failing in any of the five rounds fails the
 * creation with OC_ERR_BACKEND, whatever the rounds before it set up; the
 * stand-in that never fails makes a team, so each failure is the one meant. */
static void test_team_create_allgather_fails(void **state)
{
    oc_team_t *team = NULL;
    oc_team_params_t p = {0, 2, failing, NULL};

    for (fail_at = 1; fail_at <= 5; fail_at++) {
        rounds = 0;
        assert_int_equal(oc_team_create(*state, &p, &team), OC_ERR_BACKEND);
        assert_non_null(strstr(oc_last_error(), "the out-of-band allgather failed"));
        assert_int_equal(rounds, fail_at);
        assert_null(team);
    }
    fail_at = 0;
    rounds = 0;
    assert_int_equal(oc_team_create(*state, &p, &team), OC_OK);
    assert_int_equal(rounds, 5);
    assert_int_equal(oc_team_size(team), 2);
    assert_int_equal(oc_team_free(team), OC_OK);
}

static void test_context_args(void **state)
{
    oc_context_t *ctx = *state;
    oc_stats_t stats;
    oc_config_t cfg;

    assert_refused(oc_context_stats(NULL, &stats), "ctx is NULL");
    assert_refused(oc_context_stats(ctx, NULL), "stats is NULL");
    assert_refused(oc_context_config(NULL, &cfg), "ctx is NULL");
    assert_refused(oc_context_config(ctx, NULL), "cfg is NULL");
    assert_refused(oc_team_print_paths(NULL, stdout), "team is NULL");
    assert_string_equal(oc_context_backend_info(NULL), "");
    assert_non_null(strstr(oc_context_backend_info(ctx), "ucx"));
}

static void test_null_accessors(void **state)
{
    (void)state;
    assert_int_equal(oc_team_rank(NULL), -1);
    assert_int_equal(oc_team_size(NULL), -1);
    assert_int_equal(oc_request_alg(NULL), OC_ALG_AUTO);
}

/* For layers on top of offcoll: the detail is copied, NULL counts as "". */
static void test_set_last_error(void **state)
{
    char detail[] = "layer: comm is MPI_COMM_NULL";
    (void)state;
    assert_int_equal(oc_set_last_error(OC_ERR_INVALID_ARG, detail), OC_ERR_INVALID_ARG);
    detail[0] = 'X';
    assert_string_equal(oc_last_error(), "layer: comm is MPI_COMM_NULL");
    assert_int_equal(oc_set_last_error(OC_ERR_BUSY, NULL), OC_ERR_BUSY);
    assert_string_equal(oc_last_error(), "");
}

/* The engine's guard: work between begin and end leaves the detail as
 * begin saw it, whichever level writes and however it writes. */
static void test_error_guard(void **state)
{
    oc_error_guard_t outer, inner;
    oc_error_saved_t carried;
    (void)state;
    oc_error(OC_ERR_BUSY, "the application's");
    oc_error_guard_begin(&outer);
    oc_error_guard_end(&outer);
    assert_string_equal(oc_last_error(), "the application's");

    oc_error_guard_begin(&outer);
    oc_error_guard_begin(&inner);
    oc_error_append(": appended inside");
    oc_error_guard_end(&inner);
    assert_string_equal(oc_last_error(), "the application's");
    oc_error(OC_ERR_BACKEND, "the engine's");
    oc_error_save(&carried);
    oc_error_guard_begin(&inner);
    oc_error(OC_ERR_BACKEND, "an inner pass's");
    oc_error_restore(&carried);
    oc_error_guard_end(&inner);
    assert_string_equal(oc_last_error(), "the engine's");
    oc_error_guard_end(&outer);
    assert_string_equal(oc_last_error(), "the application's");
    oc_error_guard_begin(&outer);
    oc_error_restore(&carried); /* a detail carried in is a write too */
    oc_error_guard_end(&outer);
    assert_string_equal(oc_last_error(), "the application's");

    /* Outside every guard a write stays. */
    oc_error(OC_ERR_BUSY, "kept");
    assert_string_equal(oc_last_error(), "kept");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_team_create_args),
        cmocka_unit_test(test_team_create_peer_failed),
        cmocka_unit_test(test_team_create_after_hello),
        cmocka_unit_test(test_team_create_allgather_fails),
        cmocka_unit_test(test_context_args),
        cmocka_unit_test(test_null_accessors),
        cmocka_unit_test(test_set_last_error),
        cmocka_unit_test(test_error_guard),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
