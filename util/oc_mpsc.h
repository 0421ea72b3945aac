/*
 * Lock-free multi-producer single-consumer hand-over of intrusive nodes.
 * Producers push with one CAS; the consumer takes the whole stack with one
 * exchange and reverses it, so nodes come out in push order. The consumer
 * takes everything at once, so ABA on the head cannot bite.
 */
#ifndef OC_MPSC_H
#define OC_MPSC_H

#include <stdatomic.h>
#include <stddef.h>

typedef struct oc_mpsc_node {
    struct oc_mpsc_node *next;
} oc_mpsc_node_t;

typedef struct {
    _Atomic(oc_mpsc_node_t *) head;
} oc_mpsc_t;

static inline void oc_mpsc_init(oc_mpsc_t *q)
{
    atomic_init(&q->head, NULL);
}

static inline void oc_mpsc_push(oc_mpsc_t *q, oc_mpsc_node_t *n)
{
    oc_mpsc_node_t *old = atomic_load_explicit(&q->head, memory_order_relaxed);
    do {
        n->next = old;
    } while (!atomic_compare_exchange_weak_explicit(&q->head, &old, n,
                                                    memory_order_seq_cst,
                                                    memory_order_relaxed));
}

static inline int oc_mpsc_empty(oc_mpsc_t *q)
{
    return atomic_load_explicit(&q->head, memory_order_seq_cst) == NULL;
}

/* Takes every node pushed so far, oldest first (NULL when empty). */
static inline oc_mpsc_node_t *oc_mpsc_take_all(oc_mpsc_t *q)
{
    oc_mpsc_node_t *n = atomic_exchange_explicit(&q->head, NULL, memory_order_acquire);
    oc_mpsc_node_t *fifo = NULL;
    while (n != NULL) {
        oc_mpsc_node_t *next = n->next;
        n->next = fifo;
        fifo = n;
        n = next;
    }
    return fifo;
}

#endif
