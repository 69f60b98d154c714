/*
 * Worker pool and the two executors of a task graph (sched/engine.h). Owns the threads, the
 * ready queues, the wake-ups, the abort protocol and the run statistics; knows nothing about what
 * a task computes, about MPI or about memory placement (the init hook binds, src/ decides).
 *
 * Pool. Persistent workers sleep on pool->job_cv between jobs. A job (one sched_execute or one
 * sched_pool_run_all) is published under pool->mu with a new generation number; every worker
 * takes it, runs it and counts itself finished under the same mutex; the caller (never a worker)
 * sleeps on done_cv until all have finished. Everything a run writes per worker (statistics,
 * events) is therefore visible to the caller without further ordering. Callers are serialized
 * by call_mu, so one pool runs one job at a time.
 *
 * Event count (pool->evc): the one place where workers sleep inside a job: idle dynamic workers,
 * static workers waiting for a predecessor, and tasks in sched_wait_equal. Protocol:
 *   waiter:   key = epoch (seq_cst load); re-check its condition; if still false, lock mu,
 *             sleepers++ (seq_cst), sleep while epoch == key (seq_cst load), sleepers--, unlock.
 *   notifier: change the state; epoch++ (seq_cst RMW); if sleepers > 0 (seq_cst load): lock mu,
 *             broadcast, unlock.
 * No lost wake-up: if the waiter's key already includes the notifier's increment, the RMW
 * released the state change to the waiter's acquiring load, so the re-check sees it. Otherwise,
 * in the single order of the seq_cst operations, either the notifier's load of sleepers comes
 * after the waiter's increment (it then takes mu, which the waiter holds from the increment until
 * cond_wait releases it, and its broadcast reaches the waiter) or it comes before, and then the
 * notifier's epoch++ precedes the waiter's epoch load under mu, which sees key changed and does
 * not sleep. Notifiers pay one RMW and one load when nobody sleeps. Waiters first spin a few
 * hundred times (pause, then sched_yield so that an oversubscribed core is handed over), and
 * after a wake-up they re-check once and sleep again without spinning (every notify is a
 * broadcast, so most wake-ups concern someone else).
 *
 * Dynamic scheduler (after papers/numa-scheduler-pastix.txt §5.2). Every Snode s = [t0, t1) has
 * one sub-queue per candidate thread; a task always goes to sub-queue (snode[task], owner[task])
 * (the first candidate when the owner lies outside the range), both when it is ready at the start
 * and when its last predecessor ends: the queue of the thread whose memory holds its data. A
 * sub-queue is a binary max-heap on prio (ties: smaller task first) under its own mutex, with an
 * atomic size read before locking so that empty queues cost one load. Worker t visits, in an
 * order computed once per run:
 *   1. the Snodes of its path, from its leaf up to the root; in each, its own sub-queue first,
 *      then the other candidates' nearest first (distance matrix, else |t - v|, ties by number);
 *   2. two-way stealing: for each path Snode, again from the lowest, the sub-queues of its sons
 *      that are not on the path, nearest victim first.
 * A task taken from another thread's sub-queue counts as a steal from that thread. No ready task
 * can be stranded: sub-queue (s, c) has c in range(s), and the run checks that every Snode whose
 * range holds c is on c's path, so c itself visits it.
 *
 * Static scheduler: each worker runs its list in order, waiting on each task's remaining count.
 * Both: a task's end decrements its successors (acq_rel: the last decrement acquires every
 * predecessor's writes and releases them to whoever runs the successor); waiters are notified
 * only when someone else may be waiting (a successor becoming ready for another thread, any push
 * in dynamic mode, the end of the run, an abort).
 *
 * Abort: the first nonzero task result is stored by CAS, then the abort flag, then a notify:
 * workers start no new task, waits return nonzero, and the job ends when every worker has left.
 *
 * Bad graphs would hang or corrupt a run, so sched_execute checks in O(tasks + edges) what it
 * relies on (counts equal to the edges, acyclic, static lists free of deadlock, Snode paths) and
 * returns CANOPY_ERR_ARGUMENT instead. Everything is allocated before the workers start.
 */
#include "base/config.h"
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include "engine.h"

#define SCHED_SPIN 256       /* idle polls before sleeping */
#define SCHED_SPIN_PAUSE 64  /* the first polls use the CPU pause hint, later ones yield the core */
#define SCHED_PAD 64         /* keeps hot per-thread / per-queue fields on separate cache lines */

typedef struct sched_evcount {
    atomic_uint epoch;
    atomic_int sleepers;
    pthread_mutex_t mu;
    pthread_cond_t cv;
} sched_evcount;

typedef struct sched_subq {
    pthread_mutex_t mu;
    atomic_int size;     /* copy of n, read without the lock as a hint */
    int n;               /* under mu */
    int thread;          /* candidate whose data this sub-queue holds */
    int *heap;           /* capacity: the tasks statically mapped here */
    char pad[SCHED_PAD];
} sched_subq;

typedef struct sched_run {
    const sched_dag *dag;
    bool dynamic;
    sched_task_fn fn;
    void *ctx;
    void (*idle)(void *arg, int thread);  /* instead of sleeping (workers that poll MPI), or NULL */
    void *idle_arg;
    void (*on_wait)(void *arg);           /* before a worker sleeps, or NULL */
    void *on_wait_arg;
    void (*drive)(void *arg);
    void *drive_arg;
    sched_pool *pool;
    sched_run_stats *stats;
    sched_event *events;
    double t0;
    atomic_int *remaining;   /* [ntasks] predecessors not finished yet */
    int *runner;             /* static: [ntasks] thread whose list holds the task */
    sched_subq *subq;        /* dynamic: [nsubq] */
    int nsubq, nsubq_init;
    int *task_subq;          /* dynamic: [ntasks] sub-queue of each task */
    int *heaps;              /* dynamic: storage of all heaps */
    int *order_ptr, *order;  /* dynamic: visiting order of each worker */
    char pad0[SCHED_PAD];
    atomic_int abort;
    atomic_int result;
    char pad1[SCHED_PAD];
    atomic_int ndone;        /* dynamic: tasks finished */
    char pad2[SCHED_PAD];
} sched_run;

struct sched_worker {
    sched_pool *pool;
    sched_run *run;          /* current run, NULL during run_all; written by this worker only */
    int id;
    int64_t tasks, steals;
    double busy, last_end;
    int64_t task_work, task_reported; /* the running task's share of the progress, and what it told */
    char pad[SCHED_PAD];
};

