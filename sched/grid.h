/*
 * The shared top over 2D grids of ranks (issue 31): the plan. Its flat shape (1 x p) is executed
 * (option top2d=flat: sched_src_rank in plan.h, sched/distribute.c's dist_fanout); square and tall
 * are a model canopy-simulate predicts.
 *
 * On several ranks a cblk whose candidate ranks are [r0, r1) with r1 - r0 >= 2 is "shared". Today
 * it is given whole to one rank (sched/plan.c: the simulation places its panel, its tasks follow).
 * With top2d, every shared cblk that the plan tiles (2D: DIAG, TRSM per facing group, UPDATE2D per
 * pair of groups, under flat per chunk of consecutive groups, plan_chunked; sched/README.md) has
 * its tiles spread block-cyclically over a process grid pr x pc of its ranks [r0, r1), one grid per
 * distinct rank range (pr * pc = r1 - r0):
 *
 *  - numbering: pos[k] = position of k among all shared cblks in cblk order; the same numbering
 *    gives tile rows and tile columns, so a block row j is the same grid row on every grid;
 *  - tile (k, j) = k's rows facing cblk j (j = k: the diagonal block), owned by the rank at
 *    grid row pos[j] mod pr, grid column pos[k] mod pc of k's grid (rank r0 + row * pc + col);
 *  - DIAG(k) on tile (k, k)'s owner, TRSM(k, g) on tile (k, j_g)'s owner;
 *  - UPDATE2D(k, g, g2) (into tile (j_g, j_g2) of j_g's column): on that tile's owner when j_g is
 *    tiled on the same grid as k (it reads L(k, g) and L(k, g2), broadcast to it), else on tile
 *    (k, j_g2)'s owner, which sends the product as a tile-sized fan-in message to the target
 *    tile's owner (one buffer per (target tile, source rank), as today's fan-in per cblk). So a cblk
 *    of a lower Snode on a smaller grid feeds an ancestor's bigger grid tile by tile. Flat with
 *    @p shadow: on j_g's rank when it is one of k's grid's, else on j_g's shadow there (plan.h,
 *    sched_src_rank), which reads k's groups as a same-grid update does;
 *  - edges (not flat): an UPDATE2D into a tiled cblk j waits only for its target tile: it precedes TRSM(j, g')
 *    (or DIAG(j) for the diagonal tile) instead of DIAG(j);
 *  - messages: DIAG(k) -> the ranks of k's TRSMs, TRSM(k, g) -> the ranks of the UPDATE2Ds reading
 *    g, each a broadcast along comm/tree's binary shape (heap order over root, then the other ranks
 *    ascending: a rank at position p receives after floor(log2(p + 1)) hops of latency + tile
 *    bytes x byte time); a fan-in edge costs one hop of the target tile's bytes.
 *
 * Everything is a pure function of (block structure, plan, ranks, threads): every rank computes
 * the same. The simulation (sched/plan.c, top2d option) runs these tasks on their owners' threads.
 * Flat keeps an UPDATE2D's edge to DIAG of its target (no retargeting), as it is executed.
 */
#ifndef CANOPY_SCHED_GRID_H
#define CANOPY_SCHED_GRID_H

#include "base/common.h"
#include "base/structure.h"
#include "dag.h"

/** Shape rule of the grids (sched_plan_opts.top2d). */
enum sched_grid_shape {
    SCHED_GRID_OFF = 0,
    SCHED_GRID_SQUARE = 1, /**< pr = the largest divisor of the rank count <= its square root, pr <= pc */
    SCHED_GRID_FLAT = 2,   /**< 1 x p: whole columns cyclic (a 1D column-cyclic fan-out) */
    SCHED_GRID_TALL = 3    /**< p x 1: whole block rows cyclic */
};

typedef struct sched_grid {
    int nranks;
    int shape;                /**< enum sched_grid_shape */
    int shadow;               /**< flat: an update into a tiled cblk of another grid runs on that cblk's
                                   rank or shadow on the source's grid (sched_src_rank in plan.h); 2: lean,
                                   the updates reading another rank's groups ranked as their most urgent */
    cint ncblk;
    int ngrids;
    int *grid_r0, *grid_pr, *grid_pc; /**< [ngrids] ranks r0 .. r0 + pr * pc - 1, row-major */
    int *cblk_grid;           /**< [ncblk] grid of a tiled shared cblk, else -1 */
    int *cblk_pos;            /**< [ncblk] position among the shared cblks (cblk order), -1 when not shared */
    int *cblk_r0, *cblk_r1;   /**< [ncblk] candidate ranks of a shared cblk (its Snode's), [0, 0) otherwise */
    cint *blok_group;         /**< [nblok] index of the facing group holding the blok (-1: diagonal blok) */
    int64_t tiled_cblks;      /**< cblks with grid >= 0 */
    int64_t shared_cblks;     /**< cblks with pos >= 0 (the others stay whole on one rank, as today) */
    int ntasks;
    int *task_rank;           /**< [ntasks] rank of a tiled cblk's task; -1 for the other tasks */
    /* messages of the tiled tasks, counted after the simulation (sched_grid_count) */
    int64_t diag_msgs, trsm_msgs, fanin_msgs;
    double diag_bytes, trsm_bytes, fanin_bytes;
} sched_grid;

