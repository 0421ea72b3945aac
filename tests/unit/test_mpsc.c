/*
 * The engine's hand-over queue under contention: producers push while the
 * consumer drains, so pushes race with take_all on the head, which is where
 * a lost or duplicated node would come from.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <cmocka.h>

#include "oc_mpsc.h"

enum { PRODUCERS = 4, PER_PRODUCER = 100000 };

typedef struct {
    oc_mpsc_node_t node;
    int producer;
    int seq;
} item_t;

typedef struct {
    oc_mpsc_t *q;
    item_t *items;
    pthread_barrier_t *go;
} producer_t;

static void *produce(void *arg)
{
    producer_t *p = arg;
    pthread_barrier_wait(p->go);
    for (int i = 0; i < PER_PRODUCER; i++) {
        oc_mpsc_push(p->q, &p->items[i].node);
        if (i % 256 == 255) /* let the consumer in between pushes even on few cores */
            sched_yield();
    }
    return NULL;
}

static void test_concurrent_push_drain(void **state)
{
    oc_mpsc_t q;
    pthread_t th[PRODUCERS];
    producer_t prod[PRODUCERS];
    pthread_barrier_t go;
    item_t *items = malloc(sizeof(item_t) * PRODUCERS * PER_PRODUCER);
    int next[PRODUCERS] = {0}; /* the seq each producer's next node must have */
    long taken = 0, batches = 0;
    (void)state;

    assert_non_null(items);
    oc_mpsc_init(&q);
    assert_true(oc_mpsc_empty(&q));
    assert_null(oc_mpsc_take_all(&q));
    pthread_barrier_init(&go, NULL, PRODUCERS + 1);
    for (int p = 0; p < PRODUCERS; p++) {
        prod[p] = (producer_t){&q, items + (size_t)p * PER_PRODUCER, &go};
        for (int i = 0; i < PER_PRODUCER; i++)
            prod[p].items[i] = (item_t){{NULL}, p, i};
        assert_int_equal(pthread_create(&th[p], NULL, produce, &prod[p]), 0);
    }
    pthread_barrier_wait(&go);
    /* Each producer's seq must come out as 0, 1, 2...: exactly once and in
     * push order in one check, since a node is taken only once. */
    while (taken < (long)PRODUCERS * PER_PRODUCER) {
        oc_mpsc_node_t *n = oc_mpsc_take_all(&q);
        if (n == NULL) {
            sched_yield();
            continue;
        }
        batches++;
        for (; n != NULL; n = n->next) {
            item_t *it = (item_t *)n;
            if (it->producer < 0 || it->producer >= PRODUCERS)
                fail_msg("node from unknown producer %d", it->producer);
            if (it->seq != next[it->producer])
                fail_msg("producer %d: got seq %d, expected %d", it->producer, it->seq,
                         next[it->producer]);
            next[it->producer]++;
            taken++;
        }
    }
    for (int p = 0; p < PRODUCERS; p++)
        pthread_join(th[p], NULL);
    assert_true(oc_mpsc_empty(&q));
    assert_null(oc_mpsc_take_all(&q));
    for (int p = 0; p < PRODUCERS; p++)
        assert_int_equal(next[p], PER_PRODUCER);
    print_message("%ld nodes in %ld batches\n", taken, batches);
    pthread_barrier_destroy(&go);
    free(items);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_concurrent_push_drain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
