/*
 * Numerical factorization and triangular solves over the block structure of symbolic.h.
 * One source for every arithmetic: src/numeric/factor_template.c is compiled once per scalar type
 * (kernels_d.c: double; kernels_z.c: complex double) and numeric.c dispatches on the arith.
 *
 * Storage of the factors, per cblk k (panel of cblk_stride[k] x w_k, column-major):
 *  - LL^T: L panel: lower triangle of the diagonal block + off-diagonal bloks of L.
 *  - LDL^T: L panel: unit L below the diagonal, the diagonal of D on the diagonal of the diagonal
 *          block. D is block diagonal with 1x1 and 2x2 pivots; a 2x2 pivot on local columns j, j+1
 *          keeps D(j+1, j) in dsub[fcol + j] and a zero in the panel at (j+1, j), so the panel's
 *          diagonal block stays a plain unit lower triangle for TRSM.
 *  - LU:   L panel: diagonal block holds L (unit, strictly lower) and U (upper, with diagonal) as
 *          LAPACK getrf does; off-diagonal bloks hold L. U panel (same shape): off-diagonal bloks
 *          hold U^T (row r of the panel = column r of U); its diagonal block is not used.
 * Pivoting never leaves a cblk's diagonal block: LU interchanges rows inside it (partial pivoting),
 * LDL^T interchanges rows and columns symmetrically inside it (Bunch-Kaufman, 1x1 and 2x2 pivots);
 * the rows below (off-diagonal bloks) are not searched. When no candidate inside the block reaches
 * the threshold, the pivot is replaced by sign(p) * threshold and counted (static pivoting).
 */
#ifndef CANOPY_NUMERIC_H
#define CANOPY_NUMERIC_H

#include "base/common.h"
#include "symbolic/symbolic.h"
#include "sched/cost.h"
#include "sched/engine.h"
#include "sched/plan.h"
#include "sched/distribute.h"
#include "numa/topology.h"
#include "comm/exchange.h"
#include "comm/tags.h"

/*
 * How the factorization and the solves run, set by the phase driver. Without a pool everything
 * runs on the calling thread, cblk after cblk (the reference the threaded runs are tested against).
 *
 * Threaded factorization: the tasks of plan->factor (sched/plan.h). Contributions of one cblk to a
 * cblk factored by another task (the only writes two threads can make to one block) go through a
 * ticket lock per target cblk: a contribution holds ticket number t and waits until the target's
 * "serving" counter equals t, applies its update, and increments the counter. Under
 * scheduler=static the tickets are the plan's contribution numbers (plan->blok_contrib), so the
 * updates of every block are summed in one fixed order and the factors are bitwise the same run
 * after run; under scheduler=dynamic tickets are drawn on arrival (a FIFO lock). A product whose
 * turn has not come is handed over (numeric_handover) rather than waited for. Updates inside
 * one subtree task need no ticket: one thread owns the whole subtree.
 *
 * Memory: the factor arrays are untouched pages (numa/placement.h); with numa=local each worker
 * zeroes and assembles exactly the cblks it owns (plan->cblk_owner), so the first touch puts them
 * on its node; numa=global does it all from the calling thread; numa=interleave interleaves the
 * pages over the nodes first.
 */
typedef struct numeric_exec {
    sched_pool *pool;             /**< NULL: sequential on the calling thread */
    const sched_plan *plan;       /**< built for this structure, kind and pool size */
    const sched_dag *solve;       /**< sched_plan_solve_dag of the same plan (one rank) */
    const sched_local *local;     /**< this rank's share of the plan (what the workers run) */
    int comm_threads;             /**< several ranks: who drives MPI (comm/exchange.h) */
    const comm_tags *tags;        /**< several ranks: message ids to (communicator, tag) */
    canopy_tree tree;             /**< several ranks: shape of the solve's restricted collectives */
    MPI_Comm comm;                /**< several ranks: the solver's communicator */
    canopy_scheduler scheduler;
    canopy_numa numa;
    const numa_topo *topo;        /**< for numa=interleave and the placement report (may be NULL) */
    _Atomic int *stop;            /**< one rank: nonzero asks the factorization and the selected inversion
                                       to stop before their next task (canopy_interrupt); NULL: never */
} numeric_exec;

