/*
 * A task graph ready to execute: what the plan builds from the block structure (factorization:
 * sched/plan_tasks.c, solve: sched/solvegraph.c) and what sched/engine.c runs. Plain arrays,
 * owned by whoever built the graph.
 *
 * Snodes: the queues of the dynamic scheduler. Each Snode is a range of threads [t0, t1) (its
 * candidate set); the ranges form a laminar family whose containment tree is the Snode tree,
 * root 0 = [0, nthreads). Every thread has a leaf Snode [t, t + 1) (possibly with no task).
 */
#ifndef CANOPY_SCHED_DAG_H
#define CANOPY_SCHED_DAG_H

#include <stddef.h>
#include <stdint.h>

/** Task kinds (for traces and for the task functions of src/). */
enum sched_task_kind {
    SCHED_TASK_PANEL = 0,    /**< factor the diagonal block and off-diagonal rows of one cblk */
    SCHED_TASK_UPDATE = 1,   /**< contribution of one cblk to one facing cblk */
    SCHED_TASK_SUBTREE = 2,  /**< a whole subtree of small cblks, run sequentially by one thread */
    SCHED_TASK_FORWARD = 3,  /**< forward substitution of one cblk (solve) */
    SCHED_TASK_BACKWARD = 4, /**< backward substitution of one cblk (solve) */
    /* 2D tasks: a wide cblk high in the tree, its off-diagonal rows tiled by facing group */
    SCHED_TASK_DIAG = 5,     /**< factor the diagonal block of a 2D cblk (fan-in arrives here) */
    SCHED_TASK_TRSM = 6,     /**< off-diagonal rows of one facing group of a 2D cblk */
    SCHED_TASK_UPDATE2D = 7  /**< one facing group's rows x another's columns, into the latter's cblk */
};
#define SCHED_TASK_NKINDS 8

typedef struct sched_dag {
    int nthreads;
    int ntasks;
    int *npred;          /**< [ntasks] number of predecessors */
    int *succ_ptr;       /**< [ntasks + 1] successors of task i: succ[succ_ptr[i] .. succ_ptr[i+1]-1] */
    int *succ;
    int *owner;          /**< [ntasks] thread of the static schedule (also the data owner hint) */
    int *snode;          /**< [ntasks] Snode holding the task in the dynamic scheduler */
    double *prio;        /**< [ntasks] larger runs sooner (critical-path length to the end) */
    int *list_ptr;       /**< [nthreads + 1] static schedule: thread t runs list[list_ptr[t] ..] in order */
    int *list;           /**< [ntasks]; every list respects one global topological order */
    /* what the trace shows */
    int *kind;           /**< [ntasks] enum sched_task_kind */
    int *cblk;           /**< [ntasks] cblk of the task (root = last cblk of a subtree range) */
    int *first;          /**< [ntasks] UPDATE: first blok of the facing group (all bloks of the
                              source cblk up to the next facing cblk); SUBTREE, FORWARD, BACKWARD:
                              first cblk of the range first..cblk (postorder, contiguous); PANEL,
                              DIAG: cblk; TRSM: first blok of its facing group; UPDATE2D: first blok
                              of the facing group whose cblk it updates (the columns) */
    int *tile;           /**< [ntasks] UPDATE2D: first blok of the facing group of its rows (>= first);
                              -1 for the other kinds. NULL when the graph has no 2D task */
    int *tile_end;       /**< [ntasks] UPDATE2D: the blok after its rows: the end of tile's group, or
                              for top2d flat's tiled cblks of a chunk of consecutive groups
                              (sched/plan.h); -1 for the other kinds; NULL with tile */
    int *level;          /**< [ntasks] depth of the task's Snode (0 = root) */
    double *cost;        /**< [ntasks] predicted seconds (cost model) */
    /* Snode tree */
    int nsnodes;
    int *snode_t0;       /**< [nsnodes] candidate threads [t0, t1) */
    int *snode_t1;
    int *snode_parent;   /**< [nsnodes] -1 for the root */
    int *snode_depth;    /**< [nsnodes] 0 for the root */
    double predicted_time; /**< makespan of the simulated schedule, seconds (0 if not simulated) */
} sched_dag;

/** Free the arrays of a graph (not the struct itself). */
void sched_dag_free(sched_dag *d);

/**
 * Check the invariants the engine relies on: counts consistent with the edges, every task in
 * exactly one static list, lists compatible with one topological order (no static deadlock), owner
 * inside its Snode's range, Snode ranges laminar and nested. Returns 0 if valid, else -1 with a
 * reason in @p why (may be NULL), or -2 when it ran out of memory checking.
 */
int sched_dag_check(const sched_dag *d, char *why, size_t whylen);

#endif
