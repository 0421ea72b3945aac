#include "oc_pe.h"
#include "oc_pe_affinity.h"
#include "oc_error.h"
#include "oc_sync.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

struct oc_pe {
    oc_nic_t *nic;
    oc_progress_mode_t mode;
    unsigned spin_us;
    oc_mpsc_t queue;
    oc_pe_exec_t *ready;       /* lists whose trigger fired; engine-local */
    oc_pe_exec_t *orphans;     /* released while their list is in flight */
    int wake_fd, epoll_fd;
    _Atomic int sleeping;      /* AWAKE, SLEEP_ARMED or SLEEP_LAZY */
    /* Thread mode with helping waiters: how many help now, how many began
     * to so far, and whether one left work unfinished for the thread. */
    _Atomic int helpers;
    _Atomic unsigned helped;
    _Atomic int handover;
    int stop;
    pthread_t thread;
    clockid_t cpu_clock;
    char info[512];             /* where the engine runs (oc_pe_info) */
    oc_pe_caller_t caller;      /* the creating thread's CPUs, when auto moved it */
    int have_thread;
    sem_t gate;                /* the thread starts once oc_pe_create has decided
                                  help_us and locked */
    int gated;
    unsigned help_us;          /* thread mode: waiters run the engine (oc_pe_help) */
    int idle_yield;            /* a polling waiter yields after each idle pass (idle_pass) */
    /* Inline mode, or thread mode with helping waiters: the engine runs in
     * whichever thread holds it (recursive: an engine callback may call in
     * again). Without them the thread takes no lock. */
    int locked;
    pthread_mutex_t lock;
    _Atomic double final_cpu_s;
    _Atomic uint64_t lists_posted, tasks_posted, wakeups, requests_started;
    _Atomic uint64_t bytes_sent, bytes_copied;
};

typedef struct {
    oc_pe_item_t item;
    oc_status_t (*fn)(oc_pe_t *pe, void *arg);
    void *arg;
    oc_status_t status;
    oc_error_saved_t detail;    /* fn's oc_last_error() where it failed */
    _Atomic uint32_t done;
} pe_call_t;

/* A statistic has one writer at a time (the engine's holder, passed on under
 * its lock; wakeups: the thread), so a plain read and write will do: the
 * locked adds held a third of advance()'s samples in a profile of 1 KB calls.
 * Readers on other threads see each value whole. */
#define STAT_ADD(pe, field, v)                                                        \
    atomic_store_explicit(&(pe)->field,                                               \
                          atomic_load_explicit(&(pe)->field, memory_order_relaxed) + (v), \
                          memory_order_relaxed)

oc_progress_mode_t oc_pe_mode(const oc_pe_t *pe)
{
    return pe->mode;
}

oc_nic_t *oc_pe_nic(oc_pe_t *pe)
{
    return pe->nic;
}

/* ---- running schedules ----------------------------------------------------- */

static void list_done(oc_nic_list_t *list)
{
    oc_pe_exec_t *x = (oc_pe_exec_t *)((char *)list - offsetof(oc_pe_exec_t, list));
    x->ready_next = x->pe->ready;
    x->pe->ready = x;
}

static void finish(oc_pe_exec_t *x, oc_status_t st)
{
    x->in_flight = 0;
    x->complete(x, st);
}

static void park(oc_pe_exec_t *x, oc_pe_counter_t *c)
{
    x->parked_on = c;
    x->park_next = c->parked;
    c->parked = x;
}

static void unpark(oc_pe_exec_t *x)
{
    oc_pe_exec_t **p;
    if (x->parked_on == NULL)
        return;
    for (p = &x->parked_on->parked; *p != x; p = &(*p)->park_next)
        ;
    *p = x->park_next;
    x->parked_on = NULL;
}

/* Takes the WAIT tasks that lead the list tasks[0..ntasks); 0 (and x
 * parked) if one must wait. */
static int take_waits(oc_pe_exec_t *x, const oc_task_t *tasks, size_t ntasks)
{
    while (x->waits_taken < ntasks && tasks[x->waits_taken].type == OC_TASK_WAIT) {
        const oc_task_t *t = &tasks[x->waits_taken];
        if (!oc_pe_counter_take(t->obj, (uint32_t)t->count)) {
            park(x, t->obj);
            return 0;
        }
        x->waits_taken++;
    }
    return 1;
}