enum sched_job { SCHED_JOB_NONE, SCHED_JOB_ALL, SCHED_JOB_RUN, SCHED_JOB_STOP };

struct sched_pool {
    int nthreads;
    int *distance;
    sched_thread_init init;
    void *init_arg;
    pthread_t *threads;
    sched_worker *workers;
    pthread_mutex_t call_mu;       /* one job at a time */
    pthread_mutex_t mu;            /* guards everything below */
    pthread_cond_t job_cv, done_cv;
    unsigned generation;
    enum sched_job job;
    void (*all_fn)(void *, int);
    void *all_arg;
    sched_run *run;
    int nfinished, nstarted;
    int nsync;                     /* synchronization objects initialized (for cleanup) */
    sched_evcount evc;
    /* the current run's predicted work, finished and in all (ns of the cost model), read by
     * sched_pool_progress from any thread */
    _Atomic int64_t progress_done, progress_total;
};

/* The worker running on this thread, to refuse a nested call that could never finish. */
static _Thread_local sched_worker *sched_self;

/* ---- event count ----------------------------------------------------------------------------- */

static unsigned sched_evc_prepare(sched_evcount *e)
{
    return atomic_load_explicit(&e->epoch, memory_order_seq_cst);
}

static void sched_evc_wait(sched_evcount *e, unsigned key)
{
    pthread_mutex_lock(&e->mu);
    atomic_fetch_add_explicit(&e->sleepers, 1, memory_order_seq_cst);
    while (atomic_load_explicit(&e->epoch, memory_order_seq_cst) == key) pthread_cond_wait(&e->cv, &e->mu);
    atomic_fetch_sub_explicit(&e->sleepers, 1, memory_order_relaxed);
    pthread_mutex_unlock(&e->mu);
}

static void sched_evc_notify(sched_evcount *e)
{
    atomic_fetch_add_explicit(&e->epoch, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&e->sleepers, memory_order_seq_cst) > 0) {
        pthread_mutex_lock(&e->mu);
        pthread_cond_broadcast(&e->cv);
        pthread_mutex_unlock(&e->mu);
    }
}

static void sched_relax(int i)
{
    if (i < SCHED_SPIN_PAUSE) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
        __builtin_ia32_pause();
#elif defined(__GNUC__) && defined(__aarch64__)
        __asm__ __volatile__("yield");
#endif
    } else {
        sched_yield();
    }
}

/* Wait until *c == value (returns 0) or the run aborts (returns 1). */
static int sched_wait_until(sched_worker *w, const atomic_int *c, int value)
{
    sched_evcount *evc = &w->pool->evc;
    const sched_run *run = w->run;
    int spin = 0;
    for (;;) {
        if (atomic_load_explicit(c, memory_order_acquire) == value) return 0;
        if (run && atomic_load_explicit(&run->abort, memory_order_acquire)) return 1;
        if (run && run->idle) {
            /* someone must drive progress: never sleep */
            run->idle(run->idle_arg, w->id);
            sched_relax(spin < SCHED_SPIN ? spin++ : spin);
            continue;
        }
        if (spin < SCHED_SPIN) {
            sched_relax(spin++);
            continue;
        }
        unsigned key = sched_evc_prepare(evc);
        if (atomic_load_explicit(c, memory_order_acquire) == value) return 0;
        if (run && atomic_load_explicit(&run->abort, memory_order_acquire)) return 1;
        if (run && run->on_wait) run->on_wait(run->on_wait_arg);
        sched_evc_wait(evc, key);
    }
}

int sched_worker_id(const sched_worker *w) { return w ? w->id : -1; }

int sched_wait_equal(sched_worker *w, const atomic_int *counter, int value)
{
    if (w == NULL || counter == NULL) return 1;
    return sched_wait_until(w, counter, value);
}

void sched_wake(sched_worker *w)
{
    if (w) sched_evc_notify(&w->pool->evc);
}

void sched_run_wake(sched_run *run)
{
    if (run) sched_evc_notify(&run->pool->evc);
}

/* ---- sub-queues (binary max-heaps on prio, ties: smaller task first) ------------------------- */

static bool sched_before(const double *prio, int a, int b)
{
    return prio[a] > prio[b] || (prio[a] == prio[b] && a < b);
}

static void sched_heap_push(sched_subq *q, const double *prio, int task)
{
    int i = q->n++;
    while (i > 0) {
        int p = (i - 1) / 2;
        if (!sched_before(prio, task, q->heap[p])) break;
        q->heap[i] = q->heap[p];
        i = p;
    }
    q->heap[i] = task;
}

static int sched_heap_pop(sched_subq *q, const double *prio)
{
    int top = q->heap[0], last = q->heap[--q->n], n = q->n, i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && sched_before(prio, q->heap[c + 1], q->heap[c])) c++;
        if (!sched_before(prio, q->heap[c], last)) break;
        q->heap[i] = q->heap[c];
        i = c;
    }
    if (n > 0) q->heap[i] = last;
    return top;
}

static void sched_push(sched_run *run, int task)
{
    sched_subq *q = &run->subq[run->task_subq[task]];
    pthread_mutex_lock(&q->mu);
    sched_heap_push(q, run->dag->prio, task);
    atomic_store_explicit(&q->size, q->n, memory_order_relaxed);
    pthread_mutex_unlock(&q->mu);
}

/* First task found along this worker's visiting order; *victim = its queue's thread or -1. */
static int sched_find(const sched_worker *w, sched_run *run, int *victim)
{
    const int *ord = run->order + run->order_ptr[w->id];
    int n = run->order_ptr[w->id + 1] - run->order_ptr[w->id];
    for (int k = 0; k < n; k++) {
        sched_subq *q = &run->subq[ord[k]];
        if (atomic_load_explicit(&q->size, memory_order_relaxed) == 0) continue;
        int task = -1;
        pthread_mutex_lock(&q->mu);
        if (q->n > 0) {
            task = sched_heap_pop(q, run->dag->prio);
            atomic_store_explicit(&q->size, q->n, memory_order_relaxed);
        }
        pthread_mutex_unlock(&q->mu);
        if (task >= 0) {
            *victim = q->thread == w->id ? -1 : q->thread;
            return task;
        }
    }
    return -1;
}

/* ---- running tasks ---------------------------------------------------------------------------- */

