/*
 * offcoll: non-blocking collectives progressed off the application's
 * critical path.
 *
 * Conventions of this header:
 *  - Every call that can fail returns an oc_status_t. On failure,
 *    oc_last_error() gives a detail line for the calling thread that names
 *    the offending argument. The few that cannot (names, descriptions, a
 *    team's rank and size, a request's algorithm) return the value itself,
 *    with a stated value for a NULL object.
 *  - Objects are created by the library and released by the matching
 *    free/finalize call; buffers passed in stay owned by the caller and must
 *    stay valid (and untouched, for receive buffers) while a request that uses
 *    them is active. After an operation failed (a timeout), keep its buffers
 *    until oc_finalize: the network layer cannot cancel every transfer, and a
 *    late one may still read or write them. The library does so with its
 *    own (windows, pack buffers, copies), which oc_finalize releases.
 *  - Thread safety: a context may be used by several application threads,
 *    provided that calls on one team are serialised by the application (as
 *    MPI requires for collectives on one communicator) and a request is used
 *    by one thread at a time: a call on a request that another thread is in
 *    (oc_start, oc_test, oc_wait, oc_request_free) returns OC_ERR_BUSY. In
 *    inline progress mode the engine advances inside whichever thread calls,
 *    one at a time.
 *
 * Configuration is read from OC_* environment variables by oc_config_init();
 * README.md lists them.
 */
#ifndef OFFCOLL_H
#define OFFCOLL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library exports only what this header declares (it is built with
 * hidden visibility), so that its internal layers stay private to it. */
#if defined(__GNUC__)
#define OC_API __attribute__((visibility("default")))
#else
#define OC_API
#endif

#define OC_VERSION_MAJOR 0
#define OC_VERSION_MINOR 1
#define OC_VERSION_PATCH 0

typedef enum {
    OC_OK = 0,
    OC_INPROGRESS = 1,        /**< oc_test: the operation has not completed yet */
    OC_ERR_INVALID_ARG = -1,  /**< bad argument; oc_last_error() names it */
    OC_ERR_NO_MEMORY = -2,
    OC_ERR_BUSY = -3,         /**< the request is active (free or restart refused) or
                                   in a call on another thread */
    OC_ERR_TIMEOUT = -4,      /**< a wait ran past OC_TIMEOUT_S */
    OC_ERR_UNAVAILABLE = -5,  /**< a backend or feature is not available here */
    OC_ERR_BACKEND = -6,      /**< the network layer reported an error */
    OC_ERR_MISMATCH = -7,     /**< peers disagree (send/receive sizes differ, a member
                                   failed the collective call) */
    OC_ERR_OUT_OF_BOUNDS = -8,/**< an access outside a buffer or window */
    OC_ERR_INTERNAL = -9
} oc_status_t;

/** Static, human-readable name of a status ("OC_ERR_TIMEOUT: ..."). Never NULL. */
OC_API const char *oc_status_string(oc_status_t status);

/** Detail of the last error raised on the calling thread ("" if none). Like
 *  errno, read it right after a failure; a call that succeeds leaves it as
 *  it was (also in inline mode, where the caller's thread progresses other
 *  operations: their failures are reported by their own calls).
 *  The string is owned by the library and valid until the thread's next call. */
OC_API const char *oc_last_error(void);

/** Makes detail (copied) the calling thread's oc_last_error() and returns
 *  status: for layers on top of offcoll, such as the helpers of
 *  offcoll_mpi.h, to report their own argument errors the same way. */
OC_API oc_status_t oc_set_last_error(oc_status_t status, const char *detail);

typedef struct oc_context oc_context_t;
typedef struct oc_team oc_team_t;
typedef struct oc_request oc_request_t;

typedef enum { OC_PROGRESS_THREAD = 0, OC_PROGRESS_INLINE = 1 } oc_progress_mode_t;

typedef enum {
    OC_ALG_AUTO = 0,
    OC_ALG_BURST,     /**< every exchange at once, cut into lists of OC_LIST_MAX */
    OC_ALG_PAIRWISE,  /**< ring-1: one peer pair per stage */
    OC_ALG_RINGK,     /**< k peer pairs per stage, k = OC_RINGK */
    OC_ALG_BRUCK,     /**< log2(n) stages; small blocks (alltoall only) */
    OC_ALG_PUT,       /**< persistent requests only: each block put into a landing zone
                           in the receiver's window (two, alternating by start), copied
                           out by its progress engine; one-shot calls fall back to auto */
    OC_ALG_COUNT_
} oc_alg_t;

