/*
 * Numerical factorization driver: argument checks, arithmetic dispatch, allocation of the factors,
 * buffers and entry map (first call only), BLAS thread control. The arithmetic itself lives in
 * kernels_template.c (instantiated by kernels_d.c and kernels_z.c).
 */
#include "numeric.h"
#include "matrix.h"

#include <limits.h>
#include <math.h>
#include <string.h>

#if defined(HAVE_OPENBLAS_GET_NUM_THREADS) && defined(HAVE_OPENBLAS_SET_NUM_THREADS)
#define NUMERIC_BLAS_THREADS 1
/* declared here as well: not every cblas.h that provides them declares them */
void openblas_set_num_threads(int num_threads);
int openblas_get_num_threads(void);
#endif

/* BLAS runs on one thread inside Canopy: our own parallelism is over tasks, and a threaded
 * BLAS nested in worker threads oversubscribes the cores. */
static int blas_threads_single(void)
{
#ifdef NUMERIC_BLAS_THREADS
    int old = openblas_get_num_threads();
    if (old != 1) openblas_set_num_threads(1);
    return old;
#else
    return 1;
#endif
}

static void blas_threads_restore(int old)
{
#ifdef NUMERIC_BLAS_THREADS
    if (old != 1) openblas_set_num_threads(old);
#else
    (void)old;
#endif
}

void numeric_free(numeric *F)
{
    if (F == NULL) return;
    canopy_free(F->L);
    canopy_free(F->U);
    canopy_free(F->amap);
    canopy_free(F->work);
    canopy_free(F->ipiv);
    canopy_free(F->dsub);
    memset(F, 0, sizeof *F);
}

size_t numeric_bytes(const numeric *F)
{
    if (F == NULL || F->L == NULL) return 0;
    size_t ncoef = (size_t)F->S->cblk_coef[F->S->ncblk];
    size_t bytes = ncoef * F->scalar_bytes * (F->U ? 2 : 1);
    bytes += (size_t)F->amap_nnz * sizeof(int64_t);
    bytes += F->work_scalars * F->scalar_bytes;
    if (F->ipiv) bytes += (size_t)F->S->n * sizeof(cint);
    if (F->dsub) bytes += (size_t)F->S->n * F->scalar_bytes;
    return bytes;
}

/* Panel row of (new) row r inside cblk k, by binary search over k's bloks; -1 if absent. */
static cint panel_row(const symbolic *S, cint k, cint r)
{
    cint lo = S->cblk_fblok[k], hi = S->cblk_fblok[k + 1] - 1;
    while (lo <= hi) {
        cint mid = lo + (hi - lo) / 2;
        if (r < S->blok_frow[mid]) hi = mid - 1;
        else if (r > S->blok_lrow[mid]) lo = mid + 1;
        else return S->blok_coefrow[mid] + (r - S->blok_frow[mid]);
    }
    return -1;
}

/*
 * Entry map: amap[p] >= 0 is a position in L, -1 an ignored entry (upper triangle of a symmetric
 * kind), <= -2 the position -amap[p]-2 in U (U^T panels). Built once; later factorizations of the
 * same pattern assemble with it directly.
 */
static canopy_status build_amap(numeric *F, const canopy_csc *A, canopy_err *err)
{
    const symbolic *S = F->S;
    int symmetric = F->kind != CANOPY_FACT_LU;
    for (cint jo = 0; jo < A->n; jo++) {
        cint nc = S->iperm[jo];
        for (cint p = A->colptr[jo]; p < A->colptr[jo + 1]; p++) {
            cint nr = S->iperm[A->rowind[p]];
            int64_t pos;
            if (nr >= nc || (!symmetric && S->col2cblk[nr] == S->col2cblk[nc])) {
                /* L panel of cblk(col); for LU the upper part of a diagonal block goes there too */
                cint k = S->col2cblk[nc];
                cint pr = panel_row(S, k, nr);
                if (pr < 0) goto missing;
                pos = S->cblk_coef[k] + (int64_t)(nc - S->cblk_fcol[k]) * S->cblk_stride[k] + pr;
            } else if (symmetric) {
                pos = -1;
            } else {
                /* U^T panel of cblk(row), at the panel row of the column */
                cint k = S->col2cblk[nr];
                cint pr = panel_row(S, k, nc);
                if (pr < 0) goto missing;
                pos = -(S->cblk_coef[k] + (int64_t)(nr - S->cblk_fcol[k]) * S->cblk_stride[k] + pr) - 2;
            }
            F->amap[p] = pos;
            continue;
        missing:
            return canopy_err_set(err, CANOPY_ERR_INTERNAL,
                                  "entry (%" CINT_FMT ", %" CINT_FMT ") of the matrix is outside the block structure",
                                  A->rowind[p], jo);
        }
    }
    return CANOPY_SUCCESS;
}

