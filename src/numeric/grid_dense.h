/*
 * A dense partial factorization on a 2D block-cyclic grid of ranks (issue 31's first building
 * block for the shared top, like MUMPS's type-3 root): the n x n matrix is cut into nb x nb tiles
 * spread over a pr x pc grid, and its first m columns are eliminated (m = n: the whole
 * factorization; m < n: the trailing (n-m) x (n-m) Schur complement is left updated in place,
 * distributed the same way, which is what a front above other fronts needs).
 *
 * Ownership (sched/grid.h's convention, so that the model and the execution agree): tile (i, j)
 * (block row i, block column j) is on grid row i mod pr, grid column j mod pc, i.e. on rank
 * (i mod pr) * pc + (j mod pc) of the grid's communicator (row-major).
 *
 * Local storage (ScaLAPACK's local block-cyclic array): a rank at grid (r, c) holds the rows of the
 * block rows i = r, r + pr, ... and the columns of the block columns j = c, c + pc, ..., in
 * increasing order, as one column-major array of grid_dense_count(n, nb, pr, r) rows (its leading
 * dimension, grid_dense_ld) and grid_dense_count(n, nb, pc, c) columns. The owned rows from a
 * given global row on are a suffix of the local rows, so the trailing update of a step is one
 * GEMM per rank (LU) or one per owned block column (LL^T, LDL^T). LL^T and LDL^T reference only
 * the lower triangle (tiles i > j and the lower part of the diagonal tiles); the rest of their
 * array is not referenced and left unspecified.
 *
 * Factors (the same semantics as the sequential panel code, src/numeric/factor_template.c, with
 * the diagonal tile of each step in the role of a cblk's diagonal block): step k eliminates the
 * columns [k nb, min((k+1) nb, m)); pivoting never leaves that step's diagonal block. LL^T: POTRF.
 * LDL^T: numeric_dense_ldlt_d (Bunch-Kaufman inside the block), whose symmetric interchanges are
 * applied to the columns of the panel rows below it; L (unit) below, D on the diagonal, D(j+1, j)
 * of a 2x2 pivot in dsub. LU: numeric_dense_lu_d (partial pivoting inside the block), whose row
 * interchanges are applied to the block's rows right of it (U); L unit lower, U upper. The
 * interchanges are in product form per step, as for the sparse cblks: they are NOT applied to the
 * already factored columns left of the block (a solve applies step k's interchanges to its rows of
 * the right-hand side before using step k's block, as numeric_solve does per cblk). ipiv[kb + j] =
 * the row (0-based, relative to the block) swapped with row j of step k's block, applied in order
 * j = 0..; LDL^T marks the first column of a 2x2 pivot with -1. Static pivoting: a pivot no
 * candidate inside the block can replace is set to +-threshold and counted.
 *
 * Execution: right-looking. Step k: the diagonal block's owner factors it and broadcasts it (with
 * its pivots) to the ranks of its grid column holding panel rows (LU: and of its grid row holding
 * U columns); they apply the interchanges and TRSM; each rank of that grid column broadcasts its
 * panel rows along its grid row; the column factor (L^T, (L D)^T, or U's rows) goes down the grid
 * columns: for LU from the step's grid row, for the symmetric kinds from the rank holding the
 * diagonal tile (J, J) of each block column J (the transposed position, so no extra hop); then
 * every rank updates its trailing tiles. Every broadcast follows comm/tree's binary tree over only
 * the ranks that need it. With lookahead, the ranks first update the next step's panel (LU: and
 * its U rows), factor and send it, and only then do the rest of the update: the next panel's
 * messages overlap the bulk of the GEMMs (two steps' buffers alive at once).
 *
 * Nothing is allocated inside the loop: every buffer is allocated first and the grid agrees that
 * every rank could (comm_agree), so an allocation failure gives every rank the same error and no
 * rank waits for another. Numerical failures (LL^T of a matrix that is not positive definite) do
 * not stop the loop; they are agreed at the end. BLAS runs on the calling thread only (the caller
 * sets BLAS to one thread); nothing here starts threads. MPI must be initialized (any thread
 * level: only the calling thread calls MPI).
 */
#ifndef CANOPY_GRID_DENSE_H
#define CANOPY_GRID_DENSE_H

#include <mpi.h>
#include "base/common.h"

/* comm_tree_build allocates for member lists longer than this (comm/tree.c): the loop does not
 * allocate, so a grid's broadcasts stay within it (pr + pc - 1 members at most, LU's diagonal) */
#define GRID_DENSE_MAX_MEMBERS 64