/* Whether a list's outcome ends the schedule. A mismatch (a message of
 * another size than this rank expects) leaves the transport sound, so the
 * schedule runs on: the peers still get this rank's messages of the later
 * lists instead of waiting for them until they time out, and the mismatch is
 * reported when the schedule ends. */
static int fails(oc_pe_exec_t *x, oc_status_t st)
{
    if (st != OC_OK && x->detail[0] == '\0')
        memcpy(x->detail, x->list.detail, sizeof(x->detail));
    if (st != OC_ERR_MISMATCH)
        return st != OC_OK;
    if (x->deferred == OC_OK)
        x->deferred = st;
    return 0;
}

/* Posts lists from x->next on until one stays in flight, one waits for a
 * counter, or the schedule ends. */
static void advance(oc_pe_t *pe, oc_pe_exec_t *x)
{
    const oc_sched_t *s = x->sched;

    while (x->next < s->nlists) {
        const oc_task_list_t *l = &s->lists[x->next];
        size_t i, sent = 0, copied = 0, nw;
        oc_status_t st;

        if (!take_waits(x, &s->tasks[l->first], l->ntasks))
            return;
        nw = x->waits_taken;
        x->waits_taken = 0;
        x->next++;
        if (nw == l->ntasks)
            continue;
        x->list.tasks = &s->tasks[l->first + nw];
        x->list.ntasks = l->ntasks - nw;
        x->list.match = &x->match;
        x->list.slots = x->slots;
        x->list.done = list_done;
        for (i = 0; i < x->list.ntasks; i++) {
            const oc_task_t *t = &x->list.tasks[i];
            if (t->type == OC_TASK_SEND || t->type == OC_TASK_PUT)
                sent += t->len;
            else if (t->type == OC_TASK_COPY)
                copied += oc_task_bytes(t);
        }
        STAT_ADD(pe, lists_posted, 1);
        STAT_ADD(pe, tasks_posted, x->list.ntasks);
        STAT_ADD(pe, bytes_sent, sent);
        STAT_ADD(pe, bytes_copied, copied);

        x->in_flight = 1;
        st = pe->nic->ops->post_list(pe->nic, &x->list);
        if (st == OC_INPROGRESS)
            return;
        x->in_flight = 0;
        if (fails(x, st)) {
            finish(x, st);
            return;
        }
    }
    finish(x, x->deferred);
}

static void free_orphan(oc_pe_t *pe, oc_pe_exec_t *x)
{
    oc_pe_exec_t **p = &pe->orphans;
    while (*p != x)
        p = &(*p)->orphan_next;
    *p = x->orphan_next;
    free(x);
}

static unsigned run_ready(oc_pe_t *pe)
{
    unsigned n = 0;
    while (pe->ready != NULL) {
        oc_pe_exec_t *x = pe->ready;
        pe->ready = x->ready_next;
        x->in_flight = 0;
        n++;
        if (x->orphan)
            free_orphan(pe, x);
        else if (x->cancelled)
            continue;
        else if (fails(x, x->list.status))
            finish(x, x->list.status);
        else
            advance(pe, x);
    }
    return n;
}

static void run_start(oc_pe_t *pe, oc_pe_item_t *item)
{
    oc_pe_exec_t *x = (oc_pe_exec_t *)item;
    x->pe = pe;
    x->next = 0;
    x->in_flight = 0;
    x->cancelled = 0;
    x->orphan = 0;
    x->waits_taken = 0;
    x->deferred = OC_OK;
    x->detail[0] = '\0';
    x->parked_on = NULL;
    x->list.status = OC_OK; /* a restart after a failure resumes from a WAIT clean */
    STAT_ADD(pe, requests_started, 1);
    if (x->started != NULL)
        x->started(x);
    advance(pe, x);
}

void oc_pe_cancel(oc_pe_t *pe, oc_pe_exec_t *x, oc_status_t status)
{
    unpark(x);
    if (x->in_flight) {
        x->cancelled = 1;
        pe->nic->ops->cancel_list(pe->nic, &x->list, status);
    }
    x->complete(x, status);
}

void oc_pe_exec_release(oc_pe_t *pe, oc_pe_exec_t *x)
{
    unpark(x);
    if (x->in_flight) {
        x->orphan = 1;
        x->orphan_next = pe->orphans;
        pe->orphans = x;
    } else {
        free(x);
    }
}