/*
 * A contribution computed before its turn under the ticket lock and handed over: whoever applies
 * the ticket before it applies it next (protocol in factor_par_template.c). Each worker owns
 * NUMERIC_SPARES + 1 of them, one per update buffer: the first is its full-size buffer, never
 * handed over; the spares (spare_scalars each) take the products that fit them.
 */
typedef struct numeric_handover {
    void *buf;                      /**< the product: the buffer it was computed in */
    cint k, fb0, fb1, rb0, rb1;     /**< what kupdate_rows computed: source, facing group, rows */
    int compute;                    /**< 0: a draining rank's placeholder, nothing to subtract */
    atomic_int busy;                /**< 1 from the hand-over until the product has been applied */
    int msg;                        /**< 1: a received fan-in message (scheduler=dynamic): buf is added
                                         through the row map of receive `recv`, then freed */
    int recv;                       /**< its receive: q * parts + part (sched_local.recv_ptr order) */
    int seg;                        /**< a contribution into another rank's cblk: the message it goes in */
} numeric_handover;

#define NUMERIC_SPARES 2 /* products a worker may leave behind before it has to wait its turn */
#define NUMERIC_SPARE_MAX 262144 /* scalars per spare at most (per side for LU): most handed-over
                                    products are far smaller than the largest update (2 MiB real) */

/** What the last threaded factorization or solve measured (arrays of nthreads / ntasks). */
/* The distributed solve cuts the products of a shared cblk into pieces of this many rows or
 * columns for the rank's workers, when they hold at least NUMERIC_SPLIT_MIN multiply-adds
 * (solve_dist_template.c; src/predict/predict.c models the same). */
#define NUMERIC_SPLIT_PIECE 64
#define NUMERIC_SPLIT_MIN 65536

typedef struct numeric_run {
    int nthreads;
    int ntasks;
    double wall;
    double fill;         /**< seconds zeroing (first time: faulting in) and assembling before the tasks */
    double *busy;
    int64_t *steals;
    int64_t *tasks;
    double *lock_wait;   /**< seconds each worker waited for a target block's ticket lock */
    int64_t *handed;     /**< contributions each worker handed over instead of waiting */
    double root[4];      /**< the root on its grid: waiting for every rank's tasks, to the tiles, the
                              grid's factorization, back to the panels (seconds, numeric_root_factor) */
    sched_event *events;
} numeric_run;

