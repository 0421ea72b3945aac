/*
 * Backend selection (OC_BACKEND, OC_VERBS_TRIGGER) as a user sees it from
 * oc_init and oc_context_backend_info. The same program runs on the real
 * libibverbs (here: no device, ENOSYS) and with softverbs preloaded; it asks
 * whether verbs opens and checks that everything else agrees with that
 * answer: auto picks verbs exactly when OC_BACKEND=verbs works, and says why
 * not when it does not; a forced verbs backend fails with the reason instead
 * of crashing; a malformed OC_VERBS_TRIGGER or OC_VERBS_MAX_PEERS is refused
 * by name, and so are a port that cannot take the protocol's messages and a
 * peer limit beyond the device's completion queues.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "offcoll.h"

#define assert_contains(text, needle)                                          \
    do {                                                                       \
        if (strstr((text), (needle)) == NULL)                                  \
            fail_msg("\"%s\" does not contain \"%s\"", (text), (needle));      \
    } while (0)

/* oc_init with the given backend; the context (or NULL) in *ctx. */
static oc_status_t open_with(oc_backend_kind_t backend, oc_context_t **ctx)
{
    oc_config_t cfg;
    assert_int_equal(oc_config_init(&cfg), OC_OK);
    cfg.backend = backend;
    cfg.progress = OC_PROGRESS_INLINE;
    return oc_init(&cfg, ctx);
}

/* Why verbs did not open ("" if it did), as OC_BACKEND=verbs reports it. */
static void verbs_outcome(char *why, size_t size)
{
    oc_context_t *ctx = NULL;
    oc_status_t st = open_with(OC_BACKEND_VERBS, &ctx);
    why[0] = '\0';
    if (st == OC_OK) {
        assert_contains(oc_context_backend_info(ctx), "verbs: ");
        assert_contains(oc_context_backend_info(ctx), "trigger: ");
        assert_int_equal(oc_finalize(ctx), OC_OK);
        return;
    }
    assert_int_equal(st, OC_ERR_UNAVAILABLE);
    assert_null(ctx);
    assert_contains(oc_last_error(), "OC_BACKEND=verbs: verbs backend unavailable: ");
    snprintf(why, size, "%s", strstr(oc_last_error(), "unavailable: ") + strlen("unavailable: "));
    assert_true(why[0] != '\0');
}

static void test_auto_agrees_with_verbs(void **state)
{
    char why[256], expect[300];
    oc_context_t *ctx = NULL;
    (void)state;

    verbs_outcome(why, sizeof(why));
    assert_int_equal(open_with(OC_BACKEND_AUTO, &ctx), OC_OK);
    if (why[0] == '\0') {
        assert_true(strncmp(oc_context_backend_info(ctx), "verbs: ", 7) == 0);
    } else {
        /* "ucx 1.13.1 (verbs: no RDMA device (ENOSYS: ...))" */
        assert_true(strncmp(oc_context_backend_info(ctx), "ucx ", 4) == 0);
        snprintf(expect, sizeof(expect), "(verbs: %s)", why);
        assert_contains(oc_context_backend_info(ctx), expect);
    }
    assert_int_equal(oc_finalize(ctx), OC_OK);
}

static void test_ucx_forced(void **state)
{
    const char *preload = getenv("LD_PRELOAD");
    oc_context_t *ctx = NULL;
    (void)state;
    /* UCX's rdmacm component would be handed softverbs' devices. */
    if (preload != NULL && strstr(preload, "softverbs") != NULL)
        skip();
    assert_int_equal(open_with(OC_BACKEND_UCX, &ctx), OC_OK);
    assert_contains(oc_context_backend_info(ctx), "(OC_BACKEND=ucx)");
    assert_int_equal(oc_finalize(ctx), OC_OK);
}

/* Whichever backend verbs would be, a malformed trigger name is an error. */
static void test_trigger_malformed(void **state)
{
    oc_context_t *ctx = NULL;
    (void)state;
    setenv("OC_VERBS_TRIGGER", "later", 1);
    assert_int_equal(open_with(OC_BACKEND_AUTO, &ctx), OC_ERR_INVALID_ARG);
    assert_contains(oc_last_error(), "OC_VERBS_TRIGGER=later");
    assert_int_equal(open_with(OC_BACKEND_VERBS, &ctx), OC_ERR_INVALID_ARG);
    assert_contains(oc_last_error(), "OC_VERBS_TRIGGER=later");
    assert_null(ctx);
    unsetenv("OC_VERBS_TRIGGER");
}

/* Where verbs opens, each variant asked for is the one in force, or (wait on
 * a provider without a cross-channel WAIT) refused with the reason. */
