/*
 * The progress engine: runs schedules on a backend, one task list at a time.
 *
 * Thread mode: a dedicated thread owns the backend. Other threads hand work
 * over through a lock-free queue and a wake-up; the thread posts a schedule's
 * first list, and each list's trigger (its done() callback) posts the next.
 * When nothing is left to do it arms the backend and sleeps in epoll.
 * Inline mode: no thread; the schedule advances only in oc_pe_progress(),
 * called by the application's test and wait.
 *
 * The engine knows schedules, never algorithms, teams or requests.
 */
#ifndef OC_PE_H
#define OC_PE_H

#include <stdatomic.h>

#include "oc_mpsc.h"
#include "oc_nic.h"
#include "oc_sync.h"
#include "offcoll.h"

typedef struct oc_pe oc_pe_t;
typedef struct oc_pe_exec oc_pe_exec_t;

/* Something handed over to the engine's thread. */
typedef struct oc_pe_item {
    oc_mpsc_node_t node;
    void (*run)(oc_pe_t *pe, struct oc_pe_item *item);
} oc_pe_item_t;

/* Called on the engine's thread when a schedule has run to its end (OC_OK) or
 * failed or was cancelled (the error). */
typedef void (*oc_pe_complete_fn)(oc_pe_exec_t *x, oc_status_t status);

/* One execution of a schedule. The owner fills sched, match, slots (at least
 * the schedule's largest list, nslots of them), complete and optionally
 * started, then calls oc_pe_start(); the rest is the engine's. The exec must
 * stay alive until complete() ran and, after a cancel, until
 * oc_pe_exec_release(). */
struct oc_pe_exec {
    oc_pe_item_t item;
    const oc_sched_t *sched;
    oc_nic_match_t match;
    oc_nic_slot_t *slots;
    size_t nslots;
    oc_pe_complete_fn complete;
    void (*started)(oc_pe_exec_t *x); /* optional: on the engine's thread, first */
    void *owner;     /* for complete() */
    /* engine-owned */
    oc_pe_t *pe;
    oc_nic_list_t list;
    size_t next;
    int in_flight;   /* a list is posted and its done() has not come */
    int cancelled;   /* complete() already reported; ignore the late done() */
    int orphan;      /* released while in flight: free when done() comes */
    size_t waits_taken;          /* leading WAIT tasks of list `next` already satisfied */
    oc_status_t deferred;        /* a mismatch seen so far, reported at the end */
    char detail[sizeof(((oc_nic_list_t *)0)->detail)]; /* the first failed list's reason
                                                          (for complete()) */
    struct oc_pe_counter *parked_on; /* the counter a WAIT task is blocked on */
    oc_pe_exec_t *ready_next;
    oc_pe_exec_t *orphan_next;
    oc_pe_exec_t *park_next;
};

/* A count of arrivals (notifications) that WAIT tasks and application threads
 * consume. The engine adds; any thread takes. */
typedef struct oc_pe_counter {
    _Atomic uint32_t arrived;   /* futex word of sleeping application waiters */
    _Atomic uint32_t consumed;
    _Atomic uint32_t sleepers;  /* application threads asleep on arrived */
    oc_pe_exec_t *parked;       /* engine only: execs blocked on a WAIT task here */
} oc_pe_counter_t;

/* Takes ownership of nic (also on failure). cpus: OC_PROGRESS_CPUS for the
 * thread, as oc_config_check_cpus accepts it ("" leaves it on the process's
 * CPUs). help_us: thread mode, how long a waiting application thread runs
 * the engine without finding work before it sleeps (oc_pe_help; 0: never;
 * OC_WAIT_HELP_AUTO: OC_WAIT_HELP_AUTO_US where the thread has no CPU of its
 * own, else 0; the engine's info says which). */
oc_status_t oc_pe_create(oc_nic_t *nic, oc_progress_mode_t mode, unsigned spin_us,
                         unsigned help_us, const char *cpus, oc_pe_t **pe);
/* Where the engine runs, for oc_context_progress_info. */
const char *oc_pe_info(const oc_pe_t *pe);

/* oc_pe_affinity.c. Parses a CPU list ("3,7,12-15", each below CPU_SETSIZE)
 * into cpus, in order: the count, or -1 when malformed or longer than max. */
int oc_pe_cpulist_parse(const char *s, int *cpus, int max);
/* Stops the thread, gives released execs whose lists are still in flight a
 * moment to finish, destroys the backend (which ends what is left), then
 * frees them. */
void oc_pe_destroy(oc_pe_t *pe);

oc_progress_mode_t oc_pe_mode(const oc_pe_t *pe);

/* Starts x (any thread). In inline mode the first list is posted at once;
 * in thread mode with helping waiters too, where no other thread is in the
 * engine (else the thread posts it). */
void oc_pe_start(oc_pe_t *pe, oc_pe_exec_t *x);

/* Runs fn(arg) on the thread that owns the backend and returns what it
 * returned once it has run; where it failed, the calling thread's
 * oc_last_error() is fn's detail. Any application thread; never from inside
 * the engine. */