typedef enum { OC_BACKEND_AUTO = 0, OC_BACKEND_UCX, OC_BACKEND_VERBS } oc_backend_kind_t;

/** How peers on the same host are reached. */
typedef enum {
    OC_INTRANODE_SHM = 0,     /**< shared memory (CPU copies) */
    OC_INTRANODE_LOOPBACK,    /**< the network transport, as to a remote host (the NIC's
                                   loopback path; TCP here) */
    OC_INTRANODE_CMA,         /**< shared memory, and large (rendezvous) messages by the
                                   kernel's single copy (cma) instead of the FIFO's two:
                                   faster where the buffers lie on huge pages (UCX) */
    OC_INTRANODE_AUTO         /**< the default: cma where large buffers lie on huge
                                   pages (transparent huge pages "always", or "madvise"
                                   with oc_config_t.huge_buffers), else shm; decided when
                                   the context starts */
} oc_intranode_t;

/** oc_config_t.wait_help_us: decided when the context starts (see there). */
#define OC_WAIT_HELP_AUTO 0xffffffffu
/** What OC_WAIT_HELP_AUTO gives where the progress thread has no CPU of its own. */
#define OC_WAIT_HELP_AUTO_US 1000u

/** Context configuration. Fill with oc_config_init(), then adjust fields. */
typedef struct {
    oc_progress_mode_t progress;  /**< OC_PROGRESS=thread|inline */
    oc_backend_kind_t backend;    /**< OC_BACKEND=auto|ucx|verbs; auto: verbs where an
                                       RDMA device opens, else UCX. The verbs backend
                                       reads OC_VERBS_TRIGGER=auto|wait|thread and
                                       OC_VERBS_MAX_PEERS itself when it opens
                                       (offload/verbs/README.md) */
    unsigned list_max;            /**< OC_LIST_MAX: tasks per task list (>= 2) */
    unsigned ringk;               /**< OC_RINGK: peer pairs per ring-k stage (>= 1) */
    oc_alg_t alltoall_alg;        /**< OC_ALLTOALL_ALG */
    oc_alg_t alltoallv_alg;       /**< OC_ALLTOALLV_ALG (burst, pairwise, ringk) */
    size_t bruck_max;             /**< OC_BRUCK_MAX: auto uses Bruck up to this block size */
    size_t ringk_min;             /**< OC_RINGK_MIN: auto uses ring-k from this block size */
    unsigned spin_us;             /**< OC_SPIN_US: how long the progress thread and a waiting
                                       application thread poll before they sleep (us) */
    unsigned wait_help_us;        /**< OC_WAIT_HELP_US: thread mode, a thread waiting in
                                       oc_wait, oc_notify_wait, oc_win_flush or a halo wait
                                       runs the engine itself until it finds no work for this
                                       long (us), then sleeps; 0 = never;
                                       OC_WAIT_HELP_AUTO (default, "auto"):
                                       OC_WAIT_HELP_AUTO_US where the progress thread shares
                                       the process's only CPU with the application, or the
                                       launcher's ranks on the host are more than half its
                                       CPUs (README), else 0. The progress thread stands
                                       aside while a waiter helps, and a start posts its
                                       first list itself where the engine is free.
                                       The engine work a waiter does counts in no
                                       progress_cpu_s */
    double timeout_s;             /**< OC_TIMEOUT_S: oc_wait gives up after this (0 = never) */
    int verbose;                  /**< OC_VERBOSE: 0 quiet, 1 one-line notices */
    int warn_unknown;             /**< OC_WARN_UNKNOWN: 1 (default) oc_init warns, once per
                                       process and on a node's first rank only, of OC_*
                                       variables offcoll does not read (a misspelt name),
                                       naming the one meant; 0 not */
    oc_intranode_t intranode;     /**< OC_INTRANODE=auto|shm|loopback|cma */
    int huge_buffers;             /**< OC_HUGE_BUFFERS: 1 where the application advises its
                                       large buffers for transparent huge pages
                                       (madvise(MADV_HUGEPAGE)), so that OC_INTRANODE=auto
                                       takes cma also where the host's setting is
                                       "madvise"; 0 not. Default: 1 where GLIBC_TUNABLES sets
                                       glibc.malloc.hugetlb=1 (glibc then advises every
                                       large malloc), else 0 */
    char progress_cpus[256];      /**< OC_PROGRESS_CPUS: "" (the process's CPUs), "auto"
                                       (the last of them) or a CPU list ("3,7,12-15",
                                       entry: the launcher's local rank modulo its length) */
} oc_config_t;

