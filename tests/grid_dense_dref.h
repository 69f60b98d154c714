/*
 * The real double sequential reference of tests/test_grid_dense.c and test_grid_dense_solve.c:
 * matrices of each kind (seeded, the same on every rank) and the same per-step factorization as
 * grid_dense_factor_d on the whole matrix. Header-only (static functions), included by both tests,
 * as grid_dense_zref.h is for complex.
 */
#ifndef CANOPY_TESTS_GRID_DENSE_DREF_H
#define CANOPY_TESTS_GRID_DENSE_DREF_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <cblas.h>
#include <lapacke.h>
#include "base/common.h"
#include "numeric/numeric.h"

static uint64_t rng_state;
static double rnd(void)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(rng_state >> 11) / 9007199254740992.0 * 2 - 1;
}

/* kind LLT: SPD; LDLT: symmetric indefinite with some small diagonal entries (2x2 pivots); LU:
 * unsymmetric with a moderate diagonal (interchanges inside the tiles) */
static double *make_matrix(canopy_factorization kind, cint n, unsigned seed)
{
    double *A = malloc((size_t)n * n * sizeof *A + 1);
    rng_state = seed;
    for (cint j = 0; j < n; j++)
        for (cint i = 0; i < n; i++) A[i + (size_t)j * n] = rnd();
    if (kind != CANOPY_FACT_LU)
        for (cint j = 0; j < n; j++)
            for (cint i = 0; i < j; i++) A[i + (size_t)j * n] = A[j + (size_t)i * n];
    for (cint j = 0; j < n; j++) {
        double *d = &A[j + (size_t)j * n];
        if (kind == CANOPY_FACT_LLT) *d = fabs(*d) + (double)n;
        else if (kind == CANOPY_FACT_LDLT) *d = j % 7 == 3 ? 0.01 * *d : (j % 2 ? 3.0 : -3.0);
        else *d += j % 2 ? 2.0 : -2.0;
    }
    return A;
}

/* The same steps as grid_dense_factor_d on the whole matrix, one GEMM per step; returns the
 * perturbed count, or -1 - column where POTRF stops. */
static int64_t ref_factor(canopy_factorization kind, cint n, cint m, cint nb, double *A, cint *ipiv, double *dsub,
                          double thr)
{
    int64_t cnt = 0;
    double *work = malloc((size_t)nb * 65 * sizeof *work + 8), *W = malloc((size_t)n * nb * sizeof *W + 8);
    for (cint kb = 0; kb < m; kb += nb) {
        cint ke = CANOPY_MIN(kb + nb, m), w = ke - kb, rows = n - ke;
        double *P = A + kb + (size_t)kb * n, *X = A + ke + (size_t)kb * n;
        if (kind == CANOPY_FACT_LLT) {
            lapack_int info = LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'L', (lapack_int)w, P, (lapack_int)n);
            if (info > 0) {
                cnt = -1 - (kb + info - 1);
                break;
            }
            cblas_dtrsm(CblasColMajor, CblasRight, CblasLower, CblasTrans, CblasNonUnit, (int)rows, (int)w, 1.0, P,
                        (int)n, X, (int)n);
            cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, (int)rows, (int)rows, (int)w, -1.0, X, (int)n, X,
                        (int)n, 1.0, A + ke + (size_t)ke * n, (int)n);
        } else if (kind == CANOPY_FACT_LDLT) {
            cnt += numeric_dense_ldlt_d(w, P, n, ipiv + kb, dsub + kb, thr, work);
            for (cint j = 0; j < w; j++)
                if (ipiv[kb + j] >= 0 && ipiv[kb + j] != j)
                    for (cint i = 0; i < rows; i++) {
                        double t = X[i + (size_t)j * n];
                        X[i + (size_t)j * n] = X[i + (size_t)ipiv[kb + j] * n];
                        X[i + (size_t)ipiv[kb + j] * n] = t;
                    }
            cblas_dtrsm(CblasColMajor, CblasRight, CblasLower, CblasTrans, CblasUnit, (int)rows, (int)w, 1.0, P,
                        (int)n, X, (int)n);
            /* L = X D^-1, then W = L D (rebuilt from L, as the grid's column factor is) */
            for (cint j = 0; j < w;) {
                double *c1 = X + (size_t)j * n;
                if (ipiv[kb + j] < 0) {
                    double a = P[j + (size_t)j * n], b = dsub[kb + j], c = P[(j + 1) + (size_t)(j + 1) * n];
                    double e11 = c / b, e22 = a / b, t = 1.0 / (e11 * e22 - 1.0), d21 = t / b;
                    double *c2 = c1 + n;
                    for (cint i = 0; i < rows; i++) {
                        double x1 = c1[i], x2 = c2[i];
                        c1[i] = d21 * (e11 * x1 - x2);
                        c2[i] = d21 * (e22 * x2 - x1);
                        W[i + (size_t)j * rows] = c1[i] * a + c2[i] * b;
                        W[i + (size_t)(j + 1) * rows] = c1[i] * b + c2[i] * c;
                    }
                    j += 2;
                } else {
                    double inv = 1.0 / P[j + (size_t)j * n];
                    for (cint i = 0; i < rows; i++) {
                        c1[i] *= inv;
                        W[i + (size_t)j * rows] = c1[i] * P[j + (size_t)j * n];
                    }
                    j++;
                }
            }
            if (rows > 0)
                cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, (int)rows, (int)rows, (int)w, -1.0, X, (int)n, W,
                            (int)rows, 1.0, A + ke + (size_t)ke * n, (int)n);
        } else {
            cnt += numeric_dense_lu_d(w, P, n, ipiv + kb, thr);
            cblas_dtrsm(CblasColMajor, CblasRight, CblasUpper, CblasNoTrans, CblasNonUnit, (int)rows, (int)w, 1.0, P,
                        (int)n, X, (int)n);
            double *Y = A + kb + (size_t)ke * n;
            for (cint j = 0; j < w; j++)
                if (ipiv[kb + j] != j)
                    for (cint q = 0; q < rows; q++) {
                        double t = Y[j + (size_t)q * n];
                        Y[j + (size_t)q * n] = Y[ipiv[kb + j] + (size_t)q * n];
                        Y[ipiv[kb + j] + (size_t)q * n] = t;
                    }
            cblas_dtrsm(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, CblasUnit, (int)w, (int)rows, 1.0, P,
                        (int)n, Y, (int)n);
            cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)rows, (int)rows, (int)w, -1.0, X, (int)n, Y,
                        (int)n, 1.0, A + ke + (size_t)ke * n, (int)n);
        }
    }
    free(work);
    free(W);
    return cnt;
}

#endif
