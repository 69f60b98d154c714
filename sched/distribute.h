/*
 * One rank's share of a plan (sched/plan.h): its tasks as a graph for its own threads, the
 * contributions it sums, and the fan-in buffers it sends and receives. Pure structure: which
 * messages exist, never how they travel (comm/ does that).
 *
 * Fan-in (papers/numa-scheduler-pastix.txt section 4): the updates of this rank's cblks into a
 * cblk j of another rank are summed into one buffer holding the rows of j's panel they write
 * (sched_fanin_rows; all of j's columns: rows x width, its L part and its U part for LU) and
 * sent once the last of them is applied; the owner of j adds the buffers of every contributing
 * rank, in rank order, at the start of j's panel task (scheduler=static; dynamic adds each on
 * arrival, src/numeric/factor_par_template.c). A panel task therefore waits for its local
 * predecessors and for ext[task] = (buffers per fan-in) x (contributing ranks) messages.
 */
#ifndef CANOPY_SCHED_DISTRIBUTE_H
#define CANOPY_SCHED_DISTRIBUTE_H

#include "base/common.h"
#include "plan.h"
#include "base/structure.h"
#include "fanin.h"

typedef struct sched_local {
    int rank, nranks;
    int nthreads;                 /**< threads of this rank */
    sched_dag factor;             /**< this rank's tasks, threads 0..nthreads-1, Snodes of its part */
    int *ext;                     /**< [factor.ntasks] fan-in messages a task waits for (PANEL only) */
    int *task_global;             /**< [factor.ntasks] the task's id in the plan */
    const int *cblk_rank;         /**< [ncblk] borrowed from the plan */
    sched_root root;              /**< the plan's root on a grid (sched/root.h; n == 0: none) */
    int *cblk_task;               /**< [ncblk] local task factoring the cblk, -1 on another rank */
    int *cblk_owner;              /**< [ncblk] local data-owner thread, -1 on another rank */
    cint *contrib_base;           /**< [ncblk] where cblk k's bloks start in blok_contrib, -1 when none of its
                                       groups contributes from this rank (sched_local_contrib reads both) */
    int *blok_contrib;            /**< [ncontrib_bloks] as the plan's, numbered among this rank's contributions
                                       into the same target (-1: private or not this rank's), for the bloks of
                                       the cblks that contribute from this rank only (not 4 bytes of every blok) */
    int64_t ncontrib_bloks;
    int *task_contrib;            /**< [factor.ntasks] UPDATE2D tasks: their number in the same sequence
                                       as blok_contrib; -1 for the other tasks */
    int *cblk_ncontrib;           /**< [ncblk] this rank's contributions into the cblk (local or not) */
    int fanin_cuts;               /**< the plan's fanin_cuts: buffers cut, SUBTREE contributions deferred */
    uint64_t cut_hash;            /**< a fingerprint of every buffer's cuts (all pairs): a sender and its receiver
                                       must agree on them, so the ranks compare it (different plans otherwise) */
    int *defer_ptr;               /**< [factor.ntasks + 1] a SUBTREE task's groups into other ranks' cblks,
                                       applied after the rest of the task (sched_subtree_deferred): */
    cint *defer_cblk, *defer_blok;/**<   source cblk and first blok of each, defer_ptr[l] .. defer_ptr[l+1]-1 */
    cint *recv_ptr;               /**< [ncblk + 1] fan-in messages into local cblk j (a cut buffer: several): */
    int *recv_rank;               /**<   their senders, recv_rank[recv_ptr[j] .. recv_ptr[j+1]-1], ascending */
    cint nsend;                   /**< cblks of other ranks this rank sends a fan-in buffer to */
    cint *send_cblk;              /**< [nsend] ascending */
    /* compressed fan-in messages: each holds only the rows of the target's panel that its own
       contributions write (sched_fanin_msgrows), all of the target's columns: rows x width,
       column-major */
    cint *send_rows;              /**< [nsend * SCHED_FANIN_SEGS] rows of message s of the buffer sent to
                                       send_cblk[q], at q * SCHED_FANIN_SEGS + s (s < send_nmsg[q]) */
    int *send_nmsg;               /**< [nsend] messages the buffer goes in (sched_fanin_cuts; 1: whole) */
    int *send_cut;                /**< [nsend * (SCHED_FANIN_SEGS - 1)] contributions before each cut, -1 after
                                       the last: message s holds the contributions numbered (blok_contrib,
                                       task_contrib) from send_cut[s - 1] (0) to send_cut[s] - 1 (the last) */
    unsigned char *recv_seg;      /**< [recv_ptr[ncblk]] which message of its sender's buffer (0, 1, ...) */
    cint *recv_rows;              /**< [recv_ptr[ncblk]] rows of each message received */
    int64_t *send_moff;           /**< [nsend * SCHED_FANIN_SEGS] offset in fan_rmap of each sent message's row map:
                                       panel row -> message row, -1 for a row it does not hold (stride of the target) */
    int64_t *recv_moff;           /**< [recv_ptr[ncblk]] offset in fan_rmap of each received message's rows: the
                                       panel rows it holds, ascending (recv_rows of them) */
    cint *fan_rmap;               /**< the row maps and row lists above */
    /* this rank's memory (sched_fanin_memory): scalars, one part (LU doubles them) */
    double fanin_peak;            /**< fan-in buffers alive at once at most, as the simulation runs, received
                                       ones held until their panel task (scheduler=static) */
    double fanin_peak_arrival;    /**< the same with received ones added on arrival (scheduler=dynamic) */
    double fanin_sink;            /**< the largest buffer it receives (the exchange's sink) */
    double update_max;            /**< the largest of its workers' update buffers (sched_plan_memory) */
    double panel_max;             /**< the largest of its workers' panels (LDL^T scratch) */
    double *thread_upd;           /**< [nthreads] the largest update product among the tasks each thread may
                                       run (sched_thread_work): its update buffer */
    double *thread_panel;         /**< [nthreads] the same for panels (its LDL^T scratch) */
    /* top2d flat, executed (sched_src_rank): the facing groups of the tiled cblks go from their TRSM
       to the ranks of the UPDATE2Ds that read them along comm/tree's binary tree over [the cblk's
       rank, the readers ascending] (NULL otherwise) */
    int *xsend_ptr;               /**< [factor.ntasks + 1] a local TRSM's children in its group's tree: */
    int *xsend_rank;              /**<   xsend_rank[xsend_ptr[l] .. xsend_ptr[l + 1] - 1] */
    int64_t nxsend;               /**< messages its TRSMs send */
    cint nxrecv;                  /**< groups received: */
    cint *xrecv_blok;             /**<   [nxrecv] the group's first blok, ascending */
    cint *xrecv_cblk;             /**<   [nxrecv] its cblk */
    int *xrecv_peer;              /**<   [nxrecv] its parent in the group's tree (the sender) */
    int *xrecv_ptr, *xrecv_task;  /**<   [nxrecv + 1] the local UPDATE2Ds it releases */
    int *xfwd_ptr, *xfwd_rank;    /**<   [nxrecv + 1] its children in the tree (this rank forwards to them) */
    int *xuse;                    /**< [ncblk] local UPDATE2Ds reading cblk k of another rank (its copy's life) */
    /* figures of the whole plan (every rank computes the same) */
    int64_t fanin_msgs;           /**< fan-in messages of all ranks (a cut buffer: several; per part: x2 for LU) */
    int64_t fanin_entries;        /**< the buffers' scalars, as whole panels (uncompressed), once per buffer */
    int64_t update_msgs;          /**< remote updates: the messages without fan-in */
    int64_t update_entries;       /**< their scalars */
} sched_local;