/** Defaults overridden by the OC_* environment variables. A malformed variable
 *  returns OC_ERR_INVALID_ARG naming it; *cfg then holds the defaults. */
OC_API oc_status_t oc_config_init(oc_config_t *cfg);

/** Writes every configuration value, one "NAME = value" per line, into buf
 *  (truncated to size). Returns OC_ERR_INVALID_ARG for NULL arguments. */
OC_API oc_status_t oc_config_print(const oc_config_t *cfg, char *buf, size_t size);

/** Names of the enum values, as used in the environment ("ringk"...);
 *  "invalid" for a value outside the enum. */
OC_API const char *oc_alg_name(oc_alg_t alg);

/** Creates a context: backend, progress engine (thread started in thread mode),
 *  endpoint cache. cfg NULL means oc_config_init(); cfg is copied. Several
 *  threads may create contexts at once, one each. With progress_cpus "auto"
 *  the calling thread leaves the CPU the progress thread takes, until
 *  oc_finalize (see oc_context_progress_info); a thread left with one CPU
 *  puts the next context's progress thread beside an earlier one's. */
OC_API oc_status_t oc_init(const oc_config_t *cfg, oc_context_t **ctx);

/** Stops the progress engine and releases the context. Every team and request
 *  of the context must have been freed (windows and halo plans belong to
 *  teams): one not freed, active or not, makes it OC_ERR_BUSY. No other call
 *  on ctx, its teams or requests may run meanwhile.
 *  Also releases what was kept after failures (windows, halo plans and
 *  buffers whose transfers could not be cancelled); transfers still in flight
 *  then get about a second to end before the backend is torn down. */
OC_API oc_status_t oc_finalize(oc_context_t *ctx);

/** The configuration in force for ctx (copied into *cfg). Thread-safe. */
OC_API oc_status_t oc_context_config(const oc_context_t *ctx, oc_config_t *cfg);

/** Per-context statistics, cumulative since oc_init. */
typedef struct {
    uint64_t lists_posted;    /**< task lists handed to the backend */
    uint64_t tasks_posted;    /**< tasks in those lists */
    uint64_t wakeups;         /**< progress-thread returns from sleep (also its looks
                                   while it stands aside for helping waiters, and
                                   those a helping waiter asks for when it stops) */
    uint64_t requests_started;/**< schedules started: each start of a collective,
                                   oc_put and oc_halo_start, and the library's own
                                   (team and window set-up, votes) */
    uint64_t bytes_sent;      /**< payload handed to the network */
    uint64_t bytes_copied;    /**< local copies (self blocks, packing) */
    double progress_cpu_s;    /**< CPU time of the progress thread (0 inline; without
                                   the engine work of helping waiters) */
} oc_stats_t;

/** Copies ctx's statistics into *stats. Thread-safe; the fields are read one by
 *  one, so a snapshot taken while operations run may be slightly inconsistent. */
OC_API oc_status_t oc_context_stats(const oc_context_t *ctx, oc_stats_t *stats);

/** Short description of the backend in use and why ("ucx 1.13.1 (verbs: no
 *  RDMA device (ENOSYS: ...))", or "verbs: mlx5_0 port 1 (InfiniBand, LID 7),
 *  trigger: thread (...), registration cache: on, up to 256 peers"). Owned
 *  by the context, fixed at oc_init (so thread-safe); "" for a NULL one. */
OC_API const char *oc_context_backend_info(const oc_context_t *ctx);

/** Where the progress engine runs ("thread, on CPU 3 (OC_PROGRESS_CPUS=auto;
 *  process CPUs 2-3)", "thread, on the process's only CPU 0 ...", "inline:
 *  ..."): overlap needs a CPU for the thread. Says "; waiting threads
 *  run the engine (OC_WAIT_HELP_US=auto: 1000 us)" where wait_help_us
 *  OC_WAIT_HELP_AUTO turned helping on, and, where waiters poll (inline, or
 *  helping), ends with whether each idle pass of theirs yields the CPU
 *  ("; idle waits keep the CPU (2 ranks on 2 CPUs)"). Owned by the context, fixed at
 *  oc_init; "" for a NULL one. */
