/*
 * Simulation of a task graph on threads with predicted task costs (list scheduling), and the
 * critical-path priorities it uses. Internal to sched/: the plan builds the graph and the candidate
 * sets (sched/plan_tasks.c) and runs the simulation (sched/plan.c), this file decides who runs
 * what and in which order.
 */
#ifndef CANOPY_SCHED_SIMULATE_H
#define CANOPY_SCHED_SIMULATE_H

#include "base/common.h"
#include "dag.h"

/**
 * Bottom-level priorities: prio[i] = cost[i] + max over successors of their prio (the length of
 * the longest path from the start of i to the end of the graph). Needs ntasks, the edges and
 * cost; fills d->prio (allocated here if NULL). Fails on a cycle.
 */
canopy_status sched_bottom_level(sched_dag *d, canopy_err *err);

/**
 * Event-driven list scheduling (see simulate.c): whenever threads are idle, the ready task of
 * highest priority (d->prio; ties: lower id) among the Snodes that hold an idle thread starts on
 * @p pref[i] (its data owner) if that thread is idle, else on the lowest idle thread of its Snode
 * (d->snode: the candidate set). Tasks with serial[i] >= 0 (key < nserial) never overlap another
 * task of the same key (updates into one target cblk are applied one at a time); @p serial may
 * be NULL. Needs the edges, cost, prio, snode and the Snode tree with a leaf per thread.
 * Fills d->owner, d->predicted_time (makespan) and d->list_ptr / d->list (allocated here if
 * NULL): each thread's tasks in assignment order, which is one topological order of the whole
 * graph and nondecreasing in start time. Fills seq (assignment order), start and end (seconds)
 * when not NULL. @p groups: see sched_sim_groups.
 */
/**
 * Ranks in the simulation (may be NULL: one rank). group[i] is task i's rank, -1 while undecided
 * (a shared cblk's panel: the simulation picks a thread among all its candidate ranks, and its
 * rank becomes the panel's); follow[i] >= 0 makes task i run on the rank of task follow[i] (the
 * panel of its cblk), which has ended before i is released: i's Snode becomes that rank's
 * group_snode and its preferred thread the panel's. An edge from group a to a different or
 * undecided group b delivers after delay[successor] seconds.
 */
typedef struct sched_sim_groups {
    int size;                 /**< threads per group */
    int ngroups;
    int *group;               /**< [ntasks], updated as undecided tasks are placed */
    const double *delay;      /**< [ntasks] */
    const int *follow;        /**< [ntasks] */
    const int *group_snode;   /**< [ngroups] Snode of each group's threads */
    const double *edge_delay; /**< [edges] NULL, or the delay of each edge (indexed like succ) instead of
                                   delay[successor] (top2d: broadcast depths, tile sizes) */
} sched_sim_groups;

canopy_status sched_simulate(sched_dag *d, int *pref, const cint *serial, cint nserial, sched_sim_groups *groups,
                             int *seq, double *start, double *end, canopy_err *err);

#endif