/** What a grid factorization is asked to do; every rank of the grid passes the same values. */
typedef struct grid_dense {
    MPI_Comm comm;                /**< exactly the pr * pc ranks of the grid, rank = row * pc + col
                                       (MPI_COMM_NULL is fine for the pure functions) */
    int pr, pc;                   /**< grid rows and columns */
    cint n;                       /**< order of the dense matrix */
    cint m;                       /**< columns eliminated, 0 <= m <= n */
    cint nb;                      /**< tile size */
    canopy_factorization kind;    /**< CANOPY_FACT_LLT, CANOPY_FACT_LDLT or CANOPY_FACT_LU */
    double threshold;             /**< absolute static-pivoting threshold (LDL^T, LU), >= 0 */
    int tag;                      /**< tags [tag, tag + grid_dense_ntags(g)) of comm are used */
    int lookahead;                /**< 1: send the next panel before the bulk of the update */
    const cint *steps;            /**< NULL: step k eliminates tile column k's columns; else nsteps + 1 ascending
                                       column starts (steps[0] = 0, steps[nsteps] = m), each step inside one
                                       tile: pivoting stays inside each step's diagonal block, so a sparse
                                       front whose column blocks do not align with the tiles keeps its
                                       blocks' pivoting (src/numeric/factor_root.c). The factorization only:
                                       grid_dense_solve assumes tile steps */
    cint nsteps;
} grid_dense;

/** Tags a factorization uses from g->tag on. */
int grid_dense_ntags(const grid_dense *g);

/** Rank (in g->comm) owning tile (i, j): (i mod pr) * pc + (j mod pc). */
int grid_dense_owner(const grid_dense *g, cint i, cint j);

/** Indices of 0..n-1 (tiles of nb) held by coordinate q of a grid dimension of p: ScaLAPACK's numroc. */
cint grid_dense_count(cint n, cint nb, int p, int q);

/** How many of the indices held by coordinate q (of p) are below global index @p gidx: the local
 * position of the first held index >= gidx (the suffix from gidx on starts there). */
cint grid_dense_local_index(cint gidx, cint nb, int p, int q);

/** Leading dimension of @p rank's local array: its local rows, at least 1. */
cint grid_dense_ld(const grid_dense *g, int rank);

/** Scalars of @p rank's local array (rows x columns); the sum over the ranks is n * n. */
int64_t grid_dense_local_size(const grid_dense *g, int rank);

/** Offset of tile (i, j)'s first entry in its owner's local array (leading dimension grid_dense_ld). */
int64_t grid_dense_tile_offset(const grid_dense *g, cint i, cint j);

/** Check a descriptor (no MPI call beyond the communicator's size when comm is set). */
canopy_status grid_dense_check(const grid_dense *g, canopy_err *err);

/**
 * Collective over g->comm: the dense n x n matrix @p A (leading dimension @p lda, read on
 * @p root only) into every rank's local array @p local (grid_dense_local_size scalars). Agreed.
 */
canopy_status grid_dense_scatter_d(const grid_dense *g, int root, const double *A, cint lda, double *local,
                                   canopy_err *err);

/** The reverse: every rank's @p local into @p A (written on @p root only). Agreed. */
canopy_status grid_dense_gather_d(const grid_dense *g, int root, const double *local, double *A, cint lda,
                                  canopy_err *err);

/**
 * Collective over g->comm: eliminate the first g->m columns of the matrix held in @p local (real
 * double), in place. @p ipiv (g->m entries; LDL^T and LU) and @p dsub (g->m; LDL^T) are filled
 * identically on every rank; either may be NULL for LL^T. @p perturbed (may be NULL): the pivots
 * replaced, summed over the grid. Returns the status agreed by the grid: CANOPY_SUCCESS,
 * CANOPY_WARN_PIVOTS_PERTURBED, CANOPY_ERR_NOT_SPD (the message names the first column, 0-based),
 * CANOPY_ERR_NOMEM, CANOPY_ERR_ARGUMENT or CANOPY_ERR_MPI.
 */
canopy_status grid_dense_factor_d(const grid_dense *g, double *local, cint *ipiv, double *dsub, int64_t *perturbed,
                                  canopy_err *err);

/**
 * The complex double variants: the same layout, messages and semantics, with the sparse code's
 * complex kinds (factor_template.c): CANOPY_FACT_LLT is Hermitian positive definite (POTRF, A =
 * L L^H, the lower triangle referenced), CANOPY_FACT_LDLT is complex symmetric (A = A^T, not
 * Hermitian: P A P^T = L D L^T with the plain transpose, numeric_dense_ldlt_z, D and dsub complex),
 * CANOPY_FACT_LU has no conjugate anywhere. A Hermitian indefinite matrix is factorized by LU, as
 * in the sparse code (which has no Hermitian LDL^H).
 */
canopy_status grid_dense_scatter_z(const grid_dense *g, int root, const double _Complex *A, cint lda,
                                   double _Complex *local, canopy_err *err);
canopy_status grid_dense_gather_z(const grid_dense *g, int root, const double _Complex *local, double _Complex *A,
                                  cint lda, canopy_err *err);
canopy_status grid_dense_factor_z(const grid_dense *g, double _Complex *local, cint *ipiv, double _Complex *dsub,
                                  int64_t *perturbed, canopy_err *err);

#endif