OC_API const char *oc_context_progress_info(const oc_context_t *ctx);

/* ---- Teams ---------------------------------------------------------------- */

/** Out-of-band allgather supplied by the application: every member contributes
 *  len bytes from src; dst receives size*len bytes ordered by rank. Returns 0
 *  on success. Called only from oc_team_create, by every member. Every member
 *  must pass the same size: dst holds size*len bytes of the caller's size,
 *  which the library cannot check before this exchange. */
typedef int (*oc_oob_allgather_fn)(const void *src, void *dst, size_t len, void *arg);

typedef struct {
    int rank;                      /**< this process's rank in the team, 0..size-1 */
    int size;                      /**< number of members, >= 1 */
    oc_oob_allgather_fn allgather; /**< collective exchange used during creation */
    void *arg;                     /**< passed to allgather */
} oc_team_params_t;

/** Creates a team collectively: every member calls it with its own rank.
 *  Endpoints come from the context's shared cache. All members return the
 *  same outcome: a member that fails (ctx NULL, say, because its oc_init
 *  failed) still takes part, and the others return OC_ERR_MISMATCH naming
 *  it. Only a member whose params are unusable (NULL, bad rank or size, no
 *  allgather), or, in a team above 1024 members, that cannot allocate 4
 *  bytes per member for the first round, returns at once, leaving the others
 *  in their allgather. params is used only during the call. */
OC_API oc_status_t oc_team_create(oc_context_t *ctx, const oc_team_params_t *params,
                                  oc_team_t **team);

/** Releases a team (local; waits briefly for the progress engine). Its
 *  requests, windows and halo plans must have been freed first (else
 *  OC_ERR_BUSY). No other call on the team may run meanwhile. */
OC_API oc_status_t oc_team_free(oc_team_t *team);

/** Prints, for every other member, a line naming the transports the backend
 *  uses to reach it and the OC_INTRANODE mode, then the backend's detailed
 *  description (UCX lanes). Blocks briefly on the progress engine; any
 *  thread. out stays the caller's. */
OC_API oc_status_t oc_team_print_paths(const oc_team_t *team, FILE *out);

/** Rank and size of this process in the team; -1 for a NULL team. */
OC_API int oc_team_rank(const oc_team_t *team);
OC_API int oc_team_size(const oc_team_t *team);

/* ---- Collectives ------------------------------------------------------------ */

/** sbuf of an in-place all-to-all (as MPI_IN_PLACE): the blocks to send are
 *  taken from rbuf, which the received blocks then replace. Each start copies
 *  rbuf aside first, as the schedule's first list (the progress engine's work,
 *  like the transfers); the request holds that copy until it is freed. */
#define OC_IN_PLACE ((const void *)-1)

/** Starts an all-to-all of equal blocks: block i of sbuf (block_bytes each)
 *  goes to rank i, and rank i's block lands in block i of rbuf. Every member
 *  calls it in the same order as its other collectives on the team. The
 *  request is active on return; complete it with oc_test/oc_wait and release
 *  it with oc_request_free. sbuf and rbuf must not overlap; sbuf may be
 *  OC_IN_PLACE. */
OC_API oc_status_t oc_ialltoall(oc_team_t *team, const void *sbuf, void *rbuf,
                                size_t block_bytes, oc_request_t **req);

/** Starts an all-to-all of variable blocks, in bytes: scounts[i] bytes from
 *  sbuf + sdispls[i] go to rank i; rcounts[i] bytes from rank i land at
 *  rbuf + rdispls[i]. sbuf_bytes/rbuf_bytes are the buffers' sizes, against
 *  which every block is checked; receive blocks must not overlap. The count
 *  and displacement arrays are not referenced after the call. With sbuf
 *  OC_IN_PLACE, sbuf_bytes, scounts and sdispls are ignored: rcounts[i]
 *  bytes at rdispls[i] of rbuf go to rank i, whose rcounts must say the same.
 *  A receive count that disagrees with its sender's fails the call at that
 *  receiver (OC_ERR_MISMATCH), zero against non-zero too: a zero count still
 *  exchanges an empty message, which persistent requests avoid (they compare
 *  the counts at set-up, on every member). The block to the calling rank
 *  itself is compared at the call: scounts[rank] != rcounts[rank] is refused
 *  there (OC_ERR_MISMATCH, no request made). */