typedef struct numeric {
    const symbolic *S;              /**< borrowed, must outlive the factors */
    canopy_factorization kind;      /**< LLT, LDLT or LU (never AUTO) */
    canopy_arith arith;             /**< CANOPY_REAL or CANOPY_COMPLEX */
    size_t scalar_bytes;
    void *L;                        /**< panels held by this rank (all of them with one rank) */
    void *U;                        /**< LU only, same size */
    const int64_t *coef;            /**< [ncblk] offset of cblk k's panel in L and U: S->cblk_coef with one
                                         rank; with several, the rank's own cblks, -1 for the others */
    int64_t *lcoef;                 /**< several ranks: the storage of coef */
    int64_t ncoef;                  /**< scalars of L (and of U) */
    /* several ranks, while a factorization runs: the fan-in buffers (sched_local's compressed
       layout), each alive only from its first contribution to its send, or from its arrival to
       its addition into the panel: at once under scheduler=dynamic (a ticket of the target's
       lock, like a local contribution), by the panel task in rank order under static */
    void **fan_send;                /**< [send_msg[nsend]] by exchange message: message s of the buffer sent to
                                         send_cblk[q], part p, at send_msg[q] + s * parts + p; NULL until its
                                         first contribution; the exchange frees it */
    int *send_left;                 /**< [send_msg[nsend] / parts] contributions still to come into each message
                                         (send_msg[q] / parts + s), set at each factorization: the one that
                                         brings it to 0 sends it (under the target's ticket lock) */
    void **fan_recv;                /**< [recv_ptr[ncblk] x parts] buffer received, NULL until it arrives */
    int *send_slot;                 /**< [ncblk] first slot (fan_send) of the fan-in buffer of remote cblk j */
    int *send_msg;                  /**< [nsend + 1] first exchange message of fan-in buffer q (parts x its
                                         messages, sched_local.send_nmsg) */
    comm_exchange *xch;             /**< the exchange of the running factorization */
    void *aval;                     /**< several ranks: this rank's entries of A (amap order) */
    int64_t *send_order;            /**< several ranks: the value index in this rank's part of A of each
                                         entry it sends, rank by rank */
    int64_t *send_counts;           /**< [nranks] entries this rank sends each rank */
    int64_t *recv_counts;           /**< [nranks] entries this rank receives from each rank */
    int stress;                     /**< CANOPY_STRESS: random delays in the tasks */
    int64_t *peer_counts;           /**< several ranks: [4 x nranks] messages sent, bytes sent, messages
                                         received, bytes received per peer (last factorization) */
    double comm_idle;               /**< seconds the communication thread(s) slept or backed off */
    /* the distributed solve: the cblks this rank exchanges solution blocks for */
    int sol_nops;                   /**< cblks with members on several ranks that include this rank */
    cint *sol_cblk;                 /**< [sol_nops] ascending */
    int *sol_op;                    /**< [ncblk] index in sol_cblk, -1 */
    int64_t *sol_mptr;              /**< [sol_nops + 1] members of each: owner first, then ascending */
    int *sol_members;
    int64_t *solve_counts;          /**< [2] messages and bytes this rank sent in the last solve */
    int64_t sol_split;              /**< shared cblks whose products the workers ran in the last solve (or
                                         selected inversion over the ranks) */
    double sol_split_min;           /**< multiply-adds from which they do (0: NUMERIC_SPLIT_MIN; tests lower it) */
    /* the cblks whose whole subtree is on this rank: solved on all its threads, without messages */
    cint sol_nlocal;
    cint *sol_local;                /**< [sol_nlocal] ascending */
    cint *sol_lparent;              /**< [sol_nlocal] index of the parent in sol_local, -1 outside */
    cint *sol_kptr;                 /**< [sol_nlocal + 1] children of each, as indices in sol_local: */
    cint *sol_kids;                 /**<   sol_kids[sol_kptr[x] .. sol_kptr[x+1]-1] */
    size_t coef_bytes;              /**< bytes of L (and of U): numa_alloc_pages blocks */
    int fresh;                      /**< L and U are still the zero pages numa_alloc_pages returned */
    int64_t *amap_ptr;              /**< [ncblk+1] entries of A landing in cblk k: amap_ptr[k] .. amap_ptr[k+1]-1 */
    int64_t *amap_src;              /**< position of the entry in A's values */
    int64_t *amap_dst;              /**< its position in L (>= 0) or U (encoded -pos-2); built once */
    int64_t amap_nnz;               /**< entries kept (the upper triangle of symmetric kinds is not) */
    int64_t amap_nnz_in;            /**< entries of the matrix the map was built for */
    cint *fan_ptr;                  /**< [ncblk+1] off-diagonal bloks facing cblk j (sources in order): */
    cint *fan_blok;                 /**<   fan_blok[fan_ptr[j] .. fan_ptr[j+1]-1], for the fan-in forward solve, */
    cint *fan_cblk;                 /**<   and the cblk of each; on several ranks only the rank's own cblks'
                                         bloks (the solve reads no other), not 8 bytes of every blok */
    /* the threaded forward solve: each subtree task sums what it sends its ancestors in a
       contribution block laid out like its root's off-diagonal rows (built with the workers) */
    cint *sub_root;                 /**< [ncblk] root of the subtree task holding cblk k; -1 outside one */
    int64_t *sub_cofs;              /**< [ncblk] a subtree root's first row in the contribution blocks */
    int64_t *sub_cpos;              /**< [nblok] row of blok b in its subtree's block; -1 inside */
    int64_t sub_crows;              /**< rows of all contribution blocks */
    numeric_exec exec;
    int nthreads;                   /**< per-thread workspaces allocated for this many workers */
    void **thread_work;             /**< [nthreads] each worker's update buffer + LDL^T scratch, then its spares */
    size_t *thread_sizes;           /**< [3 * nthreads] worker t's update product at most (one side) at 3t, its
                                         buffer + scratch (thread_work's first part) at 3t+1, each spare at
                                         3t+2: on several ranks by the tasks it may run (sched_thread_work),
                                         else upd_scalars, work_scalars, spare_scalars for every worker */
    int64_t *thread_perturbed;      /**< [nthreads] */
    atomic_int *serving;            /**< [ncblk] ticket lock: next contribution number admitted */
    atomic_int *tickets;            /**< [ncblk] next ticket drawn (scheduler=dynamic) */
    numeric_handover *hand;         /**< [nthreads * (NUMERIC_SPARES + 1)] worker t's buffers from
                                         t * (NUMERIC_SPARES + 1); the first is thread_work[t] */
    size_t spare_scalars;           /**< size of each spare buffer (products up to that size, LU: both sides);
                                         several ranks: by the rank's largest product, unused (the workers'
                                         own are in thread_sizes) */
    numeric_handover *_Atomic *pending; /**< [npending] handed-over contribution per (target, ticket) */
    int64_t *pending_off;           /**< [ncblk + 1] target j's tickets start at pending_off[j] */
    int64_t npending;
    numeric_handover *msg_hand;     /**< several ranks: [npending] a received message waiting for its
                                         ticket's turn, by ticket (pending_off), scheduler=dynamic */
    int64_t fan_early;              /**< messages added on arrival in the last factorization (dynamic) */
    /* top2d flat (sched_src_rank): another rank's tiled cblk k whose facing groups this rank's UPDATE2Ds
       read, copied as they arrive into a panel of k's layout (L, then U for LU, then for LDL^T its
       diagonal, dsub and pivots, numeric_xcopy_bytes), alive from the first group to the last of
       those UPDATE2Ds */
    void **xsh;                     /**< [ncblk] NULL when none is held */
    atomic_int *xleft;              /**< [ncblk] its UPDATE2Ds still to run here */
    const void *pending_plan;       /**< the local plan pending_off was counted for */
    numeric_run run;                /**< last threaded factorization */
    numeric_run solve_run;          /**< last threaded solve */
    void *work;                     /**< sequential runs: the calling thread's workspace (work_scalars) */
    size_t upd_scalars;             /**< the largest update product of the cblks this rank factors (one
                                         rank: S->max_update_buf) */
    size_t work_scalars;            /**< update buffer (upd_scalars scalars, LU: twice), then for LDL^T the
                                         dense kernel's scratch / the L*D rows of an update (max stride*width) */
    cint *ipiv;                     /**< LU and LDL^T, [n]: ipiv[fcol+j] = local row (0..w-1) of cblk k's
                                         diagonal block swapped with local row j (rows and columns for
                                         LDL^T), applied in order j = 0..; LDL^T marks the first column
                                         of a 2x2 pivot with -1 (no interchange at that step) */
    void *dsub;                     /**< LDL^T only, [n] scalars: D(j+1, j) of a 2x2 pivot starting at
                                         column j, 0 elsewhere */
    int trans;                      /**< the solves' operator while a solve runs: 0 the factored matrix, 1 its
                                         transpose (LU only: forward with U^T, backward with L^T and the
                                         interchanges undone; the symmetric factorizations need no transpose) */
    int64_t perturbed;              /**< pivots replaced in the last factorization */
    double threshold;               /**< absolute pivot threshold used in the last factorization */
    double flops;                   /**< flops of the last factorization (from the structure) */
    /* the selected inversion (src/selinv/selinv.c, selinv_template.c) */
    int inv_state;                  /**< 0: none; 1: in L and U (the factors are gone); 2: in inv_L/inv_U;
                                         3: an in-place inversion failed (interrupted): neither is there */
    void *inv_L, *inv_U;            /**< selinv-memory=separate: copies of L and U turned into the inverse */
    int64_t *sel_xcoef;             /**< several ranks, during the selected inversion: [ncblk] offset in sel_x
                                         of the received panel of another rank's cblk, -1 for the others */
    void *sel_x[2];                 /**< those panels (L, then U for LU) */
} numeric;

