/* Cache-line ping-pong between CPU 0 and CPU 1: one-way latency in ns. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <time.h>
static _Alignas(64) _Atomic long flag;
enum { ROUNDS = 2000000 };
static void pin(int c) { cpu_set_t s; CPU_ZERO(&s); CPU_SET(c, &s); pthread_setaffinity_np(pthread_self(), sizeof(s), &s); }
static void *pong(void *a) { (void)a; pin(1); for (long i = 0; i < ROUNDS; i++) { while (atomic_load_explicit(&flag, memory_order_acquire) != 2 * i + 1) ; atomic_store_explicit(&flag, 2 * i + 2, memory_order_release); } return NULL; }
int main(void) {
    pthread_t t; struct timespec a, b; pin(0); pthread_create(&t, NULL, pong, NULL);
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < ROUNDS; i++) { atomic_store_explicit(&flag, 2 * i + 1, memory_order_release); while (atomic_load_explicit(&flag, memory_order_acquire) != 2 * i + 2) ; }
    clock_gettime(CLOCK_MONOTONIC, &b); pthread_join(t, NULL);
    double ns = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / ROUNDS / 2;
    /* 4 MB memcpy bandwidth on this CPU */
    size_t n = 4 << 20; char *x = malloc(n), *y = malloc(n); memset(x, 1, n); memset(y, 2, n);
    clock_gettime(CLOCK_MONOTONIC, &a); for (int k = 0; k < 50; k++) { memcpy(y, x, n); x[k] = y[k + 1]; }
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("one-way line transfer %.0f ns; memcpy 4 MB %.0f us\n", ns, ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / 50 / 1e3);
    return 0;
}
