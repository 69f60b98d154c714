/*
 * The complex double sequential reference of tests/test_grid_dense.c and test_grid_dense_solve.c:
 * complex matrices of each kind and the same per-step factorization and product-form sweeps as
 * grid_dense_factor_z / grid_dense_forward_z / grid_dense_backward_z, with the sparse code's
 * complex kinds: LL^T Hermitian positive definite (L L^H), LDL^T complex symmetric (L D L^T, no
 * conjugate), LU plain. Header-only (static inline), included by both tests.
 */
#ifndef CANOPY_TESTS_GRID_DENSE_ZREF_H
#define CANOPY_TESTS_GRID_DENSE_ZREF_H

#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <cblas.h>
#include <lapacke.h>
#include "base/common.h"
#include "numeric/numeric.h"

typedef double _Complex zscalar;

static uint64_t zrng_state;
static inline double zrnd1(void)
{
    zrng_state = zrng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(zrng_state >> 11) / 9007199254740992.0 * 2 - 1;
}
static inline zscalar zrnd(void)
{
    double re = zrnd1(), im = zrnd1();
    return CMPLX(re, im);
}

/* LLT: Hermitian positive definite (whole matrix stored, upper = conj of lower, real diagonal);
 * LDLT: complex symmetric indefinite with some small diagonal entries (2x2 pivots); LU: unsymmetric
 * with a moderate diagonal (interchanges inside the tiles) */
static inline zscalar *zmake_matrix(canopy_factorization kind, cint n, unsigned seed)
{
    zscalar *A = malloc((size_t)n * n * sizeof *A + 16);
    zrng_state = seed;
    for (cint j = 0; j < n; j++)
        for (cint i = 0; i < n; i++) A[i + (size_t)j * n] = zrnd();
    if (kind != CANOPY_FACT_LU)
        for (cint j = 0; j < n; j++)
            for (cint i = 0; i < j; i++)
                A[i + (size_t)j * n] = kind == CANOPY_FACT_LLT ? conj(A[j + (size_t)i * n]) : A[j + (size_t)i * n];
    for (cint j = 0; j < n; j++) {
        zscalar *d = &A[j + (size_t)j * n];
        if (kind == CANOPY_FACT_LLT) *d = fabs(creal(*d)) + 2.0 * (double)n;
        else if (kind == CANOPY_FACT_LDLT) *d = j % 7 == 3 ? 0.01 * *d : (j % 2 ? 3.0 : -3.0) + 0.5 * I;
        else *d += j % 2 ? 2.0 : -2.0;
    }
    return A;
}

#define ZB(x) (&(zscalar){x})

/* The same steps as grid_dense_factor_z on the whole matrix, one GEMM per step; returns the
 * perturbed count, or -1 - column where POTRF stops. */
