/*
 * Numerical factorization and triangular solves over the block structure of symbolic.h.
 * One source for every arithmetic: src/kernels_template.c is compiled once per scalar type
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

#include "common.h"
#include "symbolic.h"

typedef struct numeric {
    const symbolic *S;              /**< borrowed, must outlive the factors */
    canopy_factorization kind;      /**< LLT, LDLT or LU (never AUTO) */
    canopy_arith arith;             /**< CANOPY_REAL or CANOPY_COMPLEX */
    size_t scalar_bytes;
    void *L;                        /**< S->cblk_coef[ncblk] scalars */
    void *U;                        /**< LU only, same size */
    int64_t *amap;                  /**< position of every entry of A in L (>= 0) or U (encoded < 0); built once */
    int64_t amap_nnz;
    void *work;                     /**< update buffer (S->max_update_buf scalars), then for LDL^T the
                                         W = L*D panel buffer (max stride*width scalars) */
    size_t work_scalars;
    cint *ipiv;                     /**< LU and LDL^T, [n]: ipiv[fcol+j] = local row (0..w-1) of cblk k's
                                         diagonal block swapped with local row j (rows and columns for
                                         LDL^T), applied in order j = 0..; LDL^T marks the first column
                                         of a 2x2 pivot with -1 (no interchange at that step) */
    void *dsub;                     /**< LDL^T only, [n] scalars: D(j+1, j) of a 2x2 pivot starting at
                                         column j, 0 elsewhere */
    int64_t perturbed;              /**< pivots replaced in the last factorization */
    double threshold;               /**< absolute pivot threshold used in the last factorization */
    double flops;                   /**< flops of the last factorization (from the structure) */
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
 * Solve A X = B with the factors, in place, for nrhs columns of leading dimension ldb, in the
 * ORIGINAL numbering (the permutation is applied inside). Allocates only its workspace.
 */
canopy_status numeric_solve(const numeric *F, cint nrhs, void *b, cint ldb, canopy_err *err);

/** Bytes held by the factors and buffers. */
size_t numeric_bytes(const numeric *F);

void numeric_free(numeric *F);

/* per-arithmetic entry points generated from kernels_template.c */
canopy_status numeric_factorize_d(numeric *F, const canopy_csc *A, canopy_err *err);
canopy_status numeric_solve_d(const numeric *F, cint nrhs, double *b, cint ldb, canopy_err *err);
canopy_status numeric_factorize_z(numeric *F, const canopy_csc *A, canopy_err *err);
canopy_status numeric_solve_z(const numeric *F, cint nrhs, double _Complex *b, cint ldb, canopy_err *err);

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