OC_API oc_status_t oc_ialltoallv(oc_team_t *team,
                                 const void *sbuf, size_t sbuf_bytes,
                                 const size_t *scounts, const size_t *sdispls,
                                 void *rbuf, size_t rbuf_bytes,
                                 const size_t *rcounts, const size_t *rdispls,
                                 oc_request_t **req);

/** Persistent forms (MPI-4 semantics): collective set-up, once, that builds
 *  the schedule; the request starts inactive and is started with oc_start as
 *  many times as needed, each start completed by oc_test/oc_wait. The set-up
 *  returns once every member has called it: counts that disagree between
 *  members (OC_ERR_MISMATCH, the pair named) or a refused argument on any
 *  member fail it on all. With the put algorithm the request owns a window
 *  (twice the bytes received from the peers), and a failed start makes it
 *  refuse further starts (free it and set it up again). */
OC_API oc_status_t oc_alltoall_init(oc_team_t *team, const void *sbuf, void *rbuf,
                                    size_t block_bytes, oc_request_t **req);
OC_API oc_status_t oc_alltoallv_init(oc_team_t *team,
                                     const void *sbuf, size_t sbuf_bytes,
                                     const size_t *scounts, const size_t *sdispls,
                                     void *rbuf, size_t rbuf_bytes,
                                     const size_t *rcounts, const size_t *rdispls,
                                     oc_request_t **req);

/** Starts an inactive persistent request; OC_ERR_BUSY if it is active,
 *  OC_ERR_INVALID_ARG if an earlier start failed (timed out; for a put
 *  request, failed in any way): its late messages could be taken for the new
 *  start's. Free such a request and create it again. */
OC_API oc_status_t oc_start(oc_request_t *req);

/** OC_OK when the operation has completed (the request becomes inactive, or
 *  stays complete), OC_INPROGRESS when not yet, or the operation's error.
 *  Never blocks. When not yet: inline, it advances the schedule; in thread
 *  mode it runs one pass of the engine if OC_WAIT_HELP_US is set and no
 *  other thread is in one, and otherwise yields the core (sched_yield), so
 *  that a loop polling it leaves the progress thread room on a full host. */
OC_API oc_status_t oc_test(oc_request_t *req);

/** Blocks until the operation completes. In thread mode it sleeps (with
 *  OC_WAIT_HELP_US set, after running the engine itself while that finds
 *  work); inline, it advances the schedule. A waiter that runs the engine
 *  yields the core after each pass that found nothing where the launcher
 *  counts more ranks on the host than CPUs, or none; elsewhere after every
 *  32nd. After
 *  OC_TIMEOUT_S it cancels the operation and returns OC_ERR_TIMEOUT;
 *  oc_last_error() then names the ranks that never took part. */
OC_API oc_status_t oc_wait(oc_request_t *req);

/** Releases a request that is not active (OC_ERR_BUSY otherwise). Local,
 *  except for a put request: every member frees it, in the same order as
 *  the team's other collectives, so that no peer's blocks are still on
 *  their way into its window (as oc_win_free). Any status other than
 *  OC_ERR_BUSY (a put request's failed agreement too) means it is gone. */
OC_API oc_status_t oc_request_free(oc_request_t *req);

/** The algorithm a request runs (after auto selection); OC_ALG_AUTO for a
 *  NULL request. */
OC_API oc_alg_t oc_request_alg(const oc_request_t *req);

/* ---- One-sided windows and notified puts ----------------------------------------
 *
 * A window is memory exposed by every member of a team for one-sided puts. It
 * is allocated by the backend, so that a put into it is done by the origin
 * alone (a copy into mapped memory on shared memory, an RDMA write on a NIC).
 * Puts are handed to the progress engine like collectives and return at once.
 * A notified put also increments a counter at the target once its data is
 * there, and wakes the target's progress engine; the target waits for a
 * number of notifications without polling.
 *
 * Thread safety: puts and flushes may come from several threads; a counter is
 * waited on by one thread at a time; create and free are collective and
 * serialised with the team's collectives.
 */