/**
 * Factorize A (internal full storage, ORIGINAL numbering; S->perm gives the order) with @p kind.
 * Allocates the factors on the first call and reuses them (and the entry map) afterwards.
 * @param threshold absolute static-pivoting threshold (> 0).
 * @return CANOPY_ERR_NOT_SPD (message names the column, original numbering) when LL^T meets a
 *         pivot <= 0; CANOPY_WARN_PIVOTS_PERTURBED if pivots were replaced; CANOPY_SUCCESS.
 */
canopy_status numeric_factorize(numeric *F, const symbolic *S, const canopy_csc *A,
                                canopy_factorization kind, double threshold, canopy_err *err);

/**
 * Factorization over several ranks (F->exec.local->nranks > 1): collective on F->exec.comm.
 * @p A: the scaled matrix on rank 0 (NULL elsewhere); @p arith the same on every rank. Entries go
 * from rank 0 to the owners of their cblks; the ranks exchange fan-in buffers (comm/exchange.h).
 * With @p release, A is freed on rank 0 as soon as its entries have gone out, so that it does not
 * sit beside the factor at rank 0's peak (the caller rebuilds it for the next factorization).
 * The status is this rank's: the caller agrees on it.
 */
canopy_status numeric_factorize_dist(numeric *F, const symbolic *S, canopy_csc *A, bool release, canopy_arith arith,
                                     canopy_factorization kind, double threshold, canopy_err *err);

