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
    int *blok_contrib;            /**< [nblok] as the plan's, numbered among this rank's contributions
                                       into the same target (-1: private or not this rank's) */
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
    double update_max;            /**< the largest update product of its cblks (update buffers) */
    double panel_max;             /**< the largest stride x width of its cblks (LDL^T scratch) */
    /* figures of the whole plan (every rank computes the same) */
    int64_t fanin_msgs;           /**< fan-in messages of all ranks (a cut buffer: several; per part: x2 for LU) */
    int64_t fanin_entries;        /**< the buffers' scalars, as whole panels (uncompressed), once per buffer */
    int64_t update_msgs;          /**< remote updates: the messages without fan-in */
    int64_t update_entries;       /**< their scalars */
} sched_local;

/**
 * Extract rank @p rank's share of @p P (built for @p S with any number of ranks; one rank gives
 * the whole plan on its threads). @p parts: buffers per fan-in (2 for LU: L and U, else 1).
 */
canopy_status sched_plan_local(const symbolic *S, const sched_plan *P, int rank, int parts, sched_local *L,
                               canopy_err *err);

void sched_local_free(sched_local *L);

/**
 * The rows of fan-in buffers: for each pair q of @p pairs (target cblk j * @p nranks + sending
 * rank r, sorted and unique), @p rows[q] = how many rows of j's panel the updates of rank r's
 * cblks into j write: for every facing group of a cblk k of rank r facing j, the rows of k's
 * bloks from that group on, each inside one blok of j (2D tiles write subsets of the same rows).
 * With @p moff (NULL: every pair, no maps), only the pairs with moff[q] >= 0 are done, and
 * @p maps[moff[q] + i] gets the buffer row of panel row i of j (rows numbered in panel order),
 * or -1, for i < stride of j. A pure function of the structure and the ranks of the cblks, so
 * that the sender and the receiver derive the same layout without a message.
 */
/**
 * The memory of every rank's fan-in buffers and update buffers, [nranks] each (scalars, one part):
 * @p peak: the most fan-in buffer scalars alive at once on the rank, by the plan's simulated
 * times: a sent buffer (each message of a cut one, sched_fanin_cuts) lives from its first
 * contribution (which allocates it: a SUBTREE task's at its time in the plan, blok_time, an
 * UPDATE's when its task ends) until its receiver took it: its last contribution plus a time in
 * flight (2 ms, the exchange's longest nap while workers are busy, plus the copy at 5 GB/s; the
 * messages of one burst are in flight together), at most the target's panel; a received buffer from its arrival (the
 * sender's last contribution) to the start of the target's panel task (which adds and frees it:
 * scheduler=static).
 * @p peak_arrival: the same with received buffers added into the panel on arrival
 * (scheduler=dynamic): they count only at that instant. Intervals that touch count together.
 * @p sink: the largest buffer the rank receives; @p upd: the largest update product (source rows x
 * facing rows) of the rank's cblks; @p panel: their largest stride x width. Any of them may be NULL.
 */
canopy_status sched_fanin_memory(const symbolic *S, const sched_plan *P, double *peak, double *peak_arrival, double *sink,
                                 double *upd, double *panel, canopy_err *err);

/**
 * sched_fanin_memory of @p P for every rank, computed once per plan and kept in P->memo:
 * @p v = [5 * nranks]: peak, peak_arrival, sink, upd, panel, nranks each. Not thread-safe on its
 * first call for a plan.
 */
canopy_status sched_plan_fanin_memory(const symbolic *S, const sched_plan *P, const double **v, canopy_err *err);

/** A fan-in buffer goes in at most this many messages (sched_fanin_cuts). */
#define SCHED_FANIN_SEGS 8

/**
 * Fan-in buffers sent in several messages: for each pair q of @p pairs (as sched_fanin_rows'),
 * @p nmsg[q] messages (1: the buffer goes whole), and @p cuts[q * (SCHED_FANIN_SEGS - 1) + s] for
 * s < nmsg[q] - 1: how many of the sending rank's contributions into the target (in the plan's
 * order, i.e. by their simulated times) come before cut s, ascending. A buffer (of at least 32768
 * scalars unless P->fanin_cuts is 2) is cut at every gap of at least 2% of the predicted factorization between two of its
 * contributions in the plan
 * (the widest SCHED_FANIN_SEGS - 1 of them): a rank's subtrees contribute to the top separators
 * early, each of its top cblks in a burst after its panel, and one buffer would be held through all
 * of it. Then a cap: where a rank's open buffers (each counted whole, from a message's first
 * contribution to its last) would hold more than half its own factor's scalars, the open buffers
 * whose next contribution comes last are cut at that moment until it is under again (at most
 * SCHED_FANIN_SEGS messages a buffer). Each message is sent when its last contribution is in and
 * holds only its own contributions' rows (sched_fanin_msgrows); the next contribution allocates a
 * new buffer. Every rank derives the same cuts from the plan (the receiver expects every message).
 * Plans without blok_time, or with fanin_cuts 0, cut nothing.
 */
canopy_status sched_fanin_cuts(const symbolic *S, const sched_plan *P, const int64_t *pairs, size_t nu, int *nmsg,
                               int *cuts, canopy_err *err);

canopy_status sched_fanin_rows(const symbolic *S, const int *cblk_rank, int nranks, cint root_first, const int64_t *pairs,
                               size_t np, cint *rows, const int64_t *moff, cint *maps, canopy_err *err);

/**
 * The rows of each message of the fan-in buffers of @p pairs (as sched_fanin_rows') when buffer q
 * goes in @p nmsg[q] messages cut at @p cuts (as sched_fanin_cuts gives them; both NULL: every
 * buffer whole): @p rows[q * SCHED_FANIN_SEGS + s], s < nmsg[q], = how many rows of the target's
 * panel the contributions of message s write (the sending rank's contributions into the target
 * numbered in the plan's order, blok_contrib and task_contrib: those from cuts[s - 1] to
 * cuts[s] - 1; an UPDATE2D task writes only its facing group's rows). The rows of the messages of
 * one buffer together are sched_fanin_rows' rows. With @p loff (NULL: every pair, counts only):
 * a pair with loff[q * SCHED_FANIN_SEGS] == -1 is skipped (its rows left 0); for each (q, s) with
 * loff[q * SCHED_FANIN_SEGS + s] >= 0 and @p lists, lists from there gets the message's panel
 * rows, ascending (-2: counted only). A pure function of the plan: every rank derives the same.
 */
canopy_status sched_fanin_msgrows(const symbolic *S, const sched_plan *P, const int64_t *pairs, size_t np, const int *nmsg,
                                  const int *cuts, cint *rows, const int64_t *loff, cint *lists, canopy_err *err);

#endif
