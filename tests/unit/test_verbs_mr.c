/*
 * The verbs backend's registration cache (offload/verbs/verbs_mr.c). A NIC
 * reads and writes the physical pages pinned at registration, so memory
 * unmapped and mapped again at the same address must be registered again,
 * or a transfer would move the old pages. Runs on softverbs (preloaded),
 * whose registration counter (found with dlsym) tells when the cache went
 * to the provider: memory that stays mapped is registered once, memory
 * unmapped by munmap or whose pages madvise dropped (in this thread or
 * another) is registered anew, and without UCX's memory events nothing outlives its last user.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "softverbs.h"
#include "verbs/verbs_internal.h"

#define LEN (64 * 1024)

typedef int (*query_fn)(struct ibv_context *, struct softverbs_stats *);

static struct {
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    query_fn query;
} dev;

static uint64_t registrations(void)
{
    struct softverbs_stats st;
    assert_int_equal(dev.query(dev.ctx, &st), 0);
    return st.mr_registrations;
}

static void *map_new(void)
{
    void *p = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(p != MAP_FAILED);
    return p;
}

/* Maps want again after its munmap: 1 if the range came back, 0 if another
 * thread of the process (the software NIC's, the sanitizer's allocator)
 * mapped into the hole first, which a test cannot prevent; then it retries
 * (retry_unmapped). */
static int remap(void *want)
{
    void *p = mmap(want, LEN, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == want)
        return 1;
    if (p != MAP_FAILED)
        munmap(p, LEN); /* a kernel without MAP_FIXED_NOREPLACE maps elsewhere */
    return 0;
}

/* Runs a scenario that unmaps and maps its range again until the range
 * came back (once returns 1), at most 5 times. */
static void retry_unmapped(int (*once)(void), const char *name)
{
    int tries;
    for (tries = 0; tries < 5; tries++)
        if (once())
            return;
    fail_msg("%s: another thread took the unmapped range in each of %d tries", name, tries);
}

static vb_mr_t *get(vb_mr_cache_t *c, const void *addr, size_t len, int writable)
{
    vb_mr_t *m = NULL;
    assert_int_equal(vb_mr_get(c, addr, len, writable, &m), OC_OK);
    assert_non_null(m);
    return m;
}

static void hooked_cache(vb_mr_cache_t *c)
{
    vb_mr_cache_init(c, dev.pd, 1);
    if (!c->hooked)
        fail_msg("UCX memory events unavailable (UCX_MEM_EVENTS=no in the environment?)");
}

static int kept_until_unmapped_once(void)
{
    vb_mr_cache_t c;
    char *p = map_new();
    uint64_t n0 = registrations();

    hooked_cache(&c);
    vb_mr_put(&c, get(&c, p, LEN, 0));
    vb_mr_put(&c, get(&c, p, LEN, 0));
    vb_mr_put(&c, get(&c, p + 4096, 100, 0)); /* inside the first one */
    assert_int_equal(registrations() - n0, 1);
    vb_mr_put(&c, get(&c, p, LEN, 1)); /* needs remote write: another one */
    assert_int_equal(registrations() - n0, 2);
    assert_int_equal(c.count, 2);

    assert_int_equal(munmap(p, LEN), 0);
    if (!remap(p)) {
        vb_mr_cache_fini(&c);
        return 0;
    }
    vb_mr_put(&c, get(&c, p, LEN, 0));
    assert_int_equal(registrations() - n0, 3);
    assert_int_equal(c.count, 1); /* both old ones dropped */
    vb_mr_cache_fini(&c);
    munmap(p, LEN);
    return 1;
}

static void kept_until_unmapped(void **state)
{
    (void)state;
    retry_unmapped(kept_until_unmapped_once, "kept_until_unmapped");
}

static int unmapped_while_in_use_once(void)
{
    vb_mr_cache_t c;
    char *p = map_new();
    uint64_t n0 = registrations();
    vb_mr_t *old, *fresh;

    hooked_cache(&c);
    old = get(&c, p, LEN, 0);
    assert_int_equal(munmap(p, LEN), 0);
    if (!remap(p)) {
        vb_mr_put(&c, old);
        vb_mr_cache_fini(&c);
        return 0;
    }
    fresh = get(&c, p, LEN, 0);
    assert_true(fresh != old);
    assert_int_equal(registrations() - n0, 2);
    vb_mr_put(&c, old); /* its last user: deregistered */
    assert_int_equal(c.count, 1);
    vb_mr_put(&c, fresh);
    vb_mr_put(&c, get(&c, p, LEN, 0));
    assert_int_equal(registrations() - n0, 2);
    vb_mr_cache_fini(&c);
    munmap(p, LEN);
    return 1;
}