/* ---- counters ---------------------------------------------------------------- */

void oc_pe_counter_init(oc_pe_counter_t *c)
{
    atomic_init(&c->arrived, 0);
    atomic_init(&c->consumed, 0);
    atomic_init(&c->sleepers, 0);
    c->parked = NULL;
}

int oc_pe_counter_take(oc_pe_counter_t *c, uint32_t n)
{
    uint32_t used = atomic_load(&c->consumed);
    /* Unsigned differences: the counts may wrap. */
    while (atomic_load(&c->arrived) - used >= n)
        if (atomic_compare_exchange_weak(&c->consumed, &used, used + n))
            return 1;
    return 0;
}

void oc_pe_counter_add(oc_pe_t *pe, oc_pe_counter_t *c, uint32_t n)
{
    oc_pe_exec_t *x;
    /* Dekker-style with oc_pe_wait_word: either the waiter sees the new
     * count, or we see it asleep. */
    atomic_fetch_add(&c->arrived, n);
    if (atomic_load(&c->sleepers) > 0)
        oc_futex_wake_all(&c->arrived);
    while ((x = c->parked) != NULL) {
        c->parked = x->park_next;
        x->parked_on = NULL;
        x->ready_next = pe->ready;
        pe->ready = x;
    }
}

/* A yield costs a system call (0.7 us on the 2-vCPU KVM guest, as much as
 * a 1 KB Alltoall between two ranks there) and gains nothing where no other
 * thread waits for the CPU. With more ranks than CPUs the peer this waiter
 * waits for may be the one that does (Open MPI yields there too); and a
 * thread of this process bound to the same CPU may be what the operation
 * waits for (a software NIC's, as softverbs has), so even with a CPU per
 * rank a waiter yields once every IDLE_PASSES idle passes (about 5 us). */
enum { IDLE_PASSES = 32 };

/* A polling waiter after a pass that found no work; *idle counts such
 * passes in a row (0 again after a pass that found work). Returns whether
 * it yielded. */
static int idle_pass(oc_pe_t *pe, unsigned *idle)
{
    if (pe->idle_yield || ++*idle >= IDLE_PASSES) {
        *idle = 0;
        sched_yield();
        return 1;
    }
    return 0;
}

/* A polling waiter reads the clock once every CLOCK_PASSES passes: a read
 * costs about what an idle pass does, and a small operation is done within
 * a few passes. */
enum { CLOCK_PASSES = 16 };

int oc_pe_poll_until(oc_pe_t *pe, int (*done)(void *arg), void *arg, oc_deadline_t *deadline)
{
    unsigned idle = 0, passes = 0;
    while (!done(arg)) {
        if (oc_pe_progress(pe) == 0)
            idle_pass(pe, &idle);
        else
            idle = 0;
        if (++passes % CLOCK_PASSES == 0 && oc_deadline_left(deadline) == 0)
            return done(arg);
    }
    return 1;
}

int oc_pe_wait_spin(oc_pe_t *pe, int (*done)(void *arg), void *arg, oc_deadline_t *deadline)
{
    double now, until, left;
    if (pe->spin_us == 0)
        return done(arg);
    now = oc_time_now();
    until = now + 1e-6 * pe->spin_us;
    left = oc_deadline_left_at(deadline, now);
    if (left >= 0 && now + left < until)
        until = now + left;
    while (!done(arg)) {
        if (oc_time_now() >= until)
            return 0;
        sched_yield();
    }
    return 1;
}

oc_status_t oc_pe_wait_word(oc_pe_t *pe, int (*done)(void *arg), void *arg,
                            _Atomic uint32_t *word, _Atomic uint32_t *sleepers,
                            oc_deadline_t *deadline)
{
    if (pe->mode == OC_PROGRESS_INLINE)
        return oc_pe_poll_until(pe, done, arg, deadline) ? OC_OK : OC_ERR_TIMEOUT;
    if (oc_pe_help(pe, done, arg, deadline) || oc_pe_wait_spin(pe, done, arg, deadline))
        return OC_OK;
    for (;;) {
        /* Read before the check: a change after it makes the futex return at
         * once; a change before it, the check sees. */
        uint32_t seen = atomic_load(word);
        double left;
        if (done(arg))
            return OC_OK;
        left = oc_deadline_left(deadline);
        if (left == 0)
            return OC_ERR_TIMEOUT;
        atomic_fetch_add(sleepers, 1);
        oc_futex_wait(word, seen, left);
        atomic_fetch_sub(sleepers, 1);
    }
}

