/*
 * The root of the elimination tree on a 2D grid of ranks (issue 31; MUMPS's "type-3 root"): the
 * trailing column blocks whose panels are dense down to the last row (the root separator, split
 * into a chain of cblks) are assembled as today, by fan-in at the ranks the plan gives them, and
 * then factored together as one dense front by every rank of a pr x pc grid
 * (src/numeric/grid_dense.h), instead of cblk after cblk with fan-in between them. The factor goes
 * back to the same cblks, so the solve and the selected inversion read it as before.
 *
 * Which cblks, the tile size and the grid are a pure function of (block structure, ranks, kind,
 * mode): every rank computes the same, and canopy-simulate the same for thousands of ranks.
 *  - the root: the longest suffix of cblks whose panels hold every row from their first column on
 *    (cblk_stride[k] == n - cblk_fcol[k]); mode AUTO keeps it only when it is at least
 *    max(800, 70 sqrt(P)) columns wide (MUMPS's rule for its 2D root; the runtime then also
 *    builds the plan without it and keeps the faster by the simulation);
 *  - tiles of SCHED_ROOT_NB. The sparse kernels pivot inside a cblk's diagonal block and the
 *    solve applies a cblk's interchanges as one block; the grid's steps are therefore the tiles
 *    cut at every cblk boundary (sched_root_steps), so no step's pivoting crosses a cblk;
 *  - the grid: ranks 0 .. pr*pc-1 with pr <= pc, the most ranks such that a broadcast has at most
 *    GRID_DENSE_MAX_MEMBERS members (pr + pc - 1 <= 64) and no grid row or column lacks a tile;
 *    among equal counts the squarest. The other ranks own no tile (they assemble and wait).
 */
#ifndef CANOPY_SCHED_ROOT_H
#define CANOPY_SCHED_ROOT_H

#include "base/common.h"
#include "base/structure.h"

#define SCHED_ROOT_NB 128
#define SCHED_ROOT_MAX_MEMBERS 64 /* = GRID_DENSE_MAX_MEMBERS (numeric/grid_dense.h) */

/** options.root_grid */
enum sched_root_mode { SCHED_ROOT_OFF = 0, SCHED_ROOT_ON = 1, SCHED_ROOT_AUTO = 2 };

typedef struct sched_root {
    cint first;  /**< first cblk of the root; ncblk: no root on a grid */
    cint n;      /**< its columns (S->n - cblk_fcol[first]); 0 when none */
    cint nb;     /**< tile size */
    int pr, pc;  /**< the grid: ranks 0 .. pr * pc - 1, row-major */
} sched_root;

/**
 * Choose the root, its tiles and its grid for @p nranks ranks (see above). @p out->first ==
 * S->ncblk when none (one rank, mode OFF, no dense suffix, too narrow for AUTO, no tile size).
 * CANOPY_ERR_ARGUMENT for a bad argument.
 */
canopy_status sched_root_choose(const symbolic *S, int nranks, canopy_factorization kind, int mode, sched_root *out,
                                canopy_err *err);

/** Is cblk @p k in the root? (@p r may be NULL: no root.) */
static inline int sched_root_has(const sched_root *r, cint k)
{
    return r != NULL && r->n > 0 && k >= r->first;
}

/**
 * The grid factorization's steps (grid_dense.steps): the tile boundaries and the root's cblk
 * boundaries, relative to the root's first column, ascending, into @p steps (room for
 * n / nb + ncblk + 2); returns their count (steps[count] = r->n).
 */
cint sched_root_steps(const symbolic *S, const sched_root *r, cint *steps);

/** The grid's shape for @p nranks ranks and @p ntiles tile rows (pure; see above). */
void sched_root_grid(int nranks, cint ntiles, int *pr, int *pc);


struct sched_cost_model;
/**
 * Predicted seconds of the root's grid factorization (sched_plan.root_time): both redistributions
 * (cblks to tiles and back), then each step's panel path (the diagonal tile's factorization, the
 * panel's TRSM, its broadcasts along a grid row and a grid column, comm/tree hops of @p latency +
 * bytes x @p byte_time) and the trailing update of the busiest rank (its tiles, one GEMM per step;
 * half for the symmetric kinds), on @p threads BLAS threads per rank (perfect scaling assumed); lookahead
 * is not credited. @p scale: 4 for complex arithmetic.
 */
double sched_root_time(const sched_root *r, const struct sched_cost_model *cm, canopy_factorization kind, double scale,
                       int threads, double latency, double byte_time);

#endif
