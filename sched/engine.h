/*
 * Execution of a task graph (sched/dag.h) by a pool of worker threads.
 *
 * The pool: nthreads persistent workers, created once per solver and reused by every phase; each
 * runs an init hook first (src/ passes one that binds it through numa/). The calling thread only
 * waits: it is never pinned.
 *
 * scheduler = static: each worker runs its ordered list, waiting for each task's predecessors.
 * scheduler = dynamic: a ready task is pushed to the queue of its Snode, split by data owner; a
 * worker takes work from the Snodes on its own path to the root (its own part first), then steals
 * from the sons of those Snodes, nearest first (by the distance matrix, else by thread number).
 * Idle workers spin briefly, then sleep on an event count; nobody spins forever.
 *
 * Tasks may block on counters of their own protocols (the ordered updates of the factorization)
 * with sched_wait_equal(); every such wait ends early when the run is aborted.
 */
#ifndef CANOPY_SCHED_ENGINE_H
#define CANOPY_SCHED_ENGINE_H

#include <stdatomic.h>
#include "base/common.h"
#include "dag.h"

typedef struct sched_pool sched_pool;
typedef struct sched_worker sched_worker;

/** Per-thread hook run once by each worker when it starts (binding). */
typedef void (*sched_thread_init)(void *arg, int thread);

/**
 * Start @p nthreads workers (>= 1). @p init may be NULL. @p distance, if not NULL, is an
 * nthreads x nthreads matrix (copied): smaller = closer in the topology, used to order victims.
 * Returns once every worker has run @p init; between jobs the workers sleep (no spinning).
 */
canopy_status sched_pool_create(int nthreads, sched_thread_init init, void *arg, const int *distance,
                                sched_pool **out, canopy_err *err);
/** Stop and join the workers. NULL is allowed. Not from inside a task of the pool. */
void sched_pool_destroy(sched_pool *pool);
int sched_pool_threads(const sched_pool *pool);
/** The share (0..1) of the predicted work of the pool's current (or last) run that is finished;
 * -1 before any run. Any thread may ask, also while the run goes on. */
double sched_pool_progress(const sched_pool *pool);
/** From inside a long task (a subtree): @p fraction (0..1) of it is done, for sched_pool_progress. */
void sched_worker_progress(sched_worker *w, double fraction);
/** Forget the last run's progress (sched_pool_progress gives -1 until the next run starts). */
void sched_pool_progress_reset(sched_pool *pool);

/**
 * Run fn(arg, t) once on every worker t and wait for all (first-touch allocation, per-thread setup).
 * Called from one of the pool's own workers it would wait for itself: it then does nothing.
 */
void sched_pool_run_all(sched_pool *pool, void (*fn)(void *arg, int thread), void *arg);

/**
 * A task: return 0 on success; nonzero aborts the run (no new task starts, waits end, and
 * sched_execute returns that first nonzero value through *task_result).
 */
typedef int (*sched_task_fn)(void *ctx, int task, sched_worker *w);

/** One trace record (times in seconds since the run started). */
typedef struct sched_event {
    int task;
    int thread;
    int victim;          /**< thread whose queue the task was stolen from, -1 if not stolen */
    double start, end;
} sched_event;

/** What a run measured. */
typedef struct sched_run_stats {
    double wall;                 /**< seconds from start to the last task's end */
    double *busy;                /**< [nthreads] seconds spent inside tasks (caller allocates, may be NULL) */
    int64_t *steals;             /**< [nthreads] tasks taken from another thread's queue (may be NULL) */
    int64_t *tasks_run;          /**< [nthreads] (may be NULL) */
    sched_event *events;         /**< [ntasks] if not NULL: one record per task, filled by the run;
                                      events[i] describes task i (thread = -1: it did not run) */
} sched_run_stats;