typedef struct {
    oc_pe_counter_t *c;
    uint32_t n;
} take_t;

static int take_done(void *arg)
{
    take_t *t = arg;
    return oc_pe_counter_take(t->c, t->n);
}

oc_status_t oc_pe_counter_wait(oc_pe_t *pe, oc_pe_counter_t *c, uint32_t n,
                               oc_deadline_t *deadline)
{
    take_t t = {c, n};
    return oc_pe_wait_word(pe, take_done, &t, &c->arrived, &c->sleepers, deadline);
}

/* ---- hand-over ------------------------------------------------------------ */

static unsigned run_queue(oc_pe_t *pe)
{
    oc_mpsc_node_t *n = oc_mpsc_take_all(&pe->queue);
    unsigned count = 0;
    while (n != NULL) {
        oc_pe_item_t *item = (oc_pe_item_t *)n;
        n = n->next; /* read before run: the item may be gone after it */
        item->run(pe, item);
        count++;
    }
    return count;
}

/* Where the thread sleeps: armed, on the backend's events and the wake fd;
 * lazy (standing aside while waiters help), on the wake fd and a timeout. */
enum { AWAKE, SLEEP_ARMED, SLEEP_LAZY };
/* Whom wake() wakes: an armed thread only, or a lazy one too. */
enum { WAKE_ARMED, WAKE_ANY };

static void wake(oc_pe_t *pe, int whom);

static void engine_enter(oc_pe_t *pe)
{
    if (pe->locked)
        pthread_mutex_lock(&pe->lock);
}

static void engine_leave(oc_pe_t *pe)
{
    if (pe->locked)
        pthread_mutex_unlock(&pe->lock);
}

/* The engine's work for every operation, done on whichever thread holds it:
 * what fails there is recorded with its list and request, and an
 * application thread's oc_last_error() stays its own. */
static void work_enter(oc_pe_t *pe, oc_error_guard_t *guard)
{
    engine_enter(pe);
    if (pe->locked)
        oc_error_guard_begin(guard);
}

static void work_leave(oc_pe_t *pe, oc_error_guard_t *guard)
{
    if (pe->locked)
        oc_error_guard_end(guard);
    engine_leave(pe);
}

/* work_enter for an application thread in thread mode with helping: never
 * waits for the lock, as the thread holding it is making progress. */
static int work_try_enter(oc_pe_t *pe, oc_error_guard_t *guard)
{
    if (pe->help_us == 0 || pthread_mutex_trylock(&pe->lock) != 0)
        return 0;
    oc_error_guard_begin(guard);
    return 1;
}

/* One pass of everything the engine does; the engine is held. */
static unsigned pass(oc_pe_t *pe)
{
    unsigned n = run_queue(pe);
    n += pe->nic->ops->progress(pe->nic);
    return n + run_ready(pe);
}

unsigned oc_pe_progress(oc_pe_t *pe)
{
    oc_error_guard_t guard;
    unsigned n;
    work_enter(pe, &guard);
    n = pass(pe);
    work_leave(pe, &guard);
    return n;
}

void oc_pe_poll(oc_pe_t *pe)
{
    oc_error_guard_t guard;
    unsigned n;
    if (pe->mode == OC_PROGRESS_INLINE) {
        oc_pe_progress(pe);
        return;
    }
    if (!work_try_enter(pe, &guard)) {
        sched_yield();
        return;
    }
    n = pass(pe);
    work_leave(pe, &guard);
    if (n > 0)
        wake(pe, WAKE_ARMED); /* it may sleep on events this pass took: it arms again */
    else
        sched_yield();
}