/**
 * Several ranks, the tasks done: the root's cblks (sched_local.root) factored on a grid of ranks
 * (src/numeric/factor_root.c). Collective; the outcome is agreed. @p perturbed: the grid's
 * perturbed pivots on rank 0, 0 elsewhere.
 */
canopy_status numeric_root_factor(numeric *F, int64_t *perturbed, canopy_err *err);

/**
 * Solve over several ranks, collective: @p b (n x nrhs, leading dimension n, ORIGINAL numbering)
 * is read and overwritten on rank 0 only. The status is agreed across the ranks.
 */
canopy_status numeric_solve_dist(numeric *F, cint nrhs, void *b, canopy_err *err);

/* The selected inversion's structure (src/selinv/selinv.c), shared by its kernels and the prediction. */
#define NUMERIC_SELINV_ZKK_BLOCK 64 /* columns of a symmetric Z(K, K) per product (its lower part) */
#define NUMERIC_SELINV_TOP_SHARE 64 /* the top of the tree: subtrees with >= 1/64 of the flops */

/** Flops of the inversion of one cblk of @p w columns and @p m off-diagonal rows (complex: x 4). */
double numeric_selinv_cblk_flops(canopy_factorization kind, bool cx, double w, double m);

typedef struct numeric_selinv_profile {
    double flops;        /**< the whole inversion's */
    double top_share;    /**< share of them in the cblks at the top of the tree */
    int64_t top_cblks;   /**< how many those are */
    double serial_share; /**< share no thread count shortens: the top's diagonal-block inverses and
                              the longest chain of cblks below the top (a task each) */
    double task_serial_share; /**< the same with the top as tasks too: the longest chain of all */
} numeric_selinv_profile;

/**
 * The top of the tree (an ancestor-closed set of cblks, set to 1 in @p top[ncblk]): the cblks
 * whose subtree holds at least 1/NUMERIC_SELINV_TOP_SHARE of the flops. They run one by one, in
 * pieces on every thread (selinv_template.c). @p among (NULL: all) restricts it to a forest of
 * the tree, a rank's own subtrees: their flops, their roots. @p top or @p prof may be NULL.
 */
canopy_status numeric_selinv_top(const symbolic *S, canopy_factorization kind, bool cx, const unsigned char *among,
                                 unsigned char *top, numeric_selinv_profile *prof, canopy_err *err);

/**
 * The selected inversion over several ranks, collective, over @p Lx / @p Ux (F->L / F->U or
 * copies of them, fan-in buffers included): this rank's cblks of Z (selinv_template.c). @p flops
 * this rank's; @p sent the messages and bytes it sent. The status is this rank's: the caller agrees.
 */
canopy_status numeric_selinv_dist(numeric *F, void *Lx, void *Ux, double *flops, int64_t sent[2], canopy_err *err);

/**
 * The solve over several ranks on y (n x nrhs, new numbering), of which this rank has filled the
 * rows of its own cblks (the others zero): they hold the solution's on return. For callers that
 * move the right-hand sides to the owners themselves, after numeric_solve_dist_prepare and an
 * agreement of theirs. Collective; the status is agreed.
 */
canopy_status numeric_solve_dist_own(numeric *F, cint nrhs, void *y, canopy_err *err);
/** The solve's plan over the ranks (members, trees), built at the first solve after a
 * factorization; not collective, not agreed: the caller agrees before numeric_solve_dist_own. */
canopy_status numeric_solve_dist_prepare(numeric *F, canopy_err *err);

