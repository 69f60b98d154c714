/*
 * The engine's own types (sched/engine.c, sched/engine_setup.c): the pool, its workers, one run's
 * queues and counters. Nothing outside sched/engine*.c includes this file.
 */
#ifndef CANOPY_SCHED_ENGINE_PARTS_H
#define CANOPY_SCHED_ENGINE_PARTS_H

#include "base/config.h"
#include <pthread.h>
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


/* Status of a failed canopy_alloc: what it recorded (NOMEM or TOO_LARGE), NOMEM without a record. */
static inline canopy_status sched_nomem(const canopy_err *err)
{
    return err && err->status != CANOPY_SUCCESS ? err->status : CANOPY_ERR_NOMEM;
}

/* ---- sub-queues (binary max-heaps on prio, ties: smaller task first): the set-up pushes the
 * tasks ready at the start, the workers the rest --------------------------------------------- */

static inline bool sched_before(const double *prio, int a, int b)
{
    return prio[a] > prio[b] || (prio[a] == prio[b] && a < b);
}

static inline void sched_heap_push(sched_subq *q, const double *prio, int task)
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

static inline int sched_heap_pop(sched_subq *q, const double *prio)
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

static inline void sched_push(sched_run *run, int task)
{
    sched_subq *q = &run->subq[run->task_subq[task]];
    pthread_mutex_lock(&q->mu);
    sched_heap_push(q, run->dag->prio, task);
    atomic_store_explicit(&q->size, q->n, memory_order_relaxed);
    pthread_mutex_unlock(&q->mu);
}

/* engine_setup.c: check @p d and allocate, count and queue one run (run->dynamic chosen by the
 * caller; @p ext: external dependencies per task, or NULL); sched_run_free releases it */
canopy_status sched_setup(const sched_pool *pool, const sched_dag *d, const int *ext, sched_run *run, canopy_err *err);
void sched_run_free(sched_run *run);

#endif
