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
 * relies on and returns CANOPY_ERR_ARGUMENT instead (sched/engine_setup.c, with the queues and
 * visiting orders). Everything is allocated before the workers start.
 */
#include "base/config.h"
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include "engine_parts.h"

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