int oc_pe_help(oc_pe_t *pe, int (*done)(void *arg), void *arg, oc_deadline_t *deadline)
{
    double idle_from = 0;
    unsigned idle = 0, passes = 0;
    int ok, found = 1; /* found: work since the last clock read (the start counts) */
    if (pe->help_us == 0)
        return 0;
    /* done() may take what it finds (a counter's arrivals): 1 is final. */
    if (done(arg))
        return 1;
    atomic_fetch_add(&pe->helpers, 1);
    atomic_fetch_add(&pe->helped, 1);
    while (!(ok = done(arg))) {
        int yielded = 0;
        if (oc_pe_progress(pe) > 0) {
            idle = 0;
            found = 1;
        } else {
            yielded = idle_pass(pe, &idle);
        }
        /* The idle time runs from the first clock read after work; after a
         * yield, which may have lasted a time slice, the clock is read. */
        if (yielded || ++passes % CLOCK_PASSES == 0) {
            double t = oc_time_now();
            if (oc_deadline_left_at(deadline, t) == 0)
                break;
            if (found)
                idle_from = t;
            else if (t - idle_from >= 1e-6 * pe->help_us)
                break;
            found = 0;
        }
    }
    atomic_fetch_sub(&pe->helpers, 1);
    if (ok) {
        /* The thread may sleep on events this thread took: it arms again. */
        wake(pe, WAKE_ARMED);
    } else {
        /* The waiter goes to sleep with work left: the thread takes it over
         * now, not at its next look (stand_aside). */
        atomic_store(&pe->handover, 1);
        wake(pe, WAKE_ANY);
    }
    return ok;
}

static void wake(oc_pe_t *pe, int whom)
{
    uint64_t one = 1;
    ssize_t r;
    int s = atomic_load(&pe->sleeping);
    if (s == AWAKE || (s == SLEEP_LAZY && whom == WAKE_ARMED))
        return;
    do {
        r = write(pe->wake_fd, &one, sizeof(one));
    } while (r < 0 && errno == EINTR);
}

static void submit(oc_pe_t *pe, oc_pe_item_t *item)
{
    oc_mpsc_push(&pe->queue, &item->node);
    wake(pe, WAKE_ANY);
}

void oc_pe_start(oc_pe_t *pe, oc_pe_exec_t *x)
{
    oc_error_guard_t guard;
    x->item.run = run_start;
    if (pe->mode == OC_PROGRESS_INLINE) {
        work_enter(pe, &guard);
        run_start(pe, &x->item);
        work_leave(pe, &guard);
        return;
    }
    /* Where waiters help, the thread stands aside while they do (stand_aside)
     * and a hand-over to it would cost a time slice on a shared CPU: the
     * first list is posted here when the engine is free. */
    if (work_try_enter(pe, &guard)) {
        run_start(pe, &x->item);
        work_leave(pe, &guard);
        /* An armed thread sleeps on events; what was just posted may raise
         * none before it needs progress. */
        wake(pe, WAKE_ARMED);
        return;
    }
    submit(pe, &x->item);
}

static void run_call(oc_pe_t *pe, oc_pe_item_t *item)
{
    pe_call_t *c = (pe_call_t *)item;
    c->status = c->fn(pe, c->arg);
    /* The detail is in this thread's oc_last_error(), not the caller's. */
    if (c->status != OC_OK)
        oc_error_save(&c->detail);
    atomic_store(&c->done, 1);
    oc_futex_wake_all(&c->done);
}

oc_status_t oc_pe_call(oc_pe_t *pe, oc_status_t (*fn)(oc_pe_t *pe, void *arg), void *arg)
{
    pe_call_t c;
    oc_status_t st;
    if (pe->mode == OC_PROGRESS_INLINE || !pe->have_thread) {
        /* On the caller's thread: fn's detail is the caller's already. */
        engine_enter(pe);
        st = fn(pe, arg);
        engine_leave(pe);
        return st;
    }
    c.item.run = run_call;
    c.fn = fn;
    c.arg = arg;
    atomic_init(&c.done, 0);
    submit(pe, &c.item);
    while (!atomic_load(&c.done))
        oc_futex_wait(&c.done, 0, -1);
    if (c.status != OC_OK)
        oc_error_restore(&c.detail);
    return c.status;
}

static oc_status_t sync_fn(oc_pe_t *pe, void *arg)
{
    (void)pe;
    (void)arg;
    return OC_OK;
}

void oc_pe_sync(oc_pe_t *pe)
{
    oc_pe_call(pe, sync_fn, NULL);
}

/* ---- the thread -------------------------------------------------------------- */

/* After an idle pass, before sleeping: yield the core and look again, for
 * OC_SPIN_US or, by default, once. On a busy core the yield lets the
 * application thread or a peer (with more ranks than cores, the one whose
 * message we wait for) run and hand us work, which then costs a pass instead
 * of an arm, a sleep and a wake-up (README: "The yield before sleeping"); on
 * an idle core it returns at once. Once is not a spin: an idle engine sleeps. */