/** The grid of @p nr ranks under @p shape: *pr x *pc = nr. */
void sched_grid_shape_of(int nr, int shape, int *pr, int *pc);

/**
 * Grids, positions and the ranks of the tasks, then the edges of the tiled UPDATE2Ds retargeted
 * to their target tile (TRSM or DIAG of the target) and D->npred recounted. @p t0, @p t1: the
 * cblks' candidate threads (TR per rank); a cblk is tiled when its range spans several ranks and
 * its task is a DIAG. Tasks are in the plan's layout (sched/plan_tasks.c: DIAG k, its TRSMs, its
 * UPDATE2Ds by (g, g2)). Fills @p G (sched_grid_free frees it).
 */
canopy_status sched_grid_plan(const symbolic *S, sched_dag *D, const int *cblk_task, const int *t0, const int *t1,
                              int R, int TR, int shape, int shadow, sched_grid *G, canopy_err *err);

/** Rank owning tile (k, j) of tiled cblk k (j = k or a cblk k faces). */
int sched_grid_tile_rank(const sched_grid *G, cint k, cint j);

/** Bytes of the target tile of an UPDATE2D's fan-in into task @p dst (its TRSM, DIAG or PANEL). */
double sched_grid_target_bytes(const symbolic *S, const sched_dag *D, int dst, double sb);

/**
 * Per-edge message delays of the tiled tasks (@p edge_delay is indexed like D->succ; entries of
 * the other tasks are left alone): broadcast level x (latency + tile bytes x byte time) for DIAG
 * and TRSM edges, latency + target tile bytes x byte time for an UPDATE2D's edge. @p sb: bytes
 * per entry of a tile (x2 for LU).
 */
canopy_status sched_grid_delays(const symbolic *S, const sched_dag *D, const sched_grid *G, double sb, double latency,
                                double byte_time, double *edge_delay, canopy_err *err);

/**
 * The simulation's view (sched/plan.c, several ranks): each tiled task pinned to its rank
 * (@p group, @p follow = -1, its Snode the rank's threads @p gsnode[rank], @p pref a thread of it),
 * and *@p edge_delay ([edges], allocated here) = @p delay[successor] for every edge, the tiled
 * tasks' own edges as sched_grid_delays gives them.
 */
canopy_status sched_grid_place(const symbolic *S, sched_dag *D, const sched_grid *G, int TR, const int *gsnode, int *group,
                               int *follow, int *pref, const double *delay, double sb, double latency, double byte_time,
                               double **edge_delay, canopy_err *err);

/**
 * Count the tiled tasks' messages from the simulated placement (@p task_rank_final[i]: rank of
 * every task): per broadcast the ranks it reaches besides its own, per fan-in the distinct
 * (target task, source rank) pairs across ranks. Needs a scratch of D->ntasks ints.
 */
canopy_status sched_grid_count(const symbolic *S, const sched_dag *D, const int *task_rank_final, double sb,
                               sched_grid *G, canopy_err *err);

/**
 * Bytes each rank sends and receives in the tiled tasks' broadcasts (@p sent, @p recv [R], added
 * to), each along comm/tree's binary shape over its root and its other ranks ascending (the rank at
 * heap position p forwards to positions 2p + 1 and 2p + 2). The fan-in is the plan's fan-in pairs'
 * (for the shapes not executed, per column block as today: pessimistic). @p task_rank_final as
 * sched_grid_count's.
 */
canopy_status sched_grid_volume(const symbolic *S, const sched_dag *D, const sched_grid *G, const int *task_rank_final,
                                double sb, double *sent, double *recv, canopy_err *err);

/**
 * Factor bytes each rank holds (@p held[R], added to): tiles of the tiled cblks at their owners,
 * whole panels of the others at @p cblk_rank.
 */
void sched_grid_held(const symbolic *S, const sched_grid *G, const int *cblk_rank, double sb, double *held);

void sched_grid_free(sched_grid *G);

#endif
