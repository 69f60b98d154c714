/*
 * Numerical factorization and triangular solves over the block structure of symbolic.h.
 * One source for every arithmetic: src/kernels_template.c is compiled once per scalar type
 * (kernels_d.c: double; complex double comes next) and numeric.c dispatches on the arith.
 *
 * Storage of the factors, per cblk k (panel of cblk_stride[k] x w_k, column-major):
 *  - LL^T: L panel: lower triangle of the diagonal block + off-diagonal bloks of L.
 *  - LDL^T: L panel: unit L below the diagonal, D on the diagonal of the diagonal block.
 *  - LU:   L panel: diagonal block holds L (unit, strictly lower) and U (upper, with diagonal) as
 *          LAPACK getrf does; off-diagonal bloks hold L. U panel (same shape): off-diagonal bloks
 *          hold U^T (row r of the panel = column r of U); its diagonal block is not used.
 * Pivoting is static: a pivot with |p| < threshold is replaced by sign(p) * threshold and counted.
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
    cint *ipiv;                     /**< LU only, [n]: ipiv[fcol+j] = local row (0..w-1) of cblk k's
                                         diagonal block swapped with local row j, applied in order j = 0.. */
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

/*
 * Dense diagonal-block kernels (exposed for the unit tests). Both return the number of pivots
 * replaced by +-threshold (static pivoting).
 * numeric_dense_ldlt_d: in-place LDL^T of the lower triangle of the n x n matrix A (unit L strictly
 *   below the diagonal, D on it); @p work holds n * min(n, 64) scalars.
 * numeric_dense_lu_d: in-place LU with row interchanges inside the block (getrf layout);
 *   ipiv[j] = row swapped with row j (0-based, applied in order); a column whose largest candidate
 *   is below the threshold is not swapped, its pivot is perturbed instead.
 */
cint numeric_dense_ldlt_d(cint n, double *A, cint lda, double threshold, double *work);
cint numeric_dense_lu_d(cint n, double *A, cint lda, cint *ipiv, double threshold);

#endif