static void sched_abort(sched_pool *pool, sched_run *run, int value)
{
    int expected = 0;
    atomic_compare_exchange_strong_explicit(&run->result, &expected, value, memory_order_acq_rel,
                                            memory_order_relaxed);
    atomic_store_explicit(&run->abort, 1, memory_order_release);
    sched_evc_notify(&pool->evc);
}

/* A task's share of the progress: its predicted time (ns), or one when the graph has no costs. */
static int64_t task_work(const sched_dag *d, int task)
{
    return d->cost ? (int64_t)(d->cost[task] * 1e9) + 1 : 1;
}

void sched_worker_progress(sched_worker *w, double fraction)
{
    if (w == NULL || !(fraction > 0)) return;
    int64_t target = fraction >= 1 ? w->task_work : (int64_t)(fraction * (double)w->task_work);
    if (target <= w->task_reported) return;
    atomic_fetch_add_explicit(&w->pool->progress_done, target - w->task_reported, memory_order_relaxed);
    w->task_reported = target;
}

void sched_pool_progress_reset(sched_pool *pool)
{
    if (pool == NULL) return;
    atomic_store_explicit(&pool->progress_total, 0, memory_order_relaxed);
    atomic_store_explicit(&pool->progress_done, 0, memory_order_relaxed);
}

double sched_pool_progress(const sched_pool *pool)
{
    if (pool == NULL) return -1;
    int64_t total = atomic_load_explicit(&pool->progress_total, memory_order_relaxed);
    int64_t done = atomic_load_explicit(&pool->progress_done, memory_order_relaxed);
    return total > 0 ? CANOPY_MIN(1.0, (double)done / (double)total) : -1;
}

/* Run one task and release its successors; false when the run is (or becomes) aborted. */
static bool sched_run_task(sched_worker *w, sched_run *run, int task, int victim)
{
    if (atomic_load_explicit(&run->abort, memory_order_acquire)) return false;
    const sched_dag *d = run->dag;
    double start = canopy_wtime();
    w->task_work = task_work(d, task);
    w->task_reported = 0;
    int r = run->fn(run->ctx, task, w);
    double end = canopy_wtime();
    if (w->task_work > w->task_reported)
        atomic_fetch_add_explicit(&run->pool->progress_done, w->task_work - w->task_reported, memory_order_relaxed);
    w->busy += end - start;
    w->tasks++;
    if (victim >= 0) w->steals++;
    if (end - run->t0 > w->last_end) w->last_end = end - run->t0;
    if (run->events) {
        sched_event *ev = &run->events[task];
        ev->task = task;
        ev->thread = w->id;
        ev->victim = victim;
        ev->start = start - run->t0;
        ev->end = end - run->t0;
    }
    if (r != 0) {
        sched_abort(w->pool, run, r);
        return false;
    }
    bool wake = false;
    for (int p = d->succ_ptr[task]; p < d->succ_ptr[task + 1]; p++) {
        int s = d->succ[p];
        if (atomic_fetch_sub_explicit(&run->remaining[s], 1, memory_order_acq_rel) != 1) continue;
        if (run->dynamic) {
            sched_push(run, s);
            wake = true;
        } else if (run->runner[s] != w->id) {
            wake = true;
        }
    }
    if (run->dynamic && atomic_fetch_add_explicit(&run->ndone, 1, memory_order_acq_rel) + 1 == d->ntasks)
        wake = true;
    if (wake) sched_evc_notify(&w->pool->evc);
    return true;
}

static void sched_worker_static(sched_worker *w, sched_run *run)
{
    const sched_dag *d = run->dag;
    for (int i = d->list_ptr[w->id]; i < d->list_ptr[w->id + 1]; i++) {
        int task = d->list[i];
        if (sched_wait_until(w, &run->remaining[task], 0)) return;
        if (!sched_run_task(w, run, task, -1)) return;
    }
}

static bool sched_dynamic_over(const sched_run *run)
{
    return atomic_load_explicit(&run->abort, memory_order_acquire) ||
           atomic_load_explicit(&run->ndone, memory_order_acquire) == run->dag->ntasks;
}

static void sched_worker_dynamic(sched_worker *w, sched_run *run)
{
    sched_evcount *evc = &w->pool->evc;
    int spin = 0;
    bool armed = false;   /* key taken and the queues re-checked after it: may sleep */
    unsigned key = 0;
    for (;;) {
        int victim = -1;
        int task = sched_find(w, run, &victim);
        if (task >= 0) {
            if (!sched_run_task(w, run, task, victim)) return;
            spin = 0;
            armed = false;
            continue;
        }
        if (sched_dynamic_over(run)) return;
        if (run->idle) {
            run->idle(run->idle_arg, w->id);
            sched_relax(spin < SCHED_SPIN ? spin++ : spin);
        } else if (armed) {
            if (run->on_wait) run->on_wait(run->on_wait_arg);
            sched_evc_wait(evc, key);
            armed = false;
        } else if (spin < SCHED_SPIN) {
            sched_relax(spin++);
        } else {
            key = sched_evc_prepare(evc);
            armed = true;
        }
    }
}

static void *sched_worker_main(void *arg)
{
    sched_worker *w = arg;
    sched_pool *pool = w->pool;
    sched_self = w;
    if (pool->init) pool->init(pool->init_arg, w->id);
    unsigned seen = 0;
    pthread_mutex_lock(&pool->mu);
    if (++pool->nstarted == pool->nthreads) pthread_cond_broadcast(&pool->done_cv);
    for (;;) {
        while (pool->generation == seen) pthread_cond_wait(&pool->job_cv, &pool->mu);
        seen = pool->generation;
        enum sched_job job = pool->job;
        if (job == SCHED_JOB_STOP) break;
        void (*fn)(void *, int) = pool->all_fn;
        void *fn_arg = pool->all_arg;
        w->run = pool->run;
        pthread_mutex_unlock(&pool->mu);
        if (job == SCHED_JOB_ALL) {
            fn(fn_arg, w->id);
        } else if (job == SCHED_JOB_RUN) {
            if (w->run->dynamic) sched_worker_dynamic(w, w->run);
            else sched_worker_static(w, w->run);
        }
        w->run = NULL;
        pthread_mutex_lock(&pool->mu);
        if (++pool->nfinished == pool->nthreads) pthread_cond_signal(&pool->done_cv);
    }
    pthread_mutex_unlock(&pool->mu);
    return NULL;
}