static unsigned yield_and_look(oc_pe_t *pe)
{
    double until = oc_time_now() + 1e-6 * pe->spin_us;
    unsigned n;
    do {
        sched_yield();
        n = oc_pe_progress(pe);
    } while (n == 0 && oc_time_now() < until);
    return n;
}

/* Resets the wake fd (an eventfd, non-blocking) once it has woken us. */
static void drain_wake_fd(oc_pe_t *pe)
{
    uint64_t v;
    ssize_t r = read(pe->wake_fd, &v, sizeof(v));
    (void)r;
}

static void sleep_until_event(oc_pe_t *pe)
{
    struct epoll_event ev[2];
    int i, n;
    oc_status_t st;

    /* Armed and announced under the engine's lock: a waiter that helps
     * after it (oc_pe_help) may take the events the arm waits for, and its
     * closing wake() must then see us asleep and write the wake fd. */
    engine_enter(pe);
    st = pe->nic->ops->arm(pe->nic);
    if (st == OC_OK)
        atomic_store(&pe->sleeping, SLEEP_ARMED);
    engine_leave(pe);
    if (st != OC_OK)
        return; /* events pending (or arming failed): progress again */
    /* Dekker-style with submit(): either the producer sees sleeping and
     * writes the wake fd, or we see its item here. */
    if (!oc_mpsc_empty(&pe->queue)) {
        atomic_store(&pe->sleeping, AWAKE);
        return;
    }
    do {
        n = epoll_wait(pe->epoll_fd, ev, 2, -1);
    } while (n < 0 && errno == EINTR);
    atomic_store(&pe->sleeping, AWAKE);
    STAT_ADD(pe, wakeups, 1);
    for (i = 0; i < n; i++)
        if (ev[i].data.fd == pe->wake_fd)
            drain_wake_fd(pe);
}

/* Sleeps on the wake fd for at most us, unarmed: a peer's message then costs
 * its sender no signal and this thread no wake-up. */
static void sleep_lazy(oc_pe_t *pe, unsigned us)
{
    struct pollfd p = {pe->wake_fd, POLLIN, 0};
    struct timespec ts = {us / 1000000, 1000L * (long)(us % 1000000)};
    atomic_store(&pe->sleeping, SLEEP_LAZY);
    /* Dekker-style with submit() and a helper's hand-over, as in
     * sleep_until_event(). */
    if (oc_mpsc_empty(&pe->queue) && !atomic_load(&pe->handover)) {
        if (ppoll(&p, 1, &ts, NULL) > 0)
            drain_wake_fd(pe);
        STAT_ADD(pe, wakeups, 1);
    }
    atomic_store(&pe->sleeping, AWAKE);
}

/* While waiters help, they drive the engine: a thread that ran beside them on
 * a shared CPU would take their time slices and the lock, and each peer's
 * message would wake it (docs/performance.md, "The thread stands aside").
 * It looks again after LAZY_FIRST_US, then twice as long each time waiters
 * helped meanwhile, up to LAZY_MAX_US; it takes over once none helped for a
 * whole sleep, or at once when one leaves work unfinished or work is handed
 * over. */
enum { LAZY_FIRST_US = 200, LAZY_MAX_US = 3200 };

static void stand_aside(oc_pe_t *pe)
{
    unsigned us = LAZY_FIRST_US, seen;
    do {
        seen = atomic_load(&pe->helped);
        sleep_lazy(pe, us);
        if (us < LAZY_MAX_US)
            us *= 2;
    } while (oc_mpsc_empty(&pe->queue) && !atomic_exchange(&pe->handover, 0) &&
             (atomic_load(&pe->helpers) > 0 || atomic_load(&pe->helped) != seen));
}

/* Whether the thread should stand aside now: a waiter is helping. */
static int waiters_help(oc_pe_t *pe)
{
    return pe->help_us > 0 && atomic_load(&pe->helpers) > 0;
}