oc_status_t oc_pe_call(oc_pe_t *pe, oc_status_t (*fn)(oc_pe_t *pe, void *arg), void *arg);

/* Returns once the engine has finished whatever it was running when called:
 * after it, no handler still uses an object unpublished before the call. */
void oc_pe_sync(oc_pe_t *pe);

/* Engine context only (inside oc_pe_call functions, complete() and backend
 * callbacks): the backend. */
oc_nic_t *oc_pe_nic(oc_pe_t *pe);

/* Engine context only: cancels x, which completes with status now. A WAIT
 * task it was blocked on gives up without consuming. */
void oc_pe_cancel(oc_pe_t *pe, oc_pe_exec_t *x, oc_status_t status);

/* Engine context only: the owner drops x; freed now, or when its cancelled
 * list finally finishes. x must have been allocated with malloc. */
void oc_pe_exec_release(oc_pe_t *pe, oc_pe_exec_t *x);

/* Inline mode: one pass of progress (hand-overs, backend, triggers). Returns
 * the number of events handled. */
unsigned oc_pe_progress(oc_pe_t *pe);

/* Application thread, in a test that found its operation unfinished
 * (oc_test, oc_notify_test): inline, one pass; in thread mode with helping
 * waiters, one pass unless another thread is in one (then the thread arms
 * again); otherwise it yields the core. A caller polling in a loop on a
 * machine with no core to spare would else hold its core until the
 * scheduler preempts it, and the progress thread it waits for would run
 * one time slice in each of its operations. */
void oc_pe_poll(oc_pe_t *pe);

/* Application thread in inline mode: runs the engine until done(arg) (which
 * may take what it finds: 1 is final) or the deadline passes; returns
 * whether done. Yields the core where this host's ranks may outnumber its
 * CPUs (more of them than CPUs, or no launcher says how many), where the
 * peer it waits for may need it; otherwise only every few dozen idle
 * passes, for a thread of this process that shares its core. */
int oc_pe_poll_until(oc_pe_t *pe, int (*done)(void *arg), void *arg, oc_deadline_t *deadline);

void oc_pe_stats(const oc_pe_t *pe, oc_stats_t *stats);

void oc_pe_counter_init(oc_pe_counter_t *c);

/* Engine context: n more arrivals; wakes sleeping waiters and resumes the
 * execs blocked on c. */
void oc_pe_counter_add(oc_pe_t *pe, oc_pe_counter_t *c, uint32_t n);

/* Any thread: consumes n arrivals if that many are unconsumed; 1 if it did. */
int oc_pe_counter_take(oc_pe_counter_t *c, uint32_t n);

/* Application thread, thread mode, before it polls or sleeps: where waiters
 * help (help_us > 0), runs the engine itself while done(arg) does not hold,
 * until it has found no work for help_us or the deadline passes (the clock
 * read every few passes, and after each yield); the thread stands aside
 * meanwhile. Leaving with the operation unfinished, it hands the work to the
 * thread at once; else it wakes an armed thread to arm again. Returns 1 once
 * done(arg) returned 1 (which may have taken what it found, a counter's
 * arrivals), 0 where it did not or waiters do not help. The thread hands
 * work over only as fast as it is scheduled: a waiter that would sleep
 * anyway saves the hand-over's two wake-ups, and with more threads than
 * cores it needs no core but its own. */
int oc_pe_help(oc_pe_t *pe, int (*done)(void *arg), void *arg, oc_deadline_t *deadline);

/* Application thread, thread mode, before it sleeps: polls done(arg) for
 * the engine's spin time (OC_SPIN_US) or until the deadline passes,
 * yielding the core between looks; returns whether it
 * holds. Sleeping costs a wake-up of the waiter's core when the work is
 * done, which on an idle core is slower than the work itself for small
 * operations; the yield lets a progress thread sharing the core run. */
int oc_pe_wait_spin(oc_pe_t *pe, int (*done)(void *arg), void *arg, oc_deadline_t *deadline);

/* Application thread: returns OC_OK once done(arg) holds, OC_ERR_TIMEOUT at
 * the deadline. Inline, it progresses the
 * engine; in thread mode it helps (oc_pe_help), polls (oc_pe_wait_spin),
 * then sleeps on *word,
 * announced in *sleepers. Whoever may make done() true changes *word first,
 * then wakes it if *sleepers > 0. */
oc_status_t oc_pe_wait_word(oc_pe_t *pe, int (*done)(void *arg), void *arg,
                            _Atomic uint32_t *word, _Atomic uint32_t *sleepers,
                            oc_deadline_t *deadline);

/* Application thread: takes n arrivals, sleeping for them in thread mode and
 * progressing in inline mode, until the deadline. OC_OK or OC_ERR_TIMEOUT. */
oc_status_t oc_pe_counter_wait(oc_pe_t *pe, oc_pe_counter_t *c, uint32_t n,
                               oc_deadline_t *deadline);

#endif