static void unmapped_while_in_use(void **state)
{
    (void)state;
    retry_unmapped(unmapped_while_in_use_once, "unmapped_while_in_use");
}

static void madvise_dontneed(void **state)
{
    vb_mr_cache_t c;
    char *p = map_new();
    uint64_t n0 = registrations();

    (void)state;
    hooked_cache(&c);
    vb_mr_put(&c, get(&c, p, LEN, 1));
    /* The pages go; the next touch maps zero pages in their place. */
    assert_int_equal(madvise(p + LEN / 2, 4096, MADV_DONTNEED), 0);
    vb_mr_put(&c, get(&c, p, LEN, 1));
    assert_int_equal(registrations() - n0, 2);
    vb_mr_cache_fini(&c);
    munmap(p, LEN);
}

static struct {
    void *addr;
    int rc;
    sem_t done;
} unmapper;

/* Never exits: at thread exit glibc calls madvise, which UCX's hook then
 * handles after ThreadSanitizer has dropped the thread, and TSan crashes. */
static void *drop_pages_thread(void *arg)
{
    (void)arg;
    unmapper.rc = madvise(unmapper.addr, LEN, MADV_DONTNEED);
    sem_post(&unmapper.done);
    for (;;)
        pause();
    return NULL;
}

static void unmapped_by_another_thread(void **state)
{
    vb_mr_cache_t c;
    char *p = map_new();
    uint64_t n0 = registrations();
    pthread_t t;

    (void)state;
    hooked_cache(&c);
    vb_mr_put(&c, get(&c, p, LEN, 0));
    unmapper.addr = p;
    assert_int_equal(sem_init(&unmapper.done, 0, 0), 0);
    assert_int_equal(pthread_create(&t, NULL, drop_pages_thread, NULL), 0);
    assert_int_equal(pthread_detach(t), 0);
    while (sem_wait(&unmapper.done) != 0)
        ;
    assert_int_equal(unmapper.rc, 0);
    vb_mr_put(&c, get(&c, p, LEN, 0));
    assert_int_equal(registrations() - n0, 2);
    vb_mr_cache_fini(&c);
    munmap(p, LEN);
}

static void bounded(void **state)
{
    enum { PAGES = 300 };
    vb_mr_cache_t c;
    char *p = mmap(NULL, PAGES * 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int i;

    (void)state;
    assert_true(p != MAP_FAILED);
    hooked_cache(&c);
    for (i = 0; i < PAGES; i++) /* one page apart: no entry covers another */
        vb_mr_put(&c, get(&c, p + (size_t)i * 8192, 1, 0));
    assert_true(c.count <= 256);
    vb_mr_cache_fini(&c);
    munmap(p, PAGES * 8192);
}

static void without_events(void **state)
{
    vb_mr_cache_t c;
    char *p = map_new();
    uint64_t n0 = registrations();
    vb_mr_t *a, *b;

    (void)state;
    vb_mr_cache_init(&c, dev.pd, 0);
    assert_false(c.hooked);
    a = get(&c, p, LEN, 0);
    b = get(&c, p, LEN, 0); /* shared while both use it */
    assert_true(a == b);
    vb_mr_put(&c, a);
    vb_mr_put(&c, b);
    assert_int_equal(c.count, 0);
    vb_mr_put(&c, get(&c, p, LEN, 0));
    assert_int_equal(registrations() - n0, 2);
    vb_mr_cache_fini(&c);
    munmap(p, LEN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kept_until_unmapped),
        cmocka_unit_test(unmapped_while_in_use),
        cmocka_unit_test(madvise_dontneed),
        cmocka_unit_test(unmapped_by_another_thread),
        cmocka_unit_test(bounded),
        cmocka_unit_test(without_events),
    };
    struct ibv_device **list = ibv_get_device_list(NULL);

    /* Stored through a void **, as in POSIX's dlsym example. */
    *(void **)&dev.query = dlsym(RTLD_DEFAULT, "softverbs_query_stats");
    if (list == NULL || list[0] == NULL || dev.query == NULL) {
        fprintf(stderr, "test_verbs_mr: needs softverbs preloaded (LD_PRELOAD)\n");
        return 1;
    }
    dev.ctx = ibv_open_device(list[0]);
    ibv_free_device_list(list);
    if (dev.ctx == NULL || (dev.pd = ibv_alloc_pd(dev.ctx)) == NULL) {
        fprintf(stderr, "test_verbs_mr: cannot open softverbs' device\n");
        return 1;
    }
    /* The device stays open: closing it ends softverbs' thread, which
     * would meet the crash described at drop_pages_thread. */
    return cmocka_run_group_tests(tests, NULL, NULL);
}