static canopy_status numeric_allocate(numeric *F, const symbolic *S, const canopy_csc *A,
                                      canopy_factorization kind, canopy_err *err)
{
    F->S = S;
    F->kind = kind;
    F->arith = A->arith;
    F->scalar_bytes = A->arith == CANOPY_COMPLEX ? 2 * sizeof(double) : sizeof(double);
    /* BLAS takes int dimensions */
    size_t wbuf = 0;
    for (cint k = 0; k < S->ncblk; k++) {
        if (S->cblk_stride[k] > INT_MAX)
            return canopy_err_set(err, CANOPY_ERR_TOO_LARGE, "column block %" CINT_FMT " has too many rows for BLAS", k);
        size_t s = (size_t)S->cblk_stride[k] * (size_t)(S->cblk_fcol[k + 1] - S->cblk_fcol[k]);
        wbuf = s > wbuf ? s : wbuf;
    }
    size_t ncoef = (size_t)S->cblk_coef[S->ncblk];
    F->work_scalars = S->max_update_buf + (kind == CANOPY_FACT_LDLT ? wbuf : 0);
    if (F->work_scalars == 0) F->work_scalars = 1;
    F->L = canopy_calloc(ncoef ? ncoef : 1, F->scalar_bytes, "factor L", err);
    if (kind == CANOPY_FACT_LU)
        F->U = canopy_calloc(ncoef ? ncoef : 1, F->scalar_bytes, "factor U", err);
    if (kind != CANOPY_FACT_LLT)
        F->ipiv = canopy_alloc((size_t)S->n + 1, sizeof(cint), "pivots", err);
    if (kind == CANOPY_FACT_LDLT)
        F->dsub = canopy_calloc((size_t)S->n + 1, F->scalar_bytes, "2x2 pivots", err);
    F->amap_nnz = matrix_nnz(A);
    F->amap = canopy_alloc((size_t)F->amap_nnz + 1, sizeof(int64_t), "entry map", err);
    F->work = canopy_alloc(F->work_scalars, F->scalar_bytes, "update buffer", err);
    if (!F->L || !F->amap || !F->work || (kind == CANOPY_FACT_LU && !F->U) ||
        (kind != CANOPY_FACT_LLT && !F->ipiv) || (kind == CANOPY_FACT_LDLT && !F->dsub))
        return err && err->status ? err->status : CANOPY_ERR_NOMEM;
    return build_amap(F, A, err);
}

canopy_status numeric_factorize(numeric *F, const symbolic *S, const canopy_csc *A,
                                canopy_factorization kind, double threshold, canopy_err *err)
{
    if (F == NULL || S == NULL || A == NULL)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "numeric_factorize: NULL argument");
    if (kind != CANOPY_FACT_LLT && kind != CANOPY_FACT_LDLT && kind != CANOPY_FACT_LU)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "factorization kind %d is not LLT, LDLT or LU", (int)kind);
    if (!(threshold > 0) || !isfinite(threshold))
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "pivot threshold %g must be positive", threshold);
    if (A->n != S->n)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "matrix order %" CINT_FMT " differs from the analysis (%" CINT_FMT ")",
                              A->n, S->n);
    if ((A->arith != CANOPY_REAL && A->arith != CANOPY_COMPLEX) || A->values == NULL)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "matrix has no numerical values");

    /* refactorization reuses everything when the analysis, kind and pattern size are the same */
    if (F->L != NULL && (F->S != S || F->kind != kind || F->arith != A->arith || F->amap_nnz != matrix_nnz(A)))
        numeric_free(F);
    if (F->L == NULL) {
        canopy_status st = numeric_allocate(F, S, A, kind, err);
        if (st != CANOPY_SUCCESS) {
            numeric_free(F);
            return st;
        }
    }
    F->threshold = threshold;
    F->flops = kind == CANOPY_FACT_LU ? S->flops_lu : S->flops_llt;
    int old = blas_threads_single();
    canopy_status st = A->arith == CANOPY_COMPLEX ? numeric_factorize_z(F, A, err) : numeric_factorize_d(F, A, err);
    blas_threads_restore(old);
    return st;
}

canopy_status numeric_solve(const numeric *F, cint nrhs, void *b, cint ldb, canopy_err *err)
{
    if (F == NULL || F->L == NULL)
        return canopy_err_set(err, CANOPY_ERR_PHASE, "solve called before a factorization");
    if (nrhs < 0 || (nrhs > 0 && b == NULL) || ldb < CANOPY_MAX(F->S->n, 1))
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "solve: bad right-hand side (nrhs %" CINT_FMT ", ldb %" CINT_FMT ")",
                              nrhs, ldb);
#if CANOPY_INT64
    /* the solve hands n and nrhs to BLAS as int leading dimensions and sizes */
    if (F->S->n > INT_MAX || nrhs > INT_MAX)
        return canopy_err_set(err, CANOPY_ERR_TOO_LARGE, "solve: n = %" CINT_FMT " or nrhs = %" CINT_FMT
                              " exceeds the int range of BLAS", F->S->n, nrhs);
#endif
    int old = blas_threads_single();
    canopy_status st = F->arith == CANOPY_COMPLEX ? numeric_solve_z(F, nrhs, b, ldb, err)
                                                  : numeric_solve_d(F, nrhs, b, ldb, err);
    blas_threads_restore(old);
    return st;
}
