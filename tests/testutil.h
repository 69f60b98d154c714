/*
 * Small helpers shared by the Check suites: running a suite, locating the shared test matrices,
 * deterministic random numbers and small random sparse matrices.
 */
#ifndef CANOPY_TESTUTIL_H
#define CANOPY_TESTUTIL_H

#include "base/config.h" /* first: feature macros */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include "base/common.h"
#include "matrix/matrix.h"
#include "order/order.h"

/** Run a suite; returns the process exit status (0 when every test passed). */
static inline int testutil_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

static inline int testutil_run_single(const char *name, const TTest *t)
{
    Suite *s = suite_create(name);
    TCase *tc = tcase_create(name);
    _tcase_add_test(tc, t, 0, 0, 0, 1);
    suite_add_tcase(s, tc);
    return testutil_run(s);
}

/**
 * Directory of the shared real matrices (CANOPY_TEST_MATRICES, else ../shared/matrices next to
 * the source tree), or NULL when absent: tests then skip those cases and say so.
 */
static inline const char *testutil_matrix_dir(void)
{
    static char buf[4096];
    const char *env = getenv("CANOPY_TEST_MATRICES");
    if (env && *env) return env;
    const char *top = getenv("top_srcdir");
    snprintf(buf, sizeof buf, "%s/../shared/matrices", top ? top : ".");
    FILE *f;
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/MANIFEST.md", buf);
    if ((f = fopen(probe, "r")) == NULL) return NULL;
    fclose(f);
    return buf;
}

/** true if perm is a permutation of 0..n-1 (through the library's order_invert). */
static inline bool testutil_is_permutation(cint n, const cint *perm)
{
    cint *inv = malloc(((size_t)(n > 0 ? n : 0) + 1) * sizeof *inv);
    bool ok = order_invert(n, perm, inv, NULL);
    free(inv);
    return ok;
}

/** Deterministic xorshift generator. */
static inline uint64_t testutil_rand(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *state = x;
}

static inline double testutil_uniform(uint64_t *state)
{
    return (double)(testutil_rand(state) >> 11) * (1.0 / 9007199254740992.0);
}

/** Column-major dense n x n scratch -> internal-form CSC (base 0, sorted, full storage). */
static inline void testutil_dense_to_csc(cint n, const double *D, canopy_matrix_kind kind, canopy_csc *A)
{
    cint nnz = 0;
    for (size_t k = 0; k < (size_t)n * n; k++) nnz += D[k] != 0;
    A->n = n;
    A->colptr = canopy_alloc((size_t)n + 1, sizeof(cint), "colptr", NULL);
    A->rowind = canopy_alloc((size_t)nnz + 1, sizeof(cint), "rowind", NULL);
    double *val = canopy_alloc((size_t)nnz + 1, sizeof(double), "values", NULL);
    A->values = val;
    A->base = 0;
    A->arith = CANOPY_REAL;
    A->kind = kind;
    A->triangle = CANOPY_TRIANGLE_BOTH;
    cint p = 0;
    for (cint j = 0; j < n; j++) {
        A->colptr[j] = p;
        for (cint i = 0; i < n; i++) {
            double v = D[(size_t)j * n + i];
            if (v != 0) { A->rowind[p] = i; val[p] = v; p++; }
        }
    }
    A->colptr[n] = p;
}

/**
 * Random n x n matrix, base 0, full storage, sorted, with about @p per_col off-diagonal entries per
 * column; symmetric pattern and values when @p kind is not GENERAL; diagonally dominant (hence
 * SPD for SPD) when @p dominant. Caller frees with matrix_free.
 */
static inline void testutil_random_matrix(cint n, int per_col, canopy_matrix_kind kind, int dominant,
                                          uint64_t seed, canopy_csc *A)
{
    uint64_t st = seed ? seed : 88172645463325252ull;
    /* dense scratch is fine for test sizes */
    double *D = calloc((size_t)n * (size_t)n, sizeof *D);
    for (cint j = 0; j < n; j++) {
        for (int t = 0; t < per_col; t++) {
            cint i = (cint)(testutil_rand(&st) % (uint64_t)n);
            if (i == j) continue;
            double v = 2.0 * testutil_uniform(&st) - 1.0;
            D[(size_t)j * n + i] = v;
            if (kind != CANOPY_KIND_GENERAL) D[(size_t)i * n + j] = v;
        }
    }
    for (cint j = 0; j < n; j++) {
        double s = 0;
        for (cint i = 0; i < n; i++) s += i == j ? 0 : fabs(D[(size_t)j * n + i]);
        D[(size_t)j * n + j] = dominant ? s + 1.0 : (testutil_uniform(&st) - 0.5);
    }
    testutil_dense_to_csc(n, D, kind, A);
    free(D);
}

#endif