typedef struct oc_win oc_win_t;

/** Largest ncounters of oc_win_create. */
#define OC_WIN_MAX_COUNTERS 4096

/** Creates a window collectively: every member exposes size bytes (sizes may
 *  differ; 0 is allowed) and gets ncounters notification counters (0 to
 *  OC_WIN_MAX_COUNTERS). *base receives the local memory, zero-filled, owned
 *  by the window and valid until oc_win_free. Sizes and keys are exchanged
 *  here, so every member must call it, in the same order as its collectives.
 *  A member that refuses its arguments (team NULL aside) or fails still takes
 *  part: the others return OC_ERR_MISMATCH naming it. */
OC_API oc_status_t oc_win_create(oc_team_t *team, size_t size, unsigned ncounters, void **base,
                                 oc_win_t **win);

/** Collective: completes this member's puts (as oc_win_flush), waits until
 *  every member has done so, then releases the window and its memory. If a
 *  member's puts did not complete (a timeout) or a member never came, the
 *  window is gone for the team all the same, but its memory is kept until
 *  oc_finalize for the late puts that may still land in it. */
OC_API oc_status_t oc_win_free(oc_win_t *win);

/** Stores in *size the size of target's window in bytes (as given to
 *  oc_win_create on that rank). Local; any thread. */
OC_API oc_status_t oc_win_size(const oc_win_t *win, int target, size_t *size);

/** Sets *ptr to this process's address of target's window memory where it
 *  can load and store it directly (a peer on this host over shared memory;
 *  its own base for this rank): OC_OK. Otherwise *ptr = NULL and
 *  OC_ERR_UNAVAILABLE (another host, OC_INTRANODE=loopback, a backend
 *  without that), or OC_ERR_INVALID_ARG. Valid until oc_win_free; any
 *  thread. Stores through it are plain memory writes: no notification, no
 *  ordering with puts. Halo plans copy faces straight into such windows. */
OC_API oc_status_t oc_win_peer_ptr(const oc_win_t *win, int target, void **ptr);

/** Starts a put of len bytes from src into target's window at offset, and
 *  returns. src must stay unchanged until oc_win_flush returns. A range not
 *  inside target's window is refused with OC_ERR_OUT_OF_BOUNDS; nothing is
 *  written then. target may be this rank; len may be 0. On shared memory
 *  the origin alone moves the data; over a network transport without RDMA
 *  (TCP, OC_INTRANODE=loopback here) UCX emulates the put, and it moves only
 *  while the target's engine progresses: in inline mode, only inside the
 *  target's offcoll calls. */
OC_API oc_status_t oc_put(oc_win_t *win, int target, size_t offset, const void *src, size_t len);

/** As oc_put; once the data is complete at the target, the target's counter
 *  (0..ncounters-1) is incremented by one and its progress engine woken
 *  (also for len 0). Notifications may overtake each other; counts are
 *  exact. */
OC_API oc_status_t oc_put_notify(oc_win_t *win, int target, size_t offset, const void *src,
                                 size_t len, unsigned counter);

/** Blocks until every put this process started on win before the call is
 *  complete at its target (src buffers may then be reused). Returns the first
 *  error of the window's puts since the last flush that returned one. It
 *  waits until none of the window's puts is in flight: puts that other
 *  threads start meanwhile are waited for too, and of flushes on several
 *  threads at once the first to return takes the error. After OC_TIMEOUT_S
 *  with puts still in flight: OC_ERR_TIMEOUT, saying how many. */
OC_API oc_status_t oc_win_flush(oc_win_t *win);

/** Blocks until counter holds at least expected notifications not consumed
 *  yet, and consumes expected of them (0 returns at once). Sleeps in thread
 *  mode (progresses in inline mode). After OC_TIMEOUT_S returns
 *  OC_ERR_TIMEOUT and consumes nothing; oc_last_error() then says how many
 *  arrived and which ranks sent none since the last completed wait. */
OC_API oc_status_t oc_notify_wait(oc_win_t *win, unsigned counter, uint32_t expected);

/** As oc_notify_wait without blocking: OC_OK (and consumes) if expected
 *  notifications are there, OC_INPROGRESS if not (after a pass or a yield,
 *  as oc_test). */
OC_API oc_status_t oc_notify_test(oc_win_t *win, unsigned counter, uint32_t expected);