static inline int64_t zref_factor(canopy_factorization kind, cint n, cint m, cint nb, zscalar *A, cint *ipiv,
                                  zscalar *dsub, double thr)
{
    int64_t cnt = 0;
    zscalar *work = malloc((size_t)nb * 65 * sizeof *work + 16), *W = malloc((size_t)n * nb * sizeof *W + 16);
    for (cint kb = 0; kb < m; kb += nb) {
        cint ke = CANOPY_MIN(kb + nb, m), w = ke - kb, rows = n - ke;
        zscalar *P = A + kb + (size_t)kb * n, *X = A + ke + (size_t)kb * n;
        if (kind == CANOPY_FACT_LLT) {
            lapack_int info = LAPACKE_zpotrf_work(LAPACK_COL_MAJOR, 'L', (lapack_int)w, (lapack_complex_double *)P,
                                                  (lapack_int)n);
            if (info > 0) {
                cnt = -1 - (kb + info - 1);
                break;
            }
            cblas_ztrsm(CblasColMajor, CblasRight, CblasLower, CblasConjTrans, CblasNonUnit, (int)rows, (int)w, ZB(1.0),
                        P, (int)n, X, (int)n);
            cblas_zgemm(CblasColMajor, CblasNoTrans, CblasConjTrans, (int)rows, (int)rows, (int)w, ZB(-1.0), X, (int)n,
                        X, (int)n, ZB(1.0), A + ke + (size_t)ke * n, (int)n);
        } else if (kind == CANOPY_FACT_LDLT) {
            cnt += numeric_dense_ldlt_z(w, P, n, ipiv + kb, dsub + kb, thr, work);
            for (cint j = 0; j < w; j++)
                if (ipiv[kb + j] >= 0 && ipiv[kb + j] != j)
                    for (cint i = 0; i < rows; i++) {
                        zscalar t = X[i + (size_t)j * n];
                        X[i + (size_t)j * n] = X[i + (size_t)ipiv[kb + j] * n];
                        X[i + (size_t)ipiv[kb + j] * n] = t;
                    }
            cblas_ztrsm(CblasColMajor, CblasRight, CblasLower, CblasTrans, CblasUnit, (int)rows, (int)w, ZB(1.0), P,
                        (int)n, X, (int)n);
            for (cint j = 0; j < w;) {
                zscalar *c1 = X + (size_t)j * n;
                if (ipiv[kb + j] < 0) {
                    zscalar a = P[j + (size_t)j * n], b = dsub[kb + j], c = P[(j + 1) + (size_t)(j + 1) * n];
                    zscalar e11 = c / b, e22 = a / b, t = 1.0 / (e11 * e22 - 1.0), d21 = t / b;
                    zscalar *c2 = c1 + n;
                    for (cint i = 0; i < rows; i++) {
                        zscalar x1 = c1[i], x2 = c2[i];
                        c1[i] = d21 * (e11 * x1 - x2);
                        c2[i] = d21 * (e22 * x2 - x1);
                        W[i + (size_t)j * rows] = c1[i] * a + c2[i] * b;
                        W[i + (size_t)(j + 1) * rows] = c1[i] * b + c2[i] * c;
                    }
                    j += 2;
                } else {
                    zscalar inv = 1.0 / P[j + (size_t)j * n];
                    for (cint i = 0; i < rows; i++) {
                        c1[i] *= inv;
                        W[i + (size_t)j * rows] = c1[i] * P[j + (size_t)j * n];
                    }
                    j++;
                }
            }
            if (rows > 0)
                cblas_zgemm(CblasColMajor, CblasNoTrans, CblasTrans, (int)rows, (int)rows, (int)w, ZB(-1.0), X, (int)n,
                            W, (int)rows, ZB(1.0), A + ke + (size_t)ke * n, (int)n);
        } else {
            cnt += numeric_dense_lu_z(w, P, n, ipiv + kb, thr);
            cblas_ztrsm(CblasColMajor, CblasRight, CblasUpper, CblasNoTrans, CblasNonUnit, (int)rows, (int)w, ZB(1.0), P,
                        (int)n, X, (int)n);
            zscalar *Y = A + kb + (size_t)ke * n;
            for (cint j = 0; j < w; j++)
                if (ipiv[kb + j] != j)
                    for (cint q = 0; q < rows; q++) {
                        zscalar t = Y[j + (size_t)q * n];
                        Y[j + (size_t)q * n] = Y[ipiv[kb + j] + (size_t)q * n];
                        Y[ipiv[kb + j] + (size_t)q * n] = t;
                    }
            cblas_ztrsm(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, CblasUnit, (int)w, (int)rows, ZB(1.0), P,
                        (int)n, Y, (int)n);
            cblas_zgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)rows, (int)rows, (int)w, ZB(-1.0), X, (int)n, Y,
                        (int)n, ZB(1.0), A + ke + (size_t)ke * n, (int)n);
        }
    }
    free(work);
    free(W);
    return cnt;
}