/**
 * Execute @p dag on the pool with @p scheduler (CANOPY_SCHED_STATIC or CANOPY_SCHED_DYNAMIC).
 * dag->nthreads must equal the pool's. Allocates its queues per call (outside the hot path).
 * Checks first, in O(tasks + edges), what would make a run hang or misbehave (npred against the
 * edges, cycles, static lists that deadlock, Snodes off their threads' paths) and returns
 * CANOPY_ERR_ARGUMENT for them; also when called from a task of the same pool. A task failure is
 * not an error of the call: it returns CANOPY_SUCCESS with the value in *task_result.
 * @param stats may be NULL; its arrays are zeroed first.
 * @param task_result receives the first nonzero value returned by a task (0 if none); may be NULL.
 */
canopy_status sched_execute(sched_pool *pool, const sched_dag *dag, canopy_scheduler scheduler,
                            sched_task_fn fn, void *ctx, sched_run_stats *stats, int *task_result,
                            canopy_err *err);

/** What a run may add to sched_execute's: dependencies outside the graph, a polling hook. */
typedef struct sched_run_opts {
    const int *ext;      /**< [ntasks] or NULL: external dependencies of each task; a task starts only
                              after its predecessors AND ext[task] calls of sched_release(run, task) */
    void (*idle)(void *arg, int thread); /**< if not NULL, workers with nothing to do call it over and
                                              over (yielding the core in between) instead of sleeping:
                                              for workers that must drive MPI progress themselves */
    void *idle_arg;
    void (*on_wait)(void *arg); /**< if not NULL, called by a worker just before it goes to sleep for
                                     lack of work (a communication thread may then poll harder) */
    void *on_wait_arg;
    void (*drive)(void *arg); /**< if not NULL, sched_go runs it on the calling thread while the workers
                                   run the tasks (MPI driven by the thread that may call it), then waits */
    void *drive_arg;
} sched_run_opts;

typedef struct sched_run sched_run;

/**
 * sched_execute in steps, so that another thread (the communication thread) can release
 * external dependencies from before the workers start until the run ends: sched_prepare checks
 * and sets up (nothing runs), sched_go runs and waits and fills @p stats (at most once),
 * sched_discard frees the run, which other threads may use until then. Every prepared run must
 * be handed to sched_discard exactly once.
 */
canopy_status sched_prepare(sched_pool *pool, const sched_dag *dag, canopy_scheduler scheduler, sched_task_fn fn,
                            void *ctx, const sched_run_opts *ro, sched_run_stats *stats, sched_run **run,
                            canopy_err *err);
/** Workers of the run asleep for lack of work right now (any thread may ask). */
int sched_run_sleepers(const sched_run *run);

/** One external dependency of @p task is satisfied; thread-safe, from any thread. */
void sched_release(sched_run *run, int task);
canopy_status sched_go(sched_run *run, int *task_result);
/** Free a prepared run (run or not). */
void sched_discard(sched_run *run);

/** Worker running the current task. */
int sched_worker_id(const sched_worker *w);

/** Block until *counter == value; returns 0, or nonzero if the run was aborted meanwhile. */
int sched_wait_equal(sched_worker *w, const atomic_int *counter, int value);

/** Wake workers waiting in sched_wait_equal after a counter they may wait on changed. */
void sched_wake(sched_worker *w);
/** The same from a thread that is not a worker (a communication thread applying a message). */
void sched_run_wake(sched_run *run);

/**
 * Inspection aid (tests, traces): the sub-queues worker @p thread visits, in order, when it looks
 * for work in a dynamic run of @p dag on @p pool. Entry k is the part of candidate victim[k] in
 * the queue of Snode snode[k] (victim[k] == thread: its own part). Writes min(cap, *count)
 * entries; *count receives the full length. CANOPY_ERR_ARGUMENT for an invalid Snode tree.
 */
canopy_status sched_visit_order(const sched_pool *pool, const sched_dag *dag, int thread, int cap, int *snode,
                                int *victim, int *count, canopy_err *err);

#endif