/* Publish a job and sleep until every worker has finished it. Caller holds call_mu. */
static void sched_dispatch(sched_pool *pool, enum sched_job job, sched_run *run, void (*fn)(void *, int),
                           void *arg)
{
    pthread_mutex_lock(&pool->mu);
    pool->job = job;
    pool->run = run;
    pool->all_fn = fn;
    pool->all_arg = arg;
    pool->nfinished = 0;
    pool->generation++;
    pthread_cond_broadcast(&pool->job_cv);
    if (run != NULL && run->drive != NULL) {
        /* the calling thread's own part (MPI progress) while the workers run */
        pthread_mutex_unlock(&pool->mu);
        run->drive(run->drive_arg);
        pthread_mutex_lock(&pool->mu);
    }
    while (pool->nfinished < pool->nthreads) pthread_cond_wait(&pool->done_cv, &pool->mu);
    pool->job = SCHED_JOB_NONE;
    pool->run = NULL;
    pool->all_fn = NULL;
    pool->all_arg = NULL;
    pthread_mutex_unlock(&pool->mu);
}

/* ---- pool ------------------------------------------------------------------------------------- */

/* Status of a failed canopy_alloc: what it recorded (NOMEM or TOO_LARGE), NOMEM without a record. */
static canopy_status sched_nomem(const canopy_err *err)
{
    return err && err->status != CANOPY_SUCCESS ? err->status : CANOPY_ERR_NOMEM;
}

/* Destroy the first pool->nsync synchronization objects, in the reverse order of creation. */
static void sched_pool_sync_destroy(sched_pool *pool)
{
    if (pool->nsync > 5) pthread_cond_destroy(&pool->evc.cv);
    if (pool->nsync > 4) pthread_mutex_destroy(&pool->evc.mu);
    if (pool->nsync > 3) pthread_cond_destroy(&pool->done_cv);
    if (pool->nsync > 2) pthread_cond_destroy(&pool->job_cv);
    if (pool->nsync > 1) pthread_mutex_destroy(&pool->mu);
    if (pool->nsync > 0) pthread_mutex_destroy(&pool->call_mu);
    pool->nsync = 0;
}

static int sched_pool_sync_init(sched_pool *pool)
{
    if (pthread_mutex_init(&pool->call_mu, NULL)) return -1;
    pool->nsync = 1;
    if (pthread_mutex_init(&pool->mu, NULL)) return -1;
    pool->nsync = 2;
    if (pthread_cond_init(&pool->job_cv, NULL)) return -1;
    pool->nsync = 3;
    if (pthread_cond_init(&pool->done_cv, NULL)) return -1;
    pool->nsync = 4;
    if (pthread_mutex_init(&pool->evc.mu, NULL)) return -1;
    pool->nsync = 5;
    if (pthread_cond_init(&pool->evc.cv, NULL)) return -1;
    pool->nsync = 6;
    return 0;
}

/* Stop and join the first @p started workers, then release everything. */
static void sched_pool_teardown(sched_pool *pool, int started)
{
    if (started > 0) {
        pthread_mutex_lock(&pool->mu);
        pool->job = SCHED_JOB_STOP;
        pool->generation++;
        pthread_cond_broadcast(&pool->job_cv);
        pthread_mutex_unlock(&pool->mu);
        for (int t = 0; t < started; t++) pthread_join(pool->threads[t], NULL);
    }
    sched_pool_sync_destroy(pool);
    canopy_free(pool->threads);
    canopy_free(pool->workers);
    canopy_free(pool->distance);
    canopy_free(pool);
}

canopy_status sched_pool_create(int nthreads, sched_thread_init init, void *arg, const int *distance,
                                sched_pool **out, canopy_err *err)
{
    if (out == NULL) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "sched_pool_create: out is NULL");
    *out = NULL;
    if (nthreads < 1)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "sched_pool_create: %d threads (need at least 1)", nthreads);
    size_t nd = 0;
    if (distance && !canopy_mul_ok((size_t)nthreads, (size_t)nthreads, &nd))
        return canopy_err_set(err, CANOPY_ERR_TOO_LARGE, "sched_pool_create: %d threads", nthreads);
    sched_pool *pool = canopy_calloc(1, sizeof *pool, "thread pool", err);
    if (pool == NULL) return sched_nomem(err);
    pool->nthreads = nthreads;
    pool->init = init;
    pool->init_arg = arg;
    pool->threads = canopy_calloc((size_t)nthreads, sizeof *pool->threads, "worker threads", err);
    pool->workers = canopy_calloc((size_t)nthreads, sizeof *pool->workers, "workers", err);
    if (distance) pool->distance = canopy_alloc(nd, sizeof *pool->distance, "thread distances", err);
    if (pool->threads == NULL || pool->workers == NULL || (distance && pool->distance == NULL)) {
        sched_pool_teardown(pool, 0);
        return sched_nomem(err);
    }
    if (distance) memcpy(pool->distance, distance, nd * sizeof *distance);
    atomic_init(&pool->evc.epoch, 0u);
    atomic_init(&pool->evc.sleepers, 0);
    atomic_init(&pool->progress_done, 0);
    atomic_init(&pool->progress_total, 0);
    if (sched_pool_sync_init(pool)) {
        sched_pool_teardown(pool, 0);
        return canopy_err_set(err, CANOPY_ERR_INTERNAL, "sched_pool_create: cannot create a mutex or condition");
    }
    for (int t = 0; t < nthreads; t++) {
        pool->workers[t].pool = pool;
        pool->workers[t].id = t;
    }
    for (int t = 0; t < nthreads; t++) {
        int rc = pthread_create(&pool->threads[t], NULL, sched_worker_main, &pool->workers[t]);
        if (rc != 0) {
            sched_pool_teardown(pool, t);
            return canopy_err_set(err, CANOPY_ERR_NOMEM, "sched_pool_create: cannot start worker %d of %d (error %d)",
                                  t, nthreads, rc);
        }
    }
    /* Return once every worker ran its init hook: binding is in place before the first job. */
    pthread_mutex_lock(&pool->mu);
    while (pool->nstarted < nthreads) pthread_cond_wait(&pool->done_cv, &pool->mu);
    pthread_mutex_unlock(&pool->mu);
    *out = pool;
    return CANOPY_SUCCESS;
}

void sched_pool_destroy(sched_pool *pool)
{
    if (pool == NULL) return;
    pthread_mutex_lock(&pool->call_mu);   /* let a job in progress on another thread end first */
    pthread_mutex_unlock(&pool->call_mu);
    sched_pool_teardown(pool, pool->nthreads);
}