static void *thread_main(void *arg)
{
    oc_pe_t *pe = arg;
    struct timespec ts;

    while (sem_wait(&pe->gate) != 0 && errno == EINTR)
        ;
    while (!pe->stop) {
        if (waiters_help(pe)) {
            stand_aside(pe);
            continue;
        }
        if (oc_pe_progress(pe) > 0 || yield_and_look(pe) > 0)
            continue;
        if (!waiters_help(pe))
            sleep_until_event(pe);
    }
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    atomic_store(&pe->final_cpu_s, (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec);
    return NULL;
}

static oc_status_t stop_fn(oc_pe_t *pe, void *arg)
{
    (void)arg;
    pe->stop = 1;
    return OC_OK;
}

static oc_status_t setup_epoll(oc_pe_t *pe)
{
    struct epoll_event ev;
    int fds[2], i;

    pe->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    pe->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    if (pe->wake_fd < 0 || pe->epoll_fd < 0)
        return oc_error(OC_ERR_INTERNAL, "progress engine: eventfd/epoll: %s", strerror(errno));
    fds[0] = pe->wake_fd;
    fds[1] = pe->nic->ops->event_fd(pe->nic);
    for (i = 0; i < 2; i++) {
        memset(&ev, 0, sizeof(ev));
        ev.events = EPOLLIN;
        ev.data.fd = fds[i];
        if (epoll_ctl(pe->epoll_fd, EPOLL_CTL_ADD, fds[i], &ev) < 0)
            return oc_error(OC_ERR_INTERNAL, "progress engine: epoll_ctl: %s", strerror(errno));
    }
    return OC_OK;
}

/* OC_WAIT_HELP_AUTO. A thread that shares the application's only CPU runs in
 * its time slices: every hand-over to it and back waits for the scheduler,
 * and a waiter that does the work itself waits for nobody (on the 2-vCPU VM,
 * 2 ranks: 1.6-2.5x lower pure time up to 64 KB, 10-25% lower overall
 * time with computation up to 1 MB; docs/performance.md, "A waiting thread
 * helps: measured"). With a CPU of its own the thread answers at once, and a
 * waiter that helped would only take the lock from it. help_us is set here,
 * after the thread started and before its gate opens: the thread reads it
 * only after the gate. */
static oc_status_t init_lock(oc_pe_t *pe)
{
    pthread_mutexattr_t attr;
    int rc;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    rc = pthread_mutex_init(&pe->lock, &attr);
    pthread_mutexattr_destroy(&attr);
    pe->locked = rc == 0;
    return rc == 0 ? OC_OK
                   : oc_error(OC_ERR_INTERNAL, "progress engine: pthread_mutex_init: %s",
                              strerror(rc));
}

static oc_status_t help_auto(oc_pe_t *pe, int alone)
{
    size_t len = strlen(pe->info);
    pe->help_us = alone ? OC_WAIT_HELP_AUTO_US : 0;
    if (!alone)
        return OC_OK;
    snprintf(pe->info + len, sizeof(pe->info) - len, "; waiting threads run the engine "
             "(OC_WAIT_HELP_US=auto: %u us)", pe->help_us);
    return init_lock(pe);
}

/* Where waiters poll (inline mode, or helping), whether each idle pass yields
 * the CPU, and why (idle_pass). */
static void idle_rule(oc_pe_t *pe, const oc_pe_host_t *host)
{
    size_t len = strlen(pe->info);
    pe->idle_yield = oc_pe_oversubscribed(host);
    if (pe->mode == OC_PROGRESS_THREAD && pe->help_us == 0)
        return;
    if (host->ranks == 0 || host->cpus <= 0)
        snprintf(pe->info + len, sizeof(pe->info) - len,
                 "; idle waits yield the CPU (no launcher counts the ranks on this host)");
    else
        snprintf(pe->info + len, sizeof(pe->info) - len, "; idle waits %s the CPU (%lu rank%s "
                 "on %ld CPU%s)", pe->idle_yield ? "yield" : "keep", host->ranks,
                 host->ranks == 1 ? "" : "s", host->cpus, host->cpus == 1 ? "" : "s");
}

oc_status_t oc_pe_create(oc_nic_t *nic, oc_progress_mode_t mode, unsigned spin_us,
                         unsigned help_us, const char *cpus, oc_pe_t **out)
{
    oc_pe_t *pe = calloc(1, sizeof(*pe));
    oc_pe_host_t host;
    oc_status_t st;
    int rc, alone;

    if (pe == NULL) {
        nic->ops->destroy(nic);
        return oc_error(OC_ERR_NO_MEMORY, "progress engine");
    }
    pe->nic = nic;
    pe->mode = mode;
    pe->spin_us = spin_us;
    pe->help_us = mode == OC_PROGRESS_THREAD ? help_us : 0;
    pe->wake_fd = pe->epoll_fd = -1;
    oc_mpsc_init(&pe->queue);
    oc_pe_host_read(&host);
    if ((mode == OC_PROGRESS_INLINE || (pe->help_us > 0 && pe->help_us != OC_WAIT_HELP_AUTO)) &&
        (st = init_lock(pe)) != OC_OK) {
        free(pe);
        nic->ops->destroy(nic);
        return st;
    }
    if (mode == OC_PROGRESS_THREAD) {
        st = setup_epoll(pe);
        if (st == OC_OK && sem_init(&pe->gate, 0, 0) != 0)
            st = oc_error(OC_ERR_INTERNAL, "progress engine: sem_init: %s", strerror(errno));
        if (st != OC_OK) {
            oc_pe_destroy(pe);
            return st;
        }
        pe->gated = 1;
        rc = pthread_create(&pe->thread, NULL, thread_main, pe);
        if (rc != 0) {
            oc_pe_destroy(pe);
            return oc_error(OC_ERR_INTERNAL, "progress engine: pthread_create: %s",
                            strerror(rc));
        }
        pe->have_thread = 1;
        pthread_setname_np(pe->thread, "offcoll-pe");
        st = oc_pe_bind(pe->thread, cpus, &host, pe->info, sizeof(pe->info), &pe->caller,
                        &alone);
        if (st == OC_OK && help_us == OC_WAIT_HELP_AUTO)
            st = help_auto(pe, alone);
        idle_rule(pe, &host);
        sem_post(&pe->gate); /* also where it failed: oc_pe_destroy stops the thread */
        if (st != OC_OK) {
            oc_pe_destroy(pe);
            return st;
        }
        if (pthread_getcpuclockid(pe->thread, &pe->cpu_clock) != 0)
            pe->cpu_clock = (clockid_t)-1;
    } else {
        snprintf(pe->info, sizeof(pe->info), "inline: no thread, progress inside oc_test/oc_wait");
        idle_rule(pe, &host);
    }
    *out = pe;
    return OC_OK;
}

const char *oc_pe_info(const oc_pe_t *pe)
{
    return pe->info;
}

void oc_pe_destroy(oc_pe_t *pe)
{
    double deadline;
    if (pe == NULL)
        return;
    if (pe->have_thread) {
        oc_pe_call(pe, stop_fn, NULL);
        pthread_join(pe->thread, NULL);
        pe->have_thread = 0;
    }
    /* The backend is this thread's now. Cancelled lists usually finish with
     * a little progress; what still waits on a gone peer ends with the
     * backend, whose callbacks need the execs alive. */
    deadline = oc_time_now() + 1.0;
    while (pe->orphans != NULL && oc_time_now() < deadline)
        oc_pe_progress(pe);
    if (pe->nic != NULL)
        pe->nic->ops->destroy(pe->nic);
    while (pe->orphans != NULL) {
        oc_pe_exec_t *x = pe->orphans;
        pe->orphans = x->orphan_next;
        free(x);
    }
    oc_pe_unbind_caller(&pe->caller);
    if (pe->wake_fd >= 0)
        close(pe->wake_fd);
    if (pe->epoll_fd >= 0)
        close(pe->epoll_fd);
    if (pe->locked)
        pthread_mutex_destroy(&pe->lock);
    if (pe->gated)
        sem_destroy(&pe->gate);
    free(pe);
}

void oc_pe_stats(const oc_pe_t *pe, oc_stats_t *s)
{
    oc_pe_t *p = (oc_pe_t *)pe;
    struct timespec ts;
    s->lists_posted = atomic_load(&p->lists_posted);
    s->tasks_posted = atomic_load(&p->tasks_posted);
    s->wakeups = atomic_load(&p->wakeups);
    s->requests_started = atomic_load(&p->requests_started);
    s->bytes_sent = atomic_load(&p->bytes_sent);
    s->bytes_copied = atomic_load(&p->bytes_copied);
    s->progress_cpu_s = atomic_load(&p->final_cpu_s);
    if (p->have_thread && p->cpu_clock != (clockid_t)-1 &&
        clock_gettime(p->cpu_clock, &ts) == 0)
        s->progress_cpu_s = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