/* The product-form forward sweep over the first m columns of F on X (n x nrhs, ld n). */
static inline void zref_forward(canopy_factorization kind, cint n, cint m, cint nb, const zscalar *F, const cint *ipiv,
                                const zscalar *dsub, cint nrhs, zscalar *X)
{
    for (cint kb = 0; kb < m; kb += nb) {
        cint ke = CANOPY_MIN(kb + nb, m), w = ke - kb;
        const zscalar *P = F + kb + (size_t)kb * n;
        for (cint r = 0; r < nrhs && kind != CANOPY_FACT_LLT; r++)
            for (cint j = 0; j < w; j++)
                if (ipiv[kb + j] >= 0 && ipiv[kb + j] != j) {
                    zscalar *x = X + (size_t)r * n + kb, t = x[j];
                    x[j] = x[ipiv[kb + j]];
                    x[ipiv[kb + j]] = t;
                }
        cblas_ztrsm(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, kind == CANOPY_FACT_LLT ? CblasNonUnit : CblasUnit,
                    (int)w, (int)nrhs, ZB(1.0), P, (int)n, X + kb, (int)n);
        if (n > ke)
            cblas_zgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)(n - ke), (int)nrhs, (int)w, ZB(-1.0),
                        F + ke + (size_t)kb * n, (int)n, X + kb, (int)n, ZB(1.0), X + ke, (int)n);
        for (cint r = 0; r < nrhs && kind == CANOPY_FACT_LDLT; r++) {
            zscalar *x = X + (size_t)r * n;
            for (cint j = kb; j < ke;) {
                if (ipiv[j] < 0) {
                    zscalar a = F[j + (size_t)j * n], b = dsub[j], c = F[(j + 1) + (size_t)(j + 1) * n];
                    zscalar det = a * c - b * b, x1 = x[j], x2 = x[j + 1];
                    x[j] = (c * x1 - b * x2) / det;
                    x[j + 1] = (a * x2 - b * x1) / det;
                    j += 2;
                } else {
                    x[j] /= F[j + (size_t)j * n];
                    j++;
                }
            }
        }
    }
}

/* The backward sweep: rows [m, n) of X are x2, rows [0, m) become x1 (LL^T: L^H, LDL^T: L^T). */
static inline void zref_backward(canopy_factorization kind, cint n, cint m, cint nb, const zscalar *F, const cint *ipiv,
                                 cint nrhs, zscalar *X)
{
    CBLAS_TRANSPOSE t = kind == CANOPY_FACT_LLT ? CblasConjTrans : CblasTrans;
    for (cint k = (m + nb - 1) / nb - 1; k >= 0; k--) {
        cint kb = k * nb, ke = CANOPY_MIN(kb + nb, m), w = ke - kb;
        const zscalar *P = F + kb + (size_t)kb * n;
        if (kind == CANOPY_FACT_LU) {
            if (n > ke)
                cblas_zgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)w, (int)nrhs, (int)(n - ke), ZB(-1.0),
                            F + kb + (size_t)ke * n, (int)n, X + ke, (int)n, ZB(1.0), X + kb, (int)n);
            cblas_ztrsm(CblasColMajor, CblasLeft, CblasUpper, CblasNoTrans, CblasNonUnit, (int)w, (int)nrhs, ZB(1.0), P,
                        (int)n, X + kb, (int)n);
        } else {
            if (n > ke)
                cblas_zgemm(CblasColMajor, t, CblasNoTrans, (int)w, (int)nrhs, (int)(n - ke), ZB(-1.0),
                            F + ke + (size_t)kb * n, (int)n, X + ke, (int)n, ZB(1.0), X + kb, (int)n);
            cblas_ztrsm(CblasColMajor, CblasLeft, CblasLower, t, kind == CANOPY_FACT_LLT ? CblasNonUnit : CblasUnit,
                        (int)w, (int)nrhs, ZB(1.0), P, (int)n, X + kb, (int)n);
            for (cint r = 0; r < nrhs && kind == CANOPY_FACT_LDLT; r++)
                for (cint j = w - 1; j >= 0; j--)
                    if (ipiv[kb + j] >= 0 && ipiv[kb + j] != j) {
                        zscalar *x = X + (size_t)r * n + kb, tt = x[j];
                        x[j] = x[ipiv[kb + j]];
                        x[ipiv[kb + j]] = tt;
                    }
        }
    }
}

/* max |X - R| / max |R| over rows x nrhs (ld). */
static inline double zrel_diff(cint rows, cint nrhs, const zscalar *X, const zscalar *R, cint ld)
{
    double d = 0, s = 0;
    for (cint r = 0; r < nrhs; r++)
        for (cint i = 0; i < rows; i++) {
            d = fmax(d, cabs(X[i + (size_t)r * ld] - R[i + (size_t)r * ld]));
            s = fmax(s, cabs(R[i + (size_t)r * ld]));
        }
    return s > 0 ? d / s : d;
}

#endif