int sched_pool_threads(const sched_pool *pool) { return pool ? pool->nthreads : 0; }

void sched_pool_run_all(sched_pool *pool, void (*fn)(void *arg, int thread), void *arg)
{
    /* From inside one of the pool's own jobs this could never finish: do nothing instead. */
    if (pool == NULL || fn == NULL || (sched_self && sched_self->pool == pool)) return;
    pthread_mutex_lock(&pool->call_mu);
    sched_dispatch(pool, SCHED_JOB_ALL, NULL, fn, arg);
    pthread_mutex_unlock(&pool->call_mu);
}

/* ---- checks and set-up of one run ------------------------------------------------------------- */

/* Successor lists in range and npred equal to the in-degrees. @p cnt: [ntasks] scratch. */
static canopy_status sched_check_edges(const sched_dag *d, int *cnt, canopy_err *err)
{
    int n = d->ntasks;
    if (d->succ_ptr[0] != 0)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "task graph: succ_ptr[0] = %d", d->succ_ptr[0]);
    memset(cnt, 0, (size_t)n * sizeof *cnt);
    for (int i = 0; i < n; i++) {
        if (d->succ_ptr[i + 1] < d->succ_ptr[i])
            return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "task graph: succ_ptr decreases at task %d", i);
        for (int p = d->succ_ptr[i]; p < d->succ_ptr[i + 1]; p++) {
            int s = d->succ[p];
            if (s < 0 || s >= n)
                return canopy_err_set(err, CANOPY_ERR_ARGUMENT,
                                      "task graph: successor %d of task %d out of range 0..%d", s, i, n - 1);
            cnt[s]++;
        }
    }
    for (int i = 0; i < n; i++)
        if (cnt[i] != d->npred[i])
            return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "task graph: task %d has npred %d but %d incoming edges", i,
                                  d->npred[i], cnt[i]);
    return CANOPY_SUCCESS;
}

/* Kahn's algorithm: a cycle would leave the dynamic run waiting forever. */
static canopy_status sched_check_acyclic(const sched_dag *d, int *cnt, int *queue, canopy_err *err)
{
    int n = d->ntasks, head = 0, tail = 0;
    for (int i = 0; i < n; i++) {
        cnt[i] = d->npred[i];
        if (cnt[i] == 0) queue[tail++] = i;
    }
    while (head < tail) {
        int t = queue[head++];
        for (int p = d->succ_ptr[t]; p < d->succ_ptr[t + 1]; p++)
            if (--cnt[d->succ[p]] == 0) queue[tail++] = d->succ[p];
    }
    if (tail < n)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "task graph: %d tasks lie on or after a cycle", n - tail);
    return CANOPY_SUCCESS;
}

/* Every task in exactly one list (fills runner), and the lists can all run to the end. */
static canopy_status sched_check_lists(const sched_dag *d, int *runner, int *cnt, int *stack, canopy_err *err)
{
    int n = d->ntasks, nt = d->nthreads;
    if (d->list_ptr[0] != 0 || d->list_ptr[nt] != n)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "task graph: static lists hold %d tasks, not %d",
                              d->list_ptr[nt] - d->list_ptr[0], n);
    for (int i = 0; i < n; i++) runner[i] = -1;
    for (int t = 0; t < nt; t++) {
        if (d->list_ptr[t + 1] < d->list_ptr[t])
            return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "task graph: list_ptr decreases at thread %d", t);
        for (int i = d->list_ptr[t]; i < d->list_ptr[t + 1]; i++) {
            int task = d->list[i];
            if (task < 0 || task >= n || runner[task] >= 0)
                return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "task graph: list entry %d of thread %d is %s", i, t,
                                      task < 0 || task >= n ? "out of range" : "a task already listed");
            runner[task] = t;
        }
    }
    /* Play the static schedule: a thread advances while the head of its list is ready. At most
     * nt + n pushes (each task becomes ready once), so the stack needs n + nt entries. */
    int *pos = stack + n + nt;   /* [nt] */
    int top = 0, done = 0;
    for (int i = 0; i < n; i++) cnt[i] = d->npred[i];
    for (int t = 0; t < nt; t++) {
        pos[t] = d->list_ptr[t];
        stack[top++] = t;
    }
    while (top > 0) {
        int t = stack[--top];
        while (pos[t] < d->list_ptr[t + 1] && cnt[d->list[pos[t]]] == 0) {
            int task = d->list[pos[t]++];
            done++;
            for (int p = d->succ_ptr[task]; p < d->succ_ptr[task + 1]; p++) {
                int s = d->succ[p], r = runner[s];
                if (--cnt[s] == 0 && r != t && pos[r] < d->list_ptr[r + 1] && d->list[pos[r]] == s) stack[top++] = r;
            }
        }
    }
    if (done < n)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "task graph: static lists deadlock after %d of %d tasks",
                              done, n);
    return CANOPY_SUCCESS;
}

static int sched_distance(const sched_pool *pool, int t, int v)
{
    return pool->distance ? pool->distance[(size_t)t * (size_t)pool->nthreads + (size_t)v] : abs(t - v);
}

/* Snode tree scratch, freed at the end of the set-up. */
typedef struct sched_tree {
    int *depth, *leaf, *base, *child_ptr, *child, *path, *key, *thr, *item;
} sched_tree;

/* Append to tr->item the sub-queues of Snode s but thread @p skip, nearest to t first (ties: by
 * thread; within one group a thread appears once, as sons of one Snode are disjoint). */
static int sched_append_sorted(const sched_pool *pool, const sched_dag *d, const sched_tree *tr, int t, int s,
                               int skip, int m)
{
    int *key = tr->key, *thr = tr->thr, *item = tr->item;
    for (int c = d->snode_t0[s]; c < d->snode_t1[s]; c++) {
        if (c == skip) continue;
        int k = sched_distance(pool, t, c), j = m++;
        /* insertion sort: victims are few and the order is built once per run */
        while (j > 0 && (key[j - 1] > k || (key[j - 1] == k && thr[j - 1] > c))) {
            key[j] = key[j - 1];
            thr[j] = thr[j - 1];
            item[j] = item[j - 1];
            j--;
        }
        key[j] = k;
        thr[j] = c;
        item[j] = tr->base[s] + c - d->snode_t0[s];
    }
    return m;
}