/**
 * The same from counts: @p panel_entries scalars of the rank's own panels and of the fan-in
 * buffers it holds at once at most (one part each; LU doubles them), @p workspace bytes of update
 * buffers (numeric_predict_workspace), and @p local_entries entries of A it holds, on a run of
 * @p nranks ranks (several: the structure every rank holds counted array by array, factor_dist.c,
 * and @p rank_bloks bytes of the structure sized by the rank's own cblks' bloks; 0 on one rank).
 * canopy-simulate prices every virtual rank with it.
 */
double numeric_predict_bytes_counts(const symbolic *S, canopy_factorization kind, canopy_arith arith,
                                    double panel_entries, double workspace, int64_t local_entries, int nranks,
                                    double rank_bloks);

/** Bytes of the update workspaces: each of @p nthreads workers' buffer and spares, sized by
 * @p thread_upd [nthreads] and @p thread_panel (sched_thread_work: several ranks; the calling
 * thread's is then one scalar), or NULL: every worker and the calling thread by the largest update
 * product @p update_max (LDL^T: plus the largest panel @p panel_max), as on one rank. */
double numeric_predict_workspace(canopy_factorization kind, canopy_arith arith, double update_max, double panel_max,
                                 int nthreads, const double *thread_upd, const double *thread_panel);

/** Predicted bytes this rank holds for a factorization over several ranks (memory check). */
double numeric_predict_bytes(const symbolic *S, const sched_local *L, canopy_factorization kind, canopy_arith arith,
                             canopy_scheduler sched, int64_t local_entries);
/** Every rank's figure of the memory check (@p memory[r], bytes) and its fan-in buffers alive at
 * once (@p fanin[r], bytes; may be NULL) under plan @p P run by scheduler @p sched, with A's @p nnz
 * entries shared as the panels are: what numeric_predict_bytes gives each rank of that plan. */
canopy_status numeric_predict_ranks(const symbolic *S, const sched_plan *P, canopy_factorization kind,
                                    canopy_arith arith, canopy_scheduler sched, double nnz, double *memory,
                                    double *fanin, canopy_err *err);

/* top2d flat: scalars of the message of a facing group of @p h rows of cblk k (its rows of L, of U
 * for LU, then for LDL^T the diagonal, dsub and the pivots, w each), and bytes of a rank's copy of k */
static inline size_t numeric_xmsg_scalars(const symbolic *S, canopy_factorization kind, cint k, cint h)
{
    size_t w = (size_t)(S->cblk_fcol[k + 1] - S->cblk_fcol[k]);
    return (size_t)h * w * (kind == CANOPY_FACT_LU ? 2 : 1) + (kind == CANOPY_FACT_LDLT ? 3 * w : 0);
}

static inline size_t numeric_xcopy_bytes(const symbolic *S, canopy_factorization kind, size_t sb, cint k)
{
    size_t w = (size_t)(S->cblk_fcol[k + 1] - S->cblk_fcol[k]);
    return ((size_t)S->cblk_stride[k] * w * (kind == CANOPY_FACT_LU ? 2 : 1) + (kind == CANOPY_FACT_LDLT ? w : 0)) * sb +
           (kind == CANOPY_FACT_LDLT ? w * sizeof(cint) : 0);
}

/* Message id of the facing group starting at blok @p b (top2d flat): after every cblk's ids
 * (b = nblok: the ids a run with top2d needs). */
static inline int64_t numeric_xmsg_id(const symbolic *S, cint b)
{
    return (int64_t)S->ncblk * COMM_IDS_PER_CBLK + b;
}

/* used by the kernels: the fan-in exchange of one factorization */
canopy_status numeric_exchange_create(numeric *F, void (*arrived)(void *, int64_t, void *, int, int), void *arg,
                                      canopy_err *err);
canopy_status numeric_exchange_end(numeric *F, canopy_err *err);

/**
 * Solve A X = B with the factors, in place, for nrhs columns of leading dimension ldb, in the
 * ORIGINAL numbering (the permutation is applied inside). Allocates only its workspace.
 */
canopy_status numeric_solve(numeric *F, cint nrhs, void *b, cint ldb, canopy_err *err);

/**
 * Run the next factorizations and solves with @p x (copied; its pointers are borrowed and must
 * outlive the factors' use). NULL: back to sequential.
 */
void numeric_set_exec(numeric *F, const numeric_exec *x);

/**
 * BLAS on one thread inside Canopy (our parallelism is over tasks): returns the previous OpenBLAS
 * thread count for numeric_blas_restore. No-op without OpenBLAS's thread control.
 */