/* ---- Halo-exchange plans -----------------------------------------------------------
 *
 * For a 3D Cartesian decomposition: the team's ranks form a dims[0] x dims[1]
 * x dims[2] grid in row-major order (rank = (c0 * dims[1] + c1) * dims[2] + c2,
 * as MPI_Cart_create without reordering). Each field is a C array of
 * (n[0] + 2w) x (n[1] + 2w) x (n[2] + 2w) elements, dimension 0 slowest, its
 * interior starting at (w, w, w); the ghost layers of width w around it
 * receive the neighbours' boundary layers. The plan owns a window; faces are
 * packed, put into the neighbours' windows with notification, and unpacked by
 * the progress engine, so start and wait cost the caller almost nothing.
 * Threads: a field is used by one thread at a time (start, test, wait), and
 * oc_halo_free runs alone on the plan.
 *
 * Zero the parameter and field structures before filling them ({0} or
 * memset): a member added in a later version then takes its default.
 */

typedef struct oc_halo oc_halo_t;

typedef struct {
    void *data;        /**< the array, ghosts included; owned by the caller */
    size_t n[3];       /**< interior extents on this rank (may differ between ranks) */
    size_t elem_size;  /**< 4 or 8 */
    unsigned dim_mask; /**< bit d set: exchange across dimension d; 0 (the default of a
                            zeroed struct): all three. Ghosts of the other dimensions are
                            never written. Neighbours must pass the same mask. */
} oc_halo_field_t;

typedef struct {
    int dims[3];       /**< process grid; the product is the team size */
    int periodic[3];   /**< 1: the dimension wraps around */
    unsigned width;    /**< ghost width w >= 1; at most n[d] wherever d has a neighbour */
    int corners;       /**< 0: faces only (6 neighbours); 1: faces, edges and corners,
                            by the sweep x, then y with x ghosts, then z with both.
                            Ghost cells past a non-periodic edge are never written. */
} oc_halo_params_t;

/** Creates a plan collectively over team for nfields fields (1 to
 *  OC_WIN_MAX_COUNTERS / 6; each member passes its own extents, and
 *  neighbours must agree on the extents they share). A plan refused or
 *  failed (out of memory) on one member fails on all, with an error naming
 *  it; only team or halo NULL return at once. The fields' arrays must stay valid until
 *  oc_halo_free. */
OC_API oc_status_t oc_halo_create(oc_team_t *team, const oc_halo_params_t *params,
                                  const oc_halo_field_t *fields, int nfields, oc_halo_t **halo);

/** Starts the exchange of one field and returns. Until its oc_halo_wait
 *  returns, the field's outer w interior layers must not be written and its
 *  ghost cells not touched. OC_ERR_BUSY if that field is already in flight.
 *  Every member exchanges each field as often as the others; fields are
 *  independent, so members may start them in different orders. */
OC_API oc_status_t oc_halo_start(oc_halo_t *halo, int field);

/** Blocks until the field's ghost cells hold the neighbours' values and this
 *  rank's own faces have reached the neighbours (sleeps in thread mode).
 *  After OC_TIMEOUT_S: OC_ERR_TIMEOUT naming the neighbours whose data never
 *  came. OC_OK at once if the field is not in flight. After a failure the
 *  field refuses further starts (OC_ERR_INVALID_ARG): late faces could be
 *  taken for a later exchange's; free the plan and create it again. */
OC_API oc_status_t oc_halo_wait(oc_halo_t *halo, int field);

/** As oc_halo_wait without blocking: OC_OK when done, OC_INPROGRESS if not. */
OC_API oc_status_t oc_halo_test(oc_halo_t *halo, int field);

/** Stores in *rank the team rank of the neighbour at offset (dx, dy, dz),
 *  each -1, 0 or 1, or -1 where there is none (a non-periodic edge). Local. */
OC_API oc_status_t oc_halo_neighbor(const oc_halo_t *halo, int dx, int dy, int dz, int *rank);

/** Collective: waits for fields in flight, then releases the plan. Where an
 *  exchange failed on any member, the plan's window is kept until oc_finalize
 *  (late faces may still land), and so are this member's pack buffers of its
 *  failed fields (their puts may still read them). */
OC_API oc_status_t oc_halo_free(oc_halo_t *halo);

#ifdef __cplusplus
}
#endif
#endif /* OFFCOLL_H */