/* Visiting order of thread t (see the top of the file); returns its length, writes it if @p out. */
static int sched_build_order(const sched_pool *pool, const sched_dag *d, const sched_tree *tr, int t, int *out)
{
    int len = 0, np = 0;
    for (int s = tr->leaf[t]; s >= 0; s = d->snode_parent[s]) tr->path[np++] = s;
    for (int k = 0; k < np; k++) {
        int s = tr->path[k];
        if (out) {
            out[len] = tr->base[s] + t - d->snode_t0[s];
            int m = sched_append_sorted(pool, d, tr, t, s, t, 0);
            memcpy(out + len + 1, tr->item, (size_t)m * sizeof *out);
        }
        len += d->snode_t1[s] - d->snode_t0[s];
    }
    for (int k = 0; k < np; k++) {
        int s = tr->path[k], m = 0;
        for (int p = tr->child_ptr[s]; p < tr->child_ptr[s + 1]; p++) {
            int u = tr->child[p];
            if (t >= d->snode_t0[u] && t < d->snode_t1[u]) continue;   /* on the path */
            if (out) m = sched_append_sorted(pool, d, tr, t, u, -1, m);
            else m += d->snode_t1[u] - d->snode_t0[u];
        }
        if (out) memcpy(out + len, tr->item, (size_t)m * sizeof *out);
        len += m;
    }
    return len;
}

/* Snode tree checks; fills depth, leaf, base (first sub-queue of each Snode), children. */
static canopy_status sched_check_snodes(const sched_dag *d, sched_tree *tr, int *nsubq, canopy_err *err)
{
    int ns = d->nsnodes, nt = d->nthreads;
    if (ns < 1 || d->snode_t0[0] != 0 || d->snode_t1[0] != nt || d->snode_parent[0] != -1)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "task graph: Snode 0 must be the root [0, %d)", nt);
    int total = 0;
    for (int s = 0; s < ns; s++) {
        int p = d->snode_parent[s], t0 = d->snode_t0[s], t1 = d->snode_t1[s];
        if (t0 < 0 || t1 > nt || t0 >= t1)
            return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "task graph: Snode %d has threads [%d, %d)", s, t0, t1);
        if (s > 0 && (p < 0 || p >= ns || p == s || t0 < d->snode_t0[p] || t1 > d->snode_t1[p]))
            return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "task graph: Snode %d has a bad parent %d", s, p);
        tr->base[s] = total;
        total += t1 - t0;
        tr->depth[s] = s == 0 ? 0 : -1;
    }
    *nsubq = total;
    for (int s = 0; s < ns; s++) {
        /* walk up to a known depth, remembering the way in path[] */
        int m = 0, u = s;
        while (tr->depth[u] < 0) {
            if (m == ns)
                return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "task graph: Snode %d is on a parent cycle", s);
            tr->path[m++] = u;
            u = d->snode_parent[u];
        }
        for (int k = m - 1; k >= 0; k--) tr->depth[tr->path[k]] = tr->depth[d->snode_parent[tr->path[k]]] + 1;
    }
    /* leaf of t: the deepest Snode holding t; every Snode holding t must be on its path */
    int *cnt = tr->key;
    for (int t = 0; t < nt; t++) {
        tr->leaf[t] = 0;
        cnt[t] = 0;
    }
    for (int s = 0; s < ns; s++)
        for (int t = d->snode_t0[s]; t < d->snode_t1[s]; t++) {
            cnt[t]++;
            if (tr->depth[s] > tr->depth[tr->leaf[t]]) tr->leaf[t] = s;
        }
    for (int t = 0; t < nt; t++)
        if (cnt[t] != tr->depth[tr->leaf[t]] + 1)
            return canopy_err_set(err, CANOPY_ERR_ARGUMENT,
                                  "task graph: the Snodes holding thread %d do not form one path to the root", t);
    for (int s = 0; s <= ns; s++) tr->child_ptr[s] = 0;
    for (int s = 1; s < ns; s++) tr->child_ptr[d->snode_parent[s] + 1]++;
    for (int s = 0; s < ns; s++) tr->child_ptr[s + 1] += tr->child_ptr[s];
    for (int s = 1; s < ns; s++) tr->child[tr->child_ptr[d->snode_parent[s]]++] = s;
    for (int s = ns; s > 0; s--) tr->child_ptr[s] = tr->child_ptr[s - 1];
    tr->child_ptr[0] = 0;
    return CANOPY_SUCCESS;
}

static void sched_run_free(sched_run *run)
{
    for (int q = 0; q < run->nsubq_init; q++) pthread_mutex_destroy(&run->subq[q].mu);
    canopy_free(run->remaining);
    canopy_free(run->runner);
    canopy_free(run->subq);
    canopy_free(run->task_subq);
    canopy_free(run->heaps);
    canopy_free(run->order_ptr);
    canopy_free(run->order);
}

static void sched_tree_free(sched_tree *tr)
{
    canopy_free(tr->depth);
    canopy_free(tr->leaf);
    canopy_free(tr->base);
    canopy_free(tr->child_ptr);
    canopy_free(tr->child);
    canopy_free(tr->path);
    canopy_free(tr->key);
    canopy_free(tr->thr);
    canopy_free(tr->item);
}

/* Allocate the scratch of the Snode tree and check the tree (sched_check_snodes). */
static canopy_status sched_tree_setup(const sched_dag *d, sched_tree *tr, int *nsubq, canopy_err *err)
{
    int ns = d->nsnodes, nt = d->nthreads;
    if (ns < 1 || !d->snode_t0 || !d->snode_t1 || !d->snode_parent)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "task graph: no Snode tree (need at least the root)");
    size_t nsz = (size_t)ns;
    tr->depth = canopy_alloc(nsz, sizeof(int), "Snode depths", err);
    tr->leaf = canopy_alloc((size_t)nt, sizeof(int), "leaf Snodes", err);
    tr->base = canopy_alloc(nsz, sizeof(int), "Snode queues", err);
    tr->child_ptr = canopy_alloc(nsz + 1, sizeof(int), "Snode sons", err);
    tr->child = canopy_alloc(nsz, sizeof(int), "Snode sons", err);
    tr->path = canopy_alloc(nsz, sizeof(int), "Snode path", err);
    tr->key = canopy_alloc((size_t)nt, sizeof(int), "victim order", err);
    tr->thr = canopy_alloc((size_t)nt, sizeof(int), "victim order", err);
    tr->item = canopy_alloc((size_t)nt, sizeof(int), "victim order", err);
    if (!tr->depth || !tr->leaf || !tr->base || !tr->child_ptr || !tr->child || !tr->path || !tr->key || !tr->thr ||
        !tr->item)
        return sched_nomem(err);
    return sched_check_snodes(d, tr, nsubq, err);
}