int numeric_blas_single(void);
void numeric_blas_restore(int old);
/** BLAS on @p n threads (the root's grid step, where the workers wait: its GEMMs use the rank's cores). */
void numeric_blas_threads(int n);

/** The dense kernels and BLAS control that sched/cost.c times to calibrate the cost model. */
extern const cost_kernels numeric_cost_kernels;

/** Bytes held by the factors and buffers. */
size_t numeric_bytes(const numeric *F);

void numeric_free(numeric *F);

/* per-arithmetic entry points generated from factor_template.c */
canopy_status numeric_factorize_d(numeric *F, const canopy_csc *A, canopy_err *err);
canopy_status numeric_solve_d(numeric *F, cint nrhs, double *b, cint ldb, canopy_err *err);
canopy_status numeric_factorize_z(numeric *F, const canopy_csc *A, canopy_err *err);
canopy_status numeric_solve_z(numeric *F, cint nrhs, double _Complex *b, cint ldb, canopy_err *err);
canopy_status numeric_solve_dist_d(numeric *F, cint nrhs, double *y, canopy_err *err);
canopy_status numeric_selinv_d(numeric *F, double *Lx, double *Ux, double *flops, canopy_err *err);
canopy_status numeric_selinv_z(numeric *F, double _Complex *Lx, double _Complex *Ux, double *flops, canopy_err *err);
/* several ranks, collective: this rank's cblks, the other ranks' panels it faces broadcast into its
 * fan-in buffers; @p flops this rank's, @p sent the messages and bytes it sent (the status is this
 * rank's: the caller agrees on it) */
canopy_status numeric_selinv_dist_d(numeric *F, double *Lx, double *Ux, double *flops, int64_t sent[2], canopy_err *err);
canopy_status numeric_selinv_dist_z(numeric *F, double _Complex *Lx, double _Complex *Ux, double *flops, int64_t sent[2],
                                    canopy_err *err);
bool numeric_inverse_entry_d(const numeric *F, const double *Lx, const double *Ux, cint r, cint c, double *v);
bool numeric_inverse_entry_z(const numeric *F, const double _Complex *Lx, const double _Complex *Ux, cint r, cint c,
                             double _Complex *v);
canopy_status numeric_inverse_solve_d(numeric *F, cint nent, const cint *r, const cint *c, double *v, canopy_err *err);
canopy_status numeric_inverse_solve_z(numeric *F, cint nent, const cint *r, const cint *c, double _Complex *v,
                                      canopy_err *err);
canopy_status numeric_solve_dist_z(numeric *F, cint nrhs, double _Complex *y, canopy_err *err);

/*
 * Dense diagonal-block kernels (exposed for the unit tests). Both return the number of pivots
 * replaced by +-threshold (static pivoting).
 * numeric_dense_ldlt_d: in-place P A P^T = L D L^T of the lower triangle of the n x n matrix A with
 *   Bunch-Kaufman symmetric pivoting inside the block: unit L strictly below the diagonal, D's
 *   diagonal on it, D(j+1, j) of a 2x2 pivot in dsub[j] (A(j+1, j) is then 0; dsub[j] = 0 for a
 *   1x1 pivot and for a 2x2 pivot's second column); ipiv[j] >= 0: rows and columns j and ipiv[j]
 *   interchanged (applied in order j = 0..n-1), ipiv[j] = -1: j is the first column of a 2x2
 *   pivot. A 1x1 pivot below the threshold is perturbed only when no 1x1 or 2x2 pivot inside the
 *   block clears it. @p work holds n * min(n, 65) scalars.
 * numeric_dense_lu_d: in-place LU with row interchanges inside the block (getrf layout);
 *   ipiv[j] = row swapped with row j (0-based, applied in order); a column whose largest candidate
 *   is below the threshold is not swapped, its pivot is perturbed instead.
 */
cint numeric_dense_ldlt_d(cint n, double *A, cint lda, cint *ipiv, double *dsub, double threshold,
                          double *work);
cint numeric_dense_lu_d(cint n, double *A, cint lda, cint *ipiv, double threshold);
cint numeric_dense_ldlt_z(cint n, double _Complex *A, cint lda, cint *ipiv, double _Complex *dsub, double threshold,
                          double _Complex *work);
cint numeric_dense_lu_z(cint n, double _Complex *A, cint lda, cint *ipiv, double threshold);

#endif