/** The contribution number of blok @p b, the first of a facing group of cblk @p k (L->blok_contrib):
 *  -1 when the group is private or not this rank's. */
static inline int sched_local_contrib(const sched_local *L, const symbolic *S, cint k, cint b)
{
    cint o = L->contrib_base[k];
    return o < 0 ? -1 : L->blok_contrib[o + (b - S->cblk_fblok[k])];
}

/**
 * Extract rank @p rank's share of @p P (built for @p S with any number of ranks; one rank gives
 * the whole plan on its threads). @p parts: buffers per fan-in (2 for LU: L and U, else 1).
 * Fills P->memo on its first call for @p P (sched_plan_memory): never concurrently on one plan.
 */
canopy_status sched_plan_local(const symbolic *S, const sched_plan *P, int rank, int parts, sched_local *L,
                               canopy_err *err);

void sched_local_free(sched_local *L);

/**
 * Each thread's workspace needs, [P->factor.nthreads] each (threads numbered as the plan's, rank r's
 * from r x threads per rank): @p upd the largest update buffer (sched_update_need: the product of the
 * rows from the facing group on x the group's rows, in chunks above P->update_cap; an UPDATE2D
 * task's rows the same way; a SUBTREE task's largest of its cblks') and
 * @p panel the largest panel (stride x width of a PANEL, DIAG or SUBTREE task's cblks; none for the
 * grid's root) among the tasks the thread may run under either scheduler: those of the Snodes on
 * its path in its rank's tree and of their sons (the dynamic engine's visiting order,
 * sched/engine.c; a static list holds only tasks of its thread's path). A pure function of the plan.
 */
canopy_status sched_thread_work(const symbolic *S, const sched_plan *P, double *upd, double *panel, canopy_err *err);

/**
 * The buffer (scalars, one side) an update of cblk k's facing group starting at blok @p fb0 needs
 * for its rows in bloks @p rb0 .. @p rb1 - 1: the whole product (rows x the group's rows) when it is
 * at most @p cap (or cap <= 0); else the product goes in chunks of whole bloks, the first holding
 * the facing group's square when rb0 == fb0, each at most max(cap, the square, the tallest single
 * blok's product): that maximum. The workers chunk by the same rule.
 */
double sched_update_need(const symbolic *S, cint k, cint fb0, cint rb0, cint rb1, int64_t cap);

/**
 * sched_fanin_memory of @p P for every rank, and sched_thread_work for every thread,
 * computed once per plan and kept in P->memo: @p v = [5 * nranks + 2 * threads]: peak,
 * peak_arrival, sink, upd, panel (nranks each: the largest of the rank's threads' on several
 * ranks; the largest product and panel anywhere on one, as numeric.c sizes its workers), then each
 * thread's upd and panel (the plan's threads each). Not thread-safe on its first call for a plan.
 */
canopy_status sched_plan_memory(const symbolic *S, const sched_plan *P, const double **v, canopy_err *err);

#endif