/* Queues, task placement and visiting orders of a dynamic run; pushes the initially ready tasks. */
static canopy_status sched_setup_dynamic(const sched_pool *pool, const sched_dag *d, sched_run *run, canopy_err *err)
{
    int n = d->ntasks, nt = d->nthreads, ns = d->nsnodes;
    sched_tree tr = {0};
    canopy_status st = sched_tree_setup(d, &tr, &run->nsubq, err);
    if (st != CANOPY_SUCCESS) goto out;
    run->task_subq = canopy_alloc((size_t)n, sizeof(int), "task queues", err);
    run->heaps = canopy_alloc((size_t)n, sizeof(int), "queue storage", err);
    run->subq = canopy_calloc((size_t)run->nsubq, sizeof *run->subq, "sub-queues", err);
    run->order_ptr = canopy_alloc((size_t)nt + 1, sizeof(int), "visiting orders", err);
    if (!run->task_subq || !run->heaps || !run->subq || !run->order_ptr) {
        st = sched_nomem(err);
        goto out;
    }
    for (int i = 0; i < n; i++) {
        int s = d->snode[i], o = d->owner[i];
        if (s < 0 || s >= ns || o < 0 || o >= nt) {
            st = canopy_err_set(err, CANOPY_ERR_ARGUMENT, "task graph: task %d has Snode %d and owner %d", i, s, o);
            goto out;
        }
        int c = o >= d->snode_t0[s] && o < d->snode_t1[s] ? o : d->snode_t0[s];
        run->task_subq[i] = tr.base[s] + c - d->snode_t0[s];
        run->subq[run->task_subq[i]].n++;   /* capacity count, reset below */
    }
    for (int s = 0, off = 0; s < ns; s++)
        for (int c = d->snode_t0[s]; c < d->snode_t1[s]; c++) {
            sched_subq *q = &run->subq[tr.base[s] + c - d->snode_t0[s]];
            q->heap = run->heaps + off;
            off += q->n;
            q->n = 0;
            q->thread = c;
            atomic_init(&q->size, 0);
        }
    for (; run->nsubq_init < run->nsubq; run->nsubq_init++)
        if (pthread_mutex_init(&run->subq[run->nsubq_init].mu, NULL)) {
            st = canopy_err_set(err, CANOPY_ERR_INTERNAL, "sched_execute: cannot create a queue mutex");
            goto out;
        }
    run->order_ptr[0] = 0;
    for (int t = 0; t < nt; t++) {
        int len = sched_build_order(pool, d, &tr, t, NULL);
        if (len > INT_MAX - run->order_ptr[t]) {
            st = canopy_err_set(err, CANOPY_ERR_TOO_LARGE, "sched_execute: Snode paths too long for %d threads", nt);
            goto out;
        }
        run->order_ptr[t + 1] = run->order_ptr[t] + len;
    }
    run->order = canopy_alloc((size_t)run->order_ptr[nt] + 1, sizeof(int), "visiting orders", err);
    if (run->order == NULL) {
        st = sched_nomem(err);
        goto out;
    }
    for (int t = 0; t < nt; t++) sched_build_order(pool, d, &tr, t, run->order + run->order_ptr[t]);
    for (int i = 0; i < n; i++)
        if (atomic_load_explicit(&run->remaining[i], memory_order_relaxed) == 0) sched_push(run, i);
    st = CANOPY_SUCCESS;
out:
    sched_tree_free(&tr);
    return st;
}

static canopy_status sched_setup(const sched_pool *pool, const sched_dag *d, const int *ext, sched_run *run,
                                 canopy_err *err)
{
    int n = d->ntasks;
    canopy_status st;
    int *cnt = canopy_alloc((size_t)n, sizeof(int), "task counts", err);
    int *stack = canopy_alloc((size_t)n + 2 * (size_t)d->nthreads, sizeof(int), "task stack", err);
    run->remaining = canopy_alloc((size_t)n, sizeof *run->remaining, "remaining predecessors", err);
    if (!run->dynamic) run->runner = canopy_alloc((size_t)n, sizeof(int), "task runners", err);
    if (!cnt || !stack || !run->remaining || (!run->dynamic && !run->runner)) {
        st = sched_nomem(err);
        goto out;
    }
    if ((st = sched_check_edges(d, cnt, err)) != CANOPY_SUCCESS) goto out;
    if (run->dynamic) st = sched_check_acyclic(d, cnt, stack, err);
    else st = sched_check_lists(d, run->runner, cnt, stack, err);
    if (st != CANOPY_SUCCESS) goto out;
    for (int i = 0; i < n; i++) {
        if (ext && ext[i] < 0) {
            st = canopy_err_set(err, CANOPY_ERR_ARGUMENT, "task graph: task %d has %d external dependencies", i, ext[i]);
            goto out;
        }
        atomic_init(&run->remaining[i], d->npred[i] + (ext ? ext[i] : 0));
    }
    atomic_init(&run->abort, 0);
    atomic_init(&run->result, 0);
    atomic_init(&run->ndone, 0);
    if (run->dynamic) st = sched_setup_dynamic(pool, d, run, err);
out:
    canopy_free(cnt);
    canopy_free(stack);
    return st;
}

canopy_status sched_visit_order(const sched_pool *pool, const sched_dag *dag, int thread, int cap, int *snode,
                                int *victim, int *count, canopy_err *err)
{
    if (count) *count = 0;
    if (pool == NULL || dag == NULL || count == NULL || (cap > 0 && (snode == NULL || victim == NULL)))
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "sched_visit_order: NULL argument");
    if (dag->nthreads != pool->nthreads || thread < 0 || thread >= pool->nthreads)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT,
                              "sched_visit_order: thread %d of a graph for %d threads on a pool of %d", thread,
                              dag->nthreads, pool->nthreads);
    sched_tree tr = {0};
    int nsubq = 0, *order = NULL;
    canopy_status st = sched_tree_setup(dag, &tr, &nsubq, err);
    if (st == CANOPY_SUCCESS) {
        int len = sched_build_order(pool, dag, &tr, thread, NULL);
        order = canopy_alloc((size_t)len + 1, sizeof(int), "visiting order", err);
        if (order == NULL) {
            st = sched_nomem(err);
        } else {
            sched_build_order(pool, dag, &tr, thread, order);
            *count = len;
            for (int k = 0, s = 0; k < CANOPY_MIN(cap, len); k++) {
                for (s = 0; s + 1 < dag->nsnodes && tr.base[s + 1] <= order[k]; s++) {
                }
                snode[k] = s;
                victim[k] = dag->snode_t0[s] + order[k] - tr.base[s];
            }
        }
    }
    canopy_free(order);
    sched_tree_free(&tr);
    return st;
}