static void test_trigger_variants(void **state)
{
    static const char *const names[] = {"thread", "wait"};
    char why[256], want[64];
    oc_context_t *ctx = NULL;
    size_t i;
    (void)state;

    verbs_outcome(why, sizeof(why));
    if (why[0] != '\0')
        skip(); /* no device: nothing to choose between */
    for (i = 0; i < 2; i++) {
        oc_status_t st;
        setenv("OC_VERBS_TRIGGER", names[i], 1);
        st = open_with(OC_BACKEND_VERBS, &ctx);
        unsetenv("OC_VERBS_TRIGGER");
        snprintf(want, sizeof(want), "trigger: %s (", names[i]);
        if (st == OC_OK) {
            assert_contains(oc_context_backend_info(ctx), want);
            assert_int_equal(oc_finalize(ctx), OC_OK);
        } else {
            assert_string_equal(names[i], "wait");
            assert_int_equal(st, OC_ERR_UNAVAILABLE);
            assert_contains(oc_last_error(), "OC_VERBS_TRIGGER=wait: ");
        }
    }
}

/* With var=value (unset when value is NULL), OC_BACKEND=verbs opens and its
 * info line holds info. */
static void expect_opens(const char *var, const char *value, const char *info)
{
    oc_context_t *ctx = NULL;
    if (value != NULL)
        setenv(var, value, 1);
    assert_int_equal(open_with(OC_BACKEND_VERBS, &ctx), OC_OK);
    unsetenv(var);
    assert_contains(oc_context_backend_info(ctx), info);
    assert_int_equal(oc_finalize(ctx), OC_OK);
}

/* With var=value, OC_BACKEND=verbs is refused with st, the detail holding why. */
static void expect_refused(const char *var, const char *value, oc_status_t st, const char *why)
{
    oc_context_t *ctx = NULL;
    setenv(var, value, 1);
    assert_int_equal(open_with(OC_BACKEND_VERBS, &ctx), st);
    unsetenv(var);
    assert_null(ctx);
    assert_contains(oc_last_error(), why);
}

/* A port whose max_msg_sz cannot take the protocol's control messages in
 * one SEND (softverbs lets a test set it) is refused with the reason. */
static void test_short_max_msg(void **state)
{
    char why[256];
    (void)state;

    verbs_outcome(why, sizeof(why));
    if (why[0] != '\0')
        skip(); /* no device */
    expect_refused("SOFTVERBS_MAX_MSG_SZ", "64", OC_ERR_UNAVAILABLE,
                   "takes at most 64 bytes per message (max_msg_sz)");
}

/* OC_VERBS_MAX_PEERS: a malformed value is refused by name whichever
 * backend verbs would be; where verbs opens, the limit is in its info line,
 * and one beyond what the device's completion queues can hold is refused. */
static void test_max_peers(void **state)
{
    static const char *const bad[] = {"0", "-3", "12x", "65537"};
    char why[256];
    oc_context_t *ctx = NULL;
    size_t i;
    (void)state;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        setenv("OC_VERBS_MAX_PEERS", bad[i], 1);
        assert_int_equal(open_with(OC_BACKEND_AUTO, &ctx), OC_ERR_INVALID_ARG);
        assert_contains(oc_last_error(), "OC_VERBS_MAX_PEERS=");
        assert_contains(oc_last_error(), bad[i]);
        assert_null(ctx);
    }
    unsetenv("OC_VERBS_MAX_PEERS");
    verbs_outcome(why, sizeof(why));
    if (why[0] != '\0')
        skip(); /* no device */
    expect_opens("OC_VERBS_MAX_PEERS", NULL, "up to 256 peers");
    expect_opens("OC_VERBS_MAX_PEERS", "3", "up to 3 peers");
    /* softverbs' CQs hold 65536 entries: 512 peers of 128 send WRs */
    expect_refused("OC_VERBS_MAX_PEERS", "60000", OC_ERR_UNAVAILABLE,
                   "OC_VERBS_MAX_PEERS=60000 needs completion queues of");
    assert_contains(oc_last_error(), "(max_cqe), that is at most 512 peers");
    /* Smaller CQs lower the default rather than fail (4096 / 128 = 32)... */
    expect_opens("SOFTVERBS_MAX_CQE", "4096", "up to 32 peers");
    /* ... but not below the trigger's CQ */
    expect_refused("SOFTVERBS_MAX_CQE", "1000", OC_ERR_UNAVAILABLE,
                   "allows completion queues of 1000 entries (max_cqe)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_auto_agrees_with_verbs),
        cmocka_unit_test(test_ucx_forced),
        cmocka_unit_test(test_trigger_malformed),
        cmocka_unit_test(test_trigger_variants),
        cmocka_unit_test(test_short_max_msg),
        cmocka_unit_test(test_max_peers),
    };
    unsetenv("OC_VERBS_TRIGGER");
    unsetenv("OC_VERBS_MAX_PEERS");
    return cmocka_run_group_tests(tests, NULL, NULL);
}