/* ---- execute ---------------------------------------------------------------------------------- */

static void sched_stats_clear(sched_run_stats *stats, int nthreads)
{
    if (stats == NULL) return;
    stats->wall = 0;
    for (int t = 0; t < nthreads; t++) {
        if (stats->busy) stats->busy[t] = 0;
        if (stats->steals) stats->steals[t] = 0;
        if (stats->tasks_run) stats->tasks_run[t] = 0;
    }
}

canopy_status sched_prepare(sched_pool *pool, const sched_dag *dag, canopy_scheduler scheduler, sched_task_fn fn,
                            void *ctx, const sched_run_opts *ro, sched_run_stats *stats, sched_run **out,
                            canopy_err *err)
{
    if (out) *out = NULL;
    if (pool == NULL || dag == NULL || fn == NULL || out == NULL)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "sched_prepare: %s is NULL",
                              pool == NULL ? "pool" : dag == NULL ? "task graph" : fn == NULL ? "task function" : "out");
    if (sched_self && sched_self->pool == pool)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "sched_execute: called from a task of the same pool");
    if (scheduler != CANOPY_SCHED_STATIC && scheduler != CANOPY_SCHED_DYNAMIC)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "sched_execute: unknown scheduler %d", (int)scheduler);
    if (dag->nthreads != pool->nthreads)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "sched_execute: graph for %d threads on a pool of %d",
                              dag->nthreads, pool->nthreads);
    if (dag->ntasks < 0) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "sched_execute: %d tasks", dag->ntasks);
    sched_stats_clear(stats, pool->nthreads);
    bool dynamic = scheduler == CANOPY_SCHED_DYNAMIC;
    if (dag->ntasks > 0 &&
        (!dag->npred || !dag->succ_ptr || (!dag->succ && dag->succ_ptr[dag->ntasks] > 0) ||
         (!dynamic && (!dag->list_ptr || !dag->list)) || (dynamic && (!dag->owner || !dag->snode || !dag->prio))))
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT,
                              "sched_execute: the task graph lacks arrays the %s scheduler needs",
                              dynamic ? "dynamic" : "static");
    sched_run *run = canopy_calloc(1, sizeof *run, "task run", err);
    if (run == NULL) return sched_nomem(err);
    run->dag = dag;
    run->dynamic = dynamic;
    run->fn = fn;
    run->ctx = ctx;
    run->pool = pool;
    run->stats = stats;
    run->idle = ro ? ro->idle : NULL;
    run->idle_arg = ro ? ro->idle_arg : NULL;
    run->on_wait = ro ? ro->on_wait : NULL;
    run->on_wait_arg = ro ? ro->on_wait_arg : NULL;
    run->drive = ro ? ro->drive : NULL;
    run->drive_arg = ro ? ro->drive_arg : NULL;
    run->events = stats ? stats->events : NULL;
    if (dag->ntasks > 0) {
        canopy_status st = sched_setup(pool, dag, ro ? ro->ext : NULL, run, err);
        if (st != CANOPY_SUCCESS) {
            sched_run_free(run);
            canopy_free(run);
            return st;
        }
    }
    if (run->events)
        for (int i = 0; i < dag->ntasks; i++) run->events[i] = (sched_event){i, -1, -1, 0.0, 0.0};
    *out = run;
    return CANOPY_SUCCESS;
}

int sched_run_sleepers(const sched_run *run)
{
    return run ? atomic_load_explicit(&run->pool->evc.sleepers, memory_order_relaxed) : 0;
}

void sched_release(sched_run *run, int task)
{
    if (run == NULL || task < 0 || task >= run->dag->ntasks) return;
    if (atomic_fetch_sub_explicit(&run->remaining[task], 1, memory_order_acq_rel) != 1) return;
    if (run->dynamic) sched_push(run, task);
    sched_evc_notify(&run->pool->evc);
}

void sched_discard(sched_run *run)
{
    if (run == NULL) return;
    sched_run_free(run);
    canopy_free(run);
}

canopy_status sched_go(sched_run *run, int *task_result)
{
    if (task_result) *task_result = 0;
    if (run == NULL) return CANOPY_ERR_ARGUMENT;
    sched_pool *pool = run->pool;
    sched_run_stats *stats = run->stats;
    if (run->dag->ntasks > 0) {
        pthread_mutex_lock(&pool->call_mu);
        for (int t = 0; t < pool->nthreads; t++) {
            sched_worker *w = &pool->workers[t];
            w->tasks = w->steals = 0;
            w->busy = w->last_end = 0;
        }
        int64_t total = 0;
        for (int i = 0; i < run->dag->ntasks; i++) total += task_work(run->dag, i);
        atomic_store_explicit(&pool->progress_done, 0, memory_order_relaxed);
        atomic_store_explicit(&pool->progress_total, total, memory_order_relaxed);
        run->t0 = canopy_wtime();
        sched_dispatch(pool, SCHED_JOB_RUN, run, NULL, NULL);
        pthread_mutex_unlock(&pool->call_mu);
        if (stats) {
            for (int t = 0; t < pool->nthreads; t++) {
                const sched_worker *w = &pool->workers[t];
                if (stats->busy) stats->busy[t] = w->busy;
                if (stats->steals) stats->steals[t] = w->steals;
                if (stats->tasks_run) stats->tasks_run[t] = w->tasks;
                stats->wall = CANOPY_MAX(stats->wall, w->last_end);
            }
        }
        if (task_result) *task_result = atomic_load_explicit(&run->result, memory_order_relaxed);
    }
    return CANOPY_SUCCESS;
}

canopy_status sched_execute(sched_pool *pool, const sched_dag *dag, canopy_scheduler scheduler, sched_task_fn fn,
                            void *ctx, sched_run_stats *stats, int *task_result, canopy_err *err)
{
    if (task_result) *task_result = 0;
    sched_run *run = NULL;
    canopy_status st = sched_prepare(pool, dag, scheduler, fn, ctx, NULL, stats, &run, err);
    if (st != CANOPY_SUCCESS) return st;
    st = sched_go(run, task_result);
    sched_discard(run);
    return st;
}
